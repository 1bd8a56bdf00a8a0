"""The BERT vs GPT page's three runs: same corpus/preset/seed, the slot cap and memory ledger, probes on schedule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core
from bert_core.runs.objective_runs import PROBE_POINTS, ObjectiveComparison
from bert_core.runs.settings import builtin_lines, bundled_tokenizer
from bert_core.train.linear_probe import fit_ridge, probe_set, sentence_vectors, without_probe_texts
from server.ledger import SessionMemory
from server.slots import SlotManager

TINY = "tiny (2 layers, 64 wide)"


def norm_probe(model, tok):
    """A cheap stand-in for the linear probe in this test: the word-embedding norm (changes as training goes)."""
    return float(model.bert.embeddings.word_embeddings.weight.detach().norm())


def test_three_runs_share_corpus_preset_seed_and_probe_on_schedule():
    slots, memory = SlotManager(capacity=1), SessionMemory(max_bytes=10**9)
    comp = ObjectiveComparison.build(bundled_tokenizer(), builtin_lines(300), TINY, 20, 3, "test",
                                     slots=slots, memory=memory, probe=norm_probe)
    assert [s.settings.objective for s in comp.sessions.values()] == ["mlm", "clm", "rtd"]
    assert {(s.settings.preset, s.settings.seed) for s in comp.sessions.values()} == {(TINY, 3)}
    assert comp.sessions["rtd"].trainer.generator is not None
    data = comp.sessions["mlm"].trainer.data
    assert len(data.lines) == len(without_probe_texts(builtin_lines(300)))  # the probe's texts are not trained on
    assert len(without_probe_texts(builtin_lines())) == len(builtin_lines()) - 13  # the page's sample held 13
    held = {o: memory.held(s.mem_key) for o, s in comp.sessions.items()}
    assert held["rtd"] > held["mlm"]  # the generator is charged too
    assert slots.request("someone-else") == 0  # the only slot is taken: the comparison must wait
    assert comp.advance() is not None  # step 0's probe needs no slot
    assert comp.advance() is None and comp.sessions["mlm"].step == 0
    slots.release("someone-else")
    for _ in range(100):
        if comp.advance() == "":
            break
    assert comp.done and comp.progress() == 1.0
    for obj, s in comp.sessions.items():
        assert s.step == 20
        tokens, acc = comp.probe_curves()[obj]
        assert len(tokens) == PROBE_POINTS + 1 and tokens[0] == 0 and np.all(np.diff(tokens) > 0)
        assert tokens[-1] == sum(m.tokens for m in s.trainer.history)
        assert acc[-1] == pytest.approx(norm_probe(s.trainer.model, None))
    assert slots.position(comp.sessions["mlm"].id) is None  # slots given back
    m = comp.model("clm")
    assert bert_core.generate(m, "the cat", max_new_tokens=3).new_ids
    assert bert_core.replaced_token_probs(comp.model("rtd"), "the cat sat").probs.shape == (5,)
    comp.reset()
    assert memory.used() == 0


def test_build_refuses_what_does_not_fit_and_gives_the_memory_back():
    memory = SessionMemory(max_bytes=3_000_000)
    with pytest.raises(bert_core.BertCoreError):
        ObjectiveComparison.build(bundled_tokenizer(), builtin_lines(300), TINY, 20, 0, "t", slots=SlotManager(),
                                  memory=memory, probe=norm_probe)
    assert memory.used() == 0 and memory.waiting() == 0


def test_sentence_vectors_are_plain_per_text_means(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["mlm"][0])
    texts = ["the cat sat on the mat", "a dog", "she went to the store and bought milk"]
    got = sentence_vectors(m.model, m.tokenizer, texts, batch_size=2)
    for i, t in enumerate(texts):
        ids = torch.as_tensor(m.tokenizer.encode(t).input_ids)[None]
        with torch.no_grad():
            want = m.model.bert(ids)[0].mean(0).numpy()
        np.testing.assert_allclose(got[i], want, atol=1e-5)


def test_linear_probe_fits_separable_data_and_the_probe_set_is_balanced():
    rng = np.random.default_rng(0)
    y = np.arange(90) % 3
    x = 3 * np.eye(5)[y] + rng.normal(scale=0.3, size=(90, 5))  # three well separated clusters
    w, b = fit_ridge(x, y, 3, l2=1e-3)
    assert ((x @ w + b).argmax(1) == y).all()
    w, b = fit_ridge(x, rng.permutation(y), 3, l2=1e-3)  # shuffled labels: no better than a little above chance
    assert ((x @ w + b).argmax(1) == y).mean() < 0.6
    p = probe_set()
    assert len(p.train_texts) == 480 and np.bincount(p.train_labels).tolist() == [80] * 6
    assert len(p.valid_texts) == 300 and not set(p.train_texts) & set(p.valid_texts)
