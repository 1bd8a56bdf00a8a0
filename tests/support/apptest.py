"""Helpers for AppTest-driven page tests."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_page(page: str, *, text: str | None = None, pair: str | None = None, timeout: float = 60,
              query: dict | None = None) -> AppTest:
    """Run app.py, switch to `views/<page>.py`, set the sidebar text, and return the AppTest."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    at.switch_page(f"views/{page}.py")
    at.run()
    if text is not None:
        at.sidebar.text_area(key="text").set_value(text)
    if pair is not None:
        at.sidebar.checkbox(key="use_pair").check()
        at.run()
        at.sidebar.text_area(key="pair").set_value(pair)
    if text is not None or pair is not None:
        at.run()
    return at


def assert_ok(at: AppTest) -> None:
    """No exception element and no uncaught error on the page."""
    assert not at.exception, [e.value for e in at.exception]


def lesson_session(query: dict | None = None) -> AppTest:
    """A browser opening the Lesson (the landing page) with this query."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    return at
