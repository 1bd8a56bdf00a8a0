"""The project's wheel built from a copy of its sources, and installed alone into a folder (tests and benchmarks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "app.py", "views", ".streamlit", "bert_core", "ui", "classroom", "server")


def pip_env() -> dict[str, str]:
    """pip offline and quiet: the build needs no network (--no-build-isolation), the install no dependencies."""
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1", "PIP_ROOT_USER_ACTION": "ignore"}


def build_wheel(out: Path) -> Path:
    """`pip wheel --no-deps --no-build-isolation` on a copy of the sources under `out` (setuptools writes build/ and
    *.egg-info beside pyproject.toml, not in the checkout); the wheel's path."""
    shutil.rmtree(out, ignore_errors=True)
    src = out / "src"
    src.mkdir(parents=True)
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out / "dist"), str(src)], check=True, env=pip_env())
    (whl,) = (out / "dist").glob("bert_explorer-*.whl")
    return whl


def install(whl: Path, target: Path) -> Path:
    """The wheel alone (--no-deps) in `target`: torch and the rest come from this interpreter."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(whl)],
                   check=True, env=pip_env())
    return target
