"""The app extends Streamlit through its public API only: no product module imports Streamlit's runtime, protos or
script runner or web server (`streamlit.web`), reads a private `st._x`, or assigns to a Streamlit attribute (`st.x =`,
`setattr(st, ...)`). The one private read left (closed sessions' store, no public way:
streamlit/streamlit#12506) lives in server/streamlit_private.py, whose canary is in tests/app/test_housekeeping.py."""

from __future__ import annotations

import re

from support.apptest import ROOT

PRODUCT = ["app.py", "ui", "views", "classroom", "bert_core", "server"]
ADAPTER = ROOT / "server" / "streamlit_private.py"
INTERNALS = re.compile(r"streamlit\.runtime|streamlit\.proto|scriptrunner|Runtime\.instance|_session_mgr|app_session"
                       r"|streamlit\.web\b|\b(?:st|streamlit)\._\w|setattr\(\s*(?:st|streamlit)\b"
                       r"|^\s*(?:st|streamlit)\.(?!session_state\b)[\w.]+\s*=(?!=)", re.M)


def _product_files():
    for part in PRODUCT:
        path = ROOT / part
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def test_no_product_module_reaches_into_streamlits_internals():
    found = [f"{p.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0).strip()}"
             for p in _product_files() if p != ADAPTER
             for text in [p.read_text()] for m in INTERNALS.finditer(text)]
    assert not found, found


def test_the_guard_sees_what_it_forbids(tmp_path):
    """The pattern catches the forms the old push used (a check that cannot fail proves nothing)."""
    for line in ("from streamlit.runtime import app_session", "from streamlit.proto.ForwardMsg_pb2 import ForwardMsg",
                 "rt = Runtime.instance()", "st.foo = bar", "from streamlit.runtime.scriptrunner import x",
                 "from streamlit.web import cli", "import streamlit.web.bootstrap", "ctx = st._main",
                 "streamlit._config.get_option('x')", "setattr(st, 'button', fake)",
                 "setattr(streamlit.runtime, 'x', 1)"):
        assert INTERNALS.search(line), line
    assert not INTERNALS.search("st.session_state['x'] == 1") and not INTERNALS.search("st.button('Next')")
    assert not INTERNALS.search("first._x = 1") and not INTERNALS.search("setattr(state, 'x', 1)")
