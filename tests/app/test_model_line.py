"""The one line each page shows about the model on screen (ui.widgets.model_line_text)."""

from __future__ import annotations

import json
from pathlib import Path

from support.apptest import assert_ok, open_page
from support.family import write_family_checkpoint

import bert_core
from ui.widgets import PAPER_BERT_BASE, model_line_text


def test_bundled_minilm_line_says_what_this_project_trained():
    m = bert_core.load_model()
    line = model_line_text(m)
    total = json.loads((bert_core.MINILM_DIR / "export.json").read_text())["total_tokens_seen"]
    assert line.startswith("Model on screen: MiniLM (6 layers × 384, 12 heads;")
    assert "BERT-base-sized teacher" in line and ("its encoder trained further and its fill-in (MLM) and "
                                                  "next-sentence (NSP) heads trained anew by this project on Brown "
                                                  "+ WordNet") in line
    assert f"{total / 1e6:.0f}M word pieces" in line  # from the training record, not written by hand
    assert line.endswith(PAPER_BERT_BASE)


def test_a_hub_family_is_described_from_its_config(tmp_path):
    write_family_checkpoint(tmp_path / "roberta", "roberta", "mlm")
    m = bert_core.load_model(str(tmp_path / "roberta"))
    line = model_line_text(m)
    c = m.config
    assert f"(RoBERTa: {c.num_hidden_layers} layers × {c.hidden_size}, {c.num_attention_heads} heads;" in line
    assert "fill-in (MLM) head from its checkpoint" in line and "NSP" not in line
    assert line.endswith(PAPER_BERT_BASE)


PAGES = sorted(p.stem for p in (Path(__file__).parents[2] / "views").glob("*.py")
         if p.stem not in ("lesson", "__init__"))


def test_eighteen_pages():
    assert len(PAGES) == 18


# That every page's main area shows this line is checked on the page load that tests/pages/test_hostile_pages.py
# makes of each of these pages (test_every_page_names_its_model_and_survives_hostile_text).


def test_where_bert_base_can_be_had_the_line_says_where(monkeypatch):
    from ui import model_choice

    monkeypatch.setattr(model_choice, "offer_label", lambda: model_choice.OFFER_LABEL)
    at = open_page("masking")
    assert_ok(at)
    line = next(c.value for c in at.main.caption if c.value.startswith("Model on screen"))
    assert line.endswith("BERT-base is one click away: the sidebar's “Use BERT-base”.")
