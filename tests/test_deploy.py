"""The Dockerfile (not built here: no base images reachable) stays in step with CI and the app.

CI (.ci/run -> scripts/test) installs requirements-dev.txt; the Dockerfile installs requirements.txt.
Both must come down to the same runtime pins, and the image must run the app the way the tests do.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    assert image_opts == ["--extra-index-url https://download.pytorch.org/whl/cpu"]
    assert dev_opts == [], "CI reaches only PyPI"
    assert "torch==2.13.0" in runtime
    d = _dockerfile()
    assert re.search(r"^RUN python -m pip install -r requirements\.txt$", d, re.M)
    copied = re.search(r"^COPY (requirements\.txt requirements-runtime\.txt) \./$", d, re.M)
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
    args = re.findall(r'"([^"]+)"', cmd)
    assert args[:5] == ["python", "-m", "streamlit", "run", "app.py"]
    assert args[args.index("--server.port") + 1] == "8501" and "EXPOSE 8501" in d
    # The bundled model and the Streamlit config go in with `COPY . .`; nothing may exclude them.
    assert re.search(r"^COPY --chown=app:app \. \.$", d, re.M)
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")]
    for kept in ("bert_core", "bert_core/bundled", ".streamlit", "app.py", "views", "ui"):
        assert kept not in ignored, kept
    assert (ROOT / "bert_core" / "bundled").is_dir() and (ROOT / ".streamlit" / "config.toml").is_file()
