"""A step change reaches a following student as a rerun of the Lesson's fragment, not of the whole page; a vote
reaches the teacher's count and the student's own count at once.

Over real websockets and the class's event streams on the session's shared server (support/wsclient.py's Client, as
benchmarks/class_load.py drives a lecture hall): the event the teacher's Next sends must make the follower's listener
rerun a fragment (app.py, the navigation and the sidebar do not run again) that draws the new step, its question and
the vote box; a student's vote reruns the teacher's count and the student's own (fragments) without their timers.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import urllib.parse

import pytest
from support.appserver import app_server
from support.apptest import ROOT
from support.paths import worker_suffix
from support.wsclient import Client, problems_of

from classroom.redis_store import RedisStore
from ui.lesson.live_class import session

pytestmark = pytest.mark.server  # a real Streamlit server (and redis-server), spoken to over its websocket
COUNT = re.compile(r"\*\*(\d+) of (\d+)\*\* students have answered")
OWN_COUNT = re.compile(r"\*\*(\d+) of (\d+)\*\* have answered this step")  # a student's own, in the side column


async def _started(teacher: Client, student: Client, nick: str):
    """The teacher starts a class on the Lesson's step 1 and the student joins it: (code, the join's run)."""
    for c in (teacher, student):
        await c.connect()
        await c.rerun("lesson", query="step=1")
    await teacher.rerun(widgets={"class_start": True})
    code = urllib.parse.parse_qs(teacher.page_query)["class"][0]
    return code, await student.rerun(widgets={"class_join_code": code, "class_nick": nick, "class_join": True})


def _on_events(c: Client, runs: list) -> None:
    """The client's listeners rerun their fragments on each event (as the component does); `runs` gets those runs."""
    async def rerun(fragment, trigger, value):
        runs.append(await c.rerun(fragment=fragment, auto=False, events={trigger: value}))

    c.on_event = lambda key, fragment, trigger, value: asyncio.get_running_loop().create_task(
        rerun(fragment, trigger, value))


async def _class(base: str) -> tuple[list, list, list, list]:
    teacher, student = Client(base, ping_timeout=None), Client(base, ping_timeout=None)
    pushed, counted, own = [], [], []
    try:
        code, joined = await _started(teacher, student, "fragment test")
        assert "me=" in student.page_query, student.page_query
        _on_events(student, pushed)
        await teacher.rerun(widgets={"lesson_next": True})
        deadline = time.monotonic() + 60
        while not pushed and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # a second run (a whole page's, if any) would come now
        # The student votes; the teacher's client runs no timer: only the class's event can redraw its count.
        _on_events(teacher, counted)
        key = next(e.id.split("-", 2)[-1] for e in pushed[0].of("radio") if "class_vote_" in e.id)
        fragment = student.widget_fragments.get(key) or None
        # A forged message first: a value that is none of the radio's options (an attacker's websocket, not a browser).
        forged = await student.rerun(widgets={key: "NOT AN OPTION"}, fragment=fragment, auto=False)
        # The student's client runs no timer either: its count is redrawn by the vote's run (which runs the count's
        # fragment after the step's) or by the event of the student's own vote.
        _on_events(student, own)
        own.append(await student.rerun(widgets={key: student_choice(pushed[0], key)}, fragment=fragment, auto=False))
        deadline = time.monotonic() + 30
        while not (any(_count(r) == 1 for r in counted) and any(_own_count(r) == 1 for r in own)) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        return [joined, forged], pushed, counted, own
    finally:
        student.on_event = teacher.on_event = lambda *a: None  # the class's end: not a step change
        try:
            await teacher.rerun(widgets={"class_end": True}, timeout=60)  # the shared server as it was: no class
        finally:
            for c in (teacher, student):
                await c.close()


def student_choice(run, key: str) -> str:
    """The first option of the vote box `key` (a radio's value is its label)."""
    return next(e for e in run.of("radio") if e.id.endswith(key)).options[0]


def _count(run, pattern=COUNT) -> int | None:
    return next((int(m.group(1)) for e in run.of("markdown") for m in [pattern.search(e.body)] if m), None)


def _own_count(run) -> int | None:
    return _count(run, OWN_COUNT)


def test_next_reruns_only_the_followers_lesson_fragment_and_a_vote_the_teachers_count(shared_app_server):
    (joined, forged), pushed, counted, own = asyncio.run(_class(shared_app_server))
    assert not problems_of(forged), problems_of(forged)  # a forged vote is ignored, not an exception on the page
    steps = [h.body for h in joined.of("heading") if h.body.startswith("Step ")]  # the sidebar's h1 comes first
    assert not joined.fragment and steps[0].startswith("Step 1 of"), [h.body for h in joined.of("heading")]
    assert pushed, "the teacher's Next reran nothing on the following student's page"
    assert all(r.fragment for r in pushed), "a step change reran the follower's whole page (app.py and all)"
    run = pushed[0]
    assert [h.body for h in run.of("heading")][0].startswith("Step 2 of"), [h.body for h in run.of("heading")]
    assert any((r.id or "").split("-", 2)[-1].startswith("class_vote_") for r in run.of("radio"))
    assert any(r.fragment and _count(r) == 1 for r in counted), "a vote did not redraw the teacher's count at once"
    # The student's own count in the side column too (it said "0 of 1" beside "Your vote" until its timer).
    assert any(r.fragment and _own_count(r) == 1 for r in own), [(r.fragment, _own_count(r)) for r in own]


async def _grown_class(base: str, redis_url: str) -> tuple[dict, dict, list]:
    """A student joins a class of one (a short timer), the class then grows past 30 seats: the student's next two
    ticks. Returns the student's timers before and after, and the runs of its ticks."""
    teacher, student = Client(base, ping_timeout=None), Client(base, ping_timeout=None)
    try:
        code, _ = await _started(teacher, student, "early")
        before = dict(student.fragments)
        store = RedisStore(redis_url, join_rate=1000)  # the app's store, as the other seats' tabs would fill it
        for i in range(40):
            store.join(code, f"late {i}")
        fid = next(f for f, every in before.items() if 2.0 <= every < 3.0)  # the count's timer (tick 2 s)
        ticks = [await student.rerun(fragment=fid, timeout=60) for _ in range(2)]  # it reads 41; its next is slower
        return before, dict(student.fragments), ticks
    finally:
        try:
            await teacher.rerun(widgets={"class_end": True}, timeout=60)
        finally:
            for c in (teacher, student):
                await c.close()


def test_a_grown_class_slows_a_students_timer_without_a_whole_run(redis_url):
    # A class of 200 that joined within seconds reran 120 students' whole pages (25-55 ms each) to slow their
    # timers, over its first step change: the count's timer is its listener's, which the count's own run redraws.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_CLASS_STORE": redis_url,
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(ROOT / "tests" / "output" / f"server-class-grow{worker_suffix()}.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (base, _):
        before, after, ticks = asyncio.run(_grown_class(base, redis_url))
    assert all(t.fragment and not problems_of(t) for t in ticks), [problems_of(t) for t in ticks]  # no whole run
    assert any(re.search(r"\b41\b", e.body) for e in ticks[0].of("markdown")), "the tick did not read the class of 41"
    fid = next(f for f, every in before.items() if 2.0 <= every < 3.0)
    assert set(after) == set(before)  # the same timers, no new fragment
    grown = session.student_tick(41)
    assert grown == 4.0 and grown <= after[fid] < 1.5 * grown, (before, after)  # slower, in place
    assert all(after[f] == every for f, every in before.items() if f != fid)
