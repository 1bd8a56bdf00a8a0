"""The Dockerfile (not built here: no base images reachable) stays in step with CI and the app.

CI (.ci/run -> scripts/test) installs requirements-dev.txt; the Dockerfile installs requirements.txt.
Both must come down to the same runtime pins, and the image must run the app the way the tests do.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from support.wait import until

ROOT = Path(__file__).resolve().parents[2]


def _requirements(name: str) -> tuple[list[str], list[str]]:
    """(pins, pip options such as --extra-index-url) of a requirements file, following -r includes."""
    pins, options = [], []
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            p, o = _requirements(line[3:].strip())
            pins += p
            options += o
        elif line.startswith("-"):
            options.append(line)
        elif line:
            pins.append(line)
    return pins, options


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_installs_the_runtime_pins_ci_installs_plus_only_the_cpu_index():
    runtime, _ = _requirements("requirements-runtime.txt")
    image, image_opts = _requirements("requirements.txt")
    dev, dev_opts = _requirements("requirements-dev.txt")
    assert image == runtime, "requirements.txt must be the runtime pins and nothing else"
    assert set(runtime) <= set(dev), "CI must test the pins the image installs"
    # Both apply the tested versions of everything (constraints.txt, tests/packaging/test_pins.py).
    assert image_opts == ["--extra-index-url https://download.pytorch.org/whl/cpu", "-c constraints.txt"]
    assert dev_opts == ["-c constraints.txt"], "CI reaches only PyPI"
    assert "torch==2.13.0" in runtime
    d = _dockerfile()
    assert re.search(r"^RUN python -m pip install -r requirements\.txt$", d, re.M)
    copied = re.search(r"^COPY (requirements\.txt requirements-runtime\.txt constraints\.txt) \./$", d, re.M)
    assert copied, "every file requirements.txt includes must be copied before the install"
    assert "requirements-dev.txt" in (ROOT / ".ci" / "run").read_text()
    assert "requirements-dev.txt" in (ROOT / "scripts" / "test").read_text()


def test_dockerfile_base_user_health_and_command_match_the_app():
    d = _dockerfile()
    assert re.search(r"^FROM python:3\.11-slim$", d, re.M)
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^USER app$", d, re.M), "the app must not run as root"
    assert d.index("USER app") < d.index("CMD ["), "USER must come before CMD"
    assert re.search(r"^HEALTHCHECK .*\n.*/_stcore/health", d, re.M)
    cmd = re.search(r"^CMD \[(.*?)\]$", d, re.M | re.S).group(1)
    assert re.findall(r'"([^"]+)"', cmd) == ["deploy/start.sh", "8501", "0.0.0.0"] and "EXPOSE 8501" in d
    start = (ROOT / "deploy" / "start.sh").read_text()
    assert "python -m streamlit run app.py" in start and "--server.scriptHealthCheckEnabled true" in start
    # The bundled model and the Streamlit config go in with `COPY . .`; nothing may exclude them.
    assert re.search(r"^COPY --chown=app:app \. \.$", d, re.M)
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")]
    for kept in ("bert_core", "bert_core/bundled", "bert_core/bundled_minilm", ".streamlit", "app.py", "views", "ui"):
        assert kept not in ignored, kept
    assert (ROOT / "bert_core" / "bundled").is_dir() and (ROOT / "bert_core" / "bundled_minilm").is_dir()
    assert (ROOT / ".streamlit" / "config.toml").is_file()


@pytest.mark.server
def test_start_sh_serves_warms_up_and_stops_on_sigterm():
    """deploy/start.sh (the image's command) here: healthy, app.py run once by the warm-up, SIGTERM stops it."""
    import signal
    import subprocess
    import urllib.request

    from support.appserver import free_port

    port = free_port()
    out = ROOT / "tests" / "output"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "start_sh.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([str(ROOT / "deploy" / "start.sh"), str(port), "127.0.0.1"], stdout=f,
                                stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:

        def warmed() -> bool:
            assert proc.poll() is None, log.read_text()
            return "warm_up:" in log.read_text()

        until(warmed, 300, "start.sh's warm-up (torch's import and the model load on a busy machine)", every=0.5)
        assert "ran app.py once" in log.read_text() and "(200)" in log.read_text(), log.read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
            assert r.status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_first_run_on_a_desktop_asks_nothing(tmp_path):
    """`streamlit run app.py` as the README says, by a new user on a desktop (no ~/.streamlit yet, not headless): the
    app starts without stopping at Streamlit's first-run "Email:" prompt, which waits on the
    terminal until Enter (.streamlit/config.toml's server.showEmailPrompt)."""
    import subprocess

    from support.appserver import free_port

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    opened = tmp_path / "opened"
    (bin_ / "xdg-open").write_text(f'#!/bin/sh\necho "$1" > {opened}\n')  # the desktop's browser: a file here
    (bin_ / "xdg-open").chmod(0o755)
    log = tmp_path / "streamlit.log"
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PATH": f"{bin_}:{os.environ['PATH']}", "HF_HUB_OFFLINE": "1"}
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 "--server.address", "127.0.0.1", "--server.headless", "false"], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=f, stderr=subprocess.STDOUT)
    try:
        # Up to 300 s: torch's import on a busy machine.
        until(lambda: proc.poll() is not None or any(s in log.read_text() for s in ("You can now view", "Email")),
              300, "streamlit to print its address or the Email prompt", every=0.5)
        assert proc.poll() is None, log.read_text()
        assert "Email" not in log.read_text(), log.read_text()
    finally:
        proc.kill()
        proc.wait()
