"""`streamlit run app.py` on a loopback port, for the benchmarks and the browser tests: start, wait, stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
    port = port or free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"} if env is None else env
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1", *args],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not become healthy on {url}")
            time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
