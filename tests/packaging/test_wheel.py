"""`pip install bert-explorer` works away from the checkout: the wheel holds bert_core with its bundled models and
data, the app and its `bert-explorer` command; installed alone in a folder, it loads the bundled MiniLM and fills in
a [MASK] from another directory, and the pages' notebooks run there in an empty folder printing the pages' numbers.

The wheel is built once per test file from a copy of the sources under tests/output (setuptools writes build/ and
*.egg-info beside pyproject.toml), with `pip wheel --no-deps --no-build-isolation` (the build needs no network).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from install_util import ROOT, build_wheel, install

OUT = ROOT / "tests" / "output" / "packaging"
DATA = ("bert_core/bundled", "bert_core/bundled_minilm", "bert_core/data", "bert_core/inspect/static/vendor")


@pytest.fixture(scope="module")
def wheel() -> Path:
    return build_wheel(OUT)


@pytest.fixture(scope="module")
def site(wheel) -> Path:
    return install(wheel, OUT / "site")


def _outside(site: Path, code: str) -> subprocess.CompletedProcess:
    """`python -c code` in an empty folder with only `site` added to the path (not the checkout)."""
    cwd = OUT / "elsewhere"
    cwd.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_wheel_holds_every_package_model_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in DATA:  # every file of the bundled models, the corpora and bertviz's vendored scripts
        for f in (ROOT / folder).iterdir():
            assert f"{folder}/{f.name}" in names, f
    for pkg in ("bert_core", "ui", "classroom", "server"):  # every module (a new subpackage: listed too)
        for f in (ROOT / pkg).rglob("*.py"):
            assert f.relative_to(ROOT).as_posix() in names, f
    for f in [ROOT / "app.py", ROOT / ".streamlit" / "config.toml", *(ROOT / "views").glob("*.py")]:
        assert f"bert_explorer_app/{f.relative_to(ROOT).as_posix()}" in names, f
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "bert-explorer = ui.launch:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_installed_bert_core_fills_a_mask_from_elsewhere(site):
    r = _outside(site, """
import json, sys
import bert_core
from ui.launch import app_path
m = bert_core.load_model("bundled-minilm")
t = bert_core.analyze(m, "The cat [MASK] on the mat.")
print(json.dumps({"file": bert_core.__file__, "app": str(app_path()), "path": sys.path,
                  "top": t.predictions[3][0]}))
""")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.splitlines()[-1])
    assert got["file"] == str(site / "bert_core" / "__init__.py")
    assert got["app"] == str(site / "bert_explorer_app" / "app.py")
    assert str(ROOT) not in got["path"]
    import bert_core

    here = bert_core.analyze(bert_core.load_model("bundled-minilm"), "The cat [MASK] on the mat.").predictions[3][0]
    assert got["top"][0] == here[0] and abs(got["top"][1] - here[1]) < 1e-5


def test_the_bert_explorer_command_runs_streamlit_on_the_installed_app(site):
    """The console script exists and hands the installed app.py to `streamlit run` (its --help, not a server)."""
    script = site / "bin" / "bert-explorer"
    assert script.is_file() and os.access(script, os.X_OK)
    r = _outside(site, "import sys; from ui.launch import main; sys.argv = ['bert-explorer', '--help']; main()")
    assert r.returncode == 0, r.stderr
    assert "Usage: streamlit run" in r.stdout


@pytest.mark.server  # a Jupyter kernel: a process outside this one (support/tiers.py)
def test_pages_notebooks_run_in_an_empty_folder_with_the_installed_package(site):
    """Predictions, Attention and a Lesson step: the notebooks the pages offer, run by nbclient in an empty folder
    with only the installed wheel on the path, print the pages' numbers."""
    from support.apptest import assert_ok, open_page
    from support.nb_run import printed_table, run, start_kernel

    import bert_core
    from bert_core.figures import attention as fa
    from bert_core.notebooks import notebook_bytes
    from ui.lesson import content as lesson
    from ui.notebook_ui import VIEWS_KEY

    text = "The lighthouse keeper [MASK] the lamp every night."
    views = {}
    for page, widgets in (("predictions", {"pred_k": ("slider", 6)}),
                          ("attention", {"attn_layer": ("selectbox", 2), "attn_head": ("selectbox", 4)}),
                          ("lesson", {})):
        at = open_page(page, text=None if page == "lesson" else text)  # a Lesson step has its own sentence
        for key, (kind, value) in widgets.items():
            getattr(at, kind)(key=key).set_value(value).run()
        if page == "lesson":
            for _ in range(2):  # step 3
                at.button(key="lesson_next").click().run()
        assert_ok(at)
        views[page] = at.session_state[VIEWS_KEY][page]
    m = bert_core.load_model("bundled-minilm")
    empty = OUT / "empty-folder"
    km = start_kernel(path=site, cwd=empty)
    try:
        times = {}
        outs = {}
        for page, view in views.items():
            t = time.perf_counter()
            _, outs[page] = run(notebook_bytes(view), km, timeout=300)
            times[page] = round(time.perf_counter() - t, 1)
        cell = nbformat.v4.new_code_cell("import bert_core; print(bert_core.__file__)")
        probe = nbformat.v4.new_notebook(cells=[cell])
        _, where = run(nbformat.writes(probe).encode(), km)
    finally:
        km.shutdown_kernel(now=True)
    print("notebook run times (s), installed package:", times)
    assert where.strip() == str(site / "bert_core" / "__init__.py")
    assert sorted(p.name for p in empty.iterdir()) == [], "the notebooks write nothing where they run"

    t = bert_core.analyze(m, views["predictions"].text, None, top_k=6)
    (pos, cands), = t.predictions.items()
    expected = pd.DataFrame([{"position": pos, "rank": r + 1, "token": tok, "p": p} for r, (tok, p) in
                             enumerate(cands)]).round(4).to_string(index=False)
    assert printed_table(outs["predictions"], "Top-K candidates") == "\n".join(
        ln.rstrip() for ln in expected.splitlines())

    t = bert_core.analyze(m, views["attention"].text, None, embeddings=False, hidden_states=False)
    att, tokens = fa.crop(t.attentions, t.tokens, fa.capped(len(t.tokens), fa.ATTENTION_TOKEN_CAP))
    labels = [f"{i} {tok}" for i, tok in enumerate(tokens)]
    expected = pd.DataFrame(att[2, 4], index=labels, columns=labels).reset_index(names="query").round(4)
    assert printed_table(outs["attention"], "Attention weights (rows: queries, columns: keys)") == "\n".join(
        ln.rstrip() for ln in expected.to_string(index=False).splitlines())

    v = views["lesson"]
    assert v.settings["step"] == 3
    fn, args, kwargs = lesson.question_call(lesson.STEPS[2], v.text, v.pair, v.seed)
    q = fn(m, *args, **kwargs)
    assert f"The model's answer: {q.choices[q.answer]}\n{q.reveal}\n" in outs["lesson"]
