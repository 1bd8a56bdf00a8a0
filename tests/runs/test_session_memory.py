"""The process-wide byte budget for users' runs and copies (issues 14, 23): reserve before allocating, wait in
line (or refuse what can never fit), drop idle runs to make room, give bytes back when a run finishes, resets or
its session goes."""

from __future__ import annotations

import gc
import threading

import pytest
import torch
from support.apptest import assert_ok, open_page

import bert_core
from bert_core.errors import BertCoreError
from bert_core.finetune.finetuning import FineTuneConfig
from bert_core.finetune.tasks import ClassificationTask
from bert_core.runs.finetune_run import FineTuneSession, finetune_bytes
from bert_core.runs.memory import MB, tensor_bytes
from bert_core.runs.settings import (
    CORPUS_CHOICES,
    TrainSettings,
    builtin_lines,
    bundled_tokenizer,
    corpus_bytes,
    preset_parameters,
    run_bytes,
)
from bert_core.runs.status import FINISHED, IDLE, PAUSED, QUEUED, RUNNING, WAITING
from bert_core.runs.training_run import TrainingSession
from server import ledger as session_memory
from server.ledger import SessionMemory, budget_bytes
from server.slots import SlotManager

TINY = "tiny (2 layers, 64 wide)"
SMALL = "small (4 layers, 128 wide)"
LINES = ["the cat sat on the mat .", "a dog ran across the green field .", "she wrote a letter to her mother .",
         "the sun rises in the east ."] * 5


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def settings(preset=TINY, **kw) -> TrainSettings:
    return TrainSettings(preset=preset, **({"max_steps": 50, "batch_size": 4, "seq_len": 32} | kw))


def run(mem: SessionMemory, preset=TINY, steps: int = 1, **kw) -> TrainingSession:
    s = TrainingSession(SlotManager(capacity=4), memory=mem)
    s.setup(bundled_tokenizer(), LINES, settings(preset, **kw))
    if steps:
        s.run_steps(steps)
    return s


def one_run_bytes(preset=TINY) -> int:
    probe = SessionMemory(10_000 * MB)
    s = run(probe, preset)
    return probe.held(s.mem_key)


# ----------------------------------------------------------------------------- the ledger


def test_ledger_fits_refuses_and_replaces_by_key():
    m = SessionMemory(100)
    m.reserve("a", 60, "a run")
    with pytest.raises(BertCoreError, match=r"memory for users' models is full.*a run needs"):
        m.reserve("b", 60, "a run")
    m.reserve("a", 90, "a run")  # the same key replaces what it held
    assert m.usage() == (90, 100, 1)
    with pytest.raises(BertCoreError, match="more than this server's"):
        m.reserve("c", 101, "a copy of your model")
    m.release("a")
    m.reserve("b", 60, "a run")
    assert m.used() == 60


def test_only_idle_evictable_entries_are_dropped_oldest_first():
    clock = Clock()
    m = SessionMemory(100, idle_seconds=60, clock=clock)
    dropped = []

    def evictor(key):
        def ev():
            dropped.append(key)
            m.release(key)
            return True
        return ev

    m.reserve("old", 40, "a run", evict=evictor("old"))
    clock.t = 10
    m.reserve("newer", 40, "a run", evict=evictor("newer"))
    clock.t = 20
    m.reserve("copy", 20, "a copy")  # not evictable
    with pytest.raises(BertCoreError):  # nobody idle yet
        m.reserve("x", 40, "a run")
    clock.t = 75  # "old" idle 75 s, "newer" 65 s
    m.touch("newer")  # ... but "newer" was just used
    m.reserve("x", 40, "a run")
    assert dropped == ["old"] and m.usage() == (100, 100, 3)


def test_a_busy_owner_is_not_evicted_and_the_request_is_refused():
    clock = Clock()
    m = SessionMemory(100, idle_seconds=60, clock=clock)
    m.reserve("busy", 80, "a run", evict=lambda: False)
    clock.t = 100
    with pytest.raises(BertCoreError):
        m.reserve("x", 40, "a run")
    assert m.held("busy") == 80


def test_release_with_a_token_frees_only_its_own_holder():
    m = SessionMemory(100)
    m.reserve("copy:s", 30, "a copy", token="first")
    m.reserve("copy:s", 35, "a copy", token="second")  # the page replaced its copy
    m.release("copy:s", "first")  # the first copy's finalizer
    assert m.held("copy:s") == 35
    m.release("copy:s", "second")
    assert m.used() == 0


def test_resize_never_evicts_and_refuses_growth_that_does_not_fit():
    m = SessionMemory(100)
    m.reserve("a", 50, "a run")
    m.reserve("b", 40, "a run")
    assert not m.resize("a", 70) and m.held("a") == 50
    assert m.resize("a", 10) and m.held("a") == 10
    assert not m.resize("missing", 1)


@pytest.mark.parametrize("raw, mb", [("", session_memory.DEFAULT_SESSION_MB), ("250", 250), ("nonsense",
                                     session_memory.DEFAULT_SESSION_MB), ("-3", 0)])
def test_budget_from_the_environment(monkeypatch, raw, mb):
    monkeypatch.setenv("BERT_EXPLORER_SESSION_MB", raw)
    assert budget_bytes() == mb * MB


def test_tensor_bytes_counts_shared_storage_once():
    lin = torch.nn.Linear(4, 3)
    assert tensor_bytes(lin) == 4 * (12 + 3)
    assert tensor_bytes(lin, lin, [lin.weight]) == 4 * (12 + 3)
    opt = torch.optim.AdamW(lin.parameters())
    lin(torch.ones(1, 4)).sum().backward()
    opt.step()
    assert tensor_bytes(lin, opt) == 4 * 15 * 4 + 4 * 2  # weights, grads, two moments; two step counters


# ----------------------------------------------------------------------------- training runs


def test_a_run_is_charged_at_least_what_it_holds_and_a_finished_run_less():
    m = SessionMemory(10_000 * MB)
    s = run(m, SMALL, steps=2)
    held = m.held(s.mem_key)
    t = s.trainer
    weights = tensor_bytes(t.model)
    assert weights == 4 * preset_parameters(SMALL, bundled_tokenizer().vocab_size)
    assert held >= tensor_bytes(t.model, t.opt)  # weights and both Adam moments, nothing undercounted
    s.start()
    while s.state != FINISHED:
        s.advance(5)
    assert m.held(s.mem_key) < held - 2 * weights + weights // 10  # Adam's moments gone
    assert m.held(s.mem_key) >= tensor_bytes(t.model, t.opt)
    s.reset()
    assert m.used() == 0


def test_runs_past_the_budget_wait_in_line_and_start_when_bytes_come_free():
    per_run = one_run_bytes()
    m = SessionMemory(int(2.5 * per_run))
    a, b = run(m), run(m)
    c = TrainingSession(SlotManager(capacity=4), memory=m)
    d = TrainingSession(SlotManager(capacity=4), memory=m)
    c.setup(bundled_tokenizer(), LINES, settings())
    d.setup(bundled_tokenizer(), LINES, settings())
    # Nothing is built for a run that does not fit: it waits, with its place in line.
    assert c.trainer is None and c.state == WAITING and m.held(c.mem_key) == 0
    assert (c.memory_position(), d.memory_position()) == (1, 2)
    assert c.status().memory_position == 1 and c.advance(1) == []
    assert c.start() == 1  # Start while waiting: remembered, the run starts once it is built
    assert m.used() <= m.max_bytes
    b.reset()  # bytes come free: the first in line gets them on its next call, not the second
    assert d.advance(1) == [] and d.state == WAITING and d.memory_position() == 2
    c.advance(1)
    assert c.trainer is not None and c.state in (RUNNING, FINISHED) and c.step >= 1  # built and trained
    assert c.memory_position() is None and d.memory_position() == 1
    assert m.used() <= m.max_bytes and a.trainer is not None
    a.reset()
    d.advance(1)
    assert d.trainer is not None and d.state == PAUSED  # built; Start was not pressed


def test_a_waiting_place_lapses_when_its_tab_stops_asking():
    clock = Clock()
    m = SessionMemory(100, clock=clock, wait_lease=30)
    m.reserve("a", 80, "a run")
    assert m.request("b", 50, "a run") == 1 and m.request("c", 50, "a run") == 2
    clock.t = 20
    assert m.request("c", 50, "a run") == 2  # renewed; b has not asked for 20 s
    clock.t = 45
    assert m.request("c", 50, "a run") == 1  # b's place lapsed (a closed tab), c moves up
    m.release("a")
    assert m.request("c", 50, "a run") == 0 and m.held("c") == 50 and m.waiting() == 0
    with pytest.raises(BertCoreError, match="more than this server's"):
        m.request("d", 101, "a run")  # can never fit: refused at once, not queued
    assert m.position("d") is None


def test_a_reset_leaves_the_memory_queue():
    m = SessionMemory(int(1.5 * one_run_bytes()))
    a = run(m)  # kept: a collected session gives its bytes back
    s = TrainingSession(SlotManager(capacity=4), memory=m)
    s.setup(bundled_tokenizer(), LINES, settings())
    assert m.position(s.mem_key) == 1
    s.reset()
    assert s.state == IDLE and m.position(s.mem_key) is None and m.waiting() == 0 and a.trainer is not None


def test_a_refused_new_run_leaves_the_previous_run_and_its_charge():
    per_run = one_run_bytes()
    m = SessionMemory(int(1.5 * per_run) + one_run_bytes(SMALL) // 2)
    a = run(m)
    before = m.held(a.mem_key)
    other = run(m)  # someone else takes the rest
    with pytest.raises(BertCoreError):
        a.setup(bundled_tokenizer(), LINES, settings(SMALL))
    assert a.trainer is not None and a.settings.preset == TINY and m.held(a.mem_key) == before
    assert other.trainer is not None


def test_an_idle_run_is_dropped_for_a_new_one_and_its_owner_is_told():
    clock = Clock()
    m = SessionMemory(int(1.5 * one_run_bytes()), idle_seconds=600, clock=clock)
    a = run(m, steps=3)
    clock.t = 601
    b = run(m)
    assert a.trainer is None and a.state == IDLE and m.held(a.mem_key) == 0
    assert "step 3" in a.notice and "10 minutes" in a.notice
    assert b.trainer is not None


def test_a_run_in_use_is_not_dropped():
    clock = Clock()
    m = SessionMemory(int(1.5 * one_run_bytes()), idle_seconds=600, clock=clock)
    a = run(m)
    clock.t = 601
    a.status()  # the page is open: touched
    with pytest.raises(BertCoreError):
        run(m)
    assert a.trainer is not None


def test_a_run_stepping_in_another_thread_is_not_dropped():
    clock = Clock()
    m = SessionMemory(int(1.5 * one_run_bytes()), idle_seconds=600, clock=clock)
    a = run(m)
    clock.t = 601
    holding, done = threading.Event(), threading.Event()

    def hold():
        with a._lock:
            holding.set()
            done.wait(10)

    th = threading.Thread(target=hold)
    th.start()
    holding.wait(10)
    try:
        with pytest.raises(BertCoreError):
            run(m)
    finally:
        done.set()
        th.join()
    assert a.trainer is not None


def test_a_closed_sessions_run_and_copy_give_their_bytes_back():
    m = SessionMemory(10_000 * MB)
    s = run(m)
    copy = s.snapshot()
    assert m.usage()[2] == 2
    del s, copy
    gc.collect()  # a run sits in reference cycles; the ledger collects before it refuses anyone
    assert m.usage() == (0, m.max_bytes, 0)


def test_the_ledger_collects_garbage_before_it_refuses():
    m = SessionMemory(int(1.5 * one_run_bytes()))
    gc.disable()
    try:
        s = run(m)
        s.cycle = s  # as when the run sits in reference cycles (a session's objects often do)
        del s  # not freed by reference counting
        assert m.used() > 0
        run(m)  # fits only once the closed run's finalizer ran
    finally:
        gc.enable()


def test_a_new_copy_replaces_the_previous_ones_charge():
    m = SessionMemory(10_000 * MB)
    s = run(m)
    first = s.snapshot()
    charged = m.used()
    s.run_steps(1)
    second = s.snapshot()
    assert m.used() == charged
    del first
    gc.collect()
    assert m.used() == charged  # the first copy's finalizer does not free the second's bytes
    del second
    gc.collect()
    assert m.used() == m.held(s.mem_key)


def test_a_copy_that_does_not_fit_is_refused():
    per_run = one_run_bytes()
    m = SessionMemory(per_run + 1000)
    s = run(m)
    with pytest.raises(BertCoreError, match="a copy of your model needs"):
        s.snapshot()


def test_the_zip_is_charged_and_not_kept_when_there_is_no_room():
    m = SessionMemory(10_000 * MB)
    s = run(m)
    before = m.held(s.mem_key)
    data = s.checkpoint_zip()
    assert m.held(s.mem_key) == before + len(data)
    tight = SessionMemory(before + 10)
    t = run(tight)
    assert tight.held(t.mem_key) <= before + 10
    assert t.checkpoint_zip()[:2] == b"PK" and t._zip is None  # served, not kept


# ----------------------------------------------------------------------------- fine-tuning runs


@pytest.fixture(scope="module")
def task() -> ClassificationTask:
    texts = ["a small animal with fur", "a large animal that swims", "a tool for cutting wood",
             "a device for measuring time", "a bird that sings", "a machine that prints"] * 3
    labels = [0, 0, 1, 1, 0, 1] * 3
    return ClassificationTask("t", ("animal", "artifact"), texts[:12], labels[:12], texts[12:], labels[12:])


def test_fine_tuning_charges_its_own_weights_not_a_frozen_shared_encoder(task):
    base = bert_core.load_model("bundled")  # the tiny one: a full fine-tuning step stays quick
    m = SessionMemory(10_000 * MB)
    frozen = FineTuneSession(SlotManager(capacity=2), memory=m)
    frozen.setup(base, task, FineTuneConfig(freeze_encoder=True, epochs=1, batch_size=4))
    encoder = tensor_bytes(base.model.bert)
    assert m.held(frozen.mem_key) < encoder / 10
    full = FineTuneSession(SlotManager(capacity=2), memory=m)
    cfg = FineTuneConfig(freeze_encoder=False, epochs=1, batch_size=4)
    assert finetune_bytes(base, task, cfg) >= 3 * encoder
    full.setup(base, task, cfg)
    full.run_steps(1)
    t = full.trainer
    assert m.held(full.mem_key) >= tensor_bytes(t.model, t.opt)
    full.start()
    while full.state != FINISHED:
        full.advance(5)
    assert not t.opt.state and m.held(full.mem_key) < 2 * encoder


def test_fine_tuning_past_the_budget_is_refused(task):
    base = bert_core.load_model("bundled")  # the tiny one: a full fine-tuning step stays quick
    m = SessionMemory(2 * tensor_bytes(base.model.bert))
    s = FineTuneSession(SlotManager(capacity=2), memory=m)
    with pytest.raises(BertCoreError, match="a fine-tuning run needs"):
        s.setup(base, task, FineTuneConfig(freeze_encoder=False))
    assert s.trainer is None and m.used() == 0


def test_a_fine_tuning_run_that_does_not_fit_beside_another_waits_then_trains(task):
    base = bert_core.load_model("bundled")  # the tiny model: all its weights may be fine-tuned
    need = finetune_bytes(base, task, FineTuneConfig(freeze_encoder=False))
    m = SessionMemory(need + need // 2)
    first = FineTuneSession(SlotManager(capacity=2), memory=m)
    first.setup(base, task, FineTuneConfig(freeze_encoder=False))
    second = FineTuneSession(SlotManager(capacity=2), memory=m)
    second.setup(base, task, FineTuneConfig(freeze_encoder=False))
    assert second.state == WAITING and second.trainer is None and second.memory_position() == 1
    second.start()
    first.reset()
    second.advance(1)
    assert second.trainer is not None and second.step >= 1 and m.used() <= m.max_bytes


# ----------------------------------------------------------------------------- pages


@pytest.fixture
def full_memory(monkeypatch):
    tight = SessionMemory(1000)
    monkeypatch.setattr(session_memory, "MEMORY", tight)
    return tight


def test_training_page_says_plainly_when_the_server_memory_is_full(full_memory):
    at = open_page("training")
    at.radio(key="train_corpus").set_value(CORPUS_CHOICES["wordnet"].label).run()  # the memory tests' corpus
    at.selectbox(key="train_preset").select(TINY)
    at.run()
    at.button(key="train_start").click()
    at.run()
    assert_ok(at)
    errors = " ".join(e.value for e in at.error)
    assert "Cannot start: a training run needs about" in errors and "for users' models" in errors
    assert at.session_state["train_session"].state == IDLE


def test_training_page_tells_an_evicted_user_once(monkeypatch):
    clock = Clock()
    mem = SessionMemory(10_000 * MB, clock=clock)
    monkeypatch.setattr(session_memory, "MEMORY", mem)
    at = open_page("training")
    at.radio(key="train_corpus").set_value(CORPUS_CHOICES["wordnet"].label).run()  # the memory tests' corpus
    at.selectbox(key="train_preset").select(TINY)
    at.run()
    at.button(key="train_ten").click()
    at.run()
    s = at.session_state["train_session"]
    assert s.step == 10
    caption = " ".join(c.value for c in at.caption)
    assert "Memory: this run" in caption and "of 10,000 MB" in caption
    clock.t = 10_000
    mem.max_bytes = mem.used() + 1  # someone else needs room now
    run(mem)
    at.run()
    assert_ok(at)
    assert any("was dropped after 10 minutes without use" in w.value for w in at.warning)
    at.run()
    assert not any("was dropped" in w.value for w in at.warning)


def test_training_page_shows_the_place_in_line_for_memory_and_starts_when_room_comes(monkeypatch):
    page_run = run_bytes(4 * preset_parameters(TINY, bundled_tokenizer().vocab_size), corpus_bytes(builtin_lines()))
    mem = SessionMemory(page_run + one_run_bytes() // 2)  # the page's run fits alone, not beside another
    monkeypatch.setattr(session_memory, "MEMORY", mem)
    other = run(mem)  # another user's run
    at = open_page("training")
    at.radio(key="train_corpus").set_value(CORPUS_CHOICES["wordnet"].label).run()  # the memory tests' corpus
    at.selectbox(key="train_preset").select(TINY)
    at.run()
    at.button(key="train_start").click()
    at.run()
    assert_ok(at)
    s = at.session_state["train_session"]
    assert s.state == WAITING and s.trainer is None and not at.error
    info = " ".join(i.value for i in at.info)
    assert "memory for users' runs is full: your run is number 1 in line" in info and "starts training" in info
    other.reset()  # room comes free
    at.run()  # the page's timer: the run is built and starts
    assert_ok(at)
    assert s.trainer is not None and s.state in (RUNNING, QUEUED) and not at.error
