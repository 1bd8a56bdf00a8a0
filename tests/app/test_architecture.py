"""The layout's contracts: import-linter keeps them on the real tree, fails on a planted violation, and
docs/architecture.md's picture is the one scripts/architecture.py draws from them."""

import shutil
import subprocess
import sys

import pytest
from support.apptest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import architecture  # noqa: E402

OUT = ROOT / "tests" / "output" / "architecture"


def lint_imports(cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()"],
                          cwd=cwd, capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(cwd)})


@pytest.fixture(scope="module")
def tree():
    """A copy of what the contracts read (bert_core's, ui's, classroom's, server's and the pages' Python files,
    pyproject.toml), to plant faults in."""
    shutil.rmtree(OUT, ignore_errors=True)
    for pkg in ("bert_core", "ui", "classroom", "server", "views"):
        skip = shutil.ignore_patterns("bundled", "bundled_minilm", "data", "static", "__pycache__")
        shutil.copytree(ROOT / pkg, OUT / pkg, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", OUT / "pyproject.toml")
    return OUT


def plant(tree, rel: str, line: str):
    """Add an import line to one module of the copy; give the original back afterwards."""
    path = tree / rel
    text = path.read_text()
    future = "from __future__ import annotations\n"
    path.write_text(text.replace(future, future + line + "\n", 1) if future in text else line + "\n" + text)
    return path, text


def test_the_real_tree_keeps_every_contract(tree):
    r = lint_imports(tree)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "broken" in r.stdout and " 0 broken" in r.stdout


@pytest.mark.parametrize("rel, line, contract", [
    ("bert_core/model/config.py", "from ..runs import slots  # noqa", "layers"),  # the bottom layer reaching up
    ("bert_core/inspect/analysis.py", "from ..train import corpus  # noqa", "layers"),
    ("bert_core/figures/tokens.py", "from ..model import config  # noqa", "figures are arrays in"),
    ("bert_core/runs/memory.py", "import streamlit  # noqa", "never imports streamlit"),
    ("bert_core/model/config.py", "from . import heads  # noqa", "no import cycles"),  # heads imports config
    ("classroom/codes.py", "import streamlit  # noqa", "knows nothing of the page"),  # a class store is not a page
    ("bert_core/runs/memory.py", "import classroom  # noqa", "does not know classes of students"),
    ("ui/lesson/content.py", "from ui.lesson import views  # noqa", "the Lesson's layers"),  # content is data
    ("ui/lesson/live_class/session.py", "import redis  # noqa", "reaches a class only through classroom"),
    ("ui/widgets.py", "from ui.lesson.live_class import session  # noqa", "does not import the Lesson's live class"),
    ("ui/finetune_ui.py", "from ui.lesson import roles  # noqa", "does not import the Lesson's live class"),  # no list
    ("views/anatomy.py", "from ui.lesson.live_class import teacher  # noqa", "does not import the Lesson's live class"),
    ("server/events.py", "import ui  # noqa", "imports no page code"),  # the server's runtime is not a page's
    ("server/housekeeping.py", "import streamlit  # noqa", "imports no page code"),  # Streamlit: the adapter only
    ("bert_core/runs/training_run.py", "from server import slots  # noqa", "the app's ui or its server"),
    ("server/ledger.py", "from server import streamlit_private  # noqa", "run budgets"),  # not even the adapter
    ("server/slots.py", "from server import events  # noqa", "run budgets"),
    ("views/anatomy.py", "import torch  # noqa", "pages hold no tensor math"),  # a page's math belongs in bert_core
    ("views/qa.py", "import classroom.redis_store  # noqa", "pages hold no tensor math"),
    ("views/anatomy.py", "from views import attention  # noqa", "a page never imports another page"),
])
def test_a_planted_violation_breaks_its_contract(tree, rel, line, contract):
    path, original = plant(tree, rel, line)
    try:
        r = lint_imports(tree)
    finally:
        path.write_text(original)
    assert r.returncode != 0, r.stdout
    assert "Broken contracts" in r.stdout, r.stdout + r.stderr  # broken, not crashed
    assert contract in r.stdout.split("Broken contracts")[1], r.stdout


def test_the_architecture_doc_draws_the_current_contracts_and_imports():
    assert architecture.doc_block() == architecture.mermaid(), (
        "docs/architecture.md's picture is stale: run `python scripts/architecture.py --write`")
