"""The README and the guides in docs/: every relative link resolves (the file, and the #heading by GitHub's anchor
rules), no issue numbers, and every Python block of docs/notebook.md runs offline on the bundled model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.apptest import ROOT

GUIDES = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(GUIDES.glob("*.md"))]
OUT = ROOT / "tests" / "output" / "docs"

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose(text: str) -> str:
    """The Markdown outside fenced blocks and inline code: what GitHub renders as links and headings."""
    text = FENCE.sub("", text)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation but '-' and '_' dropped, each
    space a '-' (github-slugger's rule); a repeated anchor gets -1, -2 ... (see `anchors`)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    """Each relative link of `path` that does not resolve: a missing file, or a #fragment no heading makes."""
    bad = []
    for target in LINK.findall(prose(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: ...
            continue
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{path.name}: {target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            bad.append(f"{path.name}: {target} (no heading #{fragment} in {dest.name})")
    return bad


def test_the_guides_are_there_and_the_readme_is_a_front_page():
    names = {p.name for p in GUIDES.glob("*.md")}
    assert {"teaching.md", "live-class.md", "deploying.md", "models.md", "notebook.md", "architecture.md",
            "benchmarks.md"} <= names, names
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for name in ("teaching.md", "live-class.md", "deploying.md", "models.md", "notebook.md", "architecture.md",
                 "benchmarks.md"):
        assert f"(docs/{name})" in readme, name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    assert not broken_links(page)


def test_a_broken_link_is_found(tmp_path):
    """The check itself: a missing file, a missing heading and a wrong anchor case each fail; good ones pass."""
    (tmp_path / "other.md").write_text("# Other page\n\n## Heads & patching: what `knock_out` does\n\n## Heads\n"
                                       "\n## Heads\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n## A section\n\n"
                    "[ok](other.md) [ok](other.md#heads--patching-what-knock_out-does) [ok](#a-section)\n"
                    "[ok](other.md#heads-1) [ok](https://example.com/x.md) `[not a link](nowhere.md)`\n"
                    "```\n[not a link](nowhere.md)\n# not a heading\n```\n"
                    "[bad](missing.md) [bad](other.md#heads--patching) [bad](#A-section) [bad](#not-a-heading)\n")
    assert broken_links(page) == [
        "page.md: missing.md (no such file)",
        "page.md: other.md#heads--patching (no heading #heads--patching in other.md)",
        "page.md: #A-section (no heading #A-section in page.md)",
        "page.md: #not-a-heading (no heading #not-a-heading in page.md)",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_issue_numbers(page):
    assert not re.findall(r"\bissues? \d+|\(issue\b|#\d{2,}\b", page.read_text(), re.I)


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def test_every_python_block_of_the_notebook_guide_runs_offline():
    """The blocks run in order in one fresh interpreter, as a notebook's cells, with the hub unreachable, in an empty
    folder (the guide is for a reader who installed the package anywhere: no repository files beside them)."""
    blocks = python_blocks(GUIDES / "notebook.md")
    assert len(blocks) >= 8
    OUT.mkdir(parents=True, exist_ok=True)
    script = OUT / "notebook.py"
    script.write_text("\n\n".join(f"# --- block {i + 1}\n{b}" for i, b in enumerate(blocks)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TMPDIR": str(OUT),
           "HF_HOME": str(OUT / "hf_home"), "PYTHONPATH": str(ROOT)}
    cwd = OUT / "elsewhere"
    cwd.mkdir(exist_ok=True)
    r = subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
