"""Shared fixtures: tiny random Hugging Face BERTs saved to temp dirs, loaded through our loader."""

from __future__ import annotations

import os
import shutil

import pytest

# Results bert_core keeps on disk (a neighbours index, a probing run; bert_core/inspect/stored.py) go under
# tests/output, shared by the test processes, the app servers and the notebooks' kernels they start.
os.environ.setdefault("BERT_EXPLORER_RESULTS_DIR",
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "output", "results"))

# A small vocabulary with real words, `##` pieces, accents and punctuation, so tokenization
# tests see every case; the parity models use it too.
VOCAB = list(dict.fromkeys(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(".,!?;:'\"()-")
    + list("abcdefghijklmnopqrstuvwxyz")
    + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    + "the a cat dog sat on mat was is it play ##ing ##ed ##s un ##aff ##able cafe paris".split()
    + "he she went to store bought milk i you we they and of in".split()
))


def save_perturbed(model, path, vocab=None):
    """Perturb a random HF model's LayerNorms and biases (init leaves them at identity / zero, where a tensor
    copied to the wrong place would not show), save it and a WordPiece tokenizer over `vocab` to `path`."""
    import torch

    from bert_core.model.tokenization import WordPieceTokenizer

    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(VOCAB if vocab is None else vocab) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    return model


def write_tiny_checkpoint(path, kind="pretraining", seed=0, vocab=None, **config_overrides):
    """Save a random tiny HF BERT (`pretraining`, `mlm` or `base`) plus a tokenizer to `path`."""
    vocab = VOCAB if vocab is None else vocab
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

    from bert_core.model.tokenization import WordPieceTokenizer

    torch.manual_seed(seed)
    kw = dict(vocab_size=len(vocab) + 3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, max_position_embeddings=64, attn_implementation="eager")
    kw.update(config_overrides)
    cfg = BertConfig(**kw)
    cls = {"pretraining": BertForPreTraining, "mlm": BertForMaskedLM, "base": BertModel}[kind]
    model = cls(cfg).eval()
    # Random init leaves LayerNorms at identity and biases at zero: perturb them so the test
    # would notice a LayerNorm or bias copied to the wrong place.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(path)
    # The tokenizer is built from vocab.txt alone (as old hub checkpoints ship it), then saved
    # with tokenizer.json too; HF's BertTokenizerFast reads the result (tests/model/test_tokenization.py).
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    return model


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
    from bert_core.runs import training_run as session_training

    fresh = session_training.SlotManager(capacity=2)
    monkeypatch.setattr(session_training, "SLOTS", fresh)
    return fresh


def worker_suffix() -> str:
    """"" in a plain run, "-gw0", "-gw1"... in a pytest-xdist worker: per-worker names for files under tests/output."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""


def pytest_configure(config):
    """In a pytest-xdist worker, torch gets this worker's share of the cores: workers x threads never exceeds the
    cores (oversubscribed intra-op threads wait on each other and slow every worker down)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


# The longest files, first: under pytest-xdist (--dist loadfile) a file runs whole on one worker in collection
# order, so the models doc's evaluation rerun (7-8 min, tests/model/test_bundled.py) collected last ran alone at the end
# of the suite while the other worker idled (a full run: 21.4 min wall for 12.8 min of work per core).
# A clean-clone run with only the first three listed: 19.3 min, the browser files still ending on one worker.
# Ordered by the durations of a full run (2026-11-26); a file left out of the list ran last and alone.
SLOW_FILES_FIRST = ("tests/browser/test_browser.py", "tests/browser/test_browser_classroom.py",
                    "tests/model/test_bundled.py", "tests/browser/test_browser_lesson_readable.py",
                    "tests/notebooks/test_page_notebooks.py", "tests/app/test_load.py",
                    "tests/browser/test_browser_transfer.py", "tests/browser/test_offline_server.py",
                    "tests/browser/test_browser_notebook.py", "tests/browser/test_browser_class_redis.py",
                    "tests/browser/test_browser_lesson.py", "tests/pages/test_page_lesson.py",
                    "tests/pages/test_page_finetuning.py", "tests/browser/test_browser_contrast.py",
                    "tests/browser/test_browser_token_tasks.py", "tests/browser/test_browser_bert_vs_gpt.py")


def pytest_collection_modifyitems(config, items):
    """Start the slowest files first (SLOW_FILES_FIRST), keeping every other test in its order."""
    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return SLOW_FILES_FIRST.index(path) if path in SLOW_FILES_FIRST else len(SLOW_FILES_FIRST)

    items[:] = sorted(items, key=rank)  # sorted() is stable: the rest keep their collected order


# ------------------------------------------------------------------ the real app server (tests/browser)
@pytest.fixture(scope="session")
def shared_app_server():
    """One `streamlit run app.py` for the whole session (offline, developmentMode off), shared by the browser tests
    that need no special environment; its log in tests/output/server[-gwN].log. Each test still opens its own
    browser context, hence its own Streamlit session; only the server's start (torch's import, the model's load,
    the caches) is paid once instead of once per test file."""
    from support.appserver import app_server
    from support.apptest import ROOT

    out = ROOT / "tests" / "output"
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(out / f"server{worker_suffix()}.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (url, _):
        yield url


# ------------------------------------------------------------------ the class stores (tests/classroom)
# Here, not in a tests/classroom/conftest.py: a second module named `conftest` would shadow this one for the
# test files that import VOCAB from it.
@pytest.fixture(scope="session")
def redis_url():
    """A redis-server for this test session on a free loopback port; its files under tests/output (then removed)."""
    from support.appserver import redis_server
    from support.apptest import ROOT

    d = ROOT / "tests" / "output" / f"redis-classroom{worker_suffix()}"
    try:
        with redis_server(d) as (url, _):
            yield url
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["memory", "redis"])
def make_store(request):
    """A factory of fresh stores of one backend: make_store(idle_seconds=...)."""
    from classroom.memory import MemoryStore

    made = []

    def make(**kw):
        if request.param == "memory":
            return MemoryStore(**kw)
        from classroom.redis_store import RedisStore

        s = RedisStore(request.getfixturevalue("redis_url"), **kw)
        made.append(s)
        return s

    make.backend = request.param
    yield make
    for s in made:
        s.r.close()
