"""`streamlit run app.py` (alone or behind HAProxy) and redis-server on loopback ports, for the server-tier tests
and the benchmarks: start, wait, stop. A test that starts one is marked `server` or `browser` (support/tiers.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from support.tiers import require_server_tier
from support.wait import until

ROOT = Path(__file__).resolve().parents[2]
# Debian's chromium, never a browser a test tool downloads; without the background-networking
# flags it keeps calling out, and this machine refuses every such connection.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident set size so far (VmHWM in /proc/<pid>/status), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


@contextmanager
def app_server(env: dict[str, str] | None = None, port: int | None = None, log=subprocess.DEVNULL,
               args: tuple[str, ...] = (), timeout: float = 120) -> Iterator[tuple[str, subprocess.Popen]]:
    """Yield (base url, process) once the server answers its health check; stop it afterwards.

    `env` is the server's whole environment (default: this one with HF_HUB_OFFLINE=1: the hub is
    never reached from here). Raises RuntimeError when it does not come up within `timeout` s.
    """
    require_server_tier("a Streamlit server")
    port = port or free_port()
    proc = _start_streamlit(port, env, log, args)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_healthy(url, proc, timeout)
        except RuntimeError:
            raise RuntimeError(f"streamlit did not become healthy on {url}") from None
        yield url, proc
    finally:
        _stop(proc)


def _start_streamlit(port: int, env: dict[str, str] | None, log, args: tuple[str, ...]) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"} if env is None else env
    return subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1", *args],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _up(answers: Callable[[], bool], proc: subprocess.Popen, timeout: float, every: float) -> bool:
    """Poll `answers()` until it is true (True) or `proc` has ended or `timeout` s have passed (False)."""
    try:
        return until(lambda: "up" if answers() else "ended" if proc.poll() is not None else None, timeout,
                     "an answer", every=every) == "up"
    except AssertionError:
        return False


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    """Poll `url`/_stcore/health until it answers 200; RuntimeError if `proc` ends or `timeout` s pass."""
    def answers() -> bool:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    if not _up(answers, proc, timeout, every=0.2):
        raise RuntimeError(f"{url} did not become healthy")


def haproxy_config(ports: list[int]) -> str:
    """deploy/haproxy.cfg with one sticky server line per backend port (what deploy/serve.sh writes)."""
    servers = "".join(f"    server s{i} 127.0.0.1:{p} cookie s{i} check\n" for i, p in enumerate(ports, 1))
    lines = (ROOT / "deploy" / "haproxy.cfg").read_text().splitlines(keepends=True)
    return "".join(servers if "# @SERVERS@" in line else line for line in lines)


@contextmanager
def proxied_app_servers(n: int, envs: list[dict[str, str]] | None = None, logs: list | None = None,
                        args: tuple[str, ...] = (), timeout: float = 120
                        ) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`n` app servers behind HAProxy (deploy/haproxy.cfg, sticky by cookie): yield (proxy url, server processes).

    `envs[i]` / `logs[i]` are server i's environment and log (defaults as in `app_server`).
    """
    require_server_tier("HAProxy and Streamlit servers")
    haproxy = "/usr/sbin/haproxy"
    if not Path(haproxy).exists():
        raise RuntimeError("HAProxy is required (scripts/test installs Debian's haproxy)")
    ports = [free_port() for _ in range(n)]
    procs: list[subprocess.Popen] = []
    proxy = None
    try:
        for i, port in enumerate(ports):  # all start at once: they import torch side by side
            procs.append(_start_streamlit(port, envs[i] if envs else None, logs[i] if logs else subprocess.DEVNULL,
                                          args))
        for port, proc in zip(ports, procs):
            wait_healthy(f"http://127.0.0.1:{port}", proc, timeout)
        with tempfile.TemporaryDirectory() as d:
            cfg = Path(d) / "haproxy.cfg"
            cfg.write_text(haproxy_config(ports))
            port = free_port()
            proxy = subprocess.Popen([haproxy, "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL,
                                     env={**os.environ, "BX_BIND": f"127.0.0.1:{port}"}, stderr=subprocess.STDOUT)
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proxy, 30)
            yield url, procs
    finally:
        for p in ([proxy] if proxy else []) + procs:
            _stop(p)


REDIS_SERVER = "/usr/bin/redis-server"  # Debian's redis-server (scripts/test installs it)


@contextmanager
def redis_server(workdir: Path, port: int | None = None, maxmemory_mb: int = 64,
                 timeout: float = 20, appendonly: bool = False) -> Iterator[tuple[str, subprocess.Popen]]:
    """A real redis-server on a loopback port, its files in `workdir`: yield (redis:// url, process); stop it after.

    No persistence unless `appendonly` (as deploy/serve.sh starts it: its append-only file in `workdir`, written
    every second, so a server started again on the same `workdir` comes back with its data); `maxmemory` bounds it.
    """
    require_server_tier("a redis-server")
    if not Path(REDIS_SERVER).exists():
        raise RuntimeError("Debian's redis-server is required (scripts/test installs it)")
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
                             "--save", "", "--appendonly", "yes" if appendonly else "no",
                             "--appendfsync", "everysec", "--maxmemory", f"{maxmemory_mb}mb",
                             "--maxmemory-policy", "volatile-lru", "--logfile", str(workdir / "redis.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    return s.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        if not _up(answers, proc, timeout, every=0.05):
            raise RuntimeError(f"redis-server did not answer on port {port}")
        yield url, proc
    finally:
        _stop(proc)
