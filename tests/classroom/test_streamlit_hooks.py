"""The theme part of Streamlit's new-session message, which ui/classroom_push.py builds once per config instead of
once per run, is byte for byte Streamlit's own, and follows a changed option; the Streamlit internal it hooks is
still where the hook expects it (this test fails when a Streamlit upgrade moves it)."""

from __future__ import annotations

import inspect

import pytest
from streamlit import config
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime import app_session

from ui import classroom_push

SECTIONS = ("theme.light", "theme.dark", "theme.sidebar", "theme.light.sidebar", "theme.dark.sidebar")


def _theme(populate) -> bytes:
    """The new-session message's theme, filled as AppSession._create_new_session_message fills it."""
    msg = ForwardMsg()
    theme = msg.new_session.custom_theme
    populate(theme)
    for section in SECTIONS:
        sub = theme
        for part in section.split(".")[1:]:
            sub = getattr(sub, part)
        populate(sub, section)
    return msg.SerializeToString()


@pytest.fixture
def options():
    """Theme options set by the test, put back afterwards (the config is the process's)."""
    opts = config.get_config_options()
    saved = {k: (o.value, o.where_defined) for k, o in opts.items() if k.startswith("theme.")}
    yield config.set_option
    for k, (v, where) in saved.items():
        opts[k].set_value(v, where)


def test_the_hook_is_installed_on_the_internal_streamlit_calls():
    hooked = app_session._populate_theme_msg
    assert getattr(hooked, "cached_by_bert_explorer", False), "ui.classroom_push did not install its theme cache"
    classroom_push.cache_theme_messages()  # a second install keeps the one hook
    assert app_session._populate_theme_msg is hooked
    # AppSession builds each run's new-session message through the module's function, by name, for six sections:
    # if Streamlit stops doing that, the hook caches nothing (or something else): this test must then change.
    src = inspect.getsource(app_session.AppSession._create_new_session_message)
    assert src.count("_populate_theme_msg(") == 6, src
    assert list(inspect.signature(hooked.original).parameters) == ["msg", "section"]


def test_the_cached_theme_message_is_streamlits_own_and_follows_the_config(options, monkeypatch):
    original, hooked = app_session._populate_theme_msg.original, app_session._populate_theme_msg
    monkeypatch.setattr(classroom_push, "THEME_RECHECK", 0.0)  # options looked at on every call (1 s in the app)
    assert _theme(hooked) == _theme(original)  # the app's own config (.streamlit/config.toml)
    options("theme.primaryColor", "#123456")
    options("theme.dark.textColor", "#00ff00")
    options("theme.sidebar.backgroundColor", "#abcdef")
    with_theme = _theme(original)
    assert b"#123456" in with_theme and b"#00ff00" in with_theme and b"#abcdef" in with_theme
    assert _theme(hooked) == with_theme
    assert _theme(hooked) == with_theme  # from the cache
    options("theme.primaryColor", "#654321")  # a changed option is built again, not served stale
    changed = _theme(hooked)
    assert changed == _theme(original) and b"#654321" in changed and b"#123456" not in changed
    monkeypatch.setattr(classroom_push, "THEME_RECHECK", 3600.0)  # inside the recheck time: the kept message
    options("theme.primaryColor", "#0f0f0f")
    assert _theme(hooked) == changed
    monkeypatch.setattr(classroom_push, "THEME_RECHECK", 0.0)  # and once it is over, the option set meanwhile
    assert b"#0f0f0f" in _theme(hooked) and _theme(hooked) == _theme(original)
