"""No page's namespace outlives its run: a class's sessions must not each keep what their pages drew.

A page script runs in a fresh namespace that holds everything it computed (traces, attention maps).
When Streamlit keeps a function defined in that script (a widget callback, a selectbox format_func,
a fragment) in the session's state, the whole namespace stays alive for as long as the session does,
on every page the user goes to next: 170 MB per session on bert-base at 512 tokens (docs/benchmarks.md, "Memory").
"""

from __future__ import annotations

import gc
from pathlib import Path

from support.apptest import ROOT, assert_ok, lesson_session, open_page

VIEWS = ROOT / "views"
# The Lesson first: the session's own first page.
PAGES = ["lesson", "tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "layers",
         "inside_layer", "compare", "training", "finetuning", "similarity", "tagging", "qa", "bert_vs_gpt", "heads",
         "probing", "neighbours"]
TEXT = "The cat [MASK] on the [MASK] and slept."


def live_page_namespaces() -> dict[int, str]:
    """{id: file name} of the page scripts' module namespaces still alive after a full collection."""
    gc.collect()
    return {id(o): Path(o["__file__"]).name for o in gc.get_objects()
            if type(o) is dict and isinstance(o.get("__file__"), str) and Path(o["__file__"]).parent == VIEWS}


def test_no_page_namespace_outlives_its_run():
    """Page by page in one session, as a user goes through the app: each page runs (with two [MASK]s in the text:
    Predictions draws its candidate buttons and the salience selector), the user moves on to Model anatomy (the
    page's widgets stay in state), and no page script's namespace is left alive. One session walks them all, as a
    user does: the namespaces alive before a page ran are not its business (another session's, or a page before
    it that is reported under its own name). The Lesson opens the session (it is the root; it has no sidebar Text
    box: each step has its own sentence), then the text is set once and every page after it keeps it."""
    left, before = {}, live_page_namespaces()
    at = lesson_session()  # the session's first run: the Lesson, at the root
    for page in PAGES:
        if page != "lesson":
            at.switch_page(f"views/{page}.py").run()
            box = at.sidebar.text_area(key="text")
            if box.value != TEXT:
                box.set_value(TEXT).run()
        assert_ok(at)
        at.switch_page("views/anatomy.py").run()  # the user moves on; the page's widgets stay in state
        assert_ok(at)
        now = live_page_namespaces()
        kept = sorted(name for i, name in now.items() if i not in before)
        if kept:
            left[page] = kept
        before = now
    assert left == {}, f"namespaces kept alive by a session, by the page it left: {left}"


def test_bertviz_documents_do_not_stay_in_urlsplits_cache():
    """st.iframe parses its argument with urllib's cached urlsplit: each bertviz document (MBs) stayed in it."""
    import urllib.parse

    urllib.parse.urlsplit.cache_clear()
    at = open_page("attention", text=TEXT, timeout=120)
    assert_ok(at)
    assert any(f.proto.srcdoc.startswith("<!DOCTYPE html>") for f in at.get("iframe"))  # bertviz was drawn
    assert urllib.parse.urlsplit.cache_info().currsize == 0
