"""Each page's computations switched on, with tiny DistilBERT, ALBERT and RoBERTa checkpoints in the Hugging Face
cache under the hub ids the app suggests (as a download leaves them, the hub down): no traceback on any page.

Gradient salience raised a TypeError on DistilBERT and a RuntimeError on ALBERT inside the Predictions page's
salience toggle, which catches BertCoreError only: these runs click every such toggle and button.
"""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page
from support.family import write_family_checkpoint

HUB_IDS = {"distilbert": "distilbert-base-uncased", "albert": "albert-base-v2", "roberta": "roberta-base"}
REVISION = "0" * 39 + "2"


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    """An HF cache holding a tiny random checkpoint of each family under its hub id (refs/main -> snapshot)."""
    home = tmp_path_factory.mktemp("hf-home-families")
    for fam, repo_id in HUB_IDS.items():
        repo = home / "hub" / ("models--" + repo_id.replace("/", "--"))
        write_family_checkpoint(repo / "snapshots" / REVISION, fam, "mlm", num_hidden_layers=2,
                                max_position_embeddings=130)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(REVISION)
    return home


@pytest.fixture
def cached(hf_home, monkeypatch, no_network):
    from huggingface_hub import constants

    from ui import model_choice

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(model_choice, "_reach", {})  # no answer about the hub remembered from before


def _open(page, fam, text):
    at = open_page(page, query={"model": HUB_IDS[fam], "text": text}, timeout=120)
    assert_ok(at)
    assert at.session_state["current"].model.family == fam
    return at


def _switch_on(at, *keys):
    """Turn each toggle on (a rerun each), failing on any exception element."""
    for key in keys:
        at.toggle(key=key).set_value(True).run()
        assert_ok(at)


@pytest.mark.parametrize("fam", list(HUB_IDS))
def test_predictions_salience_fill_in_and_pll(cached, fam):
    at = _open("predictions", fam, "The cat sat on the mat.")
    _switch_on(at, "pred_salience", "pred_fill", "pred_pll")
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"chart-sal-occ", "chart-sal-grad"} <= keys, (keys, [w.value for w in at.warning])


@pytest.mark.parametrize("fam", list(HUB_IDS))
def test_heads_and_layers(cached, fam):
    """The pages with computations behind a toggle. Inside a layer, Attention and Embeddings have none: each family
    on each of them is tests/pages/test_page_families.py's (the same code, a local folder instead of the cache)."""
    at = _open("heads", fam, "The cat [MASK] on the mat.")
    _switch_on(at, "heads_rank")
    assert "heads-pruning" in {c.key for c in at.get("plotly_chart")}
    at = _open("layers", fam, "The cat [MASK] on the mat.")
    _switch_on(at, "lay_lens_rank", "lay_pca", "lay_cls")


@pytest.mark.parametrize("fam", ["distilbert", "albert"])
def test_neighbours_probing_and_similarity(cached, fam):
    at = _open("neighbours", fam, "the cat sat on the mat")
    at.button(key="nb_build").click().run()
    assert_ok(at)
    at = _open("probing", fam, "the cat sat on the mat")
    at.button(key="pr_fit").click().run()
    assert_ok(at)
    at = _open("similarity", fam, "the cat sat on the mat")
    _switch_on(at, "sim_auc")


@pytest.fixture(scope="module")
def electra_dirs(tmp_path_factory):
    """ELECTRA's generator (an MLM head) and discriminator (none: every [MASK] feature refuses), as local folders."""
    root = tmp_path_factory.mktemp("electra")
    for kind in ("mlm", "disc"):
        write_family_checkpoint(root / kind, "electra", kind, num_hidden_layers=2)
    return root


@pytest.mark.parametrize("kind", ["mlm", "disc"])
def test_electra_pages(electra_dirs, kind, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(electra_dirs))
    toggles = {"predictions": ["pred_salience", "pred_fill", "pred_pll"], "heads": ["heads_rank"],
               "layers": ["lay_lens_rank", "lay_pca", "lay_cls"], "inside_layer": [], "attention": [],
               "bert_vs_gpt": []}
    for page, keys in toggles.items():
        at = open_page(page, query={"model": str(electra_dirs / kind), "text": "The cat [MASK] on the mat."},
                       timeout=120)
        assert_ok(at)
        assert at.session_state["current"].model.family == "electra"
        _switch_on(at, *[k for k in keys if any(t.key == k for t in at.toggle)])  # no MLM head: some are not offered
    if kind == "mlm":
        at = open_page("predictions", query={"model": str(electra_dirs / kind), "text": "The cat sat on the mat."})
        _switch_on(at, "pred_salience")
        assert {"chart-sal-occ", "chart-sal-grad"} <= {c.key for c in at.get("plotly_chart")}
