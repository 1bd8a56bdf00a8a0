"""The Compare page: the bundled model against a session model and other families, through AppTest."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page
from support.family import write_family_checkpoint

import bert_core
from bert_core.inspect.compare import agreement_rows, run_model, word_of
from ui.markdown import md_literal
from ui.state import BUNDLED_LABEL, SESSION_LABEL

TEXT = "She [MASK] the letter to her mother."


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    write_family_checkpoint(root / "roberta", "roberta", "mlm")
    return root / "roberta"


def test_word_of_strips_each_scheme_mark():
    assert [word_of(p) for p in ("Ġwrote", "▁Wrote", "##s", "sent")] == ["wrote", "wrote", "s", "sent"]


def test_run_model_matches_analyze(roberta_dir):
    m = bert_core.load_model(str(roberta_dir))
    r = run_model(m, TEXT, top_k=3)
    t = bert_core.analyze(m, TEXT, top_k=3)
    assert r.tokens == t.tokens and r.predictions == [t.predictions[p] for p in t.mask_positions]
    assert r.parameters == m.model.num_parameters() and r.family == "roberta" and r.mask_token == "<mask>"
    same = agreement_rows([r, r])
    assert same[0]["top-1 agree"] == "yes" and same[0]["top-k overlap"] == 1.0


def test_bundled_against_a_session_model():
    """Offline: the tiny bundled model against a model stored as this session's (here a copy of the tiny one)."""
    at = open_page("compare", query={"text": TEXT})
    assert_ok(at)
    # Offline with nothing trained: the sidebar's default (the bundled MiniLM) beside the tiny bundled model.
    assert at.multiselect(key="cmp_models").value == ["sidebar model (bundled-minilm)", BUNDLED_LABEL]
    m = bert_core.load_model("bundled")
    at.session_state["session_model"] = bert_core.LoadedModel(m.model, m.tokenizer, "my model (step 0)", "session")
    at.session_state["session_model_version"] = 1
    at.run()
    assert_ok(at)
    ms = at.multiselect(key="cmp_models")
    assert SESSION_LABEL in ms.options
    ms.set_value([BUNDLED_LABEL, SESSION_LABEL]).run()
    assert_ok(at)
    frames = [d.value for d in at.dataframe]
    summary = next(f for f in frames if "ms per analysis" in f.columns)
    assert list(summary["model"]) == ["bundled", "my model (step 0)"]
    agree = next(f for f in frames if "top-1 agree" in f.columns)
    assert list(agree["top-1 agree"]) == ["yes"] and list(agree["top-k overlap"]) == [1.0]  # same weights


def test_three_families_side_by_side(roberta_dir, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(roberta_dir.parent))
    at = open_page("compare", query={"text": TEXT, "model": str(roberta_dir)})
    assert_ok(at)
    frames = [d.value for d in at.dataframe]
    summary = next(f for f in frames if "ms per analysis" in f.columns)
    assert list(summary["family"]) == ["roberta", "bert"]
    assert list(summary["mask token"]) == ["<mask>", "[MASK]"]
    tokens = next(f for f in frames if "position" in f.columns)
    assert "<mask>" in set(tokens.iloc[:, 1]) and "[MASK]" in set(tokens.iloc[:, 2])
    assert any("top-1 agree" in f.columns for f in frames)
    # Each column of guesses is headed by the model's name (not its family) and names the mask by its position in
    # the Tokens table, the numbering of the Predictions and Attention pages.
    agree = next(f for f in frames if "top-1 agree" in f.columns)
    runs = [run_model(bert_core.load_model(str(roberta_dir)), TEXT), run_model(bert_core.load_model("bundled"), TEXT)]
    assert [r.name for r in runs] == list(summary["model"])
    places = [r.mask_positions[0] for r in runs]
    assert [r.tokens[p] for r, p in zip(runs, places)] == ["<mask>", "[MASK]"]
    assert list(agree["[MASK] at position"]) == [" / ".join(str(p) for p in dict.fromkeys(places))]
    heads = [e.value for e in at.markdown]
    assert {f"**{r.name}**" for r in runs} <= set(heads) and "**bert**" not in heads
    caps = [e.value for e in at.caption]
    assert f"{md_literal('[MASK]')} at position {places[1]}" in caps and "BERT family" in caps
    assert not any("[MASK] 1" in c for c in caps)
    at.sidebar.text_area(key="text").set_value("no mask here").run()
    assert_ok(at)
    assert any("Type [MASK]" in i.value for i in at.info)


def test_a_mask_one_model_truncated_away_is_said(roberta_dir, monkeypatch):
    """The tiny RoBERTa (38 positions) cuts a long text before its last [MASK]; the bundled model keeps both."""
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(roberta_dir.parent))
    text = "The [MASK] sat on the mat. " + "the dog ran in the park " * 8 + "and then it [MASK]."
    at = open_page("compare", query={"text": text, "model": str(roberta_dir)})
    assert_ok(at)
    said = " ".join(i.value for i in at.info)
    assert "Not every model kept every [MASK]" in said and "kept 1" in said and "kept 2" in said, said
    assert "Type [MASK]" not in said
    agree = next(d.value for d in at.dataframe if "top-1 agree" in d.value.columns)
    first = [run_model(bert_core.load_model(name), text).mask_positions[0] for name in (str(roberta_dir), "bundled")]
    assert list(agree["[MASK] at position"]) == [f"{first[0]} / {first[1]}"]  # only the [MASK] both models read


def test_suggested_hub_ids_are_offered_and_fail_plainly_offline(tmp_path, monkeypatch):
    """Item 5's ids are in the sidebar's list and Compare's; with no network, picking one says why, nothing breaks."""
    import socket

    family_ids = {"distilbert-base-uncased", "roberta-base", "albert-base-v2", "bert-base-cased"}
    assert family_ids <= set(bert_core.SUGGESTED_HUB_IDS)
    at = open_page("compare", query={"text": TEXT})
    assert family_ids <= set(at.sidebar.selectbox(key="model_choice").options)
    ms = at.multiselect(key="cmp_models")
    assert family_ids <= set(ms.options)

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache: nothing to fall back on
    # bert-base-cased: no test loads it, so no earlier test file in this process has it in the model cache
    # (tests/pages/test_page_every_family.py loads roberta-base from a hub cache it makes).
    ms.set_value([ms.options[0], "bert-base-cased"]).run()
    assert_ok(at)
    said = " ".join(w.value for w in at.warning)
    assert "Could not load bert-base-cased" in said and "hub" in said, said
    assert any("at least two" in i.value for i in at.info)


def test_hostile_text_with_two_families(roberta_dir, monkeypatch):
    """The hostile list of test_hostile_pages, with two models really compared (RoBERTa and the bundled BERT)."""
    from support.hostile import HOSTILE

    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(roberta_dir.parent))
    at = open_page("compare", query={"text": TEXT, "model": str(roberta_dir)})
    assert_ok(at)
    for name, text in HOSTILE.items():
        at.sidebar.text_area(key="text").set_value(text).run()
        assert not at.exception, (name, [e.value for e in at.exception])
        for md in at.markdown:  # user text never reaches our HTML unescaped
            assert "<script>" not in md.value and "<img" not in md.value, name
        if name in ("empty", "whitespace"):
            said = " ".join(w.value for w in at.warning)
            assert "empty" in said or "no tokens" in said, (name, said)
        elif "[MASK]" in text:  # compared, or (the tiny RoBERTa has 38 positions) said why not
            assert any("top-1 agree" in d.value.columns for d in at.dataframe) or any(
                "Not every model kept every [MASK]" in i.value for i in at.info), name
