"""A class's change is read once for all of a process's followers of it (ui/reads._read_for, before the
change's event goes out); each run of a follower takes its seat's read (read_at_push), once, only for its class and
seat, only while fresh, and not after the student's own vote; the reads kept are bounded in bytes."""

from __future__ import annotations

import types

import pytest

from classroom import Question
from classroom.memory import MemoryStore
from ui.lesson.live_class import reads

Q = Question("q1", "What does the model put in the gap?", ("wrote", "sent", "read"))


@pytest.fixture
def cls(monkeypatch):
    """A class with two students following it in this process; this session is student a's."""
    store = MemoryStore()
    code, secret = store.create()
    store.publish(code, secret, 4, "She [MASK] the letter.", None, Q)
    a, b = store.join(code, "Ada"), store.join(code, "Bo")
    now = reads.time.monotonic()
    monkeypatch.setattr(reads, "_followers", {code: {a: now, b: now}})
    monkeypatch.setattr(reads, "_fresh", {})
    monkeypatch.setattr(reads, "_fresh_bytes", [0])
    monkeypatch.setattr(reads, "st", types.SimpleNamespace(session_state={reads.FOLLOWING:
                                                                                   (code, a)}))
    return store, code, secret, a, b


def test_each_run_takes_its_seats_read_once(cls):
    store, code, secret, a, b = cls
    store.vote(code, a, "q1", 1)
    reads._read_for(store, code)
    got = reads.read_at_push(code, a)
    assert got == store.view(code, sid=a) and got.my_vote == 1
    assert reads.read_at_push(code, a) is None  # taken: the next run reads the store
    assert reads.read_at_push(code, b) == store.view(code, sid=b)
    assert reads._fresh == {} and reads._fresh_bytes == [0]


def test_a_read_serves_only_its_class_and_seat_and_only_while_fresh(cls, monkeypatch):
    store, code, secret, a, b = cls
    reads._read_for(store, code)
    assert reads.read_at_push("OTHER1", a) is None  # another class: read again
    assert reads.read_at_push(code, None) is None
    reads._read_for(store, code)
    now = reads.time.monotonic()
    monkeypatch.setattr(reads.time, "monotonic", lambda: now + reads.FRESH_S + 0.1)
    assert reads.read_at_push(code, a) is None  # the run started late: the class may have moved on


def test_followers_not_seen_for_a_while_are_not_read_for(cls, monkeypatch):
    store, code, secret, a, b = cls
    reads._followers[code][b] -= reads.FOLLOW_TTL + 1  # b's tab closed long ago
    reads._read_for(store, code)
    assert set(reads._fresh) == {(code, a)}


def test_a_students_vote_drops_its_read(cls):
    store, code, secret, a, b = cls
    reads._read_for(store, code)
    reads.forget_read()  # the vote callback, before its run reads the class
    assert reads.read_at_push(code, a) is None
    assert reads.read_at_push(code, b) is not None  # another seat's read stays


def test_the_reads_kept_are_bounded_in_bytes(cls, monkeypatch):
    store, code, secret, a, b = cls
    one = reads.RESERVE + len("She [MASK] the letter.") + len(Q.payload())
    monkeypatch.setattr(reads, "FRESH_BYTES", one + 10)  # room for one read
    reads._read_for(store, code)
    assert len(reads._fresh) == 1 and reads._fresh_bytes == [one]
    reads._read_for(store, code)  # read again: the old read replaced, not added
    assert reads._fresh_bytes == [one]
    store.publish(code, secret, 5, "A new step.", None, None)
    monkeypatch.setattr(reads, "FRESH_BYTES", 1)  # no room: no read kept, and no older read serves
    reads._read_for(store, code)
    assert reads._fresh == {} and reads.read_at_push(code, a) is None
    monkeypatch.setattr(reads, "FRESH_BYTES", one + 10)
    store.end(code, secret)
    reads._read_for(store, code)  # the class is gone: nothing kept, each run reads and says so
    assert reads._fresh == {} and reads._fresh_bytes == [0]


def test_a_run_keeps_the_event_number_from_before_its_read(cls):
    """A change between the run's read and its listener's drawing is then heard as new: the step reruns again."""
    from server import events

    store, code, secret, a, b = cls
    before = events.HUB.seq(f"step:{code}")
    reads.read_at_push(code, a)  # the run is about to read the class
    events.HUB.publish(f"step:{code}")  # the teacher moves meanwhile
    assert reads.st.session_state[reads.SEEN] == (code, before)
