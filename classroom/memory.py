"""The in-process class store: one Streamlit process (Community Cloud, a laptop), bounded in bytes, idle classes expire.

Each class is a dict of string fields (the layout in classroom/store.py), guarded by one lock; the
operations below are the same steps, in the same order, as the Lua scripts of the Redis store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from classroom import codes, limits
from classroom.limits import EMPTY_IDLE_MINUTES, EMPTY_SHARE, JOIN_ADDRESS, JOIN_CLASS, SEAT_VOTES, STARTS, Rate
from classroom.store import (
    IDLE_HOURS,
    JOIN_ADDRESS_SLOW,
    JOIN_CLASS_SLOW,
    PRESENT_SECONDS,
    SEAT_CAP,
    START_SLOW,
    VOTE_SLOW,
    ClassError,
    ClassFull,
    ClassLocked,
    ClassStore,
    NicknameTaken,
    NoSuchClass,
    NotInClass,
    NotTeacher,
    Question,
    RateLimited,
    SeatRemoved,
    StoreFull,
    View,
    VoteCap,
    VotingClosed,
    check_publish,
    view_from,
)

FIELD_OVERHEAD = 120  # bytes per field beyond its characters: the dict entry and two str objects (CPython)
DEFAULT_MB = float(os.environ.get("BERT_EXPLORER_CLASS_MB", "32"))
MAX_SOURCES = 20_000  # start buckets kept (address or browser); the least recently used forgotten (~3 MB)


class _Class:
    """One class's fields and their size in bytes (kept up to date on every write)."""

    __slots__ = ("fields", "bytes", "touched")

    def __init__(self, now: float):
        self.fields: dict[str, str] = {}
        self.bytes = 0
        self.touched = now

    def get(self, k: str, default: str | None = None) -> str | None:
        return self.fields.get(k, default)

    def set(self, k: str, v) -> None:
        v = str(v)
        old = self.fields.get(k)
        self.bytes += len(v.encode()) - (len(old.encode()) if old is not None else -len(k.encode()) - FIELD_OVERHEAD)
        self.fields[k] = v

    def incr(self, k: str, by: int = 1) -> int:
        n = int(self.fields.get(k, "0")) + by
        self.set(k, n)
        return n


class MemoryStore(ClassStore):
    """Classes in this process's memory: at most `max_bytes` in all; a class idle `idle_seconds` is dropped."""

    def __init__(self, max_bytes: float = DEFAULT_MB * 2**20, idle_seconds: float = IDLE_HOURS * 3600,
                 clock: Callable[[], float] = time.monotonic, join_rate: int | None = None,
                 empty_idle_seconds: float = EMPTY_IDLE_MINUTES * 60):
        self.max_bytes, self.idle_seconds, self.clock = int(max_bytes), idle_seconds, clock
        self.empty_idle_seconds = min(empty_idle_seconds, idle_seconds)
        self.join_class = JOIN_CLASS if join_rate is None else Rate(join_rate, join_rate / 10)
        self.join_address, self.seat_votes, self.starts = JOIN_ADDRESS, SEAT_VOTES, STARTS
        self._classes: dict[str, _Class] = {}
        self._starts: OrderedDict[str, str] = OrderedDict()  # a source's start bucket
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ housekeeping
    @property
    def bytes_used(self) -> int:
        with self._lock:
            return sum(c.bytes for c in self._classes.values())

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._classes)

    def _idle(self, c: _Class, now: float) -> bool:
        """Gone for want of activity: a class with students after the idle hours, an empty one after minutes."""
        return now - c.touched > (self.idle_seconds if int(c.get("n_students")) > 0 else self.empty_idle_seconds)

    def _expire(self) -> None:
        now = self.clock()
        for code in [k for k, c in self._classes.items() if self._idle(c, now)]:
            del self._classes[code]

    def _get(self, code: str) -> _Class:
        code = codes.clean_code(code)
        c = self._classes.get(code) if code else None
        if c is None or self._idle(c, self.clock()):
            if code:
                self._classes.pop(code, None)
            raise NoSuchClass()
        return c

    def _room(self, students: bool, more: int = 2048) -> None:
        """Refuse a write that would take its share past the byte budget: classes no student has joined (and a new
        one) share EMPTY_SHARE of it; classes with students the rest, which empty ones never reach."""
        empty_budget = int(self.max_bytes * EMPTY_SHARE)
        for attempt in (0, 1):
            empty = sum(x.bytes for x in self._classes.values() if x.get("n_students") == "0")
            full = sum(x.bytes for x in self._classes.values()) - empty
            if not students:
                ok = empty + more <= empty_budget
            else:
                ok = full + more <= self.max_bytes - empty_budget
            if ok:
                return
            if attempt == 0:
                self._expire()
        raise StoreFull()

    def _take_start(self, source: str | None, now_ms: int) -> float:
        """Seconds until this source may start a class (0: now); nothing is taken."""
        if source is None:
            return 0.0
        ok, _, wait = self.starts.take(self._starts.get(source), now_ms)
        return 0.0 if ok else wait

    def _took_start(self, source: str | None, now_ms: int) -> None:
        if source is None:
            return
        self._starts[source] = self.starts.take(self._starts.get(source), now_ms)[1]
        self._starts.move_to_end(source)
        while len(self._starts) > MAX_SOURCES:
            self._starts.popitem(last=False)

    def _teacher(self, code: str, secret: str | None) -> _Class:
        c = self._get(code)
        if not codes.secret_matches(secret, c.get("secret")):
            raise NotTeacher()
        c.touched = self.clock()
        return c

    # ------------------------------------------------------------------ the interface
    def create(self, *, client=None, device=None) -> tuple[str, str]:
        sources = [limits.source_key("start-address", client),
                   limits.source_key("start-device", device if codes.clean_id(device) else None)]
        with self._lock:
            now = self._now_ms()
            wait = max(self._take_start(src, now) for src in sources)
            if wait > 0:
                raise RateLimited(START_SLOW, wait)
            if sum(1 for c in self._classes.values() if c.get("n_students") == "0") >= self.max_empty:
                self._expire()
                if sum(1 for c in self._classes.values() if c.get("n_students") == "0") >= self.max_empty:
                    raise StoreFull("classes waiting for their first student")
            self._room(False)
            for src in sources:
                self._took_start(src, now)
            code = codes.new_code()
            while code in self._classes:
                code = codes.new_code()
            secret = codes.new_id()
            c = _Class(self.clock())
            for k, v in {"secret": codes.hash_secret(secret), "step": 1, "text": "", "pair": "", "has_pair": 0,
                         "qid": "", "q": "", "nc": 0, "split": 0, "revealed": 0, "answer": "", "n_students": 0,
                         "n_actions": 0, "n_questions": 0, "n_revealed": 0, "seq": 0, "n_seq": 0, "n_present": 0,
                         "locked": 0, "model": ""}.items():
                c.set(k, v)
            self._classes[code] = c
            return code, secret

    def is_teacher(self, code: str, secret: str | None) -> bool:
        with self._lock:
            try:
                self._teacher(code, secret)
                return True
            except ClassError:
                return False

    def publish(self, code, secret, step, text, pair, question: Question | None, model: str = "") -> None:
        step, text, pair_s, model = check_publish(step, text, pair, model)
        screen = ("step", "text", "pair", "has_pair", "qid", "model")
        with self._lock:
            c = self._teacher(code, secret)
            grows = len(text) + len(pair_s) + len(model) - sum(len(c.get(k) or "") for k in ("text", "pair", "model"))
            if grows > 0:  # a longer sentence takes its share's room too (bytes: up to 4 a character)
                self._room(c.get("n_students") != "0", 4 * grows)
            before = tuple(c.get(k) for k in screen)
            qid = question.qid if question else ""
            new_q = qid != c.get("qid")
            if new_q and qid and f"p:{qid}" not in c.fields:
                if int(c.get("n_questions")) >= self.max_questions:
                    raise ClassError(f"This class has shown its {self.max_questions} questions; start a new class.")
                self._room(c.get("n_students") != "0")
                c.set(f"p:{qid}", 1)
                c.incr("n_questions")
            c.set("step", step)
            c.set("text", text)
            c.set("pair", pair_s)
            c.set("has_pair", int(pair is not None))
            c.set("model", model)
            if new_q:
                c.set("q", question.payload() if question else "")
                c.set("nc", len(question.choices) if question else 0)
                c.set("qid", qid)
                done = c.get(f"r:{qid}") if qid else None  # back to a question already revealed: it stays so
                c.set("split", int(done is not None))
                c.set("revealed", int(done is not None))
                c.set("answer", json.loads(done)["answer"] if done else "")
            changed = tuple(c.get(k) for k in screen) != before
            if changed:
                c.incr("seq")
        if changed:
            self._changed(codes.clean_code(code))

    def show_split(self, code, secret, on=True) -> None:
        with self._lock:
            self._teacher(code, secret).set("split", int(bool(on)))

    def reveal(self, code, secret, qid, answer) -> None:
        with self._lock:
            c = self._teacher(code, secret)
            if not qid or qid != c.get("qid"):
                raise ClassError("That question is no longer on the class's screen.")
            if not isinstance(answer, int) or not 0 <= answer < int(c.get("nc")):
                raise ClassError("No such choice.")
            if c.get("revealed") == "1":
                return
            c.set("revealed", 1)
            c.set("split", 1)
            c.set("answer", answer)
            d = json.loads(c.get("q"))
            text = c.get("text") + (f" · B: {c.get('pair')}" if c.get("has_pair") == "1" else "")
            c.set(f"r:{qid}", json.dumps({"n": c.incr("n_revealed"), "step": int(c.get("step")), "text": text,
                                          "prompt": d["prompt"], "choices": d["choices"], "answer": answer,
                                          "model": c.get("model") or ""}))
            c.incr("seq")
        self._changed(codes.clean_code(code))

    def join(self, code, nickname="", seat=None, *, client=None, device=None) -> str:
        nick = codes.clean_nickname(nickname)
        seat = seat if codes.clean_id(seat) else device
        seat_h = codes.hash_seat(seat) if codes.clean_id(seat) else None
        addr = limits.source_key("address", client)
        with self._lock:
            c = self._get(code)
            now = self._now_ms()
            c.touched = self.clock()
            sid = c.get(f"seat:{seat_h}") if seat_h else None
            if sid and f"s:{sid}" in c.fields:  # this browser's seat: the same student again
                c.set(f"h:{sid}", now)
                return sid
            if c.get("locked") == "1":
                raise ClassLocked()
            if int(c.get("n_students")) >= self.max_students:
                raise ClassFull(self.max_students)
            if nick and f"n:{codes.fold_nickname(nick)}" in c.fields:
                raise NicknameTaken(nick)
            # The address's bucket first, then the class's: one address never empties the class's bucket (it is
            # three times its size and speed), and a refused join takes from neither.
            a_ok, a_state, a_wait = self.join_address.take(c.get(f"ja:{addr}"), now) if addr else (True, None, 0)
            if not a_ok:
                raise RateLimited(JOIN_ADDRESS_SLOW, a_wait)
            c_ok, c_state, c_wait = self.join_class.take(c.get("jb"), now)
            if not c_ok:
                raise RateLimited(JOIN_CLASS_SLOW, c_wait)
            n = int(c.get("n_seq")) + 1
            while not nick or f"n:{codes.fold_nickname(nick)}" in c.fields:  # "Student 7", or the next free one
                nick, n = f"Student {n}", n + 1
            # Its first student moves the class out of the empty classes' share into the others'.
            self._room(True, 1024 + (c.bytes if c.get("n_students") == "0" else 0))
            sid = codes.new_id()
            for k, v in {f"s:{sid}": nick, f"n:{codes.fold_nickname(nick)}": sid, f"h:{sid}": now,
                         f"h0:{sid}": now}.items():
                c.set(k, v)
            if seat_h:
                c.set(f"seat:{seat_h}", sid)
                c.set(f"z:{sid}", seat_h)
            if addr:
                c.set(f"ja:{addr}", a_state)
            c.set("jb", c_state)
            for k in ("n_students", "n_seq"):
                c.incr(k)
            return sid

    def remove(self, code, secret, sid) -> None:
        with self._lock:
            c = self._teacher(code, secret)
            nick = c.get(f"s:{sid}") if codes.clean_id(sid) else None
            if nick is None:
                return
            f = f"n:{codes.fold_nickname(nick)}"
            if c.get(f) == sid:
                self._del(c, f)
            seat_h = c.get(f"z:{sid}")
            if seat_h and c.get(f"seat:{seat_h}") == sid:
                self._del(c, f"seat:{seat_h}")
            for k in (f"s:{sid}", f"h:{sid}", f"h0:{sid}", f"z:{sid}", f"vb:{sid}"):
                self._del(c, k)
            c.set(f"x:{sid}", 1)  # its page is told it was removed (vc:<sid> stays: a removed seat's count)
            qid = c.get("qid")
            old = c.get(f"v:{qid}:{sid}") if qid else None
            if old is not None and c.get("revealed") != "1":  # the open question's vote goes with the seat
                self._del(c, f"v:{qid}:{sid}")
                c.incr(f"t:{qid}:{old}", -1)
                c.incr(f"a:{qid}", -1)
            c.incr("n_students", -1)
        self._changed(f"{codes.clean_code(code)}:{sid}")  # the removed seat's page is told now (ClassStore.watch)

    @staticmethod
    def _del(c: _Class, k: str) -> None:
        v = c.fields.pop(k, None)
        if v is not None:
            c.bytes -= len(v.encode()) + len(k.encode()) + FIELD_OVERHEAD

    def lock(self, code, secret, on=True) -> None:
        with self._lock:
            self._teacher(code, secret).set("locked", int(bool(on)))

    def vote(self, code, sid, qid, choice) -> None:
        with self._lock:
            c = self._get(code)
            if codes.clean_id(sid) is None or f"s:{sid}" not in c.fields:
                raise SeatRemoved() if codes.clean_id(sid) and f"x:{sid}" in c.fields else NotInClass()
            if not qid or qid != c.get("qid"):
                raise VotingClosed("This question is no longer on the teacher's screen.")
            if c.get("revealed") == "1":
                raise VotingClosed("The answer has been revealed: votes on this question are closed.")
            if not isinstance(choice, int) or not 0 <= choice < int(c.get("nc")):
                raise ClassError("No such choice.")
            c.touched = self.clock()
            old = c.get(f"v:{qid}:{sid}")
            if old == str(choice):
                return
            ok, bucket, wait = self.seat_votes.take(c.get(f"vb:{sid}"), self._now_ms())
            if not ok:
                raise RateLimited(VOTE_SLOW, wait)
            if old is not None:  # a change: the seat's own share of the class's cap (a first vote always counts)
                if int(c.get(f"vc:{sid}", "0")) >= self.seat_changes:
                    raise VoteCap(SEAT_CAP.format(n=self.seat_changes))
                if int(c.get("n_actions")) >= self.max_actions:
                    raise VoteCap("This class has reached its cap of changed votes: your votes so far count.")
            self._room(True, 256)
            c.set(f"vb:{sid}", bucket)
            c.set(f"v:{qid}:{sid}", choice)
            c.incr(f"t:{qid}:{choice}")
            if old is None:
                c.incr(f"a:{qid}")
            else:
                c.incr(f"t:{qid}:{old}", -1)
                c.incr(f"vc:{sid}")
            c.incr("n_actions")

    def view(self, code, sid=None, secret=None) -> View:
        with self._lock:
            c = self._teacher(code, secret) if secret is not None else self._get(code)
            sid_ok = codes.clean_id(sid) is not None
            joined = sid_ok and f"s:{sid}" in c.fields
            now = self._now_ms()
            if joined:
                c.set(f"h:{sid}", now)  # this tab is present
            if secret is not None:  # the teacher's reads count who is present
                c.set("n_present", sum(1 for k, v in c.fields.items()
                                       if k.startswith("h:") and now - int(v) <= PRESENT_SECONDS * 1000))
            meta = {k: c.get(k) for k in ("step", "text", "pair", "has_pair", "qid", "q", "split", "revealed",
                                          "answer", "n_students", "seq", "n_present", "locked", "model")}
            qid = meta["qid"]
            tally = [c.get(f"t:{qid}:{i}", "0") for i in range(int(c.get("nc")))]
            mine = c.get(f"v:{qid}:{sid}") if joined and qid else None
            return view_from(codes.clean_code(code), meta, tally, int(c.get(f"a:{qid}", "0")), mine, joined,
                             teacher=secret is not None, removed=sid_ok and f"x:{sid}" in c.fields)

    def fields(self, code, secret) -> dict:
        with self._lock:
            return dict(self._teacher(code, secret).fields)

    def end(self, code, secret) -> None:
        with self._lock:
            self._teacher(code, secret)
            del self._classes[codes.clean_code(code)]
        self._changed(codes.clean_code(code))  # the students' screens say the class has ended
