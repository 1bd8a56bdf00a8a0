"""No page's namespace outlives its run: a class's sessions must not each keep what their pages drew.

A page script runs in a fresh namespace that holds everything it computed (traces, attention maps).
When Streamlit keeps a function defined in that script (a widget callback, a selectbox format_func,
a fragment) in the session's state, the whole namespace stays alive for as long as the session does,
on every page the user goes to next: 170 MB per session on bert-base at 512 tokens (docs/benchmarks.md, "Memory").
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from support.apptest import ROOT, assert_ok, open_page

VIEWS = ROOT / "views"
PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "layers",
         "inside_layer", "compare", "training", "finetuning", "similarity", "lesson", "tagging", "qa",
         "bert_vs_gpt", "heads", "probing", "neighbours"]


def live_page_namespaces() -> dict[int, str]:
    """{id: file name} of the page scripts' module namespaces still alive after a full collection."""
    gc.collect()
    return {id(o): Path(o["__file__"]).name for o in gc.get_objects()
            if type(o) is dict and isinstance(o.get("__file__"), str) and Path(o["__file__"]).parent == VIEWS}


@pytest.mark.parametrize("page", PAGES)
def test_a_page_namespace_is_freed_after_its_run(page):
    before = live_page_namespaces()  # what other tests' sessions may still hold (not this test's business)
    # Two [MASK]s: Predictions draws its candidate buttons and the salience selector; a pair: NSP.
    # (The Lesson has no sidebar Text box: each step has its own sentence.)
    at = open_page(page, text=None if page == "lesson" else "The cat [MASK] on the [MASK] and slept.", timeout=120)
    assert_ok(at)
    at.switch_page("views/anatomy.py").run()  # the user moves on; the page's widgets stay in state
    assert_ok(at)
    left = sorted(name for i, name in live_page_namespaces().items() if i not in before)
    assert left == [], f"namespaces kept alive by this session: {left}"


def test_bertviz_documents_do_not_stay_in_urlsplits_cache():
    """st.iframe parses its argument with urllib's cached urlsplit: each bertviz document (MBs) stayed in it."""
    import urllib.parse

    urllib.parse.urlsplit.cache_clear()
    at = open_page("attention", text="The cat [MASK] on the [MASK] and slept.", timeout=120)
    assert_ok(at)
    assert any(f.proto.srcdoc.startswith("<!DOCTYPE html>") for f in at.get("iframe"))  # bertviz was drawn
    assert urllib.parse.urlsplit.cache_info().currsize == 0
