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
    at.selectbox(key="anatomy_model").select("bert-large-uncased").run()
    assert_ok(at)
