"""Every page with a RoBERTa, a DistilBERT and an ALBERT checkpoint (tiny, random, loaded by local path)."""

from __future__ import annotations

import json

import pytest
from support.apptest import assert_ok, open_page
from support.family import edited_copy

from bert_core.figures.style import CELL_TEXT

PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "training",
         "layers", "inside_layer", "compare"]
TEXT = "She [MASK] the letter to her mother."
PAIR = "It was a sunny day."


def _open(page, family_models, fam, monkeypatch, pair=None):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(family_models))
    query = {"model": str(family_models / fam), "text": TEXT}
    if pair:
        query["pair"] = pair
    at = open_page(page, query=query)
    assert_ok(at)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    return at


def _texts(at):
    return " ".join(e.value for e in [*at.markdown, *at.caption, *at.info, *at.subheader])


@pytest.mark.parametrize("fam", ["roberta", "distilbert", "albert"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_for_every_family(family_models, fam, page, monkeypatch):
    at = _open(page, family_models, fam, monkeypatch, pair=PAIR)
    assert not at.warning or page == "training", [w.value for w in at.warning]
    at.sidebar.text_area(key="text").set_value("the cat sat on the mat " * 20).run()  # past 38 positions
    assert_ok(at)


def charts(at):
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_embeddings_per_family(family_models, monkeypatch):
    at = _open("embeddings", family_models, "distilbert", monkeypatch, pair=PAIR)
    keys = set(charts(at))
    assert "chart-emb-segment" not in keys and "chart-emb-word" in keys
    assert "no segment table" in _texts(at) and "Sentence A and sentence B" not in _texts(at)
    at = _open("embeddings", family_models, "albert", monkeypatch, pair=PAIR)
    ch = charts(at)
    assert "chart-emb-projected" in ch and "chart-emb-segment" in ch
    maps = [t for t in ch["chart-emb-normed"]["data"] if t.get("name") != CELL_TEXT]  # not the segments' A/B layer
    assert len(maps[-1]["x"]) == 16  # E
    maps = [t for t in ch["chart-emb-projected"]["data"] if t.get("name") != CELL_TEXT]
    assert len(maps[-1]["x"]) == 32  # H
    assert "factorises" in _texts(at)
    at = _open("embeddings", family_models, "roberta", monkeypatch)
    assert "padding_idx + 1 = 2" in _texts(at)


def test_tokenization_shows_the_model_mask_token_and_scheme(family_models, monkeypatch):
    at = _open("tokenization", family_models, "roberta", monkeypatch)
    assert any("<mask>" in i.value for i in at.info)
    assert "byte-level BPE" in _texts(at)
    assert "&lt;mask&gt;" in at.get("html")[0].proto.body  # the chip, escaped
    at = _open("tokenization", family_models, "albert", monkeypatch)
    assert "SentencePiece" in _texts(at)


def test_masking_explains_dynamic_masking_for_roberta(family_models, monkeypatch):
    at = _open("masking", family_models, "roberta", monkeypatch)
    assert "dynamically" in _texts(at) and "<mask>" in _texts(at)


def test_predictions_at_the_family_mask(family_models, monkeypatch):
    for fam in ("roberta", "distilbert", "albert"):
        at = _open("predictions", family_models, fam, monkeypatch)
        assert "chart-pred-2" in charts(at) or any(k.startswith("chart-pred-") for k in charts(at)), fam
        assert any("no NSP head" in i.value for i in at.info)


def test_anatomy_counts_the_loaded_family(family_models, monkeypatch):
    import bert_core
    from bert_core.model.counts import param_counts

    at = _open("anatomy", family_models, "albert", monkeypatch)
    m = bert_core.load_model(str(family_models / "albert"))
    sizes = at.dataframe[0].value
    loaded = sizes[sizes["model"].str.endswith("(loaded)")]["total parameters"].iloc[0]
    assert loaded == m.model.num_parameters() == param_counts(m.config, nsp=False, pooler=False)["total"]
    assert {"albert-base-v2", "roberta-base", "distilbert-base-uncased"} <= set(sizes["model"])


def _broken_folders(family_models, root):
    """The issue's bad folders, each next to the good ones: {name: what the message must say}."""
    edited_copy(family_models / "roberta", root / "deberta", model_type="deberta-v2")  # a family we do not read
    # A RoBERTa folder that says it is ELECTRA (a family we read): its RoBERTa head is named, not guessed at.
    edited_copy(family_models / "roberta", root / "electra", model_type="electra")
    # A RoBERTa folder with its vocab.json but neither merges.txt nor tokenizer.json.
    d = edited_copy(family_models / "roberta", root / "no-merges", drop=("tokenizer.json",))
    vocab = json.loads((family_models / "roberta" / "tokenizer.json").read_text())["model"]["vocab"]
    (d / "vocab.json").write_text(json.dumps(vocab))
    edited_copy(family_models / "albert", root / "small-vocab", vocab_size=20)
    edited_copy(family_models / "distilbert", root / "no-tokenizer", drop=("tokenizer.json", "vocab.txt"))
    return {
        "deberta": "deberta-v2 model.*'bert', 'roberta', 'distilbert', 'albert', 'electra'",
        "electra": "tensor 'lm_head.bias' that a electra model does not have",
        "no-merges": "vocab.json but no merges.txt",
        "small-vocab": "embedding matrix has only 20 rows",
        "no-tokenizer": "no tokenizer in no-tokenizer",
    }


@pytest.mark.parametrize("page", ["predictions", "compare"])
def test_bad_family_folders_get_a_message_and_the_page_keeps_working(family_models, tmp_path, page, monkeypatch):
    """Each bad folder of the issue as the sidebar's model: a plain message, and the bundled model answers."""
    import re

    cases = _broken_folders(family_models, tmp_path)
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    for name, msg in cases.items():
        at = open_page(page, query={"model": str(tmp_path / name), "text": TEXT})
        assert_ok(at)
        errors = " ".join(e.value for e in at.sidebar.error)
        assert "Could not load" in errors and re.search(msg, errors), (name, errors)
        assert "Traceback" not in errors
        assert any("Still showing: bundled" in c.value for c in at.sidebar.caption), name
