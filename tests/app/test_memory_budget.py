"""Memory bounded in bytes (issue 14): lean analyses, the cache budget under pages, fused Q/K/V storage,
and models refused before loading when they cannot fit."""

from __future__ import annotations

import copy
import json
import logging
import struct

import numpy as np
import pytest
import torch
from support.apptest import assert_ok, open_page

import bert_core
from bert_core.model import loading as pretrained
from bert_core.model.layers import fuse_qkv_storage
from server import allocator
from ui import cache

TEXT = "the cat sat on the [MASK] and he went to the store ."
PAIR = "she bought milk ."


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    return bert_core.load_model(str(tiny_dirs["pretraining"][0]))


# ----------------------------------------------------------------------------- lean analyses


def test_lean_analyses_keep_the_same_numbers(tiny):
    full = bert_core.analyze(tiny, TEXT, PAIR)
    lean = bert_core.analyze(tiny, TEXT, PAIR, embeddings=False, hidden_states=False, attentions=False)
    assert lean.embeddings is None and lean.hidden_states is None and lean.attentions is None
    assert lean.predictions == full.predictions and lean.nsp == full.nsp and lean.tokens == full.tokens
    only_emb = bert_core.analyze(tiny, TEXT, PAIR, hidden_states=False, attentions=False)
    for part in ("word", "position", "segment", "sum", "normed"):
        np.testing.assert_array_equal(getattr(only_emb.embeddings, part), getattr(full.embeddings, part))
    only_att = bert_core.analyze(tiny, TEXT, PAIR, embeddings=False, hidden_states=False)
    np.testing.assert_array_equal(only_att.attentions, full.attentions)


def test_trace_arrays_equal_the_models_own_per_layer_tensors(tiny):
    """The layer-by-layer copy (no torch.stack) holds exactly what the encoder computed, fp32."""
    t = bert_core.analyze(tiny, TEXT, PAIR)
    enc = tiny.tokenizer.encode(TEXT, PAIR)
    with torch.inference_mode():
        tr = tiny.model(torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None], trace=True)
    assert t.attentions.dtype == np.float32 and t.hidden_states.dtype == np.float32
    np.testing.assert_array_equal(t.attentions, torch.stack(tr.attentions)[:, 0].numpy())
    np.testing.assert_array_equal(t.hidden_states, torch.stack(tr.hidden_states)[:, 0].numpy())
    np.testing.assert_array_equal(t.embeddings.normed, tr.hidden_states[0][0].numpy())
    np.testing.assert_allclose(t.attentions.sum(-1), 1.0, atol=1e-5)


def test_a_lean_trace_is_a_fraction_of_a_full_one(tiny):
    text = " ".join(["the cat sat on the mat"] * 10)  # 60+ tokens
    full = cache.nbytes(bert_core.analyze(tiny, text))
    lean = cache.nbytes(bert_core.analyze(tiny, text, embeddings=False, hidden_states=False, attentions=False))
    assert lean * 5 < full


# ----------------------------------------------------------------------------- fused Q, K, V


def test_fused_qkv_storage_changes_no_number_and_holds_no_second_copy(tiny):
    m = copy.deepcopy(tiny.model)
    enc = tiny.tokenizer.encode(TEXT, PAIR)
    ids, types = torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]
    with torch.inference_mode():
        before = m(ids, types, trace=True)
    sd_before = {k: v.clone() for k, v in m.state_dict().items()}
    fuse_qkv_storage(m)
    with torch.inference_mode():
        after = m(ids, types, trace=True)
    for a, b in zip(before.attentions + before.hidden_states, after.attentions + after.hidden_states):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert sd_before.keys() == m.state_dict().keys()
    for k, v in m.state_dict().items():
        assert torch.equal(v, sd_before[k]), k
    for layer in m.bert.encoder.layer:
        att = layer.attention.self
        w, b = att.__dict__["_qkv_fused"]
        assert att.query.weight.data_ptr() == w.data_ptr()
        assert att.value.bias.data_ptr() == b[-b.shape[0] // 3:].data_ptr()
        assert "_qkv_cache" not in att.__dict__  # inference used the block itself


def test_fused_model_still_notices_a_replaced_weight(tiny):
    """A weight replaced after fusing (a copy, a training step) is used, not the stale block."""
    m = copy.deepcopy(tiny.model)
    fuse_qkv_storage(m)
    x = torch.randn(1, 5, m.config.hidden_size)
    att = m.bert.encoder.layer[0].attention.self
    with torch.no_grad():
        att.key.weight.data = att.key.weight.data.clone() * 2  # no longer a view of the block
    with torch.inference_mode():
        ctx, probs = att(x, None)
    ref = copy.deepcopy(att)
    ref.__dict__.pop("_qkv_fused")
    ref.__dict__.pop("_qkv_cache", None)
    with torch.inference_mode():
        ctx2, probs2 = ref(x, None)
    torch.testing.assert_close(probs, probs2, rtol=0, atol=0)


# ----------------------------------------------------------------------------- the byte budget under pages


@pytest.fixture
def small_budget(monkeypatch):
    """The process-wide cache with a budget of `set(bytes)`, emptied before and after."""
    cache.RESULTS.clear()

    def set_budget(n: int):
        monkeypatch.setattr(cache.RESULTS, "max_bytes", n)
        return cache.RESULTS

    yield set_budget
    cache.RESULTS.clear()


def test_pages_stay_inside_the_byte_budget_over_many_texts(small_budget):
    """Many distinct texts through three pages: the cache never holds more than its budget."""
    results = small_budget(300_000)  # ~ a few bundled-model analyses of these texts
    words = "the cat dog sat on a mat was it she went to the store and bought milk".split()
    peak = 0
    for i in range(8):
        text = " ".join(words[(i + j) % len(words)] for j in range(12 + i)) + " [MASK] ."
        for page in ("predictions", "attention", "embeddings"):
            at = open_page(page, query={"text": text})
            assert_ok(at)
            assert results.total <= results.max_bytes
            peak = max(peak, results.total)
    assert results.misses > len(results) > 0  # entries were cached and older ones evicted
    assert peak > results.max_bytes // 3  # the budget was actually in use, not trivially empty


def test_a_budget_too_small_for_one_analysis_serves_it_uncached_and_logs_it(small_budget, caplog):
    results = small_budget(1_000)  # smaller than any analysis
    with caplog.at_level(logging.WARNING, logger="bert_explorer.cache"):
        at = open_page("attention", query={"text": "the cat sat on the [MASK] ."})
    assert_ok(at)
    assert at.get("plotly_chart"), "the page still draws"
    # The attention analysis was served and not kept (the landing Lesson's few small answers may be).
    assert results.too_big >= 1 and not any(key[1] == "analyze" for key in results._items)
    assert results.total <= 1_000
    assert any("served uncached" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("raw, mb", [("", cache.DEFAULT_CACHE_MB), ("64", 64), ("0", 0),
                                     ("lots", cache.DEFAULT_CACHE_MB)])
def test_budget_from_the_environment(monkeypatch, raw, mb):
    monkeypatch.setenv("BERT_EXPLORER_CACHE_MB", raw)
    assert cache.budget_bytes() == mb * 2**20


def test_allocator_tuning_does_not_fail():
    assert allocator.tune_allocator() in (True, False)  # False off glibc: nothing to tune


# ----------------------------------------------------------------------------- models too big for the memory left


def _fp16_copy(src, dst):
    """The same checkpoint with its weights stored in fp16 (half the file, the same model in fp32)."""
    from safetensors.torch import load_file, save_file

    dst.mkdir()
    for f in src.iterdir():
        if f.name != "model.safetensors":
            (dst / f.name).write_bytes(f.read_bytes())
    sd = load_file(src / "model.safetensors")
    save_file({k: v.half() if v.is_floating_point() else v for k, v in sd.items()}, dst / "model.safetensors")
    return sd


def test_load_bytes_reads_the_headers(tiny_dirs, tmp_path):
    src = tiny_dirs["mlm"][0]
    sd = _fp16_copy(src, tmp_path / "half")
    stored32 = sum(v.numel() * v.element_size() for v in sd.values())
    fp32 = sum(v.numel() * 4 for v in sd.values())
    assert pretrained.load_bytes(src) == stored32 + fp32
    assert pretrained.load_bytes(tmp_path / "half") == sum(v.numel() * (2 if v.is_floating_point() else
                                                                          v.element_size()) for v in sd.values()) + fp32
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.safetensors").write_bytes(struct.pack("<Q", 5) + b"nope!")
    assert pretrained.load_bytes(tmp_path / "bad") == 0  # left to read_safetensors to report


def test_a_model_too_big_for_the_memory_left_is_refused_before_loading(tiny_dirs, monkeypatch):
    path = tiny_dirs["pretraining"][0]

    def no_read(*a, **k):
        raise AssertionError("weights were read before the memory check")

    monkeypatch.setattr(pretrained, "read_safetensors", no_read)
    monkeypatch.setenv("BERT_EXPLORER_MEMORY_MB", "1")  # less than this process already holds
    with pytest.raises(bert_core.BertCoreError, match=r"too big for the memory left.*takes about"):
        bert_core.load_model(str(path))
    monkeypatch.undo()
    monkeypatch.setenv("BERT_EXPLORER_MEMORY_MB", "1000000")
    assert bert_core.load_model(str(path)).model is not None
    monkeypatch.setenv("BERT_EXPLORER_MEMORY_MB", "0")  # 0: no check
    assert pretrained.memory_available_bytes() is None
    monkeypatch.setenv("BERT_EXPLORER_MEMORY_MB", "plenty")
    with pytest.raises(bert_core.BertCoreError, match="not a number"):
        bert_core.load_model(str(path))


def test_memory_available_reads_meminfo_and_the_cgroup(tmp_path, monkeypatch):
    monkeypatch.delenv("BERT_EXPLORER_MEMORY_MB", raising=False)
    proc, cg = tmp_path / "proc", tmp_path / "cg"
    proc.mkdir()
    cg.mkdir()
    (proc / "meminfo").write_text("MemTotal:       8000000 kB\nMemAvailable:   4000000 kB\n")
    assert pretrained.memory_available_bytes(str(proc), str(cg)) == 4_000_000 * 1024
    # A 2.7 GB container using 2.0 GB, 0.3 GB of it inactive and 0.5 GB active file cache (both reclaimable,
    # shmem is not on these lists): 1.5 GB left.
    (cg / "memory.max").write_text(f"{int(2.7 * 2**30)}\n")
    (cg / "memory.current").write_text(f"{2 * 2**30}\n")
    (cg / "memory.stat").write_text(f"anon 1\nshmem 7\nactive_file {int(0.5 * 2**30)}\n"
                                    f"inactive_file {int(0.3 * 2**30)}\n")
    assert pretrained.memory_available_bytes(str(proc), str(cg)) == int(2.7 * 2**30) - 2 * 2**30 + int(0.8 * 2**30)
    # cgroup v1's names for the same lists
    v1 = tmp_path / "cg1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{3 * 2**30}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{2 * 2**30}\n")
    (v1 / "memory.stat").write_text(f"total_active_file {2**29}\ntotal_inactive_file {2**28}\n")
    assert pretrained.memory_available_bytes(str(proc), str(tmp_path / "cg1")) == 2**30 + 2**29 + 2**28
    (cg / "memory.max").write_text("max\n")  # no container limit: the system's figure
    assert pretrained.memory_available_bytes(str(proc), str(cg)) == 4_000_000 * 1024
    assert pretrained.memory_available_bytes(str(tmp_path / "none"), str(tmp_path / "none")) is None


def test_the_sidebar_says_plainly_when_a_model_does_not_fit(tiny_dirs, monkeypatch, tmp_path):
    from ui.state import OTHER_LABEL

    path = tmp_path / "fresh"  # a folder no earlier test loaded (the shared model is cached by name)
    path.mkdir()
    for f in tiny_dirs["pretraining"][0].iterdir():
        (path / f.name).write_bytes(f.read_bytes())
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    monkeypatch.setenv("BERT_EXPLORER_MEMORY_MB", "1")
    at = open_page("predictions", text="the cat sat on the [MASK] .")
    at.sidebar.selectbox(key="model_choice").select(OTHER_LABEL).run()
    at.sidebar.text_input(key="other_model").set_value(str(path)).run()
    assert_ok(at)
    errors = [e.value for e in at.sidebar.error]
    assert any("too big for the memory left" in e for e in errors), errors
    assert any("Still showing: bundled" in c.value for c in at.sidebar.caption)


def test_header_json_is_what_safetensors_writes(tiny_dirs):
    """Guard for load_bytes' format assumption: 8-byte little-endian length, then a JSON header."""
    f = tiny_dirs["mlm"][0] / "model.safetensors"
    raw = f.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert all("data_offsets" in v and "shape" in v for k, v in header.items() if k != "__metadata__")


# ----------------------------------------------------------------------------- a session's training state


def test_a_training_session_holds_one_probes_attention_and_frees_what_a_finished_run_cannot_use():
    from bert_core.runs.settings import TrainSettings, bundled_tokenizer
    from bert_core.runs.status import FINISHED
    from bert_core.runs.training_run import TrainingSession
    from server.slots import SlotManager

    lines = ["the cat sat on the mat .", "a dog ran across the green field .", "she wrote a letter to her mother ."]
    s = TrainingSession(SlotManager(capacity=1))
    s.setup(bundled_tokenizer(), lines, TrainSettings(preset="tiny (2 layers, 64 wide)", max_steps=12, batch_size=4,
                                                       seq_len=32, probe_every=4))
    s.run_steps(5)
    assert all(p.grad is None for p in s.trainer.model.parameters())  # gradients freed between steps
    assert s.trainer.opt.state  # a paused run keeps Adam's moments: it may go on
    s.start()
    while s.state != FINISHED:
        s.advance(0.5)
    assert [p.step for p in s.probes] == [0, 4, 8, 12]
    assert [p.attentions is None for p in s.probes] == [True, True, True, False]
    assert set(s.probes[0].predictions) == set(s.probes[-1].predictions)  # every probe keeps its predictions
    assert not s.trainer.opt.state  # finished: never steps again
    assert s.last_probe.attentions.shape[:2] == (2, 2)  # (L, nh, T, T) of the tiny preset


@pytest.mark.parametrize("raw, seconds", [(None, 30.0), ("12", 12.0), ("2", 10.0), ("soon", 30.0)])
def test_slot_lease_from_the_environment(monkeypatch, raw, seconds):
    """BERT_EXPLORER_SLOT_LEASE: seconds, never under 10 (a waiting page asks every 5 s); nonsense keeps 30. The
    training cap through the same reader: a whole number, at least 1."""
    from server import slots

    if raw is None:
        monkeypatch.delenv("BERT_EXPLORER_SLOT_LEASE", raising=False)
    else:
        monkeypatch.setenv("BERT_EXPLORER_SLOT_LEASE", raw)
    assert slots._env_number("BERT_EXPLORER_SLOT_LEASE", 30.0, least=10.0) == seconds
    for raw_cap, cap in (("3", 3), ("0", 1), ("2.5", 2), ("", 2)):
        monkeypatch.setenv("BERT_EXPLORER_MAX_TRAINING", raw_cap)
        assert slots._env_number("BERT_EXPLORER_MAX_TRAINING", 2, least=1) == cap
