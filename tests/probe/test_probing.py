"""Probing and the neighbour index: features against transformers' hidden_states, search against a plain loop of
cosines, the probe's accuracy against a plain re-count, the probe against a plain gradient-descent fit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core
from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
from bert_core.inspect import neighbours as nb
from bert_core.probe import probing

SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["a", "dog", "was", "playing", "unaffable"],
             ["it", "is", "the", "cafe"]]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread here (the machine's cores are shared; many small ops thrash with more)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    return bert_core.load_model(str(tiny_dirs["base"][0])), tiny_dirs["base"][1]


def test_word_vectors_equal_transformers_hidden_states(tiny):
    """Every word's vector at every layer = HF's hidden_states at the word's first piece (one sentence at a time,
    no padding), while ours ran the sentences batched and padded."""
    m, hf = tiny
    wv = nb.word_vectors(m.model.bert, m.tokenizer, SENTENCES, batch_size=2)
    assert wv.vectors.shape == (m.config.num_hidden_layers + 1, sum(map(len, SENTENCES)), m.config.hidden_size)
    row = 0
    for s, words in enumerate(SENTENCES):
        enc = m.tokenizer.encode(" ".join(words))
        ids = torch.tensor(np.array([enc.input_ids]))
        with torch.no_grad():
            hs = hf(input_ids=ids, output_hidden_states=True).hidden_states  # L+1 x (1, T, H)
        seen = set()
        for t, off in enumerate(enc.offsets):
            if off is None or off[1] <= off[0]:
                continue
            w = " ".join(words)[: off[0]].count(" ")  # the word this piece is in
            if w in seen:
                continue
            seen.add(w)
            assert (wv.sentence[row], wv.word[row]) == (s, w)
            for layer in range(len(hs)):
                np.testing.assert_allclose(wv.vectors[layer, row], hs[layer][0, t].numpy(), atol=1e-5)
            row += 1
    assert row == wv.vectors.shape[1]


def test_index_search_equals_a_plain_loop_of_cosines(tiny):
    m, _ = tiny
    tags = [[i % len(UNIVERSAL_TAGS) for i in range(len(ws))] for ws in SENTENCES]
    index = nb.build_index(m, SENTENCES, tags, UNIVERSAL_TAGS)
    q = nb.query_words(m, "the cat was on the mat")
    for layer in range(index.units.shape[0]):
        for w in range(len(q.words)):
            res = nb.nearest_words(index, q.vectors[layer, w], layer, k=5)
            qv = q.vectors[layer, w].astype(np.float64)
            loop = []
            for i in range(index.n_words):
                v = index.units[layer, i].astype(np.float64)
                loop.append(float(v @ qv / (np.sqrt(v @ v) * np.sqrt(qv @ qv))))
            # the stored units are float16 of unit vectors: |u| = 1 +- 1e-3; the search uses them as stored
            order = sorted(range(len(loop)), key=lambda i: (-loop[i], i))[:5]
            np.testing.assert_allclose(res.cosines, [loop[i] for i in order], atol=2e-3)
            assert set(res.ids[:3]) <= set(order[:4])
            counts = np.bincount(index.tags[res.ids], minlength=len(UNIVERSAL_TAGS))
            assert (res.tag_counts == counts).all()
    # And the stored unit vectors are the word vectors' directions (to float16's precision).
    wv = nb.word_vectors(m.model.bert, m.tokenizer, SENTENCES)
    unit = wv.vectors / np.linalg.norm(wv.vectors, axis=-1, keepdims=True)
    np.testing.assert_allclose(index.units.astype(np.float32), unit, atol=2e-3)


def test_search_is_exact_on_the_stored_vectors():
    """With float32 units the search equals the loop at 1e-6 and in order (ties: lower id first)."""
    rng = np.random.default_rng(0)
    units = rng.standard_normal((2, 40, 8)).astype(np.float32)
    units /= np.linalg.norm(units, axis=-1, keepdims=True)
    units[1, 7] = units[1, 3]  # a tie
    index = nb.NeighbourIndex(units, np.zeros(40, np.int32), np.arange(40, dtype=np.int32),
                              np.arange(40, dtype=np.int32) % 3, (tuple(f"w{i}" for i in range(40)),), ("A", "B", "C"))
    q = units[1, 3] * 2.5
    res = nb.nearest_words(index, q, 1, k=10)
    loop = [float(np.dot(units[1, i], q) / (np.linalg.norm(units[1, i]) * np.linalg.norm(q))) for i in range(40)]
    order = sorted(range(40), key=lambda i: (-round(loop[i], 6), i))[:10]
    assert list(res.ids) == order and list(res.ids[:2]) == [3, 7]
    np.testing.assert_allclose(res.cosines, [loop[i] for i in order], atol=1e-6)


def test_index_refuses_a_corpus_over_its_byte_budget(tiny):
    m, _ = tiny
    per = nb.index_bytes_per_word(m)
    assert nb.sentences_within(m, SENTENCES, budget=per * 8) == 1
    with pytest.raises(bert_core.BertCoreError, match="at most 1"):
        nb.build_index(m, SENTENCES, [[0] * len(s) for s in SENTENCES], UNIVERSAL_TAGS, budget=per * 8)
    index = nb.build_index(m, SENTENCES, [[0] * len(s) for s in SENTENCES], UNIVERSAL_TAGS)
    assert index.nbytes <= per * index.n_words


def at_the_optimum(p, x, y, l2, allowed=None) -> np.ndarray:
    """Assert the gradient of mean cross-entropy + l2/2 |W|^2 at probe `p`, written out in numpy (float64), vanishes
    (a softmax over each example's `allowed` labels only, if given) and `p.loss` is that objective; the logits."""
    xs = (x.astype(np.float64) - p.mean) / p.scale
    z = xs @ p.weight.astype(np.float64) + p.bias
    if allowed is not None:
        z = np.where(allowed, z, -np.inf)
    prob = np.exp(z - z.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    err = prob - np.eye(p.weight.shape[1])[y]
    assert np.abs(xs.T @ err / len(y) + l2 * p.weight).max() < 1e-4
    assert np.abs(err.mean(0)).max() < 1e-4
    loss = -np.log(prob[np.arange(len(y)), y]).mean() + 0.5 * l2 * (p.weight.astype(np.float64) ** 2).sum()
    assert abs(p.loss - loss) < 1e-5
    return z


def test_fit_probe_reaches_the_optimum_a_plain_gradient_formula_says():
    """At L-BFGS's answer the gradient of mean cross-entropy + l2/2 |W|^2, written out in numpy (float64), vanishes:
    dW = Xs^T (P - Y) / N + l2 W, db = mean(P - Y). The objective is convex, so that point is the optimum."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((120, 5)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1)
    p = probing.fit_probe(x, y, 3, l2=0.1)
    np.testing.assert_allclose(p.mean, x.mean(0), atol=1e-6)
    z = at_the_optimum(p, x, y, 0.1)
    assert (p.predict(x) == z.argmax(1)).all()
    # Started elsewhere (as a probing run starts each layer from the layer below's probe): the same optimum.
    other = probing.fit_probe(x[::-1] * 2, y[::-1], 3, l2=0.1)
    q = probing.fit_probe(x, y, 3, l2=0.1, start=other)
    assert abs(q.loss - p.loss) < 1e-6
    np.testing.assert_allclose(q.weight, p.weight, atol=1e-3)


def test_restricted_softmax_equals_one_probe_per_group():
    """Word sense: the softmax over a word's own senses only. Two groups with disjoint labels fitted jointly give
    the same probabilities within each group as fitting each group alone (the problems separate)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((80, 4)).astype(np.float32)
    group = np.repeat([0, 1], 40)
    label_group = np.array([0, 0, 1, 1, 1])
    y = np.where(group == 0, (x[:, 0] > 0).astype(int), 2 + (x[:, 1] > 0) + (x[:, 1] > 1))
    allowed = group[:, None] == label_group[None, :]
    joint = probing.fit_probe(x, y, 5, allowed=allowed, l2=0.1)
    assert (joint.predict(x, allowed)[group == 0] < 2).all() and (joint.predict(x, allowed)[group == 1] >= 2).all()
    acc = (joint.predict(x, allowed) == y).mean()
    assert acc > 0.8
    # At the answer the restricted objective's gradient vanishes (each example's softmax over its allowed labels).
    at_the_optimum(joint, x, y, 0.1, allowed)
    # An example whose label is not allowed is refused.
    bad = allowed.copy()
    bad[0] = ~bad[0]
    with pytest.raises(bert_core.BertCoreError):
        probing.fit_probe(x, y, 5, allowed=bad)


@pytest.fixture(scope="module")
def small_pos(tiny_dirs):
    """The bundled tiny model's probes on 12 training and 6 held-out Brown sentences."""
    m = bert_core.load_model("bundled")
    task = probing.pos_probe_task(12, 6)
    orig = probing.probe_task
    probing.probe_task = lambda name, n_train=12: task
    try:
        r = probing.probe_layers(m, probing.POS, 12, seed=0)
    finally:
        probing.probe_task = orig
    return m, task, r


def test_probe_accuracy_is_a_plain_recount(small_pos):
    m, task, r = small_pos
    L1 = m.config.num_hidden_layers + 1
    assert set(r.accuracy) == set(probing.ROWS)
    true = [task.labels.index(task.labels[t]) for t in task.valid[:, 2]]
    assert list(r.valid_true) == true
    for row in probing.ROWS:
        want = r.control_true if row == "control task" else true
        for layer in range(L1):
            right = 0
            for p, t in zip(r.valid_pred[row][layer], want):
                right += int(p == t)
            assert r.accuracy[row][layer] == right / len(want)
    # The majority baseline: the most frequent training tag, counted by hand.
    counts = {}
    for t in task.train[:, 2]:
        counts[t] = counts.get(t, 0) + 1
    top = max(sorted(counts), key=lambda t: counts[t])
    assert r.majority == sum(int(t == top) for t in true) / len(true)
    # The pretrained probe beats the majority label somewhere; the predictions are labels of the task.
    assert r.accuracy["pretrained"].max() > r.majority
    assert all((v >= 0).all() and (v < len(task.labels)).all() for v in r.valid_pred.values())


def test_probe_features_are_the_models_own(small_pos):
    """Layer 0's pretrained probe reads the embeddings' output: refitting it on word_vectors gives its predictions."""
    m, task, r = small_pos
    used = np.unique(np.concatenate([task.train[:, 0], task.valid[:, 0]]))
    wv = nb.word_vectors(m.model.bert, m.tokenizer, [task.sentences[i] for i in used])
    remap = {int(s): i for i, s in enumerate(used)}
    where = {(int(s), int(w)): i for i, (s, w) in enumerate(zip(wv.sentence, wv.word))}
    tr = [where[(remap[s], w)] for s, w, _ in task.train]
    va = [where[(remap[s], w)] for s, w, _ in task.valid]
    for layer in (0, m.config.num_hidden_layers):
        p = probing.fit_probe(wv.vectors[layer, tr], task.train[:, 2], len(task.labels))
        assert (p.predict(wv.vectors[layer, va]) == r.valid_pred["pretrained"][layer]).mean() >= 0.98


def test_control_labels_give_every_word_type_one_label():
    task = probing.pos_probe_task(12, 6)
    tr, va = probing.control_labels(task, seed=3)
    seen = {}
    for items, labels in ((task.train, tr), (task.valid, va)):
        for (s, w, _), c in zip(items, labels):
            word = task.sentences[s][w].lower()
            assert seen.setdefault(word, c) == c
    assert len(set(seen.values())) > 1


def test_untrained_encoder_is_fresh_and_leaves_the_model_alone():
    m = bert_core.load_model("bundled")
    before = {k: v.clone() for k, v in m.model.bert.state_dict().items()}
    enc = probing.untrained_encoder(m, seed=0)
    for k, v in m.model.bert.state_dict().items():
        assert torch.equal(v, before[k]), k
    w = enc.encoder.layer[0].attention.self.query.weight
    assert abs(float(w.detach().std()) - m.config.initializer_range) < 0.003
    assert not torch.equal(enc.embeddings.word_embeddings.weight, m.model.bert.embeddings.word_embeddings.weight)
    again = probing.untrained_encoder(m, seed=0)
    assert torch.equal(again.embeddings.word_embeddings.weight, enc.embeddings.word_embeddings.weight)


def test_sense_task_is_the_built_file():
    task = probing.sense_probe_task()
    rows = probing.sense_rows()
    for s, w, label in np.concatenate([task.train, task.valid])[::50]:
        assert task.sentences[s][w].lower() == rows[s][2]
        assert task.labels[label].startswith(rows[s][2] + " (")
    # every sense has a held-out sentence and at least one training sentence; groups have >= 2 senses
    assert set(task.valid[:, 2]) == set(task.train[:, 2]) == set(range(len(task.labels)))
    assert np.bincount(task.label_group).min() >= 2
    maj = probing.majority_predictions(task)
    assert (task.label_group[maj] == task.label_group[task.valid[:, 2]]).all()


def test_pos_task_words_are_brown_words():
    task = probing.pos_probe_task(5, 3)
    pos = builtin_pos_task()
    assert task.sentences[:5] == pos.train_words[:5] and task.sentences[5:] == pos.valid_words[:3]
    assert len(task.valid) == sum(map(len, pos.valid_words[:3]))


def test_pca_matches_numpy_svd_and_fixes_signs():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((30, 6)) @ rng.standard_normal((6, 6))
    coords, share = nb.pca_2d(x)
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    for k in range(2):
        proj = xc @ vt[k]
        assert np.allclose(np.abs(coords[:, k]), np.abs(proj), atol=1e-9)
    assert np.allclose(share, s[:2] ** 2 / (s**2).sum())
    c2, _ = nb.pca_2d(-x)  # signs fixed by the loadings, not by the data's sign
    assert np.allclose(np.abs(c2), np.abs(coords))


def test_probing_refuses_more_vectors_than_its_byte_budget(monkeypatch):
    m = bert_core.load_model("bundled")
    task = probing.pos_probe_task(12, 6)
    monkeypatch.setattr(probing, "probe_task", lambda name, n_train=12: task)
    monkeypatch.setattr(probing, "PROBE_MAX_BYTES", probing.feature_bytes(m, task) - 1)
    with pytest.raises(bert_core.BertCoreError, match="pick fewer"):
        probing.probe_layers(m, probing.POS, 12)
    want = (len(task.train) + len(task.valid)) * (m.config.num_hidden_layers + 1) * m.config.hidden_size * 2
    assert probing.feature_bytes(m, task) == want


def test_a_probing_run_uses_one_thread_and_gives_back_the_callers_count():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with pytest.raises(RuntimeError), probing.one_thread():
            assert torch.get_num_threads() == 1
            raise RuntimeError
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
