"""A run given no slots and no ledger (a notebook's): it trains whenever it asks and counts its bytes with no budget;
bert_core's runs load without the app's server package."""

from __future__ import annotations

import subprocess
import sys

from support.apptest import ROOT

from bert_core.runs.memory import tensor_bytes
from bert_core.runs.settings import TrainSettings, bundled_tokenizer
from bert_core.runs.sharing import OwnSlots, Unmetered
from bert_core.runs.status import RUNNING
from bert_core.runs.training_run import TrainingSession
from server import slots as process_slots

LINES = ["the cat sat on the mat .", "a dog ran across the green field .", "she wrote a letter to her mother .",
         "the sun rises in the east ."] * 5
TINY = TrainSettings(preset="tiny (2 layers, 64 wide)", max_steps=20, batch_size=4, seq_len=32)


def test_a_notebooks_runs_are_not_capped_by_the_servers_slots():
    runs = [TrainingSession() for _ in range(process_slots.MAX_CONCURRENT_TRAINING + 1)]  # one more than the app's cap
    for s in runs:
        s.setup(bundled_tokenizer(), LINES, TINY)
        assert s.start() == 0  # no place in line: nobody else shares a notebook
    for s in runs:
        assert s.advance(0.05) and s.state == RUNNING and s.queue_position() == 0
    assert all(s.slots is not process_slots.SLOTS for s in runs)
    s = runs[0]
    s.pause()
    assert s.queue_position() is None


def test_a_notebooks_run_counts_its_bytes_without_a_budget():
    s = TrainingSession()
    s.setup(bundled_tokenizer(), LINES, TINY)
    held = s.memory.held(s.mem_key)
    assert held >= 3 * tensor_bytes(s.trainer.model)  # weights and Adam's two moments
    assert s.memory.usage() == (held, None, 1)
    assert s.memory_usage() == f"this run {held / 1e6:,.0f} MB"  # no server total: there is no server
    copy = s.snapshot()
    assert s.memory.usage()[2] == 2 and copy.model is not s.trainer.model
    s.reset()
    assert s.memory.held(s.mem_key) == 0


def test_unmetered_refuses_nothing_and_releases_only_its_holders_token():
    m = Unmetered()
    m.reserve("a", 10**15, "a run")  # more than any machine: counted, not refused
    assert m.request("b", 5, "a copy", token="t1") == 0 and m.position("b") is None
    assert m.resize("b", 7) and not m.resize("c", 1)
    m.release("b", token="t0")  # another holder's token: kept
    assert m.held("b") == 7
    m.release("b", token="t1")
    assert m.usage() == (10**15, None, 1)
    slots = OwnSlots()
    assert slots.position("x") is None and slots.request("x") == 0 and slots.position("x") == 0


def test_bert_cores_runs_load_without_the_server_package():
    code = ("import sys; import bert_core.runs.finetune_run, bert_core.runs.objective_runs; "
            "print(sorted(m for m in sys.modules if m == 'server' or m.startswith(('server.', 'streamlit'))))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
