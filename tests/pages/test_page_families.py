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


def charts(at):
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def _embeddings(at, fam, family_models):
    keys = set(charts(at))
    if fam == "distilbert":
        assert "chart-emb-segment" not in keys and "chart-emb-word" in keys
        assert "no segment table" in _texts(at) and "Sentence A and sentence B" not in _texts(at)
    elif fam == "albert":
        ch = charts(at)
        assert "chart-emb-projected" in ch and "chart-emb-segment" in ch
        maps = [t for t in ch["chart-emb-normed"]["data"] if t.get("name") != CELL_TEXT]  # not the segments' A/B
        assert len(maps[-1]["x"]) == 16  # E
        maps = [t for t in ch["chart-emb-projected"]["data"] if t.get("name") != CELL_TEXT]
        assert len(maps[-1]["x"]) == 32  # H
        assert "factorises" in _texts(at)
    else:
        assert "padding_idx + 1 = 2" in _texts(at)


def _tokenization(at, fam, family_models):
    """The model's own mask token and its tokenization scheme."""
    if fam == "roberta":
        assert any("<mask>" in i.value for i in at.info)
        assert "byte-level BPE" in _texts(at)
        assert "&lt;mask&gt;" in at.get("html")[0].proto.body  # the chip, escaped
    elif fam == "albert":
        assert "SentencePiece" in _texts(at)


def _masking(at, fam, family_models):
    """RoBERTa's dynamic masking is explained."""
    if fam == "roberta":
        assert "dynamically" in _texts(at) and "<mask>" in _texts(at)


def _predictions(at, fam, family_models):
    """Predictions at the family's mask token; no NSP head to show."""
    assert "chart-pred-2" in charts(at) or any(k.startswith("chart-pred-") for k in charts(at)), fam
    assert any("no NSP head" in i.value for i in at.info)


def _anatomy(at, fam, family_models):
    """The loaded family's parameters counted as the model has them."""
    if fam != "albert":
        return
    import bert_core
    from bert_core.model.counts import param_counts

    m = bert_core.load_model(str(family_models / "albert"))
    sizes = at.dataframe[0].value
    loaded = sizes[sizes["model"].str.endswith("(loaded)")]["total parameters"].iloc[0]
    assert loaded == m.model.num_parameters() == param_counts(m.config, nsp=False, pooler=False)["total"]
    assert {"albert-base-v2", "roberta-base", "distilbert-base-uncased"} <= set(sizes["model"])


# What a page says of a family, checked on the same page load as its run (text and pair) for that family.
FAMILY_CHECKS = {"embeddings": _embeddings, "tokenization": _tokenization, "masking": _masking,
                 "predictions": _predictions, "anatomy": _anatomy}


@pytest.mark.parametrize("fam", ["roberta", "distilbert", "albert"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_for_every_family_and_says_what_the_family_has(family_models, fam, page, monkeypatch):
    at = _open(page, family_models, fam, monkeypatch, pair=PAIR)
    assert not at.warning or page == "training", [w.value for w in at.warning]
    if page in FAMILY_CHECKS:
        FAMILY_CHECKS[page](at, fam, family_models)
    at.sidebar.text_area(key="text").set_value("the cat sat on the mat " * 20).run()  # past 38 positions
    assert_ok(at)


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
