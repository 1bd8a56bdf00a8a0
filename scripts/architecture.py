"""Draw the package picture in docs/architecture.md from the import contracts and the real imports.

    python scripts/architecture.py            # print the Mermaid block
    python scripts/architecture.py --write    # put it in docs/architecture.md between the architecture markers

The boxes are the layers of pyproject.toml's `layers` contract (top imports bottom, never the other way)
and the packages outside it; every arrow is an import that exists in the code today, found by grimp (the
graph import-linter checks), with how many module-to-module imports it stands for. tests/app/test_architecture.py
fails when docs/architecture.md's picture is not what this script prints.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import grimp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
START, END = "<!-- architecture:start -->", "<!-- architecture:end -->"
APP = ("app", "views")  # the Streamlit side: app.py and the pages, read from their files (app.py is no package)


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def floors() -> list[list[str]]:
    """The layers contract's floors, top first; a floor of independent siblings ("a | b") holds several packages."""
    return [[m.strip() for m in layer.split("|")] for layer in next(c["layers"] for c in contracts()
                                                                     if c["type"] == "layers")]


def layers() -> list[str]:
    return [m for floor in floors() for m in floor]


def short(module: str) -> str:
    return module.removeprefix("bert_core.")


def package_of(module: str, packages: list[str]) -> str | None:
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def app_imports() -> dict[str, set[str]]:
    """What app.py and the pages import of bert_core, ui, classroom and server: app.py is a script grimp does not
    read, and the pages are read the same way so that both arrows count distinct modules imported."""
    out: dict[str, set[str]] = {}
    for name in APP:
        files = [ROOT / "app.py"] if name == "app" else sorted((ROOT / "views").glob("*.py"))
        for f in files:
            for line in f.read_text().splitlines():
                words = line.split()
                if (len(words) >= 2 and words[0] in ("from", "import")
                        and words[1].split(".")[0] in ("bert_core", "ui", "classroom", "server")):
                    out.setdefault(name, set()).add(words[1])
    return out


def mermaid() -> str:
    stack = layers()
    graph = grimp.build_graph("bert_core", "ui", "classroom", "server", cache_dir=None)
    packages = stack + sorted(set(graph.find_children("bert_core")) - set(stack)) + ["ui", "classroom", "server"]
    edges: dict[tuple[str, str], int] = {}
    for importer in graph.modules:
        a = package_of(importer, packages) or ("bert_core" if importer == "bert_core" else None)
        for imported in graph.find_modules_directly_imported_by(importer):
            b = package_of(imported, packages)
            if a and b and a != b:
                edges[(a, b)] = edges.get((a, b), 0) + 1
    for name, mods in app_imports().items():
        for m in mods:
            b = package_of(m, packages) or ("bert_core" if m == "bert_core" else None)
            if b:
                edges[(name, b)] = edges.get((name, b), 0) + 1
    lines = ["```mermaid", "flowchart TB"]
    lines.append('  subgraph streamlit["Streamlit side (imports streamlit)"]')
    lines += ['    app["app.py"]', '    views["views/ (pages)"]', '    ui["ui/"]', "  end"]
    lines.append('  subgraph core["bert_core (never imports streamlit or ui)"]')
    lines.append('    api["bert_core/__init__ (public API)"]')
    for i, floor in enumerate(floors()):
        for layer in floor:
            lines.append(f'    {short(layer)}["{i + 1}. {short(layer)}"]')
    for extra in packages[len(stack):-3]:
        lines.append(f'    {short(extra)}["{short(extra)} (imports nothing of bert_core)"]')
    lines.append("  end")
    lines.append('  classroom["classroom/ (a live class: imports neither streamlit, ui nor bert_core)"]')
    lines.append('  server["server/ (the process: slots, byte ledger, heap, event route, housekeeping, threads; '
                 'no page code)"]')
    for (a, b), n in sorted(edges.items()):
        src = "api" if a == "bert_core" else short(a)
        dst = "api" if b == "bert_core" else short(b)
        lines.append(f"  {src} -->|{n}| {dst}")
    lines.append("```")
    return "\n".join(lines)


def doc_block() -> str:
    text = DOC.read_text()
    return text[text.index(START) + len(START):text.index(END)].strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the picture into docs/architecture.md")
    args = ap.parse_args(argv)
    block = mermaid()
    if args.write:
        text = DOC.read_text()
        i, j = text.index(START) + len(START), text.index(END)
        DOC.write_text(text[:i] + "\n" + block + "\n" + text[j:])
    else:
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
