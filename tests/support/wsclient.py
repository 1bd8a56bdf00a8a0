"""A browser session over Streamlit's websocket, without a browser: the page load over HTTP, BackMsg out, ForwardMsg
in, the class's event stream; and the checks a run is held to. Used by the server-tier tests and by
benchmarks/load.py and benchmarks/class_load.py (one copy).

This speaks Streamlit's private protocol (its protobufs, the component trigger encoding): a test-side tool only; no
product module imports it."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import re
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

# The answer in a reveal's alert, whoever's answer it is: "Right: **x**", "The model's answer: **x**", "The answer:
# **x**", "Not this time: the tokenizer's answer is **x**" (steps 1 and 3 are not the model's: their label says so).
REVEALED = re.compile(r"(?:^Right: |answer: |answer is )\*\*(.+)\*\*")

LISTENER = "bert_explorer.class_events"  # ui/lesson/live_class/push.py's component: a run that draws one listens


def marker(i: int) -> str:
    """A made-up word per session, none a prefix of another. Example: 0 -> 'qxaaq', 27 -> 'qxbbq'."""
    return f"qx{chr(97 + i // 26)}{chr(97 + i % 26)}q"


@dataclass
class Run:
    """What one rerun sent back."""

    seconds: float
    status: int  # ForwardMsg.ScriptFinishedStatus
    elements: list = field(default_factory=list)  # (element type, proto of that type)
    arrived: list = field(default_factory=list)  # time.perf_counter() when each element arrived
    query: str | None = None  # the URL query string the page set, if it changed
    fragment: bool = False  # a fragment's run (its last new-session message named fragments), not the whole page's

    def of(self, kind: str) -> list:
        return [e for k, e in self.elements if k == kind]


class Client:
    """One browser session over Streamlit's websocket."""

    def __init__(self, base: str, ping_timeout: float | None = 20):
        self.base = base
        self.ping_timeout = ping_timeout  # websockets' default; None: never drop a slow server (a busy machine)
        self.url = base.replace("http", "ws", 1) + "/_stcore/stream"
        self.backend_http: str | None = None  # the process behind a proxy that served the page (X-Served-By)
        self.backend_ws: str | None = None  # ... and the one that took the websocket: must be the same
        self.received = bytearray()  # every byte the server sent this session, for the leakage check
        self.widgets: dict[str, str] = {}  # user key -> widget id
        self.widget_fragments: dict[str, str] = {}  # user key -> id of the fragment the widget is in ("" for none)
        self.values: dict[str, str | int] = {}  # user key -> value this "browser" holds for it
        self.pages: dict[str, str] = {}  # url path -> page script hash
        self.page = ""
        self.fragments: dict[str, float] = {}  # fragment id -> seconds: what the page asked to rerun on a timer
        self.page_query = ""  # the URL query string the page set last
        self._run: Run | None = None
        self._done: asyncio.Future | None = None
        self.on_push = None  # callback(run): a run the class's event asked for (or the server started); None: ignored
        self.tap: list | None = None  # when a list: (message kind, delta kind, bytes) of every message received
        self._pushed = False  # the run being read is such a run
        self._run_fragments: set[str] = set()  # the fragments the run being read reruns (none: a full run)
        self._drawn: set[str] = set()  # user keys of the widgets that run drew
        # The last messages' gist, (seconds, kind, detail), for a report on a page that did not show what it should
        self.trail: collections.deque = collections.deque(maxlen=120)
        self.session_id = ""  # the server's id of this session (its first new-session message says it)
        self.cookie = ""  # the cookies the page load set (HAProxy's sticky one): the event streams send them too
        # A class's listeners the last runs drew: user key -> [trigger widget id, fragment id, url, number drawn]
        self.listeners: dict[str, list] = {}
        self._streams: dict[str, tuple[str, asyncio.Task]] = {}  # user key -> (url, task reading its stream)
        self._heard: dict[str, tuple[str, int, int]] = {}  # user key -> (epoch, last number heard, last acted on)
        self.on_event = None  # callback(key, fragment, trigger id, value): rerun for an event; None: rerun here
        self.events_heard = 0
        self._one_at_a_time = asyncio.Lock()  # a rerun waits for the one being read (the server would queue it)

    async def connect(self) -> None:
        """Load the page over HTTP (keeping its cookies, as a browser does), then open the websocket with them."""
        import websockets

        def load_page() -> tuple[str | None, str]:
            with urllib.request.urlopen(self.base + "/", timeout=60) as r:
                cookies = [c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or []]
                return r.headers.get("X-Served-By"), "; ".join(cookies)

        self.backend_http, cookie = await asyncio.to_thread(load_page)
        self.cookie = cookie
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                          ping_timeout=self.ping_timeout,
                                          additional_headers={"Cookie": cookie} if cookie else None)
        self.backend_ws = self.ws.response.headers.get("X-Served-By")
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        for _, task in self._streams.values():
            task.cancel()
        if getattr(self, "ws", None) is None:  # never connected (the session's error is in its log)
            return
        try:
            await self.ws.close()
        except (TimeoutError, OSError):  # a starved client may miss the close handshake: the report still counts
            pass
        self._reader.cancel()

    async def _read(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        async for data in self.ws:
            self.received += data
            m = ForwardMsg()
            m.ParseFromString(data)
            kind = m.WhichOneof("type")
            delta = m.delta.WhichOneof("type") if kind == "delta" else None  # new_element, add_block, ...
            if self.tap is not None:
                sub = (m.delta.new_element.WhichOneof("type") if delta == "new_element" else
                       m.delta.add_block.WhichOneof("type") if delta == "add_block" else None)
                self.tap.append((kind, ":".join(x for x in (delta, sub) if x), len(data)))
            if kind == "new_session":
                self.session_id = m.new_session.initialize.session_id or self.session_id
                self.trail.append((time.perf_counter(), "new_session", list(m.metadata.run.fragment_ids)))
            elif kind == "script_finished":
                self.trail.append((time.perf_counter(), "script_finished", m.script_finished))
            elif kind == "page_info_changed":
                self.trail.append((time.perf_counter(), "query", m.page_info_changed.query_string))
            elif delta == "new_element":
                el = m.delta.new_element.WhichOneof("type")
                self.trail.append((time.perf_counter(), el, m.delta.new_element.heading.body[:40] if el == "heading"
                                   else m.delta.fragment_id[:6]))
            elif delta:
                self.trail.append((time.perf_counter(), delta, m.delta.fragment_id[:6]))
            if kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in m.navigation.app_pages}
            elif kind == "new_session":
                self._run_fragments, self._drawn = set(m.metadata.run.fragment_ids), set()
                if not m.metadata.run.fragment_ids:
                    self.fragments.clear()  # a full run starts: the browser drops its fragment timers
                if self._run is None and self.on_push is not None:  # nobody asked for it: the server pushed it
                    self._run = Run(0.0, -1)
                    self._done, self._pushed = asyncio.get_running_loop().create_future(), True
                if self._run is not None:
                    self._run.fragment = bool(m.metadata.run.fragment_ids)
            elif kind == "auto_rerun":
                self.fragments[m.auto_rerun.fragment_id] = m.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                for fid in m.stop_auto_rerun.fragment_ids:
                    self.fragments.pop(fid, None)
            elif kind == "page_info_changed":
                self.page_query = m.page_info_changed.query_string
            if self._run is None:
                continue
            if delta == "new_element":
                el = m.delta.new_element
                etype = el.WhichOneof("type")
                sub = getattr(el, etype)
                wid = getattr(sub, "id", "")
                if wid.startswith("$$ID-") and wid.count("-") >= 2:
                    self.widgets[wid.split("-", 2)[2]] = wid
                    self.widget_fragments[wid.split("-", 2)[2]] = m.delta.fragment_id
                    self._drawn.add(wid.split("-", 2)[2])
                    if etype == "bidi_component" and sub.component_name == LISTENER:
                        self._listen(wid.split("-", 2)[2], wid, m.delta.fragment_id, json.loads(sub.json))
                self._run.elements.append((etype, sub))
                self._run.arrived.append(time.perf_counter())
            elif kind == "page_info_changed":
                self._run.query = m.page_info_changed.query_string
            if kind == "script_finished" and m.script_finished in (0, 3):
                self._forget_undrawn()
            if kind == "script_finished" and m.script_finished != 2 and not self._done.done():
                # Status 2 (finished early for a rerun): the page called st.rerun(); wait for that run. The run is
                # handed over here, not when its waiter resumes: the server may start its next run (a push) in the
                # same burst of messages, and that run's messages must not land in this one or nowhere.
                run, self._run = self._run, None
                run.status = m.script_finished
                self._done.set_result(run)
                if self._pushed:
                    self._pushed = False
                    if self.on_push is not None:  # the caller may stop listening meanwhile
                        self.on_push(run)

    def _forget_undrawn(self) -> None:
        """A finished run's page no longer shows the widgets it did not draw: the browser stops sending their values
        (a full run keeps only what it drew; a fragment's run drops the widgets of that fragment it did not draw)."""
        gone = [k for k in self.values if k not in self._drawn
                and (not self._run_fragments or self.widget_fragments.get(k) in self._run_fragments)]
        for k in gone:
            del self.values[k]

    def _listen(self, key: str, wid: str, fragment: str, data: dict) -> None:
        """A run drew listener `key` (as the browser's component is drawn): keep its stream open, and act on an event
        it heard that this drawing has not seen (the component's own rule)."""
        from streamlit.components.v2.bidi_component.constants import EVENT_DELIM
        from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX

        trigger = f"{STREAMLIT_INTERNAL_KEY_PREFIX}_{wid}{EVENT_DELIM}events"
        if data.get("every"):  # the listener is its fragment's timer too: ticked as Streamlit's own timers are
            self.fragments[fragment] = float(data["every"])
        if "url" not in data:  # a timer only
            return
        self.listeners[key] = [trigger, fragment, data["url"], int(data["seen"])]
        epoch, heard, acted = self._heard.get(key, (data["epoch"], 0, 0))
        if epoch == data["epoch"] and heard > max(int(data["seen"]), acted):
            self._heard[key] = (epoch, heard, heard)
            self._fire(key, heard)
        if key not in self._streams or self._streams[key][0] != data["url"]:
            if key in self._streams:
                self._streams[key][1].cancel()
            self._heard[key] = (data["epoch"], 0, 0)
            self._streams[key] = (data["url"], asyncio.get_running_loop().create_task(self._stream(key, data["url"])))

    def _fire(self, key: str, n: int) -> None:
        """The listener's trigger: a rerun of its fragment from the page's address, as the browser sends it."""
        trigger, fragment, _, _ = self.listeners[key]
        value = json.dumps([{"event": "change", "value": n}])
        self.events_heard += 1
        if self.on_event is not None:
            self.on_event(key, fragment, trigger, value)
        else:
            asyncio.get_running_loop().create_task(self._event_rerun(fragment, {trigger: value}))

    async def _event_rerun(self, fragment: str, events: dict[str, str]) -> None:
        """The rerun an event asks for; `on_push` hears it (a run of the class's, not of this user's doing)."""
        run = await self.rerun(query=self.page_query, fragment=fragment, auto=False, events=events)
        if run is not None and self.on_push is not None:
            self.on_push(run)

    def _heard_event(self, key: str, epoch: str | None, n: int) -> None:
        old_epoch, heard, acted = self._heard.get(key, ("", 0, 0))
        if epoch is not None and epoch != old_epoch:  # another process's numbers
            old_epoch, heard, acted = epoch, 0, 0
        heard = max(heard, n)
        drawn = self.listeners[key][3] if key in self.listeners else 0
        if heard > max(drawn, acted):
            self._heard[key] = (old_epoch, heard, heard)
            self._fire(key, heard)
        else:
            self._heard[key] = (old_epoch, heard, acted)

    async def _stream(self, key: str, url: str) -> None:
        """Read one listener's event stream (HTTP/1.1, chunked) as EventSource does, reconnecting after RETRY_MS."""
        parts = urllib.parse.urlsplit(self.base)
        while True:
            try:
                reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
            except OSError:
                await asyncio.sleep(2)  # EventSource's reconnection delay (a browser waits before it tries again)
                continue
            try:
                path = urllib.parse.urlsplit(urllib.parse.urljoin(self.base + "/", url))
                writer.write((f"GET {path.path}?{path.query} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                              "Accept: text/event-stream\r\n"
                              + (f"Cookie: {self.cookie}\r\n" if self.cookie else "") + "\r\n").encode())
                status = (await reader.readline()).decode()
                if " 200 " not in status:
                    return  # no event route here: the page's timers are the fallback, as in a browser
                while (await reader.readline()).strip():
                    pass  # headers
                buf = ""
                while True:
                    size = int((await reader.readline()).strip() or b"0", 16)
                    if size == 0:
                        break
                    buf += (await reader.readexactly(size + 2))[:-2].decode()
                    while "\n\n" in buf:
                        block, buf = buf.split("\n\n", 1)
                        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line
                                      and not line.startswith(":"))
                        if fields.get("event") == "hello":
                            epoch, n = fields["data"].split()
                            self._heard_event(key, epoch, int(n))
                        elif "data" in fields:
                            self._heard_event(key, None, int(fields["data"]))
            except (OSError, ValueError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
            await asyncio.sleep(2)  # EventSource's reconnection delay, as above

    async def rerun(self, page: str | None = None, query: str = "", widgets: dict | None = None,
                    fragment: str | None = None, timeout: float = 300, auto: bool = True,
                    events: dict[str, str] | None = None) -> Run | None:
        """Send one rerun (a page switch, widget values by key, or a fragment tick); wait for it to finish.

        With `fragment` and auto=False: a widget inside that fragment changed (only the fragment reruns).
        `events`: trigger widget id -> JSON value (a listener's event), sent once."""
        async with self._one_at_a_time:
            return await self._rerun(page, query, widgets, fragment, timeout, auto, events)

    async def _rerun(self, page, query, widgets, fragment, timeout, auto, events) -> Run | None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if self._pushed:  # the server is drawing a run it started: a browser's next request comes after it
            await asyncio.wait_for(asyncio.shield(self._done), timeout)
            if fragment and fragment not in self.fragments:
                return None  # that run replaced the fragment: the browser drops the timer (the server would too)
        msg = BackMsg()
        cs = msg.rerun_script
        self.trail.append((time.perf_counter(), "sent", f"{fragment or 'page'} {sorted(widgets or {})}"[:80]))
        cs.query_string = query
        if page is not None:
            self.page = page
        cs.page_name = self.page
        cs.page_script_hash = self.pages.get(self.page, "")
        # A browser sends the value of every widget it shows with every rerun, not only the one
        # that changed: a widget left out falls back to its default.
        self.values.update({k: v for k, v in (widgets or {}).items() if v is not True})
        triggers = {k: v for k, v in (widgets or {}).items() if v is True}  # a click counts once
        for key, value in {**self.values, **triggers}.items():
            w = cs.widget_states.widgets.add()
            w.id = self.widgets[key]
            if value is True:
                w.trigger_value = True
            elif isinstance(value, str):
                w.string_value = value
            else:
                w.int_value = int(value)
        for tid, value in (events or {}).items():
            w = cs.widget_states.widgets.add()
            w.id, w.json_trigger_value = tid, value
        if fragment:
            cs.fragment_id, cs.is_auto_rerun = fragment, auto
        self._run = Run(0.0, -1)
        self._done = asyncio.get_running_loop().create_future()
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        run = await asyncio.wait_for(self._done, timeout)
        run.seconds = time.perf_counter() - t0
        return run


def problems_of(run: Run) -> list[str]:
    """An unfinished script or an exception element: what a student would see as broken."""
    out = [f"exception: {e.message[:200]} {list(e.stack_trace)[-2:]}" for e in run.of("exception")]
    if run.status not in (0, 3):  # finished, or a fragment finished
        out.append(f"script ended with status {run.status}")
    return out


def metrics(run: Run) -> dict[str, str]:
    return {m.label: m.body for m in run.of("metric")}


class Expect:
    """What the bundled model answers, computed here with bert_core, to hold each page against."""

    def __init__(self, model: str | None = None):
        import bert_core
        from ui.markdown import md_literal

        self.bc, self.md_literal = bert_core, md_literal
        self.model = bert_core.load_model(model)
        self.query = {"model": model} if model else {}  # what the analysing sessions' link adds
        self.sidebar = {}  # the model widgets' values a browser sends back after the link set them
        if model:
            from ui.state import OTHER_LABEL

            self.sidebar = {"model_choice": OTHER_LABEL, "other_model": model}

    def predictions(self, text: str, k: int = 5) -> list[tuple[str, float]]:
        """(candidate label, probability) per button, in page order."""
        t = self.bc.analyze(self.model, text, None, top_k=k)
        return [(self.md_literal(tok), p) for cands in t.predictions.values() for tok, p in cands]

    def n_tokens(self, text: str) -> int:
        return len(self.model.tokenizer.encode(text).input_ids)


def check_answer(page: str, text: str, run: Run, expect: Expect) -> list[str]:
    """Does this rerun show what the model computes for this session's own text?"""
    if page == "predictions":
        got = [(b.label.rsplit(" · ", 1)[0], float(b.label.rsplit(" · ", 1)[1].rstrip("%")) / 100)
               for b in run.of("button") if " · " in b.label]
        want = expect.predictions(text)
        if [g[0] for g in got] != [w[0] for w in want] or any(abs(g[1] - w[1]) > 0.0015 for g, w in zip(got, want)):
            return [f"predictions {got[:3]}... differ from bert_core's {want[:3]}..."]
    if page == "tokenization":
        shown = metrics(run).get("Tokens (with specials)", "")
        if not shown.startswith(f"{expect.n_tokens(text)} /"):
            return [f"token count {shown!r}, bert_core counts {expect.n_tokens(text)}"]
    return []


def pct(xs: list[float], q: int) -> float:
    """The q-th percentile (NaN for no values)."""
    if len(xs) < 2:
        return xs[0] if xs else float("nan")
    return statistics.quantiles(xs, n=100, method="inclusive")[q - 1]


def cpu_seconds(pid: int, main_thread: bool = False) -> float:
    """User + system CPU time a process has used so far (/proc/<pid>/stat, fields 14 and 15); of its main thread
    only (a Streamlit server's event loop, which sends every message) with main_thread."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat" if main_thread else f"/proc/{pid}/stat").read_text()
    fields = fields.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
