"""BERT_EXPLORER_DEFAULT_MODEL: the model a fresh visitor sees (a hub id or a local folder on Cloud)."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

import ui.state


@pytest.fixture
def default_folder(tiny_dirs, monkeypatch):
    d = str(tiny_dirs["pretraining"][0])
    # The app reads the variable once at import; the test sets what that read would have given.
    monkeypatch.setattr(ui.state, "DEFAULT_MODEL", d)
    return d


def test_a_configured_default_model_is_what_a_fresh_session_gets(default_folder):
    at = open_page("tokenization", text="the cat sat on the mat .")
    assert_ok(at)
    assert at.sidebar.selectbox(key="model_choice").value == default_folder
    cur = at.session_state["current"]
    assert cur.model_key == default_folder and cur.model.config.hidden_size == 32  # the tiny folder, not bundled
    assert "model" not in at.query_params  # the default needs no URL parameter


def test_the_bundled_model_stays_one_choice_away(default_folder):
    at = open_page("tokenization", query={"model": "bundled"})
    assert_ok(at)
    assert at.session_state["current"].model_key == "bundled"
    assert at.query_params["model"] == ["bundled"] or at.query_params["model"] == "bundled"


def test_unset_the_default_is_the_bundled_minilm_and_the_tiny_one_is_offered():
    assert ui.state.DEFAULT_MODEL == "bundled-minilm"  # BERT_EXPLORER_DEFAULT_MODEL is not set in the tests
    at = open_page("tokenization", text="the cat sat on the mat .")
    assert_ok(at)
    box = at.sidebar.selectbox(key="model_choice")
    assert box.value == ui.state.MINILM_LABEL and ui.state.BUNDLED_LABEL in box.options
    cur = at.session_state["current"]
    assert cur.model_key == "bundled-minilm" and cur.model.tokenizer.vocab_size == 30522
    assert "model" not in at.query_params
    box.select(ui.state.BUNDLED_LABEL).run()
    assert_ok(at)
    assert at.session_state["current"].model.tokenizer.vocab_size == 12000  # the tiny from-scratch model
