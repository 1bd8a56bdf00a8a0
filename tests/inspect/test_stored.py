"""Results kept on disk (bert_core/inspect/stored.py): a stored neighbours index or probing run is the same arrays
as a fresh one, is read back instead of recomputed, is keyed on the model's weights and the inputs, is never kept
for a session's model, and the folder stays within its byte budget."""

from __future__ import annotations

import functools
import os
import time

import numpy as np
import pytest
import torch

import bert_core
from bert_core.finetune.tagging import UNIVERSAL_TAGS
from bert_core.inspect import neighbours as nb
from bert_core.inspect import stored
from bert_core.probe import probing

SENTENCES = [["The", "fisherman", "mended", "his", "nets", "."], ["A", "gull", "cried", "over", "the", "harbour"]]
TAGS = [[5, 7, 10, 6, 7, 11], [5, 7, 10, 3, 5, 7]]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_RESULTS_DIR", str(tmp_path / "results"))
    return tmp_path / "results"


def no_forward_pass(monkeypatch):
    """Any forward pass over a corpus now fails the test: what is read must come from the disk."""
    def refuse(*a, **k):
        raise AssertionError("recomputed")

    monkeypatch.setattr(nb, "word_vectors", refuse)
    monkeypatch.setattr(probing, "word_vectors", refuse)


def test_a_stored_index_is_the_fresh_one_read_back(folder, monkeypatch):
    m = bert_core.load_model("bundled")
    fresh = nb.build_index(m, SENTENCES, TAGS, UNIVERSAL_TAGS, store=False)
    assert not folder.exists()  # store=False keeps nothing
    first = nb.build_index(m, SENTENCES, TAGS, UNIVERSAL_TAGS)
    assert len(list(folder.glob("neighbour-index-*.npz"))) == 1
    no_forward_pass(monkeypatch)
    again = nb.build_index(m, SENTENCES, TAGS, UNIVERSAL_TAGS)
    for idx in (first, again):
        for f in ("units", "sentence", "word", "tags"):
            assert np.array_equal(getattr(idx, f), getattr(fresh, f)) and getattr(idx, f).dtype == getattr(
                fresh, f).dtype
        assert idx.sentences == fresh.sentences and idx.tag_names == fresh.tag_names
    # Other tags for the same words are another index: computed, not read.
    with pytest.raises(AssertionError, match="recomputed"):
        nb.build_index(m, SENTENCES, [[0] * 6, [0] * 6], UNIVERSAL_TAGS)


def test_the_key_is_the_weights_not_the_name(folder):
    m = bert_core.load_model("bundled")
    other = bert_core.load_model("bundled")
    assert stored.fingerprint(m) == stored.fingerprint(other)
    with torch.no_grad():
        other.model.bert.encoder.layer[0].output.dense.bias[0] += 1e-3
    stored._FINGERPRINTS.clear()  # the weights changed in place (never done by the app): hash them again
    assert stored.fingerprint(m) != stored.fingerprint(other)
    a = nb.build_index(m, SENTENCES, TAGS, UNIVERSAL_TAGS)
    b = nb.build_index(other, SENTENCES, TAGS, UNIVERSAL_TAGS)
    assert len(list(folder.glob("*.npz"))) == 2 and not np.array_equal(a.units, b.units)


def test_a_session_model_is_never_stored(folder):
    m = bert_core.load_model("bundled")
    trained = bert_core.LoadedModel(m.model, m.tokenizer, "trained here", "session")
    assert stored.fingerprint(trained) is None
    nb.build_index(trained, SENTENCES, TAGS, UNIVERSAL_TAGS)
    assert not folder.exists() or not list(folder.glob("*.npz"))


def test_off_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_RESULTS_DIR", "off")
    assert stored.results_dir() is None
    nb.build_index(bert_core.load_model("bundled"), SENTENCES, TAGS, UNIVERSAL_TAGS)  # computed, kept nowhere


def test_a_stored_probing_run_is_the_fresh_one(folder, monkeypatch):
    m = bert_core.load_model("bundled")
    task = probing.pos_probe_task(12, 6)
    monkeypatch.setattr(probing, "probe_task", lambda name, n_train=12: task)
    # What is stored is the subject here, not the fit: a 3-step L-BFGS keeps the test short.
    monkeypatch.setattr(probing, "fit_probe", functools.partial(probing.fit_probe, steps=3))
    fresh = probing.probe_layers(m, probing.POS, 12, seed=0, store=False)
    probing.probe_layers(m, probing.POS, 12, seed=0)
    no_forward_pass(monkeypatch)
    monkeypatch.setattr(probing, "fit_probe", lambda *a, **k: (_ for _ in ()).throw(AssertionError("refit")))
    got = probing.probe_layers(m, probing.POS, 12, seed=0)
    for name in ("accuracy", "train_accuracy", "valid_pred"):
        a, b = getattr(got, name), getattr(fresh, name)
        assert list(a) == [r for r in probing.ROWS if r in b]
        assert all(np.array_equal(a[r], b[r]) for r in b)
    assert np.array_equal(got.selectivity, fresh.selectivity) and got.majority == fresh.majority
    assert np.array_equal(got.valid_true, fresh.valid_true) and np.array_equal(got.control_true, fresh.control_true)
    assert (got.task, got.labels, got.n_train, got.n_valid) == (fresh.task, fresh.labels, fresh.n_train, fresh.n_valid)
    assert set(got.seconds) == set(fresh.seconds)
    # Another seed draws another control task and twin: not read from this run.
    with pytest.raises(AssertionError, match="recomputed"):
        probing.probe_layers(m, probing.POS, 12, seed=1)
    # The same name and size over other sentences (a changed task) is another run too.
    monkeypatch.setattr(probing, "probe_task", lambda name, n_train=12: probing.pos_probe_task(12, 5))
    with pytest.raises(AssertionError, match="recomputed"):
        probing.probe_layers(m, probing.POS, 12, seed=0)


def test_the_folder_keeps_within_its_budget_least_recently_read_first(folder, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_RESULTS_MB", str(2.5 * 1e6 / 2**20))  # room for two 1 MB files
    arrays = {"x": np.zeros(1_000_000 // 8)}
    for i, name in enumerate(["a.npz", "b.npz"]):
        stored.save(name, arrays)
        os.utime(folder / name, (time.time() - 100 + i, time.time() - 100 + i))
    assert stored.load("a.npz") is not None  # read now: b is the least recently read
    stored.save("c.npz", arrays)
    assert sorted(p.name for p in folder.glob("*.npz")) == ["a.npz", "c.npz"]
    assert not list(folder.glob("*.tmp"))
    stored.save("huge.npz", {"x": np.zeros(4_000_000 // 8)})  # over the whole budget: not kept
    assert not (folder / "huge.npz").exists() and (folder / "a.npz").exists()
