"""A class's push starts its students' reruns in waves: at most WAVE under way, the next as one ends, a run never
seen to end frees its place after WAVE_WAIT, a student pushed again while running reruns once more after, and a
closed tab or a fragment a whole run replaced is skipped. The runtime and its sessions are stand-ins that record
the requests Streamlit's AppSession.request_rerun would get (the real push is tests/classroom/test_push_fragment.py).
"""

from __future__ import annotations

import time

import pytest

from ui import classroom_push as cp


class FakeSession:
    def __init__(self, sid: str, log: list, fragments: set):
        self.sid, self.log, self.fragments = sid, log, fragments

    def has_fragment(self, fid: str) -> bool:
        return fid in self.fragments

    def request_rerun(self, cs) -> None:
        self.log.append((self.sid, cs.fragment_id, cs.query_string))


class FakeRuntime:
    def __init__(self):
        self.log: list = []
        self.sessions: dict[str, FakeSession] = {}

    def get_app_session(self, sid: str):
        return self.sessions.get(sid)


@pytest.fixture
def rt(monkeypatch):
    fake = FakeRuntime()
    monkeypatch.setattr(cp.runtime, "exists", lambda: True)
    monkeypatch.setattr(cp.runtime, "get_instance", lambda: fake)
    for name in ("_followers", "_queue", "_running"):  # this process's own classes are not touched
        monkeypatch.setattr(cp, name, {})
    monkeypatch.setattr(cp, "_pump_timer", [])
    yield fake
    for t in cp._pump_timer:
        t.cancel()


def students(rt: FakeRuntime, code: str, n: int) -> list[str]:
    sids = [f"s{i}" for i in range(n)]
    for sid in sids:
        rt.sessions[sid] = FakeSession(sid, rt.log, {f"frag-{sid}"})
        cp._followers.setdefault(code, {})[sid] = (f"class={code}", "page", f"frag-{sid}")
    return sids


def end(monkeypatch, sid: str) -> None:
    """The Lesson run of session `sid` ends (what `_lesson` does in its finally)."""
    monkeypatch.setattr(cp, "_session", lambda: (sid, "", "page", f"frag-{sid}"))
    cp._ended()


def test_a_push_runs_in_waves_and_each_end_starts_the_next(rt, monkeypatch):
    sids = students(rt, "ABC", cp.WAVE + 3)
    assert cp.push("ABC") == cp.WAVE + 3
    assert [s for s, _, _ in rt.log] == sids[: cp.WAVE]  # the first wave, in the order they joined
    assert all(f == f"frag-{s}" and q == "class=ABC" for s, f, q in rt.log)
    end(monkeypatch, sids[0])
    assert [s for s, _, _ in rt.log] == sids[: cp.WAVE + 1]
    end(monkeypatch, "not-pushed")  # a run the push did not start frees nothing
    assert len(rt.log) == cp.WAVE + 1
    for sid in sids[1: cp.WAVE + 1]:
        end(monkeypatch, sid)
    assert [s for s, _, _ in rt.log] == sids  # every student once
    assert not cp._queue


def test_a_student_pushed_again_while_running_reruns_after_and_a_stuck_run_frees_its_place(rt, monkeypatch):
    monkeypatch.setattr(cp, "WAVE_WAIT", 0.2)
    sids = students(rt, "ABC", cp.WAVE + 1)
    cp.push("ABC")
    cp.push("ABC")  # the reveal right after the step: the running ones wait for their own run to end
    assert [s for s, _, _ in rt.log] == sids[: cp.WAVE]
    end(monkeypatch, sids[0])  # its place goes to the one still waiting its first turn, then s0 again
    assert [s for s, _, _ in rt.log][cp.WAVE:] == [sids[cp.WAVE]]
    deadline = time.monotonic() + 5  # nobody else ends: the timer frees the places after WAVE_WAIT
    while len(rt.log) < 2 * cp.WAVE + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3 * cp.WAVE_WAIT)
    # each running one's second run, once; the last one's first run started after both pushes: no second one
    assert sorted(s for s, _, _ in rt.log[cp.WAVE + 1:]) == sids[: cp.WAVE]
    assert not cp._queue


def test_closed_tabs_and_replaced_fragments_are_skipped(rt, monkeypatch):
    sids = students(rt, "ABC", cp.WAVE + 2)
    del rt.sessions[sids[0]]  # the tab was closed
    rt.sessions[sids[1]].fragments.clear()  # a whole run replaced the Lesson's fragment
    cp.push("ABC")
    assert [s for s, _, _ in rt.log] == sids[2: cp.WAVE + 2]
    assert sids[0] not in cp._followers["ABC"] and sids[1] in cp._followers["ABC"]
