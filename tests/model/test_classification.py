"""Sequence classification against transformers: same weights, fp32, probabilities within 1e-5; export round trip."""

from __future__ import annotations

import json

import pytest
import torch
from support.checkpoints import VOCAB

import bert_core
from bert_core.model.classifier_io import classifier_zip, new_classifier, save_classifier
from bert_core.model.classifiers import BertForSequenceClassification

ATOL = 1e-5
LABELS = ["animal", "food", "<b>place</b>"]  # a label with HTML in it is just a name
SENTENCES = [("The cat sat on the mat, playing.", None), ("he went to the store.", "he bought milk in paris."),
             ("unaffable", None)]


def write_hf_classifier(path, seed=0, id2label=True, **overrides):
    """A random tiny HF BertForSequenceClassification (LayerNorms and biases perturbed) + tokenizer."""
    from transformers import BertConfig
    from transformers import BertForSequenceClassification as HFCls

    from bert_core.model.tokenization import WordPieceTokenizer

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


def test_a_token_classifier_loads_as_a_tagger_not_a_sentence_classifier(tmp_path):
    from transformers import BertConfig, BertForTokenClassification

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(VOCAB) + 3, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64, num_labels=5)
    BertForTokenClassification(cfg).save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    m = bert_core.load_model(str(tmp_path))
    assert not isinstance(m.model, BertForSequenceClassification)
    from bert_core.model.token_heads import BertForTokenClassification as OurTagger

    assert isinstance(m.model, OurTagger) and m.model.labels == [f"LABEL_{i}" for i in range(5)]
    assert any("token classifier" in n for n in m.notes)


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


# --- RoBERTa, DistilBERT, ALBERT: each family's head, against its transformers class --------------

FAMILIES = ("roberta", "distilbert", "albert")
FAMILY_TEXTS = [("The cat sat on the mat, playing.", None), ("He went to the store.", "Paris is a city in France."),
                ("I like dogs!", None)]
HF_CLASS = {"roberta": "RobertaForSequenceClassification", "distilbert": "DistilBertForSequenceClassification",
            "albert": "AlbertForSequenceClassification"}


def write_family_classifier(path, fam, seed=0, id2label=True):
    from support.family import write_family_checkpoint

    labels = dict(id2label=dict(enumerate(LABELS)), label2id={v: i for i, v in enumerate(LABELS)}) if id2label \
        else dict(num_labels=len(LABELS))
    return write_family_checkpoint(path, fam, "cls", seed=seed, **labels)


@pytest.fixture(scope="module")
def family_classifiers(tmp_path_factory):
    return {fam: (d, write_family_classifier(d, fam)) for fam in FAMILIES
            for d in [tmp_path_factory.mktemp(f"{fam}-cls")]}


def family_batch(tok, texts):
    """(ids, token types, attention mask), each (B, T), right-padded with the tokenizer's pad id."""
    encs = [tok.encode(a, b) for a, b in texts]
    T = max(len(e) for e in encs)
    ids = torch.full((len(encs), T), tok.pad_token_id, dtype=torch.long)
    types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
    for r, e in enumerate(encs):
        ids[r, : len(e)] = torch.from_numpy(e.input_ids)
        types[r, : len(e)] = torch.from_numpy(e.token_type_ids)
        mask[r, : len(e)] = 1
    return ids, types, mask


def hf_family_logits(hf, fam, ids, types, mask=None):
    kw = dict(input_ids=ids, attention_mask=mask)
    if fam != "distilbert":  # DistilBERT has no segments
        kw["token_type_ids"] = types
    with torch.no_grad():
        return hf(**kw).logits


@pytest.mark.parametrize("fam", FAMILIES)
def test_family_classifier_matches_transformers(family_classifiers, fam):
    """classify (one text, one pair) = softmax of HF's logits; a padded batch of mixed lengths too (1e-5)."""
    from bert_core.model.classifiers import SEQUENCE_CLASSIFIERS

    path, hf = family_classifiers[fam]
    m = bert_core.load_model(str(path))
    assert type(m.model) is SEQUENCE_CLASSIFIERS[fam] and type(m.model).__name__ == HF_CLASS[fam]
    assert m.family == fam and not m.has_mlm and "3 classes" in m.notes[0]
    assert (m.model.bert.pooler is None) == (fam != "albert")  # only ALBERT's encoder pools
    for text, pair in FAMILY_TEXTS:
        got = bert_core.classify(m, text, pair)
        assert [lab for lab, _ in got] == LABELS  # id2label order, the HTML label kept as a name
        ids, types, _ = family_batch(m.tokenizer, [(text, pair)])
        theirs = hf_family_logits(hf, fam, ids, types).softmax(-1)[0]
        err = (torch.tensor([p for _, p in got]) - theirs).abs().max().item()
        assert err <= ATOL, (text, pair, err)
    ids, types, mask = family_batch(m.tokenizer, FAMILY_TEXTS)
    assert mask.sum(1).unique().numel() == len(FAMILY_TEXTS)  # really padded: three lengths
    with torch.no_grad():
        ours = m.model.logits(ids, types, mask)
    assert (ours - hf_family_logits(hf, fam, ids, types, mask)).abs().max().item() <= ATOL
    assert ours.std() > 0.05  # the perturbed head gives logits far apart, so 1e-5 means something


@pytest.mark.parametrize("fam", FAMILIES)
@pytest.mark.parametrize("kind,copy_encoder", [("mlm", True), ("base", False)])
def test_family_export_round_trip_through_transformers(tmp_path, fam, kind, copy_encoder):
    """A head we build on a RoBERTa / DistilBERT / ALBERT base saves as its HF class: no key missing or extra."""
    from support.family import write_family_checkpoint
    from transformers import AutoModelForSequenceClassification

    write_family_checkpoint(tmp_path / "base", fam, kind)
    base = bert_core.load_model(str(tmp_path / "base"))
    model, notes = new_classifier(base, LABELS, seed=3, copy_encoder=copy_encoder)
    assert type(model).__name__ == HF_CLASS[fam]
    if fam == "albert":  # AlbertForMaskedLM has no pooler, AlbertModel has one
        assert any("NEW pooler" in n for n in notes) == (kind == "mlm")
    else:  # the head's own layer is always new
        assert any("NEW layer" in n for n in notes) and model.bert.pooler is None
    with torch.no_grad():  # as if trained: the head is no longer at its initial values
        model.pooling_layer().weight.normal_(std=0.3)
        for name, p in model.named_parameters():
            if name.startswith("classifier") and name.endswith("weight"):
                p.normal_(std=0.3)
    m = bert_core.LoadedModel(model.eval(), base.tokenizer, "fine-tuned", "session")
    out = save_classifier(m, tmp_path / "export")
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == [HF_CLASS[fam]] and cfg["model_type"] == fam
    hf, info = AutoModelForSequenceClassification.from_pretrained(out, attn_implementation="eager",
                                                                  output_loading_info=True)
    assert type(hf).__name__ == HF_CLASS[fam]
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    hf.eval()
    back = bert_core.load_model(str(out))
    ids, types, mask = family_batch(base.tokenizer, FAMILY_TEXTS)
    with torch.no_grad():
        ours = model.logits(ids, types, mask)
        again = back.model.logits(ids, types, mask)
    assert (ours - hf_family_logits(hf, fam, ids, types, mask)).abs().max().item() <= ATOL
    assert torch.equal(ours, again) and ours.std() > 0.05
    assert base.model.bert.pooler is None or kind == "base"  # the base never got a new pooler


def _edit_weights(path, drop=(), **replace):
    from safetensors.torch import load_file, save_file

    sd = load_file(str(path / "model.safetensors"))
    for k in drop:
        sd.pop(k)
    sd.update(replace)
    save_file(sd, str(path / "model.safetensors"), metadata={"format": "pt"})


@pytest.mark.parametrize("fam,edit,message", [
    ("distilbert", {"pre_classifier.weight": torch.zeros(32, 33)}, r"pre_classifier.weight has shape \(32, 33\)"),
    ("distilbert", dict(drop=("pre_classifier.weight", "pre_classifier.bias")), "has no pre_classifier.weight"),
    ("roberta", dict(drop=("classifier.dense.weight",)), "has no classifier.dense.weight"),
    ("roberta", {"classifier.weight": torch.zeros(3, 32)}, "classifier.weight is not part of"),
    ("albert", dict(drop=("albert.pooler.weight", "albert.pooler.bias")), r"needs the pooler's weights \(albert.pool"),
    ("albert", {"classifier.weight": torch.zeros(3, 31)}, r"classifier.weight has shape \(3, 31\)"),
], ids=["distilbert-pre_classifier-shape", "distilbert-no-pre_classifier", "roberta-no-dense",
        "roberta-bert-style-head", "albert-no-pooler", "albert-classifier-shape"])
def test_broken_family_classifiers_get_a_clear_message(family_classifiers, tmp_path, fam, edit, message):
    import shutil

    shutil.copytree(family_classifiers[fam][0], tmp_path / "m")
    _edit_weights(tmp_path / "m", **edit)
    with pytest.raises(bert_core.BertCoreError, match=message):
        bert_core.load_model(str(tmp_path / "m"))


@pytest.mark.parametrize("fam", FAMILIES)
def test_family_classifier_labels_missing_or_bad(family_classifiers, tmp_path, fam):
    """No id2label: transformers' LABEL_i; too few names, or a name of 61+ characters: a clear message."""
    from support.family import edited_copy

    src = family_classifiers[fam][0]
    cfg = json.loads((src / "config.json").read_text())
    cfg.pop("id2label"), cfg.pop("label2id")
    (tmp_path / "none").mkdir()
    for f in src.iterdir():
        (tmp_path / "none" / f.name).write_bytes(f.read_bytes())
    (tmp_path / "none" / "config.json").write_text(json.dumps(cfg))
    m = bert_core.load_model(str(tmp_path / "none"))
    assert [lab for lab, _ in bert_core.classify(m, "the cat")] == ["LABEL_0", "LABEL_1", "LABEL_2"]
    edited_copy(src, tmp_path / "few", id2label={"0": "a", "1": "b"})
    with pytest.raises(bert_core.BertCoreError, match="id2label names classes"):
        bert_core.load_model(str(tmp_path / "few"))
    edited_copy(src, tmp_path / "long", id2label={"0": "a", "1": "b", "2": "<b>" * 30})
    with pytest.raises(bert_core.BertCoreError, match="longer than 60 characters"):
        bert_core.load_model(str(tmp_path / "long"))
