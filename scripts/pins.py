"""constraints.txt: every package `pip install -r requirements-dev.txt` brings, at the version installed here.

    python scripts/pins.py           # rewrite constraints.txt from this environment (the one the tests ran in)
    python scripts/pins.py --check   # exit 1 and list the differences if constraints.txt is not this environment's

requirements.txt (the app: Community Cloud, the Dockerfile) and requirements-dev.txt (tests, CI) both include
requirements-runtime.txt, which applies constraints.txt (`-c`): the packages pip picks for the app are the tested ones,
transformers and the rest of what bertviz pulls in included. The walk follows each installed distribution's own
requirements (markers evaluated here, extras followed), from the names in the requirements files.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
HEADER = """\
# Every package the app and the tests install, at the version the test suite ran with (scripts/pins.py writes it
# from that environment; tests/packaging/test_pins.py checks it). requirements-runtime.txt applies it with -c, so
# `pip install -r requirements.txt` and `pip install -r requirements-dev.txt` pick these versions. A pin names
# no local label: torch==2.13.0 is PyPI's 2.13.0 and the CPU index's 2.13.0+cpu alike (PEP 440).
"""


def requirements(name: str) -> list[Requirement]:
    """The requirements a requirements file names, following -r includes (options and -c skipped)."""
    out = []
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.split(" #", 1)[0].split("#", 1)[0].strip() if not raw.startswith("#") else ""
        if line.startswith("-r "):
            out += requirements(line[3:].strip())
        elif line and not line.startswith("-"):
            out.append(Requirement(line))
    return out


def closure(roots: list[Requirement]) -> dict[str, str]:
    """{canonical name: installed version (public part)} of the roots and everything they require here."""
    env = default_environment()
    seen: dict[str, str] = {}
    todo = [(r, frozenset(r.extras)) for r in roots]
    done: set[tuple[str, frozenset]] = set()
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if (name, extras) in done:
            continue
        done.add((name, extras))
        dist = md.distribution(name)
        seen[name] = Version(dist.version).public
        for spec in dist.requires or []:
            sub = Requirement(spec)
            if sub.marker is None or any(sub.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                todo.append((sub, frozenset(sub.extras)))
    return seen


def pins() -> dict[str, str]:
    """The tested environment's pins: what requirements-dev.txt (runtime and test tools) brings."""
    return closure(requirements("requirements-dev.txt"))


def read(path: Path = CONSTRAINTS) -> dict[str, str]:
    """{canonical name: version} of a constraints file's `name==version` lines."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)==([^\s#;]+)\s*(#.*)?", line)
        if m:
            out[canonicalize_name(m.group(1))] = m.group(2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, do not write")
    args = ap.parse_args()
    now = pins()
    if args.check:
        old = read()
        diff = sorted(set(now.items()) ^ set(old.items()))
        for name, version in diff:
            print(f"{'here' if now.get(name) == version else 'constraints.txt'}: {name}=={version}")
        return 1 if diff else 0
    CONSTRAINTS.write_text(HEADER + "".join(f"{n}=={v}\n" for n, v in sorted(now.items())))
    print(f"wrote {len(now)} pins to {CONSTRAINTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
