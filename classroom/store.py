"""A class's shared state and the interface both stores implement (in-process and Redis).

A class is one hash of string fields, the same in both stores (in Redis it is literally one hash):

    secret            sha256 of the teacher's secret
    step, text, pair  what the teacher shows (pair "" = none; has_pair "1" when there is one)
    model             the teacher's model key (a hub id, "bundled-minilm", "session:<n>" for one only the teacher has)
    qid, q, nc        the question on screen: its id, {"prompt", "choices"} as JSON, the number of choices
    split, revealed   "1" once the teacher shows the split / reveals the answer of `qid`
    answer            the model's answer (a choice index) of `qid`, once revealed
    seq               bumped on every change a student's screen must follow
    n_students        seats held (an atomic increment, capped; a seat the teacher removes is freed)
    n_actions         votes cast or changed (capped)
    n_questions       distinct questions published (capped)
    s:<sid>           a student's seat, and its nickname (unique in the class when folded; "Student 7" if none)
    n:<folded nick>   the seat that holds that nickname
    h:<sid>           when that seat's tab last read the class (ms): present if within PRESENT_SECONDS
    seat:<hash>       the seat of a browser's seat token (codes.hash_seat); z:<sid> the other way
    locked            "1": no new seats (the seats there may come back)
    jb                the class's bucket of new seats ("tokens|ms", classroom/limits.py); ja:<address hash> one
                      client address's bucket of new seats in this class
    vb:<sid>, vc:<sid>  a seat's bucket of votes, and the votes it has changed (its share of the class's cap)
    x:<sid>           "1": the teacher removed that seat (its page is told so, not "join first")
    n_seq             seats ever made (a nameless student's number), n_present: seats present at the last count
    v:<qid>:<sid>     that student's vote on that question
    t:<qid>:<i>       votes for choice i of that question (atomic increments)
    a:<qid>           students who voted on that question
    p:<qid>           "1": that question was published (counted against the cap)
    r:<qid>           the revealed question for the end-of-lesson table: {"n", "step", "text", "prompt", "choices",
                      "answer", "model"} (text: the sentence, and " · B: " its pair; model: the teacher's model key)

Caps bound a class (students, questions, votes, text lengths), so a class is at most a few hundred KB.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from classroom.limits import MAX_EMPTY, SEAT_CHANGES

MAX_STUDENTS = int(os.environ.get("BERT_EXPLORER_CLASS_MAX_STUDENTS", "200"))
MAX_QUESTIONS = 64  # distinct questions one class may publish (a lesson has 12)
MAX_ACTIONS = 20 * MAX_STUDENTS * 12  # votes cast or changed in one class
MAX_TEXT = 2000  # characters of a sentence the class follows (the Lesson's links keep as many)
MAX_PROMPT = 500
MAX_CHOICES = 8
MAX_CHOICE = 200
IDLE_HOURS = float(os.environ.get("BERT_EXPLORER_CLASS_IDLE_HOURS", "4"))
PRESENT_SECONDS = 60  # a seat whose tab has not read the class for this long is not counted as present

LOCKED = "This class is locked: ask your teacher to let you in."
TAKEN = "Someone in this class already has the nickname “{nick}”: choose another."

_log = logging.getLogger(__name__)
_watch_lock = threading.Lock()

META = ("step", "text", "pair", "has_pair", "qid", "q", "nc", "split", "revealed", "answer", "n_students", "seq",
        "n_present", "locked", "model")
MAX_MODEL = 200  # characters of a model key (a hub id, a local folder)


class ClassError(Exception):
    """A class operation refused, with a message a person can act on (str(e): show it where they acted).

    `kind` names the refusal for a page that draws some differently: "refused" (a bad choice, a question no longer
    on screen), "gone", "teacher", "unavailable", "rate", "full", "locked", "removed", "member", "store_full",
    "taken", "closed", "cap"."""

    kind = "refused"


class NoSuchClass(ClassError):
    """The class ended, expired (idle) or never was: the store cannot tell these apart."""

    kind = "gone"

    def __init__(self):
        super().__init__("No class with this code: check the code, or the class has ended or expired.")


class NotTeacher(ClassError):
    kind = "teacher"

    def __init__(self):
        super().__init__("Only the session that started the class (or its teacher link) can do this.")


class StoreUnavailable(ClassError):
    kind = "unavailable"

    def __init__(self, detail: str):
        super().__init__(f"Reconnecting to the class… (its store does not answer: {detail}). The Lesson works on "
                         "meanwhile.")


class RateLimited(ClassError):
    """Too many of one action from one source (a seat, an address, a browser) or into one class; `retry_after`
    is the seconds until the next is allowed."""

    kind = "rate"

    def __init__(self, message: str, retry_after: float):
        self.retry_after = max(0.0, float(retry_after))
        super().__init__(message.format(wait=wait_words(self.retry_after)))


def wait_words(seconds: float) -> str:
    """ "1 second", "12 seconds", "3 minutes": how long a refused student waits, rounded up."""
    s = max(1, math.ceil(seconds))
    if s < 120:
        return f"{s} second{'s' if s != 1 else ''}"
    return f"{math.ceil(s / 60)} minutes"


class ClassFull(ClassError):
    kind = "full"

    def __init__(self, max_students: int):
        super().__init__(f"This class is full ({max_students} students): ask your teacher to free a seat.")


class ClassLocked(ClassError):
    kind = "locked"

    def __init__(self):
        super().__init__(LOCKED)


class NotInClass(ClassError):
    kind = "member"

    def __init__(self, message: str = "You are not in this class: join it first."):
        super().__init__(message)


class SeatRemoved(NotInClass):
    """The teacher removed this seat: its votes are refused, its page should say so (View.removed)."""

    kind = "removed"

    def __init__(self):
        super().__init__("Your teacher removed your seat from this class: join it again if they let you.")


class StoreFull(ClassError):
    kind = "store_full"

    def __init__(self, what: str = "classes"):
        super().__init__(f"This server holds as many {what} as its memory allows; try again later.")


class NicknameTaken(ClassError):
    kind = "taken"

    def __init__(self, nick: str):
        super().__init__(TAKEN.format(nick=nick))


class VotingClosed(ClassError):
    kind = "closed"


class VoteCap(ClassError):
    kind = "cap"


# The messages of the limits (classroom/limits.py), as a student or teacher reads them.
JOIN_ADDRESS_SLOW = ("Many students are joining this class from your network right now: try again in {wait} "
                     "(your place is not lost; nobody's seat is).")
JOIN_CLASS_SLOW = "Many students are joining this class right now: try again in {wait}."
VOTE_SLOW = "You are changing your vote very fast: wait {wait}, then vote again (your last vote counts)."
START_SLOW = "Classes are being started very often from your network or browser: try again in {wait}."
SEAT_CAP = ("You have changed your votes {n} times in this class, the most a seat may: your votes so far count, "
            "and your first vote on each new question still does.")


@dataclass(frozen=True)
class Question:
    """What the class votes on: the question of the teacher's step, computed by the teacher's model."""

    qid: str
    prompt: str
    choices: tuple[str, ...]

    def __post_init__(self):
        if not (1 <= len(self.choices) <= MAX_CHOICES) or len(self.qid) > 32:
            raise ValueError("a question has 1..8 choices and a short id")

    def payload(self) -> str:
        return json.dumps({"prompt": self.prompt[:MAX_PROMPT], "choices": [c[:MAX_CHOICE] for c in self.choices]})


@dataclass(frozen=True)
class View:
    """One screen's read of a class. `tally` is None unless this reader may see the split."""

    code: str
    step: int
    text: str
    pair: str | None
    question: Question | None
    split_shown: bool
    revealed: bool
    answer: int | None  # None until revealed
    students: int
    answered: int
    tally: tuple[int, ...] | None
    my_vote: int | None  # the reading student's vote on the current question
    joined: bool  # the reading student is a member of this class
    seq: int
    present: int = 0  # seats whose tab read the class within PRESENT_SECONDS (counted at the teacher's reads)
    locked: bool = False
    model: str = ""  # the teacher's model key ("" before the teacher's first publish)
    removed: bool = False  # the reading student's seat was removed by the teacher (tell them, not "join first")

    @property
    def following(self) -> tuple:
        """What a student's page is drawn from: when it changes, the page reruns."""
        return (self.step, self.text, self.pair, self.question.qid if self.question else "", self.revealed,
                self.model)


@dataclass(frozen=True)
class Result:
    """One revealed question: how the class voted and how many matched the model's answer."""

    n: int  # order of reveal
    step: int
    prompt: str
    choices: tuple[str, ...]
    answer: int
    tally: tuple[int, ...]
    text: str = ""  # the sentence the question was asked on (and " · B: " its pair)
    model: str = ""  # the model key the question was computed by (a question is its model, step and sentence)

    @property
    def answered(self) -> int:
        return sum(self.tally)

    @property
    def right(self) -> int:
        return self.tally[self.answer]


def view_from(code: str, meta: dict, tally: list, answered: int, my_vote, joined: bool, teacher: bool,
              removed: bool = False) -> View:
    """Build a View from the stored fields (shared by both stores, so both read the same way)."""
    q = None
    if meta.get("qid"):
        d = json.loads(meta["q"])
        q = Question(meta["qid"], d["prompt"], tuple(d["choices"]))
    revealed = meta.get("revealed") == "1"
    split = meta.get("split") == "1"
    return View(code=code, step=int(meta.get("step") or 1), text=meta.get("text") or "",
                pair=meta.get("pair") if meta.get("has_pair") == "1" else None, question=q,
                split_shown=split, revealed=revealed,
                answer=int(meta["answer"]) if revealed and meta.get("answer") not in (None, "") else None,
                students=int(meta.get("n_students") or 0), answered=answered,
                tally=tuple(int(x) for x in tally) if q is not None and (revealed or teacher) else None,
                my_vote=int(my_vote) if my_vote not in (None, "") else None, joined=joined,
                seq=int(meta.get("seq") or 0), present=int(meta.get("n_present") or 0),
                locked=meta.get("locked") == "1", model=meta.get("model") or "", removed=removed and not joined)


def results_from(fields: dict) -> list[Result]:
    """The end-of-lesson rows from a class's fields, in the order the questions were revealed."""
    out = []
    for k, v in fields.items():
        if k.startswith("r:"):
            qid, d = k[2:], json.loads(v)
            tally = tuple(int(fields.get(f"t:{qid}:{i}", 0)) for i in range(len(d["choices"])))
            out.append(Result(d["n"], d["step"], d["prompt"], tuple(d["choices"]), d["answer"], tally,
                              d.get("text", ""), d.get("model", "")))
    return sorted(out, key=lambda r: r.n)


def students_from(fields: dict, results: list[Result]) -> list[dict]:
    """Per student who gave a nickname: questions answered and right (students without one are not listed)."""
    rows = []
    qids = {f"{k[2:]}" for k in fields if k.startswith("r:")}
    answers = {k[2:]: json.loads(v)["answer"] for k, v in fields.items() if k.startswith("r:")}
    for k, nick in fields.items():
        if k.startswith("s:") and nick:
            sid = k[2:]
            votes = {q: int(fields[f"v:{q}:{sid}"]) for q in qids if f"v:{q}:{sid}" in fields}
            rows.append({"nickname": nick, "answered": len(votes),
                         "right": sum(v == answers[q] for q, v in votes.items())})
    return sorted(rows, key=lambda r: r["nickname"].lower())


def seats_from(fields: dict, now_ms: int) -> list[dict]:
    """The teacher's list of seats: id, nickname, present, questions answered; in the order they joined."""
    answered: dict[str, int] = {}
    for k in fields:
        if k.startswith("v:"):
            sid = k.rsplit(":", 1)[1]
            answered[sid] = answered.get(sid, 0) + 1
    present = PRESENT_SECONDS * 1000
    rows = [{"sid": k[2:], "nickname": v, "present": now_ms - int(fields.get(f"h:{k[2:]}", 0)) <= present,
             "answered": answered.get(k[2:], 0), "joined": int(fields.get(f"h0:{k[2:]}", 0))}
            for k, v in fields.items() if k.startswith("s:")]
    return sorted(rows, key=lambda r: (r["joined"], r["nickname"].casefold()))


class ClassStore(ABC):
    """Where classes live. Every method validates its inputs; a refusal raises ClassError with a message.

    `watch(callback)` calls `callback(code)` whenever a class's `seq` moves (its step, sentence, question or
    reveal: what a student's screen is drawn from), in every process that shares the store, so a screen can
    follow at once instead of asking every second."""

    idle_seconds: float
    # Caps, per class; instance attributes so a test (or a deploy) can set them.
    max_students: int = MAX_STUDENTS
    max_questions: int = MAX_QUESTIONS
    max_actions: int = MAX_ACTIONS
    seat_changes: int = SEAT_CHANGES  # votes one seat may change in a class (classroom/limits.py)
    max_empty: int = MAX_EMPTY  # classes no student has joined, at most

    def watch(self, callback: Callable[[str], None]) -> None:
        """Call `callback(code)` after every change of a class's `seq`, and `callback("CODE:SID")` after seat SID is
        removed from class CODE (its page is told at once); from the thread that saw it."""
        with _watch_lock:
            self.__dict__.setdefault("_watchers", []).append(callback)
        self._start_watching()

    def unwatch(self, callback: Callable[[str], None]) -> None:
        with _watch_lock:
            if callback in self.__dict__.get("_watchers", []):
                self._watchers.remove(callback)

    def _start_watching(self) -> None:  # noqa: B027 (a hook: only a store shared by processes needs it)
        """A store whose changes come from elsewhere (another process) starts listening here."""

    def _changed(self, code: str) -> None:
        """Tell the watchers; one that fails is logged, the others still hear."""
        with _watch_lock:
            watchers = list(self.__dict__.get("_watchers", []))
        for w in watchers:
            try:
                w(code)
            except Exception:
                _log.exception("a class watcher failed")

    @abstractmethod
    def create(self, *, client: str | None = None, device: str | None = None) -> tuple[str, str]:
        """A new class: (join code, teacher secret). The secret is shown once, to the teacher's session.

        `client` is the starting browser's address (limits.client_address), `device` its browser token (the seat
        cookie): each may start STARTS classes (a bucket; RateLimited when empty). StoreFull when MAX_EMPTY classes
        no student has joined are held (or, in-process, their share of the bytes): they never take a class with
        students' room. A class no student joins is forgotten after EMPTY_IDLE_MINUTES without its teacher."""

    @abstractmethod
    def is_teacher(self, code: str, secret: str | None) -> bool:
        """Does this secret open this class's teacher controls? (StoreUnavailable when the store cannot say.)"""

    @abstractmethod
    def publish(self, code: str, secret: str, step: int, text: str, pair: str | None,
                question: Question | None, model: str = "") -> None:
        """The teacher's screen: step, sentence(s), question and model. A new question starts unrevealed, split
        hidden. A change of any of them moves `seq` (the students follow); a new model, like a new sentence, is a
        new question because the question's id holds both (ui.lesson.content.question_token)."""

    @abstractmethod
    def show_split(self, code: str, secret: str, on: bool = True) -> None:
        """Show (or hide) the split of guesses of the current question on the projector."""

    @abstractmethod
    def reveal(self, code: str, secret: str, qid: str, answer: int) -> None:
        """Reveal the model's answer of question `qid` (the current one) to every device."""

    @abstractmethod
    def join(self, code: str, nickname: str = "", seat: str | None = None, *, client: str | None = None,
             device: str | None = None) -> str:
        """A student takes a seat: their id (keep it: it is their vote's key).

        `seat` is the browser's seat token (`device`, if given, is the same thing under the limits' name): the same
        token in the same class gives back the same seat (its votes, its nickname), whether the student left and
        joined again, reloaded or opened a second tab, so one browser holds one seat and a script repeating one
        token takes one. `client` is the browser's address (limits.client_address). A new seat is refused when the
        class is locked (ClassLocked) or full (ClassFull), when the nickname (folded, confusables too) is taken
        (NicknameTaken), or when a bucket is empty (RateLimited): the address's in this class (JOIN_ADDRESS), then
        the class's (JOIN_CLASS). A refused join takes nothing from any bucket; a returning seat is never limited.
        No nickname gives "Student N"."""

    @abstractmethod
    def remove(self, code: str, secret: str, sid: str) -> None:
        """The teacher frees a seat: it can no longer vote; its vote on the open question is withdrawn."""

    @abstractmethod
    def lock(self, code: str, secret: str, on: bool = True) -> None:
        """Lock (or unlock) the class: no new seats; the seats there may still come back."""

    @abstractmethod
    def vote(self, code: str, sid: str, qid: str, choice: int) -> None:
        """A student's vote on the current question; a second vote before the reveal replaces the first.

        Each seat has its own bucket of votes (SEAT_VOTES: RateLimited when empty) and may change its votes
        `seat_changes` times in the class (VoteCap); a first vote on a question always counts, whatever the class's
        other seats did. A removed seat gets SeatRemoved, a seat never in the class NotInClass."""

    @abstractmethod
    def view(self, code: str, sid: str | None = None, secret: str | None = None) -> View:
        """The class as a student (sid) or the teacher (secret) may see it now."""

    def views(self, code: str, sids: list[str]) -> dict[str, View]:
        """`view(code, sid=sid)` for each of these students (each marked present), in one read where the store can
        (Redis: one round trip); {} when the class is gone."""
        try:
            return {sid: self.view(code, sid=sid) for sid in sids}
        except NoSuchClass:
            return {}

    @abstractmethod
    def fields(self, code: str, secret: str) -> dict:
        """All of a class's fields (the teacher's, for the end-of-lesson table)."""

    @abstractmethod
    def end(self, code: str, secret: str) -> None:
        """End the class: every field goes."""

    def results(self, code: str, secret: str) -> list[Result]:
        """The end-of-lesson table: each revealed question, how the class voted."""
        return results_from(self.fields(code, secret))

    def seats(self, code: str, secret: str) -> list[dict]:
        """The teacher's list of seats: {"sid", "nickname", "present", "answered", "joined"}, in joining order."""
        return seats_from(self.fields(code, secret), self._now_ms())

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def students(self, code: str, secret: str) -> list[dict]:
        """Per named student: answered and right (only students who gave a nickname)."""
        f = self.fields(code, secret)
        return students_from(f, results_from(f))


def check_publish(step: int, text: str, pair: str | None, model: str = "") -> tuple[int, str, str, str]:
    """Bounds on what a teacher publishes: step 1..99, texts cut to MAX_TEXT, a model key to MAX_MODEL."""
    if not isinstance(step, int) or not 1 <= step <= 99:
        raise ClassError("A step is a number from 1 to 99.")
    return step, str(text)[:MAX_TEXT], ("" if pair is None else str(pair)[:MAX_TEXT]), str(model or "")[:MAX_MODEL]
