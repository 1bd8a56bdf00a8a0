"""A live class under deploy/serve.sh while its redis-server is killed, frozen, lost: `python scripts/class_outage.py`.

Run by hand (about 4 minutes; docs/deploying.md, "When the class store goes away"). It starts
`deploy/serve.sh 2 PORT 127.0.0.1` (two app processes behind HAProxy, its own redis-server), then drives a teacher
and three students in Debian's chromium, the students spread over both processes (HAProxy's sticky cookie), the
teacher projecting (presenter mode, 1280 x 720) except in 2:

1. killed: the students vote on step 1; redis-server is killed (SIGKILL) and kept down OUTAGE s (serve.sh's restart
   loop is paused meanwhile, then restarts it on its append-only file); the teacher presses Next during the outage.
2. frozen: redis-server is stopped (SIGSTOP) FREEZE s while the teacher presses Next again, then continued.
3. lost: redis-server is killed and its append-only file deleted before serve.sh restarts it: it comes back empty.

Checked all along: the site answers through the proxy (no page shows Streamlit's "Connection error"), the
teacher's address keeps class= and teacher=, every page says it is reconnecting while the store is away; after 1
and 2 the class resumes (the students on both processes follow the teacher's next steps, the votes counted, the
reveal and the results CSV right), and on the projector the reconnecting note is beside the slide, inside
1280 x 720; after 3 the teacher is told the class was lost and starts a new one in one
click, and the students read that the class has ended. Screenshots and logs go to tests/output/class_outage/.
Exit status 0 when every check held; each failed check is printed.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
# The browser tests' helpers (tests/support): a page in its own context, and "its script has run and stopped".
from support.appserver import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from support.browser import settle  # noqa: E402
from support.class_pages import tab  # noqa: E402

OUT = ROOT / "tests" / "output" / "class_outage"
LOST_CONNECTION = "Connection error"  # Streamlit's dialog when a page's websocket is gone
RECONNECTING = "Reconnecting to the class"


class Check:
    """Collects what held and what failed, printed as it goes."""

    def __init__(self):
        self.failed: list[str] = []

    def __call__(self, ok: bool, what: str) -> bool:
        print(("  ok    " if ok else "  FAIL  ") + what, flush=True)
        if not ok:
            self.failed.append(what)
        return ok

    def wait(self, pg, selector: str, what: str, timeout: float = 60, state: str = "visible") -> bool:
        t = time.time()
        try:
            pg.wait_for_selector(selector, timeout=timeout * 1000, state=state)
        except Exception:
            return self(False, f"{what} (not within {timeout:.0f} s)")
        return self(True, f"{what} ({time.time() - t:.1f} s)")


def step_of(pg) -> int | None:
    m = re.match(r"Step (\d+) of", pg.evaluate("() => document.querySelector('h2')?.innerText || ''"))
    return int(m.group(1)) if m else None


def wait_step(check: Check, pg, k: int, who: str, timeout: float = 60) -> bool:
    t = time.time()
    try:
        pg.wait_for_function(f"() => document.querySelector('h2')?.innerText.startsWith('Step {k} of')",
                             timeout=timeout * 1000)
    except Exception:
        return check(False, f"{who} on step {k} (still on step {step_of(pg)} after {timeout:.0f} s)")
    return check(True, f"{who} on step {k} ({time.time() - t:.1f} s)")


def query(pg) -> dict:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query).items()}


def backend(pg) -> str:
    """The app process HAProxy keeps this browser on (its sticky cookie)."""
    return next((c["value"] for c in pg.context.cookies() if c["name"] == "BXSERVER"), "?")


class Proxy:
    """Polls the site's health through HAProxy every 0.5 s in a thread: the answers that were not 200."""

    def __init__(self, url: str):
        self.url, self.bad, self.n, self._stop = url, [], 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(0.5):
            self.n += 1
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=5) as r:
                    if r.status != 200:
                        self.bad.append((time.strftime("%H:%M:%S"), r.status))
            except OSError as e:
                self.bad.append((time.strftime("%H:%M:%S"), str(e)[:80]))

    def stop(self):
        self._stop.set()
        self._t.join()


def serve(port: int, log: Path) -> tuple[subprocess.Popen, str]:
    """deploy/serve.sh 2 PORT 127.0.0.1, once HAProxy answers: (its process, its work directory)."""
    f = open(log, "w")
    env = {k: v for k, v in os.environ.items() if k != "BERT_EXPLORER_CLASS_STORE"}  # serve.sh's own redis-server
    proc = subprocess.Popen([str(ROOT / "deploy" / "serve.sh"), "2", str(port), "127.0.0.1"],
                            env={**env, "HF_HUB_OFFLINE": "1"}, stdout=f, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 300
    while "HAProxy on" not in log.read_text() or not healthy(f"http://127.0.0.1:{port}"):
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit(f"serve.sh did not come up:\n{log.read_text()}")
        time.sleep(0.5)
    work = re.search(r"log (\S+)/redis\.log", log.read_text()).group(1)
    return proc, work


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def redis_pid(log: Path) -> int:
    """The pid of the redis-server serve.sh started last (its log says)."""
    return int(re.findall(r"serve\.sh: redis-server started \(pid (\d+)\)", log.read_text())[-1])


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def redis_answers(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def redis_down(log: Path, rport: int, seconds: float, wipe: Path | None = None) -> None:
    """Kill serve.sh's redis-server and keep it down `seconds`: its restart loop (the killed server's parent) is
    paused meanwhile. `wipe`: its work directory, whose append-only files are deleted (it comes back empty)."""
    pid = redis_pid(log)
    loop = parent(pid)
    os.kill(loop, signal.SIGSTOP)
    os.kill(pid, signal.SIGKILL)
    if wipe is not None:
        time.sleep(0.3)
        shutil.rmtree(wipe / "appendonlydir", ignore_errors=True)
        (wipe / "appendonly.aof").unlink(missing_ok=True)
    time.sleep(seconds)
    os.kill(loop, signal.SIGCONT)  # the loop sees its child gone, and starts it again a second later


def wait_redis(rport: int, timeout: float = 60) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if redis_answers(rport):
            return True
        time.sleep(0.2)
    return False


def no_connection_error(check: Check, pages: dict, when: str) -> None:
    for who, pg in pages.items():
        shown = pg.get_by_text(LOST_CONNECTION).count() > 0
        check(not shown and not pg.errors, f"{who} ({backend(pg)}): no connection error, no page error {when}"
              + (f" {pg.errors}" if pg.errors else ""))


def answered(check: Check, t, n: int, of: int, when: str, timeout: float = 60) -> bool:
    return check.wait(t, f"text={n} of {of} students have answered.", f"teacher's count {n} of {of} {when}", timeout)


def seen_during(pages: list, text: str, until: float) -> list[float | None]:
    """When each page first showed `text`, polled until `until` (or all have): None if never."""
    seen: list[float | None] = [None] * len(pages)
    while time.time() < until and None in seen:
        for i, pg in enumerate(pages):
            if seen[i] is None and pg.get_by_text(text).count() > 0:
                seen[i] = time.time()
        time.sleep(0.2)
    return seen


def card_answered(check: Check, t, n: int, when: str, timeout: float = 60) -> bool:
    return check.wait(t, f".st-key-class_card >> text=Answered: {n} of {n}", f"projector: {n} of {n} {when}", timeout)


def on_screen(check: Check, pg, selector: str, what: str) -> bool:
    """The element is inside the viewport (a projector shows nothing below it)."""
    b, v = pg.locator(selector).first.bounding_box(), pg.viewport_size
    ok = b is not None and b["x"] >= 0 and b["y"] >= 0 and b["x"] + b["width"] <= v["width"] \
        and b["y"] + b["height"] <= v["height"]
    return check(ok, f"{what} inside {v['width']} x {v['height']}: {b}")


def vote(pg, choice: int) -> None:
    labels = pg.locator('[data-testid="stRadio"] [role="radiogroup"] label')
    labels.nth(choice % labels.count()).click()
    pg.wait_for_selector("text=Your vote:", timeout=60_000)


def results_csv(t) -> list[list[str]]:
    t.get_by_text(re.compile(r"^Results: \d+ question")).click()
    with t.expect_download(timeout=60_000) as d:
        t.get_by_role("button", name="Download the results (CSV)").click()
    path = OUT / "class_results.csv"
    d.value.save_as(path)
    return list(csv.reader(io.StringIO(path.read_text())))


def run(port: int, outage: float, freeze: float) -> int:
    from playwright.sync_api import sync_playwright

    check = Check()
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "serve_sh.log"
    rport = port + 3
    print(f"serve.sh 2 {port}: starting (log {log}) ...", flush=True)
    proc, work = serve(port, log)
    url = f"http://127.0.0.1:{port}"
    proxy = Proxy(url)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            t = tab(browser, url, (1280, 720))
            t.goto(url + "/lesson?present=1", wait_until="domcontentloaded")
            settle(t)
            t.get_by_role("button", name="Class and sentence").click()  # presenter mode's popover
            t.get_by_role("button", name="Start a class").click()
            t.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"))
            settle(t)
            code, secret = query(t)["class"], query(t)["teacher"]
            students = []
            for i in range(3):
                s = tab(browser, url, (900, 900))
                # HAProxy's sticky cookie, set as if it had placed this browser: the students on both processes
                s.context.add_cookies([{"name": "BXSERVER", "value": f"s{i % 2 + 1}", "url": url}])
                s.goto(f"{url}/lesson?class={code}", wait_until="domcontentloaded")
                settle(s)
                s.get_by_role("textbox", name="Nickname (optional)").fill(f"Student{i}")
                s.get_by_role("textbox", name="Nickname (optional)").press("Enter")
                settle(s)
                s.get_by_role("button", name="Join the class").click()
                s.wait_for_url(re.compile(r"[?&]me="))
                settle(s)
                students.append(s)
            pages = {"teacher": t, **{f"student {i}": s for i, s in enumerate(students)}}
            where = {who: backend(pg) for who, pg in pages.items()}
            print(f"class {code}; processes: {where}", flush=True)
            check(len({backend(s) for s in students}) == 2, f"students on both processes: {where}")
            for i, s in enumerate(students):  # the first and the last choice, and the second
                vote(s, (0, -1, 1)[i])
            card_answered(check, t, 3, "on step 1")

            print(f"1. redis-server killed for {outage:.0f} s; the teacher presses Next meanwhile", flush=True)
            down = time.time()
            killer = threading.Thread(target=redis_down, args=(log, rport, outage))
            killer.start()
            time.sleep(0.5)
            t.locator(".st-key-lesson_next button").click()
            wait_step(check, t, 2, "teacher (the Lesson runs on without its class)")
            if check.wait(t, ".st-key-class_card >> text=Reconnecting to class", "projector: reconnecting"):
                on_screen(check, t, ".st-key-class_card", "projector: the reconnecting note")
            q = query(t)
            check((q.get("class"), q.get("teacher")) == (code, secret), f"teacher's address keeps class and key: {q}")
            seen = seen_during(students, RECONNECTING, down + outage - 0.5)
            for i, s in enumerate(students):
                check(seen[i] is not None, f"student {i} ({backend(s)}): reconnecting while redis-server is down "
                      f"(after {seen[i] - down if seen[i] else 0:.1f} s)")
            t.screenshot(path=str(OUT / "1_killed_teacher.png"))
            students[0].screenshot(path=str(OUT / "1_killed_student.png"))
            no_connection_error(check, pages, "while redis-server is down")
            killer.join()
            check(wait_redis(rport), "redis-server started again by serve.sh")
            check.wait(t, ".st-key-class_card >> text=Reconnecting", "projector: reconnecting gone", state="detached")
            check.wait(t, f".st-key-class_card >> text=Join: code {code}", "projector: the join card is back")
            for i, s in enumerate(students):
                wait_step(check, s, 2, f"student {i} ({backend(s)}) follows the teacher's step after the outage")
            t.locator(".st-key-lesson_back button").click()
            for i, s in enumerate(students):
                wait_step(check, s, 1, f"student {i} ({backend(s)}) follows the teacher back (teacher in control)")
            card_answered(check, t, 3, "after the restart: the votes kept")
            for i, s in enumerate(students):
                check.wait(s, "text=Your vote:", f"student {i}: their vote kept")
            settle(t)
            t.locator(".st-key-lesson_reveal button").first.click()  # (Streamlit draws a hidden twin)
            rights = 0
            for i, s in enumerate(students):
                if check.wait(s, '[data-testid="stAlert"] >> text=/Right|Not this time/', f"student {i}: the reveal"):
                    rights += s.locator('[data-testid="stAlert"]').filter(has_text="Right").count() > 0
            no_connection_error(check, pages, "after redis-server came back")
            t.screenshot(path=str(OUT / "1_back_projector.png"))
            t.get_by_role("button", name="Exit presenter mode").click()
            t.set_viewport_size({"width": 1280, "height": 900})
            settle(t)

            print(f"2. redis-server frozen (SIGSTOP) for {freeze:.0f} s; the teacher presses Next meanwhile",
                  flush=True)
            pid = redis_pid(log)
            os.kill(pid, signal.SIGSTOP)
            frozen = time.time()
            try:  # no settle(): the teacher's timers are running (each read waits for the frozen store)
                t.get_by_role("button", name="Next →").click()
                if os.environ.get("CLASS_OUTAGE_PYSPY"):  # what each app process waits on, 6 s into the freeze
                    time.sleep(max(0.0, frozen + 6 - time.time()))
                    for n in (1, 2):
                        app = re.findall(rf"serve\.sh: process {n} started \(pid (\d+)\)", log.read_text())[-1]
                        (OUT / f"pyspy_process{n}.txt").write_text(subprocess.run(
                            ["py-spy", "dump", "--pid", app], capture_output=True, text=True).stdout)
                seen = seen_during([t, *students], RECONNECTING, frozen + freeze - 0.5)
                check(seen[0] is not None, f"teacher: reconnecting while frozen (after "
                      f"{seen[0] - frozen if seen[0] else 0:.1f} s)")
                seen = seen[1:]
                wait_step(check, t, 2, "teacher, store frozen", timeout=5)
                q = query(t)
                check((q.get("class"), q.get("teacher")) == (code, secret), f"teacher's address keeps the key: {q}")
                for i, s in enumerate(students):
                    if not check(seen[i] is not None, f"student {i} ({backend(s)}): reconnecting while frozen "
                                 f"(after {seen[i] - frozen if seen[i] else 0:.1f} s)"):
                        s.screenshot(path=str(OUT / f"2_frozen_student{i}.png"))
                t.screenshot(path=str(OUT / "2_frozen_teacher.png"))
                no_connection_error(check, pages, "while redis-server is frozen")
                time.sleep(max(0.0, freeze - (time.time() - frozen)))
            finally:
                os.kill(pid, signal.SIGCONT)
            if not check.wait(t, f"text={RECONNECTING}", "teacher: reconnecting gone after the freeze",
                              state="detached"):
                print("   still shown:", t.evaluate("""(s) => [...document.querySelectorAll('[data-testid=stMain] *')]
                    .filter(e => e.children.length === 0 && e.innerText?.includes(s))
                    .map(e => [e.innerText.slice(0, 100), [...(function* (n) { while (n) { if (n.dataset?.testid
                        || [...n.classList].some(c => c.startsWith('st-key-'))) yield (n.dataset.testid || '') + ' '
                        + [...n.classList].filter(c => c.startsWith('st-key-')).join(' '); n = n.parentElement; }
                        })(e)].slice(0, 12)])""", RECONNECTING))
                t.screenshot(path=str(OUT / "2_after_freeze_teacher.png"))
            for i, s in enumerate(students):
                wait_step(check, s, 2, f"student {i} ({backend(s)}) on step 2 after the freeze")
            for i, s in enumerate(students):
                try:
                    vote(s, 0)
                    check(True, f"student {i} ({backend(s)}) votes on step 2 after the freeze")
                except Exception as e:
                    check(False, f"student {i} votes on step 2 after the freeze: {str(e)[:120]}")
                closed = s.get_by_text("votes on this question are closed").count()
                check(closed == 0, f"student {i}: no 'votes closed' on the new question")
            answered(check, t, 3, 3, "on step 2 after the freeze")
            rows = results_csv(t)
            print("   results CSV:", rows[:3], flush=True)
            head = rows[0] if rows else []
            row = dict(zip(head, rows[1])) if len(rows) > 1 else {}
            check(row.get("step") == "1" and row.get("answered") == "3" and row.get("right") == str(rights),
                  f"CSV: step 1 answered by 3, {rights} right as the students were told: {row}")
            named = [r[0] for r in rows if r and r[0].startswith("Student")]
            check(sorted(named) == ["Student0", "Student1", "Student2"], f"CSV: each student once: {named}")
            no_connection_error(check, pages, "after the freeze")

            print("3. redis-server killed and its append-only file deleted: it comes back empty", flush=True)
            t.get_by_text("Presenter mode").click()  # back on the projector
            t.set_viewport_size({"width": 1280, "height": 720})
            settle(t)
            redis_down(log, rport, 2.0, wipe=Path(work))
            check(wait_redis(rport), "redis-server started again, empty")
            t.locator(".st-key-lesson_back button").click()
            if check.wait(t, ".st-key-class_card >> text=was lost", "projector: told the class was lost"):
                on_screen(check, t, ".st-key-class_card", "projector: the lost note and its button")
            q = query(t)
            check("teacher" not in q or q.get("class") == code, f"teacher's address after the loss: {q}")
            for i, s in enumerate(students):
                check.wait(s, "text=The class has ended: ask your teacher for the new code",
                           f"student {i} ({backend(s)}): the class has ended, ask for the new code", timeout=60)
            t.screenshot(path=str(OUT / "3_lost_teacher.png"))
            students[1].screenshot(path=str(OUT / "3_lost_student.png"))
            t.get_by_role("button", name="Start a new class").click()
            t.wait_for_url(re.compile(r"class=(?!" + code + r")[A-Z0-9]{6}"), timeout=60_000)
            settle(t)
            check("teacher" in query(t) and t.get_by_text(f"Join: code {query(t)['class']}").count() == 1,
                  f"teacher: a new class in one click ({query(t).get('class')})")
            no_connection_error(check, pages, "after the class was lost")
            browser.close()
    finally:
        proxy.stop()
        check(not proxy.bad, f"the site answered through HAProxy all along ({proxy.n} health checks; "
                             f"not 200: {proxy.bad[:5]})")
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        restarts = re.findall(r"serve\.sh: .* ended with status .*", log.read_text())
        print("serve.sh's log of restarts:", *restarts, sep="\n  ")
    print(f"\n{len(check.failed)} check(s) failed" + "".join(f"\n  - {f}" for f in check.failed)
          if check.failed else "\nevery check held")
    return 1 if check.failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8740, help="HAProxy's port; the processes take the next 3")
    ap.add_argument("--outage", type=float, default=10.0, help="seconds redis-server stays killed")
    ap.add_argument("--freeze", type=float, default=12.0, help="seconds redis-server stays stopped (SIGSTOP)")
    a = ap.parse_args()
    return run(a.port, a.outage, a.freeze)


if __name__ == "__main__":
    sys.exit(main())
