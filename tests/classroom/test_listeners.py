"""Which pages listen for a class's events (ui/lesson/live_class/push.py's components): a following student's step
listens to the class's step, the teacher's count to the class's votes, a student's own count to its seat (a removal)
with its timer; a student exploring on their own listens to no step; each listener is drawn with the event number its
run has seen."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from support.apptest import assert_ok
from support.apptest import lesson_session as page

import classroom
from server import events

LISTENER = "bert_explorer.class_events"


@pytest.fixture
def in_process(monkeypatch):
    """The app's own in-process class store (BERT_EXPLORER_CLASS_STORE unset)."""
    monkeypatch.delenv(classroom.ENV, raising=False)


def topics(at) -> dict[str | None, dict]:
    """The topics this page's listeners listen to (None: a timer only) -> their data."""
    out = {}
    for e in at.get("bidi_component"):
        if e.proto.component_name == LISTENER:
            data = json.loads(e.proto.json)
            query = urllib.parse.urlsplit(data.get("url", "")).query
            out[urllib.parse.parse_qs(query)["topic"][0] if query else None] = data
    return out


def test_each_page_listens_to_what_it_redraws(in_process):
    t = page()
    t.button(key="class_start").click().run()
    code = t.session_state["class_code"]
    s = page({"class": code})
    s.button(key="class_join").click().run()
    assert_ok(s)
    assert set(topics(t)) == {f"votes:{code}"}
    mine, seat = topics(s), f"seat:{code}:{s.session_state['class_sid']}"
    assert set(mine) == {f"step:{code}", seat}  # the seat's: the teacher's Remove reruns the count at once
    assert 2.0 <= mine[seat]["every"] < 3.0  # the count's timer: a class of one ticks every 2 s, spread by the seat
    step = mine[f"step:{code}"]
    assert step["epoch"] == events.EPOCH and step["seen"] == events.HUB.seq(f"step:{code}")
    assert step["url"].startswith("api/class-events?")  # relative: a proxy's prefix stays in front of it
    s.toggle(key="class_follow").set_value(False).run()  # the student explores on their own
    assert f"step:{code}" not in topics(s)
