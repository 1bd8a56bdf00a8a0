"""The server redraws a following student's Lesson the moment the teacher moves: no student asks every second.

A following student's step runs as one fragment (views/lesson.py's `following_slide`): the step's header, words,
vote and view, everything that changes with the teacher's step (the side column, with the class's count, Follow
and Leave, is outside it). Its run records where it is (`follow_here(code)`, with that fragment's id). When the
class's step, sentence, question or reveal changes, the store tells this process (`ClassStore.watch`: the
in-process store directly, Redis over pub/sub, so every process behind the proxy hears it) and each of this
process's students of that class gets a rerun of that fragment requested by the server, as a browser requests a
fragment's rerun (`AppSession.request_rerun` with the fragment's id, from a thread that is not the session's):
app.py, the navigation, the sidebar and the side column do not run again for a step change. A page not run as a
fragment (no server) is rerun whole. The students' timers (the side column's count) are then only for the count
of answers and a fallback; a student who leaves the Lesson, stops following or closes the tab is dropped.

Every run, a pushed fragment's too, starts with Streamlit's new-session message, which carries the app's theme:
Streamlit rebuilds it each time from every config option (six sections, each a scan of all options), 7% of the
server's time in a profile of a class of 120 (1.4% with the cache). `cache_theme_messages` keeps each section's
theme message until the config changes (a hook on Streamlit's `app_session._populate_theme_msg`;
tests/classroom/test_streamlit_hooks.py checks that the message is byte for byte Streamlit's own and fails if
that internal changes).

A second hook (`wait_for_finished_runs`, on `AppSession._create_scriptrunner`) keeps a run that has just finished
from losing its drawing to the next request: a pushed step and the student's own timer tick often meet
(tests/classroom/test_finished_runs.py).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time

from streamlit import config, runtime
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime import app_session
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

import classroom

_lock = threading.Lock()
# class code -> session id -> (query string, page hash, id of the fragment the Lesson runs in ("" for none), the
# student's id in the class)
_followers: dict[str, dict[str, tuple[str, str, str, str]]] = {}
_watched: set[int] = set()  # id() of the stores whose changes reach push()
# The teacher's count of answers: a vote asks it to rerun at once (this process's teachers), at most every POKE_GAP
# seconds each (a class voting at once is one redraw per gap, not one per vote); its timer is the fallback.
POKE_GAP = 0.15
_counts: dict[str, dict[str, tuple[str, str, str]]] = {}  # class code -> session id -> (query, page, fragment id)
_poked: dict[str, float] = {}  # session id -> when its count was last asked to rerun
_due: set[str] = set()  # session ids with a rerun of their count already scheduled for the end of their gap


THEME_CACHE_BYTES = 64 * 1024  # the theme messages kept (a few hundred bytes each; a config reparse adds a set)
THEME_RECHECK = 1.0  # seconds a kept theme message is used before its options are looked at again
# (id of the config's options, section) -> (that section's options, their value functions, the section's message,
# when they were last compared)
_themes: dict[tuple[int, str], tuple[list, list, bytes, float]] = {}


def cache_theme_messages() -> None:
    """Streamlit's theme message of each new-session message built once per config, not once per run.

    Hooks Streamlit's internal `streamlit.runtime.app_session._populate_theme_msg(msg, section)` (1.67), which
    `AppSession._create_new_session_message` calls for six sections on every run: the hook fills `msg` with the
    bytes that function gave for the same section and the same options (the options are those of the config in
    use: a reparse of config.toml makes a new set, at once; an option set since, which gets a new value function,
    is built again within THEME_RECHECK seconds). Installed once per process."""
    original = app_session._populate_theme_msg
    if getattr(original, "cached_by_bert_explorer", False):
        return

    def populate_theme_msg(msg, section: str = "theme") -> None:
        opts = config.get_config_options()
        kept = _themes.get((id(opts), section))
        now = time.monotonic()
        # A set option gets a new value function (ConfigOption.set_value): compare those, not the ~300 values (a
        # call each), and at most every THEME_RECHECK seconds (3% of a class's server time when read every run).
        if kept is not None and now - kept[3] >= THEME_RECHECK:
            if [o._get_val_func for o in kept[0]] != kept[1]:
                kept = None
            else:
                kept = (*kept[:3], now)
                _themes[(id(opts), section)] = kept
        if kept is None:
            mine = [o for o in opts.values() if o.section == section]
            fresh = type(msg)()
            original(fresh, section)
            kept = (mine, [o._get_val_func for o in mine], fresh.SerializeToString(), now)
            with _lock:
                if sum(len(b) for _, _, b, _ in _themes.values()) + len(kept[2]) > THEME_CACHE_BYTES:
                    _themes.clear()  # configs parsed again and again (a developer editing config.toml)
                _themes[(id(opts), section)] = kept
        if kept[2]:  # nothing set: the message stays untouched, as Streamlit leaves it
            msg.MergeFromString(kept[2])

    populate_theme_msg.cached_by_bert_explorer = True
    populate_theme_msg.original = original
    app_session._populate_theme_msg = populate_theme_msg


cache_theme_messages()

DEFER_S, DEFER_TRIES = 0.002, 1000  # a new runner waits for the finished one's last messages at most 2 s


def wait_for_finished_runs(original):
    """`AppSession._create_scriptrunner` (Streamlit 1.67) that first lets a run which has just finished deliver its
    messages.

    A ScriptRunner that has finished its run refuses a new rerun request; AppSession.request_rerun then creates a new
    ScriptRunner at once, and drops every event still queued on the event loop from the old one as "from a
    non-current ScriptRunner": that run's whole drawing, which the browser never gets. A run that ends within a few
    milliseconds of the next request meets it: a student's pushed step and the student's own timer tick
    (benchmarks/class_load.py, 100 students on one process: in about one run of three a student never drew the
    step or the reveal; a probe on AppSession showed the pushed run's messages ignored). Here the new runner is
    created once the old one's SHUTDOWN has been handled, behind its queued events; a runner created meanwhile
    takes the request instead."""
    if getattr(original, "waits_for_finished_runs", False):
        return original

    def create_when_free(self, rerun_data, old, tries: int) -> None:
        if self._state == app_session.AppSessionState.SHUTDOWN_REQUESTED:
            return  # the tab closed meanwhile
        current = self._scriptrunner
        if current is old and tries < DEFER_TRIES:  # its SHUTDOWN (and the events before it) not handled yet
            self._event_loop.call_later(DEFER_S if tries else 0, create_when_free, self, rerun_data, old, tries + 1)
            return
        if current is not None and current is not old and current.request_rerun(rerun_data):
            return  # a request deferred with this one has started a runner since: it runs this one too
        original(self, rerun_data)

    def create_scriptrunner(self, initial_rerun_data) -> None:
        old = self._scriptrunner  # not None: it refused the request, its run is over
        try:
            on_loop = old is not None and asyncio.get_running_loop() is self._event_loop
        except RuntimeError:
            on_loop = False
        if not on_loop:
            original(self, initial_rerun_data)
            return
        create_when_free(self, initial_rerun_data, old, 0)

    create_scriptrunner.waits_for_finished_runs = True
    create_scriptrunner.original = original
    return create_scriptrunner


app_session.AppSession._create_scriptrunner = wait_for_finished_runs(app_session.AppSession._create_scriptrunner)


def _session() -> tuple[str, str, str, str] | None:
    """(session id, query string, page hash, running fragment's id or "") of this run; None outside a server."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return None
    return ctx.session_id, ctx.query_string, ctx.page_script_hash, ThreadState.get().fragment_id or ""


def _drop(sid: str, keep: str | None = None) -> None:
    """Take session `sid` out of every class but `keep` (a class left with nobody goes). Hold _lock."""
    for c, members in list(_followers.items()):
        if c != keep and members.pop(sid, None) is not None and not members:
            del _followers[c]
    _forget_read(sid)


# A step change reads the class once for all of this process's students who follow it (one round trip to Redis,
# not one per student's pushed run: the reads were 7% of a step change in py-spy), and each pushed run takes its
# student's read. A read older than FRESH_S (the run started late) or dropped by the student's own vote is read
# again by the run. Bounded in bytes: a read counts its texts' length and RESERVE bytes more.
FRESH_S, FRESH_BYTES, RESERVE = 2.0, 4 * 2**20, 1024
_fresh: dict[str, tuple[str, str, float, int, classroom.View]] = {}  # session id -> (code, sid, when, bytes, view)
_fresh_bytes = [0]


def _forget_read(session_id: str) -> None:
    """Drop a session's read of its class. Hold _lock."""
    entry = _fresh.pop(session_id, None)
    if entry is not None:
        _fresh_bytes[0] -= entry[3]


def _read_for(store: classroom.ClassStore, code: str, targets: list) -> None:
    """Read class `code` for these followers (session id, (query, page, fragment, sid)) in one call of the store."""
    sids = {session_id: entry[3] for session_id, entry in targets if entry[3]}
    try:
        views = store.views(code, sorted(set(sids.values())))
    except classroom.ClassError:
        return  # each run reads the class itself, and says what is wrong
    now = time.monotonic()
    with _lock:
        for session_id in [k for k, e in _fresh.items() if now - e[2] > FRESH_S]:
            _forget_read(session_id)
        for session_id, sid in sids.items():
            _forget_read(session_id)  # an older read must not serve this change's run
            v = views.get(sid)
            if v is None:
                continue
            size = RESERVE + len(v.text) + len(v.pair or "") + (len(v.question.payload()) if v.question else 0)
            if _fresh_bytes[0] + size > FRESH_BYTES:
                continue  # that run reads the class itself
            _fresh[session_id] = (code, sid, now, size, v)
            _fresh_bytes[0] += size


def read_at_push(code: str, sid: str | None) -> classroom.View | None:
    """This session's read of class `code` made at the class's last change, if it is student `sid`'s and fresh."""
    me = _session()
    if me is None or not sid:
        return None
    with _lock:
        entry = _fresh.get(me[0])
        _forget_read(me[0])
    if entry is None or entry[:2] != (code, sid) or time.monotonic() - entry[2] > FRESH_S:
        return None
    return entry[4]


def forget_read() -> None:
    """This session's read of its class is out of date (its student voted)."""
    me = _session()
    if me is not None:
        with _lock:
            _forget_read(me[0])


def follow_here(store: classroom.ClassStore, code: str, sid: str) -> None:
    """This session (student `sid` of class `code`) shows the class's step: redraw it when the class changes."""
    me = _session()
    if me is None:
        return
    with _lock:
        if id(store) not in _watched:
            store.watch(functools.partial(push, store=store))
            _watched.add(id(store))
        _drop(me[0], keep=code)  # one class per session
        _followers.setdefault(code, {})[me[0]] = (*me[1:], sid)  # the fragment this run is in: the Lesson's, or none


def count_here(code: str) -> None:
    """This run is the teacher's count of class `code`'s answers (a fragment): a vote redraws it at once."""
    me = _session()
    if me is None or not me[3]:
        return
    with _lock:
        for c, members in list(_counts.items()):  # one count per session: the class this run counts
            if c != code and members.pop(me[0], None) is not None and not members:
                del _counts[c]
        _counts.setdefault(code, {})[me[0]] = me[1:]


def poke(code: str) -> int:
    """A vote in class `code`: rerun its teachers' counts in this process now, or at the end of their gap."""
    with _lock:
        targets = list(_counts.get(code, {}).items())
    if not targets or not runtime.exists():
        return 0
    rt, now, asked = runtime.get_instance(), time.monotonic(), 0
    for sid, (query, page, fragment) in targets:
        with _lock:
            if sid in _due:
                continue  # a rerun at the end of the gap reads this vote too
            wait = _poked.get(sid, 0.0) + POKE_GAP - now
            if wait > 0:
                _due.add(sid)
        if wait > 0:
            threading.Timer(wait, _rerun_count, (rt, code, sid, query, page, fragment)).start()
            continue
        asked += _rerun_count(rt, code, sid, query, page, fragment)
    return asked


def _rerun_count(rt, code: str, sid: str, query: str, page: str, fragment: str) -> int:
    with _lock:
        _due.discard(sid)
        _poked[sid] = time.monotonic()
    session = rt.get_app_session(sid)
    if session is None:  # the teacher's tab was closed
        with _lock:
            _poked.pop(sid, None)
            members = _counts.get(code, {})
            if members.pop(sid, None) is not None and not members:
                _counts.pop(code, None)
        return 0
    _rerun(session, ClientState(query_string=query, page_script_hash=page, fragment_id=fragment))
    return 1


def _rerun(session, state: ClientState) -> None:
    """`session.request_rerun(state)` on the server's event loop, where a browser's request runs.

    AppSession is not thread-safe: asked from another thread (a teacher's script thread, Redis's listener) while the
    student's last run was ending, it started a new script runner that the ending run's shutdown then unset, and
    every message of the new run was dropped as coming from a runner no longer current (`benchmarks/class_load.py`,
    120 students: 1 to 48 students missed a step or a reveal in about one run of three)."""
    loop = getattr(session, "_event_loop", None)  # AppSession's own loop (Streamlit 1.67)
    if loop is None or loop.is_closed():
        session.request_rerun(state)
        return
    try:
        loop.call_soon_threadsafe(session.request_rerun, state)
    except RuntimeError:  # the loop closed meanwhile: the server is stopping
        pass


def retime(seconds: float) -> bool:
    """The timer of the fragment this run is in set to `seconds` in the browser, in this run: no whole rerun.

    Streamlit sends a timed fragment's interval when the fragment is declared (an auto-rerun message,
    runtime/fragment.py), which only a whole run does; the browser keeps one timer per fragment and replaces its
    interval when another auto-rerun message for the same fragment comes (Streamlit 1.67's App.handleAutoRerun;
    tests/classroom/test_push_fragment.py checks it end to end). A class of 200 that joined within seconds had 120
    of its students' pages rerun whole (25-55 ms each) to slow their timers, over the class's first step change.
    False outside a fragment's run (the caller reruns the page instead)."""
    ctx, fragment = get_script_run_ctx(), ThreadState.get().fragment_id
    if ctx is None or not fragment:
        return False
    msg = ForwardMsg()
    msg.auto_rerun.interval = seconds
    msg.auto_rerun.fragment_id = fragment
    ctx.enqueue(msg)
    return True


def fragment_here() -> str:
    """The id of the fragment this run is in ("" outside a fragment or a server)."""
    me = _session()
    return me[3] if me is not None else ""


def redraw(fragment: str | None) -> bool:
    """Rerun fragment `fragment` of this session once this run has ended (a student's own count after its vote);
    False outside a server or without a fragment."""
    me = _session()
    if me is None or not fragment or not runtime.exists():
        return False
    session = runtime.get_instance().get_app_session(me[0])
    if session is None:
        return False
    _rerun(session, ClientState(query_string=me[1], page_script_hash=me[2], fragment_id=fragment))
    return True


def forget_here() -> None:
    """This session no longer follows a class here (left, explores on its own, or opened another page)."""
    me = _session()
    if me is None:
        return
    with _lock:
        _drop(me[0])


def push(code: str, store: classroom.ClassStore | None = None) -> int:
    """Request a rerun of every session of this process that follows `code` (with `store`: each with the class read
    for it); returns how many were asked."""
    with _lock:
        targets = list(_followers.get(code, {}).items())
    if not targets or not runtime.exists():
        return 0
    rt, open_tabs = runtime.get_instance(), []
    for sid, entry in targets:
        session = rt.get_app_session(sid)
        if session is None:  # the tab was closed (and its seat is not read, so not kept present)
            with _lock:
                _drop(sid)
            continue
        open_tabs.append((sid, entry, session))
    if store is not None:
        _read_for(store, code, [(sid, entry) for sid, entry, _ in open_tabs])
    for _, (query, page, fragment, _sid), session in open_tabs:
        # No widget states: the session keeps its own (as st.rerun does). A fragment id: only the Lesson's
        # fragment reruns (a session that no longer has it, after a whole run, ignores the request; that run
        # recorded the fragment again or forgot the class). No fragment id: the whole page.
        _rerun(session, ClientState(query_string=query, page_script_hash=page, fragment_id=fragment))
    return len(open_tabs)
