"""A live class over real websockets: a teacher and N students on the Lesson, latency of votes and step changes, RSS.

    python benchmarks/class_load.py                      # 30 students + a teacher, one process (in-process store)
    python benchmarks/class_load.py --processes 2        # 2 processes behind HAProxy, a redis-server shared
    python benchmarks/class_load.py --students 6 --questions 2    # a quick look

Starts `streamlit run app.py` (or N of them behind HAProxy with deploy/haproxy.cfg, and Debian's
redis-server as BERT_EXPLORER_CLASS_STORE, as deploy/serve.sh does) and drives it with
tests/support/wsclient.py's websocket Client, the way browsers do, fragment timers included:

0. Warm-up: each step the class will see is shown once per process (a teacher rehearsing).
1. Without a class: N students open the Lesson and sit on it (their page open, nothing ticking);
   the servers' RSS is read ("no class").
2. A teacher opens the Lesson and presses "Start a class"; the same N students type the code into
   their open Lesson and join with a nickname. From then on every client ticks the fragments its page
   asked for at the interval asked (the projector's count and split; each student's vote box), as a
   browser's timer does.
3. For each of --questions steps: every student votes once (spread over a few seconds, some change
   their vote), the teacher shows the split and then reveals; the teacher presses Next.
   Measured: vote -> projector (the seconds from a vote's send until the teacher's projector shows a
   count that includes it: the r-th vote sent is on screen once the count reads >= r), and step
   change -> student (from the teacher's click on Next until a student's page shows the new step).
   Checked: the projector's final count equals the votes sent, each student's reveal is the model's
   answer, and no student's bytes contain another class's code (a second, idle class runs beside).
4. RSS again ("with a class"): the difference to step 1 is what the class costs.

Timings depend on the machine's load: compare with a run of the same script on the same machine.
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the app server and the websocket client
from memory import rss_mb  # noqa: E402
from support.appserver import app_server, proxied_app_servers, redis_server  # noqa: E402
from support.wsclient import REVEALED, Client, cpu_seconds, pct, problems_of  # noqa: E402

MAX_STUDENTS = 200
SHOW_MESSAGES = bool(os.environ.get("CLASS_LOAD_SHOW_MESSAGES"))  # print every message of one follower's step change
COUNT = re.compile(r"\*\*(\d+) of (\d+)\*\* students have answered")


class Ticker:
    """Runs one client's fragment timers (as its browser would) and its clicks, one rerun at a time."""

    def __init__(self, client: Client, name: str, problems: list):
        self.c, self.name, self.problems = client, name, problems
        self.lock = asyncio.Lock()
        self.stop = False
        self.on_run = None  # callback(run, finished_at) after every rerun
        self.radios: dict[str, list[str]] = {}  # radio key -> its option labels (a radio's value is its label)
        self.ticks: list[float] = []  # seconds per timer tick (a fragment rerun), sent to finished
        self.pushed = 0  # runs the server started (the class's push), not asked for by this client
        self.pushed_whole = 0  # ... of them whole-page runs (app.py, sidebar and all), not the Lesson's fragment
        self.runs: list[tuple[float, str]] = []  # (when it finished, "push"/"tick"/"ask" + " whole" for a full run)
        client.on_push = self._pushed
        client.on_event = self._event

    def _event(self, key: str, fragment: str, trigger: str, value: str) -> None:
        """A listener heard its class's event: the rerun its component asks for, after the rerun under way."""
        asyncio.get_running_loop().create_task(self.rerun(query=self.c.page_query, fragment=fragment, auto=False,
                                                          events={trigger: value}, kind="push"))

    def _pushed(self, run) -> None:
        self.pushed += 1
        self.pushed_whole += not run.fragment
        self.runs.append((time.perf_counter(), "push" + ("" if run.fragment else " whole")))
        self._took(run)

    async def rerun(self, kind: str | None = None, **kw):
        async with self.lock:
            if kw.get("fragment") and kw.get("auto", True) and kw["fragment"] not in self.c.fragments:
                return None  # a full run since replaced that timer's fragment (a browser drops the timer too)
            run = await self.c.rerun(**kw)
        if run is not None:
            kind = kind or ("tick" if kw.get("fragment") and kw.get("auto", True) else "ask")
            if kind == "push":  # the class's event: the student asked for it, on the listener's trigger
                self.pushed += 1
                self.pushed_whole += not run.fragment
            self.runs.append((time.perf_counter(), kind + ("" if run.fragment else " whole")))
            self._took(run)
        return run

    def _took(self, run) -> None:
        self.problems += [f"{self.name}: {p}" for p in problems_of(run)]
        for e in run.of("radio"):
            self.radios[e.id.split("-", 2)[-1]] = list(e.options)
        if self.on_run:
            self.on_run(run, time.perf_counter())

    async def tick_forever(self):
        """Each fragment on its own timer, at the interval it asked for (a browser keeps one timer per fragment)."""
        due: dict[str, float] = {}
        while not self.stop:
            now = time.monotonic()
            for fid, interval in list(self.c.fragments.items()):
                due.setdefault(fid, now + interval)
            for fid in [f for f in due if f not in self.c.fragments]:
                del due[fid]  # a full run replaced it
            if not due:
                await asyncio.sleep(0.2)
                continue
            fid = min(due, key=due.get)
            await asyncio.sleep(max(0.0, due[fid] - time.monotonic()))
            if self.stop:
                return
            due[fid] = time.monotonic() + self.c.fragments.get(fid, 1.0)
            try:
                run = await self.rerun(fragment=fid, timeout=120)
                if run is not None:
                    self.ticks.append(run.seconds)
            except TimeoutError:
                self.problems.append(f"{self.name}: a tick got no answer in 120 s")


def say(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def revealed_answer(run) -> str | None:
    """The answer a page's reveal alert shows (the teacher's or a student's), or None before the reveal."""
    for a in run.of("alert"):
        m = REVEALED.search(a.body)
        if m:
            return m.group(1)
    return None


def texts(run) -> list[str]:
    return [e.body for e in run.of("markdown")]


def marks(pids: list[int]) -> tuple[float, float, float, float]:
    """Where a step change starts: the wall clock, the servers' CPU, their event loops' CPU, this process's CPU."""
    return (time.perf_counter(), sum(map(cpu_seconds, pids)), sum(cpu_seconds(p, main_thread=True) for p in pids),
            time.process_time())


def trail(c: Client, t0: float) -> str:
    """A client's last messages, each with its time in seconds from t0."""
    return "; ".join(f"{t - t0:+.2f} {kind} {detail}" for t, kind, detail in c.trail)


def header(run) -> tuple[str | None, float]:
    """The page's step header and when it arrived (what the student sees first of a new step)."""
    for (kind, e), at in zip(run.elements, run.arrived):
        if kind == "heading":
            return e.body, at
    return None, 0.0


async def _class(base: str, n: int, questions: int, pids: list[int], seed: int, after_reveal: float = 3.0,
                 profile: str | None = None, profile_steps: str | None = None) -> dict:
    rnd = random.Random(seed)
    problems: list[str] = []
    # 0. Each process shows each step once (a teacher rehearsing the lesson): the measured step changes are
    # then what a class sees, not the first computation of a step on a cold process.
    for k in range(1, questions + 2):
        for _ in pids:  # new browsers go round-robin: one visit per process
            c = Client(base, ping_timeout=None)
            await c.connect()
            problems += [f"warm-up step {k}: {p}" for p in problems_of(await c.rerun("lesson", query=f"step={k}"))]
            await c.close()
    # 1. N students on the Lesson without a class.
    students = [Client(base, ping_timeout=None) for _ in range(n)]
    for c in students:
        await c.connect()
    await asyncio.gather(*(c.rerun("lesson") for c in students))
    await asyncio.sleep(3)
    rss_before = [rss_mb(p) for p in pids]
    say(f"{n} students on the Lesson, no class: RSS {rss_before} MB")

    # 2. The teacher starts a class; an idle second class runs beside it (nothing of it may reach the first).
    teacher, other = Client(base, ping_timeout=None), Client(base, ping_timeout=None)
    for c in (teacher, other):
        await c.connect()
        await c.rerun("lesson")
        await c.rerun(widgets={"class_start": True})
    code = urllib.parse.parse_qs(teacher.page_query)["class"][0]
    other_code = urllib.parse.parse_qs(other.page_query)["class"][0]
    t = Ticker(teacher, "teacher", problems)
    shown = []  # (time, count) the projector showed
    t.on_run = lambda run, at: shown.extend((at, int(m.group(1))) for s in texts(run) for m in [COUNT.search(s)] if m)
    tickers = [t, Ticker(other, "other", problems)]
    seen_step: dict[int, dict[int, float]] = {}  # step -> student -> when its page first showed its header
    drawn_step: dict[int, dict[int, float]] = {}  # step -> student -> when that page had finished drawing
    seen_reveal: dict[int, dict[int, str]] = {}  # step -> student -> the answer its page showed once revealed
    for i, c in enumerate(students):
        # A student whose Lesson is open types the code (a link opened in a new tab would be a new session).
        joined_run = await c.rerun(widgets={"class_join_code": code.lower(), "class_nick": f"student {i}",
                                            "class_join": True})
        tk = Ticker(c, f"s{i}", problems)

        def on_run(run, at, i=i):
            h, h_at = header(run)
            m = re.match(r"Step (\d+) of", h or "")
            if m:
                seen_step.setdefault(int(m.group(1)), {}).setdefault(i, h_at)
                drawn_step.setdefault(int(m.group(1)), {}).setdefault(i, at)
                shown = revealed_answer(run)
                if shown is not None:
                    seen_reveal.setdefault(int(m.group(1)), {})[i] = shown
        tk.on_run = on_run
        tk._took(joined_run)  # the vote box the join drew (the first timer tick may come after the first vote)
        tickers.append(tk)
    joined = sum(1 for c in students if b"me=" in c.page_query.encode())
    if joined < n:
        problems.append(f"only {joined} of {n} students joined")
    tasks = [asyncio.create_task(tk.tick_forever()) for tk in tickers]
    # This process is the students' browsers: its own full collections (80 ms over 200 clients' objects) would stop
    # every "browser" at once and count as the server's latency. What the class set up stays; the rest is collected.
    gc.collect()
    gc.freeze()
    cpu0, wall0 = sum(map(cpu_seconds, pids)), time.monotonic()
    say(f"class {code}: {joined} students joined")
    spy = None
    if profile:  # py-spy samples the (first) server process through the class: votes, reveals, step changes;
        # --gil: only the thread holding the interpreter lock (the CPU the reruns share), not threads waiting on it
        spy = subprocess.Popen(["py-spy", "record", "-r", "50", "--gil", "-f", "raw", "-o", profile,
                                "-p", str(pids[0])], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    votes_sent, vote_lat, step_lat, drawn_lat, reveals_right, per_step, step_cpu = [], [], [], [], 0, [], []
    client_cpu: list[float] = []  # this process (every student's "browser") during each step change
    loop_cpu: list[float] = []  # the servers' main threads (their event loops) during each step change
    reveals_other = 0  # a student's page showed an answer other than the teacher's
    messages: list[int] = []  # websocket messages one follower received for each step change
    try:
        for qn in range(questions):
            step = qn + 1
            await asyncio.sleep(1.5)  # every student's vote box is drawn
            shown.clear()
            sends = []

            async def vote(i: int, c: Client, tk: Ticker, step: int = step, sends: list = sends):
                await asyncio.sleep(rnd.uniform(0, 4))
                key = next((k for k in reversed(tk.radios) if k.startswith("class_vote_")), None)
                if key is None:
                    problems.append(f"s{i}: no vote box on step {step}")
                    return
                fid = c.widget_fragments.get(key) or None  # a widget in a fragment reruns that fragment
                labels = tk.radios[key]
                choice = rnd.randrange(len(labels))
                t0 = time.perf_counter()
                sends.append(t0)
                await tk.rerun(widgets={key: labels[choice]}, fragment=fid, auto=False)
                if rnd.random() < 0.2:  # some change their mind
                    await tk.rerun(widgets={key: labels[(choice + 1) % len(labels)]}, fragment=fid, auto=False)

            await asyncio.gather(*(vote(i, c, tk) for i, (c, tk) in enumerate(zip(students, tickers[2:]))))
            deadline = time.perf_counter() + 30
            while (not shown or shown[-1][1] < len(sends)) and time.perf_counter() < deadline:
                await asyncio.sleep(0.2)
            sends.sort()
            for r, s in enumerate(sends, 1):
                at = next((a for a, cnt in shown if a >= s and cnt >= r), None)
                vote_lat.append(at - s if at else float("inf"))
            votes_sent.append((len(sends), shown[-1][1] if shown else 0))
            mine = vote_lat[-len(sends):] if sends else [0.0]
            say(f"step {step}: {votes_sent[-1][0]} votes sent, {votes_sent[-1][1]} on the projector; vote -> "
                f"projector p50 {pct(mine, 50):.2f} s, p95 {pct(mine, 95):.2f} s, max {max(mine):.2f} s")
            await t.rerun(widgets={"class_split": True})
            await asyncio.sleep(1.0)
            answer = revealed_answer(await t.rerun(widgets={"lesson_reveal": True}))
            if answer is None:
                problems.append(f"teacher: no answer on screen after the reveal of step {step}")
            await asyncio.sleep(after_reveal)  # the reveal reaches every student
            shown_answers = seen_reveal.get(step, {})
            reveals_right += sum(a == answer for a in shown_answers.values())
            for i in sorted(set(range(n)) - set(shown_answers)):  # a page that never showed the reveal
                problems.append(f"s{i} never showed the reveal of step {step}: pushed runs {tickers[2 + i].pushed}, "
                                f"timers {students[i].fragments}, a run pending {students[i]._run is not None}; "
                                f"its last messages: {trail(students[i], time.perf_counter())}")
            reveals_other += sum(a != answer for a in shown_answers.values())
            students[0].tap = []  # what one follower receives for the step change
            t0, c0, loop0, me0 = marks(pids)
            step_spy = None
            if profile_steps:  # py-spy on the step change only: Next until every student has drawn the new step
                step_spy = subprocess.Popen(["py-spy", "record", "-r", "200", "--gil", "-f", "raw", "-o",
                                             f"{profile_steps}.{step + 1}", "-p", str(pids[0])],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                await asyncio.sleep(1.0)  # attached
                t0, c0, loop0, me0 = marks(pids)
            await t.rerun(widgets={"lesson_next": True})
            deadline = time.perf_counter() + 30
            while len(drawn_step.get(step + 1, {})) < n and time.perf_counter() < deadline:
                await asyncio.sleep(0.1)
            for i in sorted(set(range(n)) - set(drawn_step.get(step + 1, {}))):  # a page that never showed the step
                c = students[i]
                problems.append(f"s{i} never drew step {step + 1}: pushed runs {tickers[2 + i].pushed}, timers "
                                f"{c.fragments}, a run pending {c._run is not None}, last query {c.page_query!r}; "
                                f"session {c.session_id}; its last messages (s after Next): {trail(c, t0)}")
            # The servers' CPU from Next until every student's page has drawn the new step (ticks included): the
            # cost of a step change per student, which the machine's load does not change as much as the wall time.
            step_cpu.append((sum(map(cpu_seconds, pids)) - c0, time.perf_counter() - t0))
            window = collections.Counter(kind for tk in tickers for at, kind in tk.runs if t0 <= at)
            client_cpu.append(time.process_time() - me0)  # the clients' own share of the 2 cores meanwhile
            if step_spy is not None:
                step_spy.send_signal(signal.SIGINT)
                step_spy.wait(timeout=60)
            loop_cpu.append(sum(cpu_seconds(p, main_thread=True) for p in pids) - loop0)
            step_lat += [seen_step.get(step + 1, {}).get(i, float("inf")) - t0 for i in range(n)]
            drawn_lat += [drawn_step.get(step + 1, {}).get(i, float("inf")) - t0 for i in range(n)]
            per_step.append((step + 1, pct(step_lat[-n:], 50), pct(step_lat[-n:], 95)))
            await asyncio.sleep(0.5)  # the rest of that student's run
            tap, students[0].tap = students[0].tap, None
            runs, size = [], None  # messages per run (new-session message to script_finished): the push is the longest
            for kind, _, _ in tap:
                size = 1 if kind == "new_session" else size + 1 if size is not None else None
                if kind == "script_finished" and size is not None:
                    runs.append(size)
                    size = None
            messages.append(max(runs, default=0))
            if SHOW_MESSAGES:
                print("\n".join(f"  {kind} {delta} {size} B" for kind, delta, size in tap))
            say(f"step {step + 1} on the students' screens: p50 {per_step[-1][1]:.2f} s, p95 {per_step[-1][2]:.2f} s; "
                f"server CPU {step_cpu[-1][0]:.2f} s in {step_cpu[-1][1]:.2f} s wall = "
                f"{1000 * step_cpu[-1][0] / n:.1f} ms per student (event loop {1000 * loop_cpu[-1] / n:.1f}); "
                f"the clients' CPU {client_cpu[-1]:.2f} s; load average {os.getloadavg()[0]:.1f}; runs meanwhile "
                f"(all clients): {dict(sorted(window.items()))}")
        await asyncio.sleep(2)
        rss_after = [rss_mb(p) for p in pids]
        cores = (sum(map(cpu_seconds, pids)) - cpu0) / (time.monotonic() - wall0)
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        for tk in tickers:
            tk.stop = True
        for task in tasks:
            task.cancel()
        for c in [*students, teacher, other]:
            await c.close()
    leaks = [i for i, c in enumerate(students) if other_code.encode() in c.received]
    own = [i for i, c in enumerate(students) if code.encode() not in c.received]
    return {"code": code, "rss_before": rss_before, "rss_after": rss_after, "vote_lat": vote_lat,
            "step_lat": step_lat, "drawn_lat": drawn_lat, "step_cpu": step_cpu, "client_cpu": client_cpu,
            "cores": cores,
            "per_step": per_step,
            "ticks": [x for tk in tickers for x in tk.ticks],
            "pushed": sum(tk.pushed for tk in tickers[2:]), "pushed_whole": sum(tk.pushed_whole for tk in tickers[2:]),
            "votes": votes_sent, "problems": problems, "leaks": leaks, "messages": messages,
            "own_missing": own,
            "reveals_seen": reveals_right, "reveals_other": reveals_other,
            "backends": sorted({c.backend_ws for c in students if c.backend_ws})}


def run(n: int = 30, questions: int = 3, processes: int = 1, seed: int = 0, after_reveal: float = 3.0,
        profile: str | None = None, profile_steps: str | None = None) -> dict:
    """Start the server(s) (and Redis for several), run the class, stop them; the report as a dict."""
    with ExitStack() as stack:
        # The students here join within a second or two, faster than the per-class join rate lets a class fill
        # (a limit against scripts): the benchmark's server lets them all in, and holds them all.
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_CLASS_JOINS_PER_10S": str(max(n, 30)),
               "BERT_EXPLORER_CLASS_MAX_STUDENTS": str(max(n, 200))}
        if processes > 1:
            d = Path(tempfile.mkdtemp(prefix="class_load_"))
            stack.callback(shutil.rmtree, d, ignore_errors=True)
            url, _ = stack.enter_context(redis_server(d))
            env["BERT_EXPLORER_CLASS_STORE"] = url
            base, procs = stack.enter_context(proxied_app_servers(processes, [env] * processes, timeout=300))
        else:
            env.pop("BERT_EXPLORER_CLASS_STORE", None)
            log = stack.enter_context(tempfile.TemporaryFile())
            base, proc = stack.enter_context(app_server(env, timeout=300, log=log))
            procs = [proc]
        t0, load = time.monotonic(), os.getloadavg()
        r = asyncio.run(_class(base, n, questions, [p.pid for p in procs], seed, after_reveal, profile,
                              profile_steps))
        r["wall"], r["load"] = time.monotonic() - t0, load
        if processes == 1:  # the server's own errors (a failed push, a page's exception) are the benchmark's
            log.seek(0)
            text = log.read().decode(errors="replace")
            at = min((i for i in (text.find("Traceback"), text.find(" ERROR ")) if i >= 0), default=-1)
            if at >= 0:
                r["problems"].append(f"server log: {text[at:at + 3000]}")
    r["processes"], r["n"], r["questions"] = processes, n, questions
    return r


def failures(r: dict) -> list[str]:
    out = []
    if r["problems"]:
        out.append(f"problems: {r['problems'][:10]}")
    if any(sent != shown for sent, shown in r["votes"]):
        out.append(f"votes sent vs counted on the projector: {r['votes']}")
    if r["leaks"] or r["own_missing"]:
        out.append(f"the other class's code reached students {r['leaks']}; own code missing {r['own_missing']}")
    if any(x == float("inf") for x in r["vote_lat"] + r["step_lat"]):
        out.append("a vote never reached the projector or a student never followed a step")
    if r["reveals_seen"] != r["n"] * r["questions"] or r["reveals_other"]:
        out.append(f"reveals: {r['reveals_seen']} students saw the teacher's answer, {r['reveals_other']} another, "
                   f"of {r['n'] * r['questions']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--students", type=int, default=30)
    ap.add_argument("--questions", type=int, default=3, help="steps voted on, revealed and left with Next")
    ap.add_argument("--processes", type=int, default=1, help="more than 1: behind HAProxy, with a redis-server")
    ap.add_argument("--after-reveal", type=float, default=3.0, help="seconds between the reveal and Next")
    ap.add_argument("--py-spy", metavar="FILE", help="sample the first server with py-spy (raw stacks) into FILE")
    ap.add_argument("--py-spy-steps", metavar="FILE", help="sample the first server with py-spy during each step "
                    "change only (Next until every student drew it) into FILE.<step>")
    a = ap.parse_args()
    if not 1 <= a.students <= MAX_STUDENTS:
        sys.exit(f"--students {a.students}: this benchmark runs 1..{MAX_STUDENTS} students (each is a websocket "
                 "client in this one asyncio loop; a class holds at most 200 by default)")
    if not 1 <= a.questions <= 12:
        sys.exit("--questions: 1..12 (step k's question, then Next to step k + 1)")
    r = run(a.students, a.questions, a.processes, after_reveal=a.after_reveal, profile=a.py_spy,
              profile_steps=a.py_spy_steps)
    where = f"{r['processes']} process(es)" + (f" behind HAProxy + Redis, students on {r['backends']}"
                                              if r["processes"] > 1 else ", in-process class store")
    print(f"{a.students} students + a teacher, {a.questions} questions, {where}; {r['wall']:.0f} s; load average "
          f"{r['load'][0]:.1f} before, {os.getloadavg()[0]:.1f} after (1 min)")
    step_t, vote_t = (0.5, 0.5) if a.students <= 30 else (1.0, 1.0)  # the targets of a lecture hall
    if not r["vote_lat"] or not r["step_lat"]:
        sys.exit(f"FAILED: nothing measured: {r['problems'][:5]}")
    print(f"vote -> projector, s: p50 {pct(r['vote_lat'], 50):.2f} p95 {pct(r['vote_lat'], 95):.2f} "
          f"max {max(r['vote_lat']):.2f} (n={len(r['vote_lat'])}; target p95 <= {vote_t})")
    print(f"step change -> student, s: p50 {pct(r['step_lat'], 50):.2f} p95 {pct(r['step_lat'], 95):.2f} "
          f"max {max(r['step_lat']):.2f} (n={len(r['step_lat'])}; target p95 <= {step_t}): the new step's header "
          "on screen")
    print(f"  ... until the student's page has finished drawing the new step, s: p50 {pct(r['drawn_lat'], 50):.2f} "
          f"p95 {pct(r['drawn_lat'], 95):.2f} max {max(r['drawn_lat']):.2f}")
    cpu, wall = sum(c for c, _ in r["step_cpu"]), sum(w for _, w in r["step_cpu"])
    print(f"  server CPU per step change: {1000 * cpu / len(r['step_cpu']) / a.students:.1f} ms per student "
          f"({cpu / wall:.2f} cores busy while the step changed; this process, the students' clients, "
          f"{sum(r['client_cpu']) / wall:.2f} cores)")
    print(f"messages in one following student's pushed run, per step change: {r['messages']} (its new-session message "
          "to its script_finished; each a hand-off between the script's thread and the server's event loop)")
    print(f"votes sent / counted on the projector per question: {r['votes']}")
    print(f"timer ticks (fragment reruns, all clients), s: p50 {pct(r['ticks'], 50):.3f} p95 {pct(r['ticks'], 95):.3f} "
          f"(n={len(r['ticks'])}); server CPU during the class: {r['cores']:.2f} cores busy (of {os.cpu_count()})")
    for i, (b, af) in enumerate(zip(r["rss_before"], r["rss_after"])):
        print(f"process {i + 1} RSS: {b:.0f} MB with {a.students} students and no class -> {af:.0f} MB with the "
              f"class: +{af - b:.0f} MB (target <= 150)")
    print(f"runs the server pushed to students (no request of theirs): {r['pushed']}, of them whole-page runs: "
          f"{r['pushed_whole']} (the others rerun only the Lesson's fragment)")
    print(f"reveals seen by students: {r['reveals_seen']} of {a.students * a.questions} (the teacher's answer; "
          f"another answer: {r['reveals_other']}); leaks: {r['leaks'] or 'none'}")
    bad = failures(r)
    for f in bad:
        print("FAILED:", f)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
