"""The Model anatomy page and the counts behind it."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

from bert_core.inspect.anatomy import KNOWN_CONFIGS, anatomy_rows


@pytest.mark.parametrize("kind", ["pretraining", "mlm", "base"])
def test_counts_match_transformers(tiny_dirs, kind):
    import bert_core

    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    total = anatomy_rows(m.config, m.has_mlm, m.has_nsp, m.model.bert.pooler is not None)[-1]["parameters"]
    assert total == hf.num_parameters() == m.model.num_parameters()


def test_published_sizes():
    assert anatomy_rows(KNOWN_CONFIGS["bert-base-uncased"])[-1]["parameters"] == 110_106_428
    assert round(anatomy_rows(KNOWN_CONFIGS["bert-large-uncased"])[-1]["parameters"] / 1e6) == 336


def test_anatomy_page_renders():
    at = open_page("anatomy")
    assert_ok(at)
    assert any("110.1" in str(df.value) for df in at.dataframe)
    said = " ".join(m.value for m in at.markdown)  # the family's training terms are glossed where first used
    assert "dynamic masking (a new choice of masked words each time a sentence is read" in said
    assert "sentence-order prediction (two consecutive segments: are they in their original order or swapped?)" in said
    at.selectbox(key="anatomy_model").select("bert-large-uncased").run()
    assert_ok(at)


def test_distilbert_paper_size_beside_the_table_row():
    """The table counts DistilBERT's MLM head (67.0M); the paper's 66M is the encoder alone: the text says both."""
    at = open_page("anatomy")
    assert_ok(at)
    rows = {r["component"]: r["parameters"] for r in anatomy_rows(KNOWN_CONFIGS["distilbert-base-uncased"])}
    mlm = rows["MLM head (transform + bias; decoder tied)"]
    assert round((rows["total"] - mlm) / 1e6) == 66 and round(rows["total"] / 1e6) == 67
    sizes = next(df.value for df in at.dataframe if "millions" in df.value.columns)
    assert float(sizes.loc[sizes["model"] == "distilbert-base-uncased", "millions"].iloc[0]) == 67.0
    said = " ".join(m.value for m in at.markdown)
    assert (f"DistilBERT (66M in its paper: the encoder alone, {(rows['total'] - mlm) / 1e6:.1f}M here; the "
            f"table's {rows['total'] / 1e6:.1f}M adds its MLM head's {mlm / 1e6:.1f}M)") in said
