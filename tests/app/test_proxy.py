"""deploy/serve.sh: two Streamlit processes behind HAProxy serve the app, and each browser stays on one.

A "browser" here is tests/support/wsclient.py's Client: it loads the page over HTTP (keeping HAProxy's
sticky cookie, as a browser does), opens Streamlit's websocket with that cookie and runs a page.
HAProxy names the process that answered each request (X-Served-By, deploy/haproxy.cfg).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
from support import wsclient
from support.appserver import ROOT, free_port, wait_healthy
from support.wait import until


def _get(url: str, cookie: str = "") -> tuple[int, str | None, str]:
    """(status, X-Served-By, the sticky cookie it set) of one GET."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        set_cookie = [c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or [] if c.startswith("BXSERVER=")]
        return r.status, r.headers.get("X-Served-By"), "; ".join(set_cookie)


def _start(port: int) -> subprocess.Popen:
    """`deploy/serve.sh 2 PORT 127.0.0.1`, once it answers through the proxy."""
    assert os.path.exists("/usr/sbin/haproxy"), "Debian's haproxy is required (scripts/test installs it)"
    out = ROOT / "tests" / "output"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "serve_sh.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([str(ROOT / "deploy" / "serve.sh"), "2", str(port), "127.0.0.1"],
                                env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, 240)  # two processes import torch side by side
    except RuntimeError:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        raise RuntimeError(f"serve.sh did not come up: {log.read_text()}") from None
    return proc


@pytest.mark.server
def test_two_processes_serve_the_app_each_browser_stays_on_one_and_sigterm_stops_all():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _start(port)
    try:
        _check_served(url, port)
        code, secret = _check_class(url)  # one live class across both processes (serve.sh's redis-server)
        _check_restarts(url, port, code, secret)  # a dead redis-server or app process is started again
    finally:
        proc.send_signal(signal.SIGTERM)  # serve.sh's trap stops HAProxy and both Streamlit processes
        proc.wait(timeout=60)
    until(lambda: all(_refused(p) for p in (port, port + 1, port + 2)), 60, "every port closed (no orphan left)")
    for p in (port, port + 1, port + 2):  # no orphan still holds a port
        with pytest.raises(OSError):
            _get(f"http://127.0.0.1:{p}/_stcore/health")


def _refused(port: int) -> bool:
    try:
        _get(f"http://127.0.0.1:{port}/_stcore/health")
    except OSError:
        return True
    return False


def _healthy(port: int) -> bool:
    try:
        return _get(f"http://127.0.0.1:{port}/_stcore/health")[0] == 200
    except OSError:
        return False


# Browsers of a loaded machine: the websocket is never dropped for a late ping (the server is slow, not gone).
def _client(url: str) -> wsclient.Client:
    return wsclient.Client(url, ping_timeout=None)


def _check_served(url: str, port: int) -> None:

    async def browse(i: int) -> tuple[wsclient.Client, wsclient.Run]:
        c = _client(url)
        await c.connect()
        text = f"The {wsclient.marker(i)} [MASK] the letter."
        run = await c.rerun("tokenization", urllib.parse.urlencode({"text": text}))
        await c.close()
        return c, run

    async def four():
        return await asyncio.gather(*(browse(i) for i in range(4)))

    expect = wsclient.Expect()
    browsers = asyncio.run(four())
    for i, (c, run) in enumerate(browsers):
        assert wsclient.problems_of(run) == []
        assert c.backend_http in ("s1", "s2") and c.backend_ws == c.backend_http, (c.backend_http, c.backend_ws)
        text = f"The {wsclient.marker(i)} [MASK] the letter."
        assert wsclient.check_answer("tokenization", text, run, expect) == []  # its own text, answered
        assert wsclient.marker(i).encode() in c.received
        assert not any(wsclient.marker(j).encode() in c.received for j in range(4) if j != i)
    # New browsers are spread over both processes (round robin), so the proxy really has two behind it.
    assert {c.backend_ws for c, _ in browsers} == {"s1", "s2"}

    # A browser's later requests follow its cookie, whichever process a new browser would get.
    status, first, cookie = _get(url + "/")
    assert status == 200 and cookie.startswith("BXSERVER=") and first in ("s1", "s2")
    for _ in range(4):
        assert _get(url + "/_stcore/health", cookie)[1] == first
        assert _get(url + "/", cookie)[1] == first
    # The processes listen on loopback ports PORT+1 and PORT+2 only; the proxy is the way in.
    assert _get(f"http://127.0.0.1:{port + 1}/_stcore/health")[0] == 200


def _check_class(url: str) -> None:
    """A teacher and four students spread over both processes are one class: every vote reaches the projector."""

    async def go() -> tuple[list, str]:
        t = _client(url)
        await t.connect()
        await t.rerun("lesson")
        await t.rerun(widgets={"class_start": True})
        code = urllib.parse.parse_qs(t.page_query)["class"][0]
        students, pushed = [], {}
        for i in range(4):
            c = _client(url)
            c.on_push = pushed.setdefault(i, []).append  # whole runs the server starts, nobody asking
            await c.connect()
            await c.rerun("lesson", query=f"class={code}")
            run = await c.rerun(widgets={"class_join": True})
            assert wsclient.problems_of(run) == []
            radio = next(e for e in run.of("radio") if "class_vote_" in e.id)
            await c.rerun(widgets={radio.id.split("-", 2)[2]: radio.options[0]}, fragment=next(iter(c.fragments)),
                          auto=False)
            students.append(c)
        shown = []
        for fid in list(t.fragments):  # the projector's timers, ticked once
            shown += [e.body for e in (await t.rerun(fragment=fid)).of("markdown")]
        # The teacher moves on. No student's timer ticks here: only the server's push (Redis pub/sub to the
        # other process, then a rerun of each following student's page) can bring them the next step.
        for runs in pushed.values():
            runs.clear()
        await t.rerun(widgets={"lesson_next": True})
        deadline = time.monotonic() + 120  # a push through Redis to the other process, then a rerun, on a busy machine
        while time.monotonic() < deadline and not all(any(_heading(r).startswith("Step 2 of") for r in pushed[i])
                                                      for i in range(4)):
            await asyncio.sleep(0.1)
        followed = [any(_heading(r).startswith("Step 2 of") for r in pushed[i]) for i in range(4)]
        for c in [t, *students]:
            await c.close()
        return [c.backend_ws for c in students], "\n".join(shown), followed, code, t.page_query

    backends, shown, followed, code, query = asyncio.run(go())
    assert set(backends) == {"s1", "s2"}, backends
    assert "**4 of 4** students have answered." in shown, shown
    assert all(followed), f"students who got the teacher's next step pushed: {followed} (on {backends})"
    return code, urllib.parse.parse_qs(query)["teacher"][0]


def _log() -> str:
    return (ROOT / "tests" / "output" / "serve_sh.log").read_text()


def _pids(name: str) -> list[int]:
    """The pids serve.sh's log says it started `name` with, in order."""
    return [int(m) for m in re.findall(rf"serve\.sh: {re.escape(name)} started \(pid (\d+)\)", _log())]


def _check_restarts(url: str, port: int, code: str, secret: str) -> None:
    """Kill serve.sh's redis-server, then one app process: the site answers all along, each is started again (the
    app process warmed up again), and the class comes back with its votes (redis-server's append-only file)."""
    from classroom.redis_store import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{port + 3}/0")
    before = store.fields(code, secret)  # step 2 now; step 1's four votes are in it
    assert sum(int(v) for k, v in before.items() if k.startswith("a:")) == 4
    first = _pids("redis-server")[-1]
    os.kill(first, signal.SIGKILL)

    def restarted() -> bool:
        assert _get(url + "/_stcore/health")[0] == 200  # the site stays up while its class store is away
        return len(_pids("redis-server")) >= 2

    until(restarted, 120, "serve.sh to start redis-server again", every=0.2)
    assert _pids("redis-server")[-1] != first

    def fields() -> dict | None:
        try:
            return store.fields(code, secret)
        except Exception:  # the new redis-server is still loading its append-only file
            return None

    after = until(fields, 60, "the new redis-server to answer with the class", every=0.2)
    assert after == before
    store.r.close()
    app = _pids("process 1")[-1]
    os.kill(app, signal.SIGKILL)
    until(lambda: len(_pids("process 1")) >= 2, 240, "serve.sh to start app process 1 again", every=0.5)
    assert _pids("process 1")[-1] != app
    until(lambda: _healthy(port + 1), 300, "the restarted app process to answer its health check", every=0.5)
    assert _get(url + "/_stcore/health")[0] == 200
    # ... and warmed up again (the Lesson run once, as at start), so its first students do not load the model.
    warmed = f"warm_up: http://127.0.0.1:{port + 1} ran app.py once"
    until(lambda: _log().count(warmed) >= 2, 300, "the restarted process's warm-up", every=0.5)
    assert _log().count(warmed) == 2, _log()


def _heading(run: wsclient.Run) -> str:
    return next((e.body for k, e in run.elements if k == "heading"), "")
