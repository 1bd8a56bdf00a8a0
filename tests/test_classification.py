"""Sequence classification against transformers: same weights, fp32, probabilities within 1e-5; export round trip."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import VOCAB

import bert_core
from bert_core.classification import classifier_zip, new_classifier, save_classifier
from bert_core.model import BertForSequenceClassification

ATOL = 1e-5
LABELS = ["animal", "food", "<b>place</b>"]  # a label with HTML in it is just a name
SENTENCES = [("The cat sat on the mat, playing.", None), ("he went to the store.", "he bought milk in paris."),
             ("unaffable", None)]


def write_hf_classifier(path, seed=0, id2label=True, **overrides):
    """A random tiny HF BertForSequenceClassification (LayerNorms and biases perturbed) + tokenizer."""
    from transformers import BertConfig
    from transformers import BertForSequenceClassification as HFCls

    from bert_core.tokenization import WordPieceTokenizer

    torch.manual_seed(seed)
    kw = dict(vocab_size=len(VOCAB) + 3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, max_position_embeddings=64, attn_implementation="eager")
    if id2label:
        kw.update(id2label=dict(enumerate(LABELS)), label2id={v: i for i, v in enumerate(LABELS)})
    else:
        kw.update(num_labels=len(LABELS))
    kw.update(overrides)
    hf = HFCls(BertConfig(**kw)).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or name.endswith("bias") or name.startswith("classifier"):
                p.add_(torch.randn_like(p) * 0.1)
    hf.save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    WordPieceTokenizer.from_dir(path).save(path)
    return hf


def hf_probs(hf, tok, text, pair=None):
    enc = tok.encode(text, pair)
    with torch.no_grad():
        out = hf(input_ids=torch.from_numpy(enc.input_ids)[None],
                 token_type_ids=torch.from_numpy(enc.token_type_ids)[None])
    return out.logits.softmax(-1)[0]


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-cls")
    return d, write_hf_classifier(d)


@pytest.mark.parametrize("text,pair", SENTENCES)
def test_classify_matches_transformers_softmax(hf_classifier, text, pair):
    path, hf = hf_classifier
    m = bert_core.load_model(str(path))
    assert isinstance(m.model, BertForSequenceClassification) and not m.has_mlm and not m.has_nsp
    assert "3 classes" in m.notes[0]
    got = bert_core.classify(m, text, pair)
    assert [lab for lab, _ in got] == LABELS  # label-id order, names from id2label
    ours = torch.tensor([p for _, p in got])
    err = (ours - hf_probs(hf, m.tokenizer, text, pair)).abs().max().item()
    assert err <= ATOL, err
    assert abs(ours.sum().item() - 1) < 1e-6


def test_padded_batch_logits_match_transformers(hf_classifier):
    path, hf = hf_classifier
    m = bert_core.load_model(str(path))
    encs = [m.tokenizer.encode(a, b) for a, b in SENTENCES]
    T = max(len(e) for e in encs)
    ids, types, mask = (torch.zeros(len(encs), T, dtype=torch.long) for _ in range(3))
    for r, e in enumerate(encs):
        ids[r, : len(e)] = torch.from_numpy(e.input_ids)
        types[r, : len(e)] = torch.from_numpy(e.token_type_ids)
        mask[r, : len(e)] = 1
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=types, attention_mask=mask).logits
        ours = m.model.logits(ids, types, mask)
    assert (ours - theirs).abs().max().item() <= ATOL


def test_checkpoint_without_id2label_gets_transformers_default_names(tmp_path):
    write_hf_classifier(tmp_path, seed=1, id2label=False)
    m = bert_core.load_model(str(tmp_path))
    assert [lab for lab, _ in bert_core.classify(m, "the cat")] == ["LABEL_0", "LABEL_1", "LABEL_2"]


def test_classify_refuses_a_model_that_is_not_a_classifier(tiny_dirs):
    m = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    with pytest.raises(bert_core.BertCoreError, match="not a sentence classifier"):
        bert_core.classify(m, "the cat")


def test_a_token_classifier_still_loads_as_an_encoder(tmp_path):
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(VOCAB) + 3, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64, num_labels=5)
    BertForTokenClassification(cfg).save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    m = bert_core.load_model(str(tmp_path))
    assert not isinstance(m.model, BertForSequenceClassification)
    assert any("Ignored a fine-tuning head" in n for n in m.notes)


@pytest.mark.parametrize("kind", ["mlm", "pretraining"])
@pytest.mark.parametrize("copy_encoder", [True, False])
def test_export_round_trip_through_transformers(tiny_dirs, tmp_path, kind, copy_encoder):
    """A head we build on a base (with or without pooler) saves as a folder HF's Auto class reads identically."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = bert_core.load_model(str(tiny_dirs[kind][0]))
    model, notes = new_classifier(base, LABELS, seed=3, copy_encoder=copy_encoder)
    assert any("NEW pooler" in n for n in notes) == (kind == "mlm")  # the MLM-only base has no pooler
    with torch.no_grad():  # as if trained: the head is no longer at its initial values
        model.classifier.bias.add_(torch.tensor([0.3, -0.2, 0.1]))
    m = bert_core.LoadedModel(model.eval(), base.tokenizer, "fine-tuned", "session")
    out = save_classifier(m, tmp_path / "export", extra={"steps": 1})
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["BertForSequenceClassification"]
    assert cfg["id2label"] == {"0": "animal", "1": "food", "2": "<b>place</b>"}
    hf = AutoModelForSequenceClassification.from_pretrained(out, attn_implementation="eager").eval()
    assert hf.config.id2label == dict(enumerate(LABELS))
    hf_tok = AutoTokenizer.from_pretrained(out)
    back = bert_core.load_model(str(out))
    for text, pair in SENTENCES:
        enc = base.tokenizer.encode(text, pair)
        assert hf_tok(text, pair)["input_ids"] == enc.input_ids.tolist()
        ours = torch.tensor([p for _, p in bert_core.classify(m, text, pair)])
        assert (ours - hf_probs(hf, base.tokenizer, text, pair)).abs().max().item() <= ATOL
        reloaded = torch.tensor([p for _, p in bert_core.classify(back, text, pair)])
        assert torch.equal(ours, reloaded)
    # Head only: the base's encoder modules are shared, not copied; otherwise the classifier owns a copy.
    assert (model.bert.encoder is base.model.bert.encoder) == (not copy_encoder)
    assert base.model.bert.pooler is None or kind == "pretraining"  # the base never got the new pooler


def test_zip_holds_an_hf_folder(tiny_dirs, tmp_path):
    import zipfile

    base = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    model, _ = new_classifier(base, ["a", "b"])
    data = classifier_zip(bert_core.LoadedModel(model, base.tokenizer, "x", "session"), extra={"k": 1})
    (tmp_path / "m.zip").write_bytes(data)
    names = set(zipfile.ZipFile(tmp_path / "m.zip").namelist())
    assert {"config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "training_report.json"} <= names


@pytest.mark.parametrize("labels,msg", [(["only"], "at least two"), (["a", "a"], "distinct"), (["a", " "], "non-empty"),
                                        ([str(i) for i in range(51)], "at most")])
def test_bad_label_sets_are_refused(tiny_dirs, labels, msg):
    base = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    with pytest.raises(bert_core.BertCoreError, match=msg):
        new_classifier(base, labels)
