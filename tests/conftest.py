"""What every test folder needs: the tiers (markers `browser` and `server`, applied here), the longest-files-first
order (support/durations.py), tiny checkpoints, a clean model setting, and the shared app server. Folder fixtures
live in each folder's conftest.py; shared code in tests/support/."""

from __future__ import annotations

import os

import pytest
from support import durations, tiers
from support.checkpoints import VOCAB, write_tiny_checkpoint
from support.paths import OUT, worker_suffix

# Results bert_core keeps on disk (a neighbours index, a probing run; bert_core/inspect/stored.py) go under
# tests/output, shared by the test processes, the app servers and the notebooks' kernels they start.
os.environ.setdefault("BERT_EXPLORER_RESULTS_DIR",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "results"))

# The deployment's model settings: every app server a test starts inherits os.environ, so one test that leaves
# BERT_EXPLORER_MODEL behind makes every later server of its worker default to that model (bert-base-uncased, which
# cannot load offline: its pages fell back to the tiny model). Streamlit copies a secrets file's top-level strings
# into os.environ when it loads it, behind monkeypatch's back.
MODEL_SETTINGS = ("BERT_EXPLORER_MODEL", "BERT_EXPLORER_DEFAULT_MODEL")


@pytest.fixture(autouse=True)
def model_settings_unchanged():
    before = {k: os.environ.get(k) for k in MODEL_SETTINGS}
    yield
    after = {k: os.environ.get(k) for k in MODEL_SETTINGS}
    for k, v in before.items():  # put them back, so one leak fails one test, not the servers after it
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    assert after == before, f"this test left the model settings changed: {before} -> {after}"


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """{kind: (dir, hf_model)} for the three checkpoint kinds."""
    out = {}
    for kind in ("pretraining", "mlm", "base"):
        d = tmp_path_factory.mktemp(f"tiny-{kind}")
        out[kind] = (d, write_tiny_checkpoint(d, kind))
    return out


@pytest.fixture(scope="session")
def head_bases(tmp_path_factory):
    """Loaded tiny BERT MLM checkpoints for new heads: "mlm" (dropout on) and "nodrop" (no dropout, for parity)."""
    import bert_core

    out = {}
    for name, kw in (("mlm", {}), ("nodrop", {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})):
        d = tmp_path_factory.mktemp(f"head-{name}")
        write_tiny_checkpoint(d, "mlm", **kw)
        out[name] = bert_core.load_model(str(d))
    return out


@pytest.fixture(scope="session")
def markup_dir(tmp_path_factory):
    """A tiny checkpoint whose vocabulary has `<`, `>` and `/` as tokens (the bundled one maps them to [UNK])."""
    d = tmp_path_factory.mktemp("tiny-markup")
    write_tiny_checkpoint(d, "pretraining", vocab=VOCAB + ["<", ">", "/", "&", "script", "alert", "1"])
    return d


@pytest.fixture
def markup_default_model(markup_dir, monkeypatch):
    """Make `markup_dir` the model a fresh session gets, so hostile text reaches the pages as markup tokens."""
    import ui.state

    monkeypatch.setattr(ui.state, "DEFAULT_MODEL", str(markup_dir))
    return markup_dir


@pytest.fixture
def no_network(monkeypatch):
    """Every socket connection and DNS look-up fails, as on a machine with no network."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def slots(monkeypatch):
    """A fresh process-wide training slot manager (capacity 2), so one test's run cannot hold another's slot."""
    from server import slots as process_slots

    fresh = process_slots.SlotManager(capacity=2)
    monkeypatch.setattr(process_slots, "SLOTS", fresh)
    return fresh


def pytest_addoption(parser):
    parser.addoption("--write-durations", action="store_true",
                     help="merge each test file's measured seconds into tests/durations.json (the file order)")


def pytest_configure(config):
    """The files' order is ours (support/durations.py): pytest-xdist's default reorder of files by their number of
    tests is turned off. In a pytest-xdist worker, torch gets this worker's share of the cores: workers x threads
    never exceeds the cores (oversubscribed intra-op threads wait on each other and slow every worker down)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if config.getoption("--write-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(durations.Recorder(), "write-durations")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


# Fixtures that start a real process outside AppTest (a Streamlit server, a redis-server, a Jupyter kernel): a test
# using one is `server`.
SERVER_FIXTURES = {"shared_app_server", "redis_url", "kernel"}
# Fixtures that launch chromium: a test using one is `browser`.
BROWSER_FIXTURES = {"browser", "chromium"}


def pytest_collection_modifyitems(config, items):
    """Mark the tiers, then order the files longest first by tests/durations.json (support/durations.py); a file's
    tests keep their collected order (sorted() is stable)."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        used = set(getattr(item, "fixturenames", ()))
        if path.startswith("tests/browser/") or BROWSER_FIXTURES & used:
            item.add_marker(pytest.mark.browser)  # a browser test has its server too: one tier, the browser's
        elif SERVER_FIXTURES & used:
            item.add_marker(pytest.mark.server)
    _check_browser_tests_marked(items)
    slow_files = {item.nodeid.split("::", 1)[0] for item in items
                  if item.get_closest_marker("browser") or item.get_closest_marker("server")}

    seconds = durations.load()

    def rank(item) -> tuple[int, float]:
        path = item.nodeid.split("::", 1)[0]
        return durations.file_rank(path, seconds, path in slow_files)

    items[:] = sorted(items, key=rank)


def _check_browser_tests_marked(items) -> None:
    """Every test in a module that drives Playwright is `browser`: a browser test left unmarked would run in the fast
    tier. (Server starters check their own tier when they run: support/tiers.py.)"""
    sources: dict = {}
    for item in items:
        path = getattr(item, "path", None)
        if path is None or path.suffix != ".py":
            continue
        if path not in sources:
            sources[path] = "playwright" in path.read_text(encoding="utf-8", errors="replace")
        if sources[path] and not item.get_closest_marker("browser"):
            raise pytest.UsageError(f"{item.nodeid} drives Playwright but is not marked `browser` (tests/conftest.py)")


def pytest_runtest_setup(item):
    """The test being set up, for support/tiers.py's check that whatever starts a server is marked for it."""
    tiers.CURRENT = item


def pytest_runtest_teardown(item, nextitem):
    tiers.CURRENT = item  # a module or session fixture's teardown runs here: still this test's


# ------------------------------------------------------------------ the real app server (browser and classroom tests)
@pytest.fixture(scope="session")
def shared_app_server():
    """One `streamlit run app.py` for the whole session (offline, developmentMode off), shared by the browser tests
    that need no special environment; its log in tests/output/server[-gwN].log. Each test still opens its own
    browser context, hence its own Streamlit session; only the server's start (torch's import, the model's load,
    the caches) is paid once instead of once per test file."""
    from support.appserver import app_server

    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(OUT / f"server{worker_suffix()}.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (url, _):
        yield url
