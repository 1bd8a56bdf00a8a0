"""A full classroom on one server: every session gets its own answers, nothing leaks, the training cap holds.

    python benchmarks/load.py                                   # 30 sessions, 6 of them training, 60 s
    python benchmarks/load.py --sessions 8 --trainers 3 --seconds 20
    python benchmarks/load.py --processes 2                     # 2 servers behind HAProxy (deploy/)
    python benchmarks/load.py --seconds 90 --model DIR             # the analysing sessions on a local model folder
    python benchmarks/load.py --sessions 30 --trainers 30 --max-steps 20 --arrive 60 --all-train --session-mb 300
                                                                # a class pressing Start within a minute

Starts `streamlit run app.py` on loopback (HF_HUB_OFFLINE=1, bundled model) and talks to it the
way browsers do: Streamlit's websocket, protobuf BackMsg out, ForwardMsg in. All sessions run in
one asyncio loop, so the client costs little CPU beside the server (no browser per student).

- Every session has a marker word in its text (e.g. "qxbaq"). Analysing sessions edit their text
  (a new text each time, so no cache hit) and switch pages in a loop, with a think time between
  actions. Their Predictions are checked against `bert_core.analyze` run here on the same text,
  their Tokenization counts against our tokenizer, and every rerun must finish without an
  exception element.
- Training sessions open the Training page, set a small step budget, press Start and then send
  the fragment reruns a browser's timer sends (at the interval the page asks for). One of them closes its socket
  mid-run without pausing, as a closed laptop does. A run that does not fit the server's memory for users' runs
  (`--session-mb`) waits in line for memory; with `--all-train` every trainer keeps its page open until its run
  has trained and finished (bounded by MAX_SECONDS; nobody leaves), and a run that never finishes is a failure.
- Leakage: no byte another session receives may contain a marker that is not its own (its own
  must appear, or the check would prove nothing).
- The cap: a monitor loaded into the server process (benchmarks/load_site/sitecustomize.py)
  counts sessions inside a training step loop at once, slot holders and lapsed leases.
- Latency: seconds from sending a rerun to its script_finished, for text edits; first with one
  user alone, then with the full class, in the same run.
- A live class's pages listen for the class's events (server/events.py: a server-sent event stream per listener that a
  run draws, ui/lesson/live_class/push.py) and rerun that listener's fragment with its trigger value on each event, as
  the listener component does in a browser (`Client.on_event` lets a caller schedule those reruns itself).
- More than one process (`--processes N`, or `--proxy` for one): N servers behind HAProxy with
  deploy/haproxy.cfg. Each "browser" first loads the page over HTTP as a browser does, keeps the
  sticky cookie HAProxy sets, and sends it with its websocket; HAProxy names the process that
  answered (X-Served-By), and every session's page load and websocket must reach the same one.
  The training cap is per process, so the monitor runs in each and the cap is checked per process.

Bounded: at most MAX_SESSIONS sessions and MAX_SECONDS of load; loopback only. Exits 1 when a
check fails. `run()` returns the report (tests/app/test_load.py runs a small class).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the app server and the websocket client
from support.appserver import app_server, peak_rss_mb, proxied_app_servers  # noqa: E402
from support.wsclient import (  # noqa: E402
    Client,
    Expect,
    check_answer,
    cpu_seconds,
    marker,
    metrics,
    pct,
    problems_of,
)

MAX_SESSIONS = 60
MAX_SECONDS = 600
ANALYSIS_PAGES = ("tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "training")
WORDS = ("quietly", "never", "then", "often", "gladly", "also", "soon", "still", "once", "later", "slowly", "first")


@dataclass
class SessionLog:
    """What one simulated student did and saw."""

    name: str
    marker: str
    role: str  # "analyse" or "train"
    edits: list[float] = field(default_factory=list)  # seconds per text-edit rerun
    switches: list[float] = field(default_factory=list)  # seconds per page switch
    ticks: list[float] = field(default_factory=list)  # seconds per training fragment rerun
    checked: int = 0  # reruns whose content was checked against bert_core
    problems: list[str] = field(default_factory=list)
    states: list[tuple[float, str, str]] = field(default_factory=list)  # (time, state, step) on the Training page
    last_tick: float = 0.0  # when it last sent a training tick (each one renews its slot's lease)
    intervals: set[tuple[str, float]] = field(default_factory=set)  # (state shown, seconds until the next tick)
    client: Client | None = None

    @property
    def trained_steps(self) -> int:
        steps = [int(s.split("/")[0].replace(",", "")) for _, _, s in self.states if s]
        return max(steps, default=0)


async def analyse(base: str, log: SessionLog, seed: int, until: float, expect: Expect, think: tuple[float, float],
                  rounds: int | None = None) -> None:
    """Edit the text and switch pages until `until` (or for `rounds` page visits), checking each answer."""
    rnd = random.Random(seed)
    c = log.client = Client(base)
    await c.connect()
    text = f"The {log.marker} [MASK] the letter to her mother."
    first = await c.rerun("tokenization", urllib.parse.urlencode({"text": text, "seed": seed, **expect.query}))
    c.values.update(text=text, seed=seed, **expect.sidebar)  # what the sidebar now shows, from the link
    log.problems += problems_of(first)
    n = 0
    while time.monotonic() < until and (rounds is None or n < rounds):
        page = ANALYSIS_PAGES[(n + 1) % len(ANALYSIS_PAGES)]
        await asyncio.sleep(rnd.uniform(*think))
        run = await c.rerun(page)
        log.switches.append(run.seconds)
        log.problems += [f"{page} (switch): {p}" for p in problems_of(run)]
        await asyncio.sleep(rnd.uniform(*think))
        text = f"The {log.marker} {WORDS[n % len(WORDS)]} [MASK] the letter to her mother {n}."
        run = await c.rerun(widgets={"text": text})
        log.edits.append(run.seconds)
        log.problems += [f"{page} (edit): {p}" for p in problems_of(run)]
        if page in ("predictions", "tokenization"):
            log.problems += [f"{page}: {p}" for p in check_answer(page, text, run, expect)]
            log.checked += 1
        if run.query is not None and urllib.parse.parse_qs(run.query).get("text") != [text]:
            log.problems.append(f"{page}: the URL holds another text: {run.query[:120]}")
        n += 1


async def train(base: str, log: SessionLog, seed: int, until: float, max_steps: int, leavers: list[SessionLog],
                leave_after: float = 5.0, handover_pending=lambda: False, grace: float = 0.0,
                all_train: bool = False) -> None:
    """Start a run on the Training page and tick like the browser's timer until it ends.

    The first session to have trained for `leave_after` seconds closes its tab instead (it joins
    `leavers`): the lease must then free its slot for the next in line. Past `until`, it keeps
    ticking for up to `grace` s more while `handover_pending()` (nobody has left yet, or nobody
    trained on the freed slot yet): a slow machine gets room to show the handover, a fast one
    ends on time.
    """
    c = log.client = Client(base)
    await c.connect()
    text = f"The {log.marker} [MASK] the letter."  # short with a [MASK]: the run's first probe sentence
    run = await c.rerun("training", urllib.parse.urlencode({"text": text, "seed": seed}))
    c.values.update(text=text, seed=seed)
    log.problems += problems_of(run)
    run = await c.rerun(widgets={"train_max_steps": max_steps})
    run = await c.rerun(widgets={"train_start": True})
    log.problems += problems_of(run)
    hard_stop = time.monotonic() + MAX_SECONDS
    while (time.monotonic() < until or (time.monotonic() < until + grace and handover_pending())
           or (all_train and time.monotonic() < hard_stop)):
        trained = [t for t, state, _ in log.states if state == "training"]
        if not all_train and not leavers and trained and time.time() - trained[0] > leave_after:
            leavers.append(log)
            log.states.append((time.time(), "left", ""))
            await c.close()  # no Pause: the tab is simply gone
            return
        if not c.fragments:
            break  # the run finished: the page stopped its timer
        fragment, interval = next(iter(c.fragments.items()))
        if log.states:
            log.intervals.add((log.states[-1][1], interval))
        await asyncio.sleep(interval)
        log.last_tick = time.time()
        try:
            run = await c.rerun(fragment=fragment, timeout=120)
        except TimeoutError:
            log.problems.append("a training tick got no answer within 120 s")
            break
        log.ticks.append(run.seconds)
        log.problems += problems_of(run)
        m = metrics(run)
        waiting = any("in line for memory" in a.body for a in run.of("alert"))
        log.states.append((time.time(), m.get("State", "waiting for memory" if waiting else ""), m.get("Step", "")))


async def guarded(coro, log: SessionLog) -> None:
    """Run one session; a lost connection or a rerun with no answer is that session's problem, not a crash."""
    import websockets

    try:
        await coro
    except (TimeoutError, websockets.ConnectionClosed) as e:
        log.problems.append(f"no answer: {type(e).__name__} {e}")


async def _load(base: str, n_sessions: int, n_trainers: int, seconds: float, max_steps: int, think: tuple,
                arrive: float, expect: Expect, pids: list[int], grace: float = 0.0, all_train: bool = False
                ) -> tuple[SessionLog, list[SessionLog], list[SessionLog], dict]:
    # One user alone first: the reference latency, measured on the same server in the same run.
    solo = SessionLog("solo", marker(n_sessions), "analyse")
    fast = (0.2, 0.2)  # alone, think time changes nothing but the wall time
    await analyse(base, solo, 10_000, time.monotonic() + MAX_SECONDS, expect, fast, rounds=len(ANALYSIS_PAGES))
    await solo.client.close()
    solo.edits.clear()  # that was the warm-up: first loads, first imports
    await analyse(base, solo, 10_001, time.monotonic() + MAX_SECONDS, expect, fast, rounds=2 * len(ANALYSIS_PAGES))
    await solo.client.close()

    logs = [SessionLog(f"s{i:02d}", marker(i), "train" if i < n_trainers else "analyse") for i in range(n_sessions)]
    leavers: list[SessionLog] = []
    trainers = [log for log in logs if log.role == "train"]

    def handover_pending() -> bool:
        """Nobody has left yet while somebody trains, or somebody left and nobody else has trained since."""
        if not leavers:
            return any(s == "training" for log in trainers for _, s, _ in log.states)
        return not any(log.trained_steps for log in trainers if log not in leavers)

    usage = {"cpu": -sum(map(cpu_seconds, pids)), "wall": -time.monotonic()}  # the servers' CPU during the class
    until = time.monotonic() + seconds
    tasks = []
    for i, log in enumerate(logs):
        if log.role == "analyse":
            tasks.append(asyncio.create_task(guarded(analyse(base, log, i, until, expect, think), log)))
        else:
            tasks.append(asyncio.create_task(guarded(train(base, log, i, until, max_steps, leavers,
                                                           handover_pending=handover_pending, grace=grace,
                                                           all_train=all_train), log)))
        await asyncio.sleep(arrive / n_sessions)  # students open the link over `arrive` seconds
    await asyncio.gather(*tasks)
    usage["cpu"] += sum(map(cpu_seconds, pids))
    usage["wall"] += time.monotonic()
    for log in logs:
        if log not in leavers:
            await log.client.close()
    return solo, logs, leavers, usage


def run(n_sessions: int = 30, n_trainers: int = 6, seconds: float = 60, max_steps: int = 200, cap: int = 2,
        think: tuple[float, float] = (3.0, 10.0), arrive: float = 15.0, processes: int = 1, proxy: bool = False,
        grace: float = 0.0, model: str | None = None, session_mb: float | None = None, all_train: bool = False,
        lease: float | None = None) -> dict:
    """Start the server(s), run the class, stop them; the report as a dict (see `main` for the fields).

    `processes` > 1 (or `proxy`) puts that many servers behind HAProxy (deploy/haproxy.cfg). `grace`:
    seconds trainers may go on past `seconds` until the slot handover has been seen (see `train`).
    `model`: a local model folder the analysing sessions use instead of the bundled model. `session_mb`: the
    server's BERT_EXPLORER_SESSION_MB. `all_train`: trainers stay until their run trained and finished. `lease`:
    the server's BERT_EXPLORER_SLOT_LEASE (seconds; its default is 30).
    """
    n_sessions = min(n_sessions, MAX_SESSIONS)
    seconds = min(seconds, MAX_SECONDS)
    expect = Expect(model)
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        monitors = [Path(d) / f"monitor-{i}.json" for i in range(processes)]  # one per process: its own cap
        site = os.pathsep.join([str(ROOT / "benchmarks" / "load_site"), os.environ.get("PYTHONPATH", "")])
        envs = [{**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_MAX_TRAINING": str(cap),
                 "BERT_EXPLORER_LOAD_MONITOR": str(m), "PYTHONPATH": site,
                 **({"BERT_EXPLORER_LOCAL_ROOTS": model} if model else {}),
                 **({"BERT_EXPLORER_SESSION_MB": str(session_mb)} if session_mb is not None else {}),
                 **({"BERT_EXPLORER_SLOT_LEASE": str(lease)} if lease is not None else {})} for m in monitors]
        if processes > 1 or proxy:
            servers = proxied_app_servers(processes, envs)
        else:
            servers = app_server(envs[0], log=stack.enter_context(open(Path(d) / "server.log", "w")))
        with servers as (url, procs):
            procs = procs if isinstance(procs, list) else [procs]
            t0 = time.monotonic()
            cpu0 = time.process_time()
            solo, logs, leavers, usage = asyncio.run(_load(url, n_sessions, n_trainers, seconds, max_steps, think,
                                                           arrive, expect, [p.pid for p in procs], grace, all_train))
            client_cpu = time.process_time()
            wall = time.monotonic() - t0
            time.sleep(1.0)  # the monitor writes every half second
            rss = [peak_rss_mb(p.pid) for p in procs]
            mons = [json.loads(m.read_text()) if m.exists() else {} for m in monitors]
        log_file = Path(d) / "server.log"
        # What the server said went wrong (a model that did not load, a traceback): part of the report.
        said = [line for line in log_file.read_text(errors="replace").splitlines()
                if "could not load" in line or "Traceback" in line] if log_file.exists() else []
    r = report(solo, logs, leavers, merge_monitors(mons), max(rss), wall, cap)
    r["processes"], r["proxied"] = processes, processes > 1 or proxy
    r["server_said"] = said
    r["all_train"] = all_train
    r["peak_rss_mb_per_process"] = rss
    r["client_cpu_seconds"] = client_cpu - cpu0  # this script's own share of the two cores
    r["server_cores_busy"] = usage["cpu"] / usage["wall"]  # mean cores the servers kept busy during the class
    r["backends"] = {}  # sessions per process behind the proxy
    for log in [solo, *logs]:
        c = log.client
        if c is not None and c.backend_ws:
            r["backends"][c.backend_ws] = r["backends"].get(c.backend_ws, 0) + 1
    r["unsticky"] = [log.name for log in [solo, *logs] if r["proxied"] and log.client is not None
                     and (log.client.backend_ws is None or log.client.backend_ws != log.client.backend_http)]
    return r


def merge_monitors(mons: list[dict]) -> dict:
    """One view of the per-process monitors: the worst process for each maximum (the cap is per process)."""
    if len(mons) == 1 or not all("max_in_steps" in m for m in mons):
        return mons[0] if len(mons) == 1 else next((m for m in mons if "monitor_error" in m or not m), {})
    out = dict(mons[0])
    for k in ("max_in_steps", "max_holders", "max_waiting", "last_request"):
        out[k] = max(m.get(k, 0) for m in mons)
    out["lapsed"] = [e for m in mons for e in m["lapsed"]]
    out["capacity"] = mons[0]["capacity"] if len({m["capacity"] for m in mons}) == 1 else None
    return out


def report(solo: SessionLog, logs: list[SessionLog], left: list[SessionLog], mon: dict, rss: float, wall: float,
           cap: int) -> dict:
    """The checks and numbers of one run."""
    markers = {log.marker for log in [solo, *logs]}
    leaks, own_missing = [], []
    for log in logs:
        data = bytes(log.client.received)
        if log.marker.encode() not in data:
            own_missing.append(log.name)
        leaks += [f"{log.name} received {m}" for m in markers - {log.marker} if m.encode() in data]
    analysers = [log for log in logs if log.role == "analyse"]
    trainers = [log for log in logs if log.role != "analyse"]
    edits = [x for log in analysers for x in log.edits]
    leave_t = left[0].last_tick if left else None  # its lease was last renewed then
    lapses = [e["t"] - leave_t for e in mon.get("lapsed", []) if leave_t and e["t"] >= leave_t]
    return {
        "sessions": len(logs), "analysers": len(analysers), "trainers": len(trainers), "wall_seconds": wall,
        "problems": {log.name: log.problems for log in [solo, *logs] if log.problems},
        "unanswered": [log.name for log in analysers if not log.edits],
        "checked_answers": sum(log.checked for log in [solo, *logs]),
        "leaks": leaks, "own_marker_missing": own_missing,
        "cap": cap, "monitor_seen": "max_in_steps" in mon, "monitor_error": mon.get("monitor_error"),
        "monitor_capacity": mon.get("capacity"),
        "max_in_steps": mon.get("max_in_steps"),
        "max_holders": mon.get("max_holders"), "max_waiting": mon.get("max_waiting"),
        "trained_steps": {log.name: log.trained_steps for log in trainers},
        "queued_seen": [log.name for log in trainers if any(s == "waiting for a slot" for _, s, _ in log.states)],
        "memory_wait_seen": [log.name for log in trainers
                             if any(s == "waiting for memory" for _, s, _ in log.states)],
        # Finished: the page said so, or its last tick showed the whole step budget (the tick that finishes a run
        # reruns the page, whose timer then stops: that last full rerun is not a tick).
        "finished": [log.name for log in trainers if any(s == "finished" for _, s, _ in log.states)
                     or any(st.split("/")[0].strip() == st.split("/")[-1].strip() for _, _, st in log.states if st)],
        "silent_ticks": sum(1 for log in trainers for _, s, _ in log.states if not s),
        "left": [log.name for log in left], "lease_seconds": mon.get("lease_seconds"),
        "slot_freed_after": min(lapses) if lapses else None, "lapsed_total": len(mon.get("lapsed", [])),
        # A lease lapses lazily, when somebody asks for a slot: was anybody asking after it ran out?
        "asked_after_lease": bool(leave_t and mon.get("last_request", 0) > leave_t + mon.get("lease_seconds", 0)),
        "peak_rss_mb": rss,
        "solo_edits": len(solo.edits), "solo_p50": pct(solo.edits, 50), "solo_p95": pct(solo.edits, 95),
        "load_edits": len(edits), "load_p50": pct(edits, 50), "load_p95": pct(edits, 95),
        "switch_p50": pct([x for log in analysers for x in log.switches], 50),
        "switch_p95": pct([x for log in analysers for x in log.switches], 95),
        "ticks": {log.name: len(log.ticks) for log in trainers},
        "tick_intervals": sorted({x for log in trainers for x in log.intervals}),
        "tick_p50": pct([x for log in trainers for x in log.ticks], 50),
        "tick_p95": pct([x for log in trainers for x in log.ticks], 95),
    }


def failures(r: dict) -> list[str]:
    """The checks a run must pass; empty when it did."""
    out = []
    if r["problems"]:
        out.append(f"sessions saw problems: {r['problems']}")
    if r.get("server_said"):
        out.append(f"the server's log: {r['server_said'][:5]}")
    if r["unanswered"]:
        out.append(f"sessions got no answer: {r['unanswered']}")
    if r["leaks"] or r["own_marker_missing"]:
        out.append(f"leakage {r['leaks']}; own marker missing (check blind) {r['own_marker_missing']}")
    if (not r["monitor_seen"] or r["monitor_capacity"] != r["cap"] or r["max_in_steps"] > r["cap"]
            or r["max_holders"] > r["cap"]):
        out.append(f"training cap {r['cap']} (server's: {r['monitor_capacity']}): {r['max_in_steps']} in steps, "
                   f"{r['max_holders']} holders at once (monitor error: {r['monitor_error']})")
    if r["trainers"] > r["cap"] and not r["queued_seen"]:
        out.append("more trainers than slots, yet nobody was shown a place in line")
    idle = [k for k, v in r["trained_steps"].items()
            if v == 0 and k not in r["queued_seen"] and k not in r.get("memory_wait_seen", [])]
    if idle:
        out.append(f"training sessions neither trained nor saw their place in line: {idle}")
    if r["left"] and r["asked_after_lease"] and r["slot_freed_after"] is None:
        out.append("the session that left kept its slot past its lease while others asked for it")
    if r["lapsed_total"] > len(r["left"]):
        out.append(f"{r['lapsed_total']} leases lapsed, {len(r['left'])} session(s) left: an open page lost its slot")
    if r.get("all_train"):
        stayed = [k for k in r["trained_steps"] if k not in r["left"]]
        lost = [k for k in stayed if r["trained_steps"][k] == 0 or k not in r["finished"]]
        if lost:
            out.append(f"runs that never trained to the end although their page stayed open: {lost}")
    if r.get("unsticky"):
        out.append(f"sessions whose page load and websocket reached different processes: {r['unsticky']}")
    return out


def self_check() -> None:
    """The report's checks fail when they should: without a server, on logs made up to break them (a check that
    cannot fail proves nothing). Raises AssertionError; tests/app/test_load.py runs it (`--self-check`)."""
    def log_of(name: str, i: int, received: bytes) -> SessionLog:
        log = SessionLog(name, marker(i), "analyse", edits=[0.1])
        log.client = Client("http://127.0.0.1:1")
        log.client.received += received
        return log

    solo = log_of("solo", 9, b"")
    mon = {"capacity": 1, "max_in_steps": 1, "max_holders": 1, "max_waiting": 0, "lease_seconds": 30.0, "lapsed": []}
    ok = [log_of("s00", 0, b"..." + marker(0).encode()), log_of("s01", 1, marker(1).encode())]
    assert failures(report(solo, ok, [], mon, 1.0, 1.0, cap=1)) == []
    leaky = [log_of("s00", 0, (marker(0) + marker(1)).encode()), log_of("s01", 1, marker(1).encode())]
    r = report(solo, leaky, [], mon, 1.0, 1.0, cap=1)
    assert r["leaks"] == ["s00 received " + marker(1)] and failures(r)
    blind = [log_of("s00", 0, b"nothing of its own"), log_of("s01", 1, marker(1).encode())]
    assert report(solo, blind, [], mon, 1.0, 1.0, cap=1)["own_marker_missing"] == ["s00"]
    over = report(solo, ok, [], {**mon, "max_in_steps": 2}, 1.0, 1.0, cap=1)
    assert any("training cap" in f for f in failures(over))
    unset = report(solo, ok, [], {**mon, "capacity": 2}, 1.0, 1.0, cap=1)  # the server ignored the cap asked for
    assert any("training cap" in f for f in failures(unset))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--trainers", type=int, default=6, help="of the sessions, how many train (one of them leaves)")
    ap.add_argument("--seconds", type=float, default=60, help="of load, after the single-user reference")
    ap.add_argument("--max-steps", type=int, default=200, help="each training run's step budget")
    ap.add_argument("--cap", type=int, default=2, help="BERT_EXPLORER_MAX_TRAINING for the server")
    ap.add_argument("--arrive", type=float, default=15.0, help="seconds over which the class opens the link")
    ap.add_argument("--think", type=float, nargs=2, default=(3.0, 10.0), metavar=("MIN", "MAX"),
                    help="seconds a student reads before the next action (uniform)")
    ap.add_argument("--processes", type=int, default=1, help="Streamlit processes; more than 1 go behind HAProxy")
    ap.add_argument("--proxy", action="store_true", help="put HAProxy in front even of one process")
    ap.add_argument("--session-mb", type=float, help="BERT_EXPLORER_SESSION_MB for the server (users' runs' memory)")
    ap.add_argument("--lease", type=float, help="BERT_EXPLORER_SLOT_LEASE for the server (seconds; default 30)")
    ap.add_argument("--all-train", action="store_true",
                    help="trainers keep their page open until their run trained and finished (at most MAX_SECONDS)")
    ap.add_argument("--model", help="a local model folder the analysing sessions use instead of the bundled model "
                    "(`python benchmarks/memory.py --make-checkpoint DIR` writes a bert-base-sized one)")
    ap.add_argument("--grace", type=float, default=0.0,
                    help="seconds trainers may go on past --seconds until the slot handover has been seen")
    ap.add_argument("--json", type=Path, help="also write the report to this file (tests/app/test_load.py reads it)")
    ap.add_argument("--self-check", action="store_true", help="only check that the report's checks can fail")
    a = ap.parse_args()
    if a.self_check:
        self_check()
        print("the report's checks catch a leak, a blind check and a broken cap")
        return
    r = run(a.sessions, a.trainers, a.seconds, a.max_steps, a.cap, tuple(a.think), a.arrive, a.processes, a.proxy,
            grace=a.grace, model=a.model, session_mb=a.session_mb, all_train=a.all_train, lease=a.lease)
    if a.json:
        a.json.write_text(json.dumps(r, default=list))
    where = (f"{r['processes']} process(es) behind HAProxy, sessions per process {r['backends']}" if r["proxied"]
             else "one server")
    print(f"{r['sessions']} sessions ({r['analysers']} analysing, {r['trainers']} training) for "
          f"{r['wall_seconds']:.0f} s on {where}, cap {r['cap']} training at once per process")
    print(f"answers: {r['load_edits']} text edits answered under load, {r['checked_answers']} checked against "
          f"bert_core; problems: {r['problems'] or 'none'}; unanswered sessions: {r['unanswered'] or 'none'}")
    print(f"leakage: {r['leaks'] or 'none'} (own marker seen by every session: {not r['own_marker_missing']})")
    print(f"training: at most {r['max_in_steps']} sessions stepping and {r['max_holders']} slot holders at once, "
          f"up to {r['max_waiting']} waiting; shown a place in line: {', '.join(r['queued_seen']) or 'nobody'}")
    print(f"  steps per trainer: {r['trained_steps']}")
    waited = ", ".join(r["memory_wait_seen"]) or "nobody"
    print(f"  waited in line for memory: {len(r['memory_wait_seen'])} ({waited}); finished: {len(r['finished'])} of "
          f"{r['trainers']}; ticks that showed neither a state nor a place in line: {r['silent_ticks']}")
    if r["left"]:
        freed = r["slot_freed_after"]
        print(f"  {r['left'][0]} closed its tab mid-run: its slot lapsed after "
              f"{'never' if freed is None else f'{freed:.1f} s'} (lease {r['lease_seconds']:g} s"
              f"{'' if r['asked_after_lease'] else '; nobody asked for a slot after it, so not tested'})")
    print(f"peak RSS per server process: {', '.join(f'{x:.0f}' for x in r['peak_rss_mb_per_process'])} MB; "
          f"server CPU during the class: "
          f"{r['server_cores_busy']:.2f} cores busy on average (of {os.cpu_count()}); this client's CPU: "
          f"{r['client_cpu_seconds']:.0f} s of {r['wall_seconds']:.0f} s wall")
    print(f"rerun after a text edit, s: alone p50 {r['solo_p50']:.3f} p95 {r['solo_p95']:.3f} (n={r['solo_edits']}); "
          f"class p50 {r['load_p50']:.3f} p95 {r['load_p95']:.3f} (n={r['load_edits']}); "
          f"ratio p50 {r['load_p50'] / r['solo_p50']:.1f}x p95 {r['load_p95'] / r['solo_p95']:.1f}x")
    print(f"page switch, s: class p50 {r['switch_p50']:.3f} p95 {r['switch_p95']:.3f}")
    print(f"training tick (fragment rerun), s: p50 {r['tick_p50']:.3f} p95 {r['tick_p95']:.3f}; ticks {r['ticks']}")
    bad = failures(r)
    for f in bad:
        print("FAILED:", f)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
