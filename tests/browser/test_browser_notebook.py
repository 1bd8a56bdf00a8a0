"""Open as a notebook, in Debian's chromium: a page's button downloads a notebook that runs offline (nbclient)
and prints what the page showed: Attention's heatmap weights (a fresh kernel, as a reader runs it), Predictions'
top-k tokens and probabilities, Tokenization's tokens, ids and counts (one shared kernel, its namespace reset).

Uses tests/browser/conftest.py's server, browser and watch (every off-machine request is aborted); each text is one no
other test uses.
"""

from __future__ import annotations

import ast
import base64
import re
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from support.nb_run import printed_table, run
from support.paths import OUT

pytestmark = pytest.mark.browser

TEXT = "After the storm the lighthouse keeper [MASK] a letter to his sister."  # no other test uses it


def test_attention_notebook_downloads_runs_and_matches_the_page(watch):  # noqa: F811
    q = urllib.parse.urlencode({"text": TEXT, "layer": 5, "head": 9})
    page = watch.open(f"/attention?{q}")
    watch.assert_clean()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
    # The page's main heatmap: its z (queries x keys) and its title, straight from plotly in the page.
    shown = page.evaluate("() => { const g = document.querySelector('.js-plotly-plot');"
                          " return {z: g.data[0].z, title: g.layout.title.text}; }")
    z = shown["z"]  # plotly's binary form {dtype, bdata, shape}, or nested lists
    if isinstance(z, dict):
        shape = [int(s) for s in str(z["shape"]).split(",")]
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    z = np.asarray(z, dtype=float)
    assert "Layer 5, head 9" in shown["title"]
    with page.expect_download(timeout=180_000) as d:
        page.get_by_role("button", name="Open as a notebook (.ipynb)").click()
    assert d.value.suggested_filename == "bert-explorer-attention.ipynb"
    path = OUT / "notebooks" / "attention-from-browser.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    d.value.save_as(path)
    watch.assert_clean()

    t = time.perf_counter()
    nb, out = run(path.read_bytes(), timeout=600)  # a fresh kernel, offline, as a reader would run it
    print(f"attention notebook, fresh kernel: {time.perf_counter() - t:.1f} s")
    assert "TEXT = " + repr(TEXT) in "\n".join(c.source for c in nb.cells)
    rows = printed_table(out, "Attention weights (rows: queries, columns: keys)").splitlines()[1:]
    printed = np.array([[float(x) for x in r.split()[-len(rows):]] for r in rows])
    assert printed.shape == z.shape
    np.testing.assert_array_equal(printed, np.round(z, 4))


def download(pw, page, name: str) -> Path:
    """Click the page's "Open as a notebook" and save the file under tests/output/notebooks."""
    with page.expect_download(timeout=180_000) as d:
        page.get_by_role("button", name="Open as a notebook (.ipynb)").click()
    assert d.value.suggested_filename == f"bert-explorer-{name}.ipynb"
    path = OUT / "notebooks" / f"{name}-from-browser.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    d.value.save_as(path)
    pw.assert_clean()
    return path


def columns(table: str, *names: str) -> list[list[str]]:
    """The first columns of a table pandas printed, row by row (their names and values have no spaces)."""
    header, *rows = table.splitlines()
    assert header.split()[:len(names)] == list(names), header
    return [r.split()[:len(names)] for r in rows]


P_TEXT = "At the village fair the potter [MASK] a tall blue vase for the judges."  # no other test uses it


def test_predictions_notebook_prints_the_pages_top_k(watch, kernel):  # noqa: F811
    q = urllib.parse.urlencode({"text": P_TEXT, "k": 7})
    page = watch.open(f"/predictions?{q}")
    watch.assert_clean()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
    # The [MASK]'s bars, straight from plotly in the page: tokens (y) and probabilities (x), least likely first.
    bars = page.evaluate("() => { const g = [...document.querySelectorAll('.js-plotly-plot')].find("
                         "g => (g.layout.title.text || '').includes('Position ')); "
                         "return {x: Array.from(g.data[0].x), y: Array.from(g.data[0].y), "
                         "title: g.layout.title.text}; }")
    shown = list(zip(bars["y"], bars["x"]))[::-1]
    pos = int(re.search(r"Position (\d+) ", bars["title"]).group(1))
    assert len(shown) == 7
    nb, out = run(download(watch, page, "predictions").read_bytes(), kernel, timeout=600)
    src = "\n".join(c.source for c in nb.cells)
    assert "TEXT = " + repr(P_TEXT) in src and "K = 7  # " in src
    printed = columns(printed_table(out, "Top-K candidates"), "position", "rank", "token", "p")
    assert [(int(q), int(r)) for q, r, _, _ in printed] == [(pos, r) for r in range(1, 8)]
    assert [t for _, _, t, _ in printed] == [t for t, _ in shown]
    # The chart holds p to 5 decimals, the notebook prints 4: the same number, rounded once more.
    for (_, _, _, p), (_, x) in zip(printed, shown):
        assert abs(float(p) - x) <= 0.5e-4 + 0.5e-5, (p, x)


T_TEXT = "Unbelievably, the cartographers' apprentices redrew Zanzibar's coastline."  # no other test uses it


def test_tokenization_notebook_prints_the_pages_tokens_and_counts(watch, kernel):  # noqa: F811
    page = watch.open("/tokenization?" + urllib.parse.urlencode({"text": T_TEXT}))
    watch.assert_clean()
    page.wait_for_selector(".bx-tokens", timeout=180_000)
    watch.settle()  # the counts are drawn after the tokens: read them once the run has ended
    metrics = dict(m.split("\n", 1) for m in page.locator('[data-testid="stMetric"]').all_inner_texts())
    # Each highlighted piece's tooltip: "#position token (id N)", one or more per span of text.
    tips = page.locator(".bx-tokens [title]").evaluate_all("els => els.map(e => e.title)")
    chips = sorted({(int(p), t, int(i)) for tip in tips
                    for p, t, i in re.findall(r"#(\d+) (\S+) \(id (\d+)\)", tip)})
    nb, out = run(download(watch, page, "tokenization").read_bytes(), kernel, timeout=600)
    assert "TEXT = " + repr(T_TEXT) in "\n".join(c.source for c in nb.cells)
    counts = ast.literal_eval(next(ln for ln in out.splitlines() if ln.startswith("{'words'")))
    assert str(counts["words"]) == metrics["Words"].strip() and str(counts["pieces"]) == metrics["Word pieces"].strip()
    assert f"{counts['tokens']} / {counts['max tokens']}" == metrics["Tokens (with specials)"].strip()
    rows = [(int(p), t, int(i)) for p, t, i in columns(printed_table(out, "Every token"), "position", "token", "id")]
    assert rows == chips and len(rows) == counts["tokens"]
