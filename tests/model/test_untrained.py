"""untrained_copy: the same network drawn afresh, tensor by tensor as transformers initialises a new model."""

from __future__ import annotations

import pytest
import torch

import bert_core
from bert_core.model.checkpoint import map_key
from bert_core.model.untrained import untrained_copy


@pytest.fixture(scope="module")
def base(tiny_dirs):
    return bert_core.load_model(str(tiny_dirs["pretraining"][0]))


def _kind(t: torch.Tensor) -> str:
    """How a tensor was initialised: all zeros, all ones, or random."""
    return "zeros" if bool((t == 0).all()) else "ones" if bool((t == 1).all()) else "random"


def test_same_keys_shapes_and_init_as_a_new_transformers_model(base):
    """Every tensor of the copy is initialised as in a BertForPreTraining transformers builds from the config."""
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(0)
    hf = BertForPreTraining(BertConfig(**base.config.to_hf_dict())).eval()
    theirs = hf.state_dict()
    theirs.pop("cls.predictions.decoder.bias")  # transformers' alias of cls.predictions.bias
    ours = untrained_copy(base, seed=3).model.state_dict()
    mapped = {map_key("bert", k, to="theirs"): v for k, v in ours.items()}
    assert set(mapped) == set(theirs)
    std = base.config.initializer_range
    for k, v in mapped.items():
        t = theirs[k]
        assert v.shape == t.shape, k
        assert _kind(v) == _kind(t), k
        if _kind(t) == "random" and t.numel() >= 500:
            assert abs(v.std().item() / t.std().item() - 1) < 0.15, k
            assert abs(v.std().item() / std - 1) < 0.15, k
            assert abs(v.mean().item()) < 0.2 * std, k
    pad = base.config.pad_token_id
    assert torch.equal(mapped["bert.embeddings.word_embeddings.weight"][pad], theirs[
        "bert.embeddings.word_embeddings.weight"][pad])  # the padding row is 0 in both


def test_copy_is_fresh_seeded_tied_and_leaves_the_original(base):
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    a, b, c = untrained_copy(base, 0), untrained_copy(base, 0), untrained_copy(base, 1)
    for k, v in base.model.state_dict().items():
        assert torch.equal(v, before[k]), k  # the original is untouched
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    w = "bert.encoder.layer.0.attention.self.query.weight"
    assert torch.equal(sa[w], sb[w]) and not torch.equal(sa[w], sc[w])
    assert not torch.allclose(sa[w], before[w])
    m = a.model
    assert m.cls.predictions.decoder.weight is m.bert.embeddings.word_embeddings.weight  # still tied
    assert a.tokenizer is base.tokenizer and a.config == base.config
    assert m.has_mlm == base.has_mlm and m.has_nsp == base.has_nsp


def test_classifier_heads_are_reinitialised(head_bases):
    from bert_core.model.classifier_io import new_classifier

    clf, _ = new_classifier(head_bases["mlm"], ["a", "b"], seed=0)
    with torch.no_grad():
        clf.classifier.bias.fill_(0.5)
    loaded = bert_core.LoadedModel(clf, head_bases["mlm"].tokenizer, "clf", "session")
    fresh = untrained_copy(loaded).model
    assert type(fresh) is type(clf) and fresh.labels == ["a", "b"]
    assert _kind(fresh.classifier.bias) == "zeros" and _kind(fresh.bert.pooler.dense.bias) == "zeros"
