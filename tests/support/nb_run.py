"""Run a page's notebook with nbclient: offline, with the repository importable, and read what it printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

import bert_core
from support.tiers import require_server_tier

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output" / "notebooks"
TIMES: dict[str, float] = {}  # notebook -> seconds to run it, printed when a test file ends


def kernel_env(path: Path = ROOT) -> dict[str, str]:
    """The kernel's environment: offline, `path` (this repository, or an installed wheel's folder) first on the path,
    two threads (the target machine)."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="2", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(path), env.get("PYTHONPATH", "")]).rstrip(os.pathsep) if path == ROOT
               else str(path))  # an installed wheel's folder alone: not the checkout
    env.pop("BERT_EXPLORER_DEFAULT_MODEL", None)
    return env


def start_kernel(path: Path = ROOT, cwd: Path = OUTPUT) -> KernelManager:
    """One python3 kernel (this interpreter's ipykernel) with `path` first on its path, started in `cwd` (a scratch
    folder under tests/output)."""
    require_server_tier("a Jupyter kernel")
    cwd.mkdir(parents=True, exist_ok=True)
    km = KernelManager(kernel_name="python3")
    km.kernel_spec  # noqa: B018  (resolve the spec now, so a missing ipykernel fails here)
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(env=kernel_env(path), cwd=str(cwd))
    return km


def run(nb_bytes: bytes, km: KernelManager | None = None, timeout: int = 120) -> tuple[nbformat.NotebookNode, str]:
    """Execute a notebook top to bottom (in `km` after clearing its namespace, or a fresh kernel); (nb, stdout)."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    nb = nbformat.reads(nb_bytes.decode("utf-8"), as_version=4)
    if km is not None:  # a shared kernel: forget the previous notebook's names, so each must define its own
        nb.cells.insert(0, nbformat.v4.new_code_cell("get_ipython().run_line_magic('reset', '-f')"))
        NotebookClient(nb, km=km, timeout=timeout).execute()
    else:
        require_server_tier("a Jupyter kernel")
        # A fresh kernel imports torch first: on a loaded machine its start alone can pass nbclient's default 60 s.
        NotebookClient(nb, timeout=timeout, kernel_name="python3", startup_timeout=300).execute(
            env=kernel_env(), cwd=str(OUTPUT))
    return nb, stdout_of(nb)


def stdout_of(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook's cells printed."""
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def printed_table(stdout: str, title: str) -> str:
    """The table printed under `title` (up to the blank line after it), each line's end spaces dropped."""
    lines = stdout.splitlines()
    i = lines.index(title)
    out = []
    for line in lines[i + 1:]:
        if not line.strip():
            break
        out.append(line.rstrip())
    return "\n".join(out)


# Fixtures, offered by tests/notebooks/conftest.py and tests/browser/conftest.py.
@pytest.fixture(scope="module")
def kernel():
    """One kernel per test file; each notebook clears its namespace first (`run`)."""
    km = start_kernel()
    yield km
    km.shutdown_kernel(now=True)
    print("notebook run times (s):", {k: round(v, 1) for k, v in TIMES.items()})
    TIMES.clear()


@pytest.fixture(scope="module")
def minilm():
    return bert_core.load_model("bundled-minilm")
