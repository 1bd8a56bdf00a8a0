"""A step change reads the class once for all of a process's followers (ui/classroom_push._read_for); each pushed
run takes its own student's read (read_at_push), once, only for its class and student, only while fresh, and not
after the student's own vote; the reads kept are bounded in bytes."""

from __future__ import annotations

import pytest

from classroom import Question
from classroom.memory import MemoryStore
from ui import classroom_push

Q = Question("q1", "What does the model put in the gap?", ("wrote", "sent", "read"))


@pytest.fixture
def cls(monkeypatch):
    """A class with two students, each in its own (fake) session of this process; the current session is s1."""
    store = MemoryStore()
    code, secret = store.create()
    store.publish(code, secret, 4, "She [MASK] the letter.", None, Q)
    a, b = store.join(code, "Ada"), store.join(code, "Bo")
    me = ["s1"]
    monkeypatch.setattr(classroom_push, "_session", lambda: (me[0], "", "page", "frag"))
    monkeypatch.setattr(classroom_push, "_fresh", {})
    monkeypatch.setattr(classroom_push, "_fresh_bytes", [0])
    targets = [("s1", ("", "page", "frag", a)), ("s2", ("", "page", "frag", b))]
    return store, code, secret, a, b, me, targets


def test_each_pushed_run_takes_its_students_read_once(cls):
    store, code, secret, a, b, me, targets = cls
    store.vote(code, a, "q1", 1)
    classroom_push._read_for(store, code, targets)
    got = classroom_push.read_at_push(code, a)
    assert got == store.view(code, sid=a) and got.my_vote == 1
    assert classroom_push.read_at_push(code, a) is None  # taken: the next run reads the store
    me[0] = "s2"
    assert classroom_push.read_at_push(code, b) == store.view(code, sid=b)
    assert classroom_push._fresh == {} and classroom_push._fresh_bytes == [0]


def test_a_read_serves_only_its_class_and_student_and_only_while_fresh(cls, monkeypatch):
    store, code, secret, a, b, me, targets = cls
    classroom_push._read_for(store, code, targets)
    assert classroom_push.read_at_push("OTHER1", a) is None  # another class: read again (and the read dropped)
    classroom_push._read_for(store, code, targets)
    assert classroom_push.read_at_push(code, b) is None  # s1 is student a, not b (it left and joined again)
    classroom_push._read_for(store, code, targets)
    now = classroom_push.time.monotonic()
    monkeypatch.setattr(classroom_push.time, "monotonic", lambda: now + classroom_push.FRESH_S + 0.1)
    assert classroom_push.read_at_push(code, a) is None  # the run started late: the class may have moved on


def test_a_students_vote_drops_its_read(cls):
    store, code, secret, a, b, me, targets = cls
    classroom_push._read_for(store, code, targets)
    classroom_push.forget_read()  # the vote callback, before its run reads the class
    assert classroom_push.read_at_push(code, a) is None


def test_the_reads_kept_are_bounded_in_bytes(cls, monkeypatch):
    store, code, secret, a, b, me, targets = cls
    one = classroom_push.RESERVE + len("She [MASK] the letter.") + len(Q.payload())
    monkeypatch.setattr(classroom_push, "FRESH_BYTES", one + 10)  # room for one read
    classroom_push._read_for(store, code, targets)
    assert list(classroom_push._fresh) == ["s1"] and classroom_push._fresh_bytes == [one]
    classroom_push._read_for(store, code, targets)  # read again: the old read replaced, not added
    assert classroom_push._fresh_bytes == [one]
    store.publish(code, secret, 5, "A new step.", None, None)
    monkeypatch.setattr(classroom_push, "FRESH_BYTES", 1)  # no room: no read kept, and no older read serves
    classroom_push._read_for(store, code, targets)
    assert classroom_push._fresh == {} and classroom_push.read_at_push(code, a) is None
    monkeypatch.setattr(classroom_push, "FRESH_BYTES", one + 10)
    store.end(code, secret)
    classroom_push._read_for(store, code, targets)  # the class is gone: nothing kept, each run reads and says so
    assert classroom_push._fresh == {} and classroom_push._fresh_bytes == [0]
