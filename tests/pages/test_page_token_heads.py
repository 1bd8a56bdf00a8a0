"""Every page with a tagger and a QA checkpoint in the sidebar: they are encoders too, and nothing breaks."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "layers",
         "inside_layer", "compare", "finetuning", "similarity", "tagging", "qa"]


@pytest.fixture(scope="module")
def head_models(tmp_path_factory):
    from support.heads import hf_head_folder

    root = tmp_path_factory.mktemp("heads")
    for kind in ("token", "qa"):
        (root / kind).mkdir()
        hf_head_folder(root / kind, "bert", kind)
    return root


@pytest.mark.parametrize("kind", ["token", "qa"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_with_a_tagger_or_a_qa_model(head_models, kind, page, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(head_models))
    at = open_page(page, query={"model": str(head_models / kind / kind), "text": "The cat [MASK] on the mat."})
    assert_ok(at)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
