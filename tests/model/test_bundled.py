"""The bundled offline models: load fast with no network, have both heads, and docs/models.md's numbers are real.

Two ship: `bundled-minilm` (the default: MiniLM's encoder with MLM and NSP heads our loop re-learned) and
`bundled` (tiny, trained from scratch by this project).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

import bert_core
from bert_core.train.evaluate import bundled_report, markdown

MODELS_DOC = Path(__file__).resolve().parents[2] / "docs/models.md"  # the evaluation tables between markers


@pytest.mark.parametrize("name, folder, max_mb", [("bundled", bert_core.BUNDLED_DIR, 30),
                                                   ("bundled-minilm", bert_core.MINILM_DIR, 50)])
def test_bundled_model_loads_and_predicts(name, folder, max_mb):
    t0 = time.perf_counter()
    m = bert_core.load_model(name)
    elapsed = time.perf_counter() - t0
    assert m.source == "bundled" and m.name == name and m.has_mlm and m.has_nsp
    assert elapsed < 10  # docs/models.md gives the measured load time; this only guards against pathologies
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size <= max_mb * 2**20
    t = bert_core.analyze(m, "The cat [MASK] on the mat.", "It was warm.")
    assert len(t.predictions) == 1 and t.nsp is not None


def test_the_default_offline_model_is_minilm_with_bert_base_uncased_pieces():
    m = bert_core.load_model()
    assert m.name == bert_core.DEFAULT_BUNDLED == "bundled-minilm"
    assert m.tokenizer.vocab_size == m.config.vocab_size == 30522
    assert (m.config.num_hidden_layers, m.config.hidden_size) == (6, 384)
    pieces = m.tokenizer.convert_ids_to_tokens(m.tokenizer.encode("unaffable").input_ids)
    assert pieces == ["[CLS]", "una", "##ffa", "##ble", "[SEP]"]  # bert-base-uncased's own pieces


def test_minilm_ships_fp16_and_loads_as_fp32():
    with safe_open(str(bert_core.MINILM_DIR / "model.safetensors"), framework="pt") as f:
        dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
    assert dtypes == {"F16"}
    m = bert_core.load_model("bundled-minilm")
    assert {p.dtype for p in m.model.parameters()} == {torch.float32}


def test_minilm_logits_match_transformers():
    """Our load of the shipped folder and transformers' BertForPreTraining on the same folder (fp32 after upcast)."""
    from transformers import BertForPreTraining

    m = bert_core.load_model("bundled-minilm")
    hf = BertForPreTraining.from_pretrained(bert_core.MINILM_DIR, dtype=torch.float32,
                                            attn_implementation="eager").eval()
    enc = m.tokenizer.encode("The cat [MASK] on the mat.", "It was [MASK] warm.")
    ids = torch.from_numpy(enc.input_ids)[None]
    types = torch.from_numpy(enc.token_type_ids)[None]
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=types, attention_mask=torch.ones_like(ids))
        out = m.model(ids, types, torch.ones_like(ids), trace=True)
        mlm = m.model.mlm_logits(out.hidden_states[-1])  # (1, T, V)
        nsp = m.model.nsp_logits(out.pooled)
    assert torch.allclose(mlm, ref.prediction_logits, atol=1e-5, rtol=0)
    assert torch.allclose(nsp, ref.seq_relationship_logits, atol=1e-5, rtol=0)


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*\.?\d*", text)]


def _readme_block(marker: str) -> str:
    return MODELS_DOC.read_text().split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]


@pytest.fixture(scope="module")
def report():
    """The tiny from-scratch model's numbers."""
    return bundled_report("bundled")


@pytest.fixture(scope="module")
def minilm_report():
    return bundled_report("bundled-minilm")


@pytest.mark.parametrize("marker, which", [("heldout", "report"), ("minilm", "minilm_report")])
def test_the_models_doc_evaluation_matches_a_rerun(marker, which, request):
    want, got = _numbers(_readme_block(marker)), _numbers(markdown(request.getfixturevalue(which)))
    assert len(got) == len(want)
    # Counts are exact; a loss may move in the 4th decimal and a top-k by an argmax tie between CPUs.
    assert got == pytest.approx(want, abs=0.05)


def test_bundled_model_is_no_worse_than_the_previous_one(report):
    # The previous bundled model (WordNet only, MLM only) on the same sets: 42.13% top-5 on its own
    # held-out glosses (minus those now trained on), 29.20% on held-out Brown, 0% everyday cloze, no NSP.
    assert report["heldout_previous"]["top5"] >= 0.4213
    assert report["heldout_brown"]["top5"] > 0.2920
    assert report["everyday_cloze"]["top5"] > 0
    assert report["nsp"]["accuracy"] >= 0.65  # 2,260 balanced pairs: chance is 50%


def test_bundled_model_is_no_worse_than_before_phases_3_and_4(report):
    # The model after phases 1-2 (shipped before this session), same sets: docs/models.md's table.
    assert report["heldout_previous"]["top5"] >= 0.4331
    assert report["heldout_wordnet"]["top5"] >= 0.4265
    assert report["heldout_brown"]["top5"] >= 0.4502
    assert report["everyday_cloze"]["top5"] >= 0.1143
    assert report["nsp"]["accuracy"] >= 0.7128


def test_minilm_model_knows_more_everyday_english_than_the_tiny_one(minilm_report, report):
    # Measured on the shipped weights (docs/models.md): everyday cloze 21.43% / 42.86% on the 70 sentences,
    # 38.42% top-5 on the three lists (190), NSP 84.38% on Brown pairs, 73.33% and 72.50% on the two everyday pairs
    # lists, held-out Brown 36.85% / 53.73%, WordNet 33.36% / 50.73%. Floors a little under those, and above the
    # fourth stage's weights where this stage gained (three lists 35.26%, everyday pairs 71.67% and 70.83%, Brown
    # 52.89%, WordNet 49.21%); the 70 sentences alone were 44.29% then (MODEL.md: the lists disagree by that much).
    # The tiny model: 18.57% on the 70, 12.11% on the three lists, 76.15% NSP, 58.33% / 57.50% on everyday pairs;
    # the package's encoder with untrained heads 0% and 50%.
    assert minilm_report["everyday_cloze"]["top5"] >= 0.42
    assert minilm_report["everyday_cloze"]["top1"] >= 0.20
    assert minilm_report["everyday_cloze_all"]["top5"] >= 0.375
    assert minilm_report["nsp"]["accuracy"] >= 0.835
    for key in ("everyday_nsp", "everyday_nsp_second"):
        assert minilm_report[key]["accuracy"] >= 0.72
        assert minilm_report[key]["accuracy"] > report[key]["accuracy"]
    assert minilm_report["everyday_cloze_all"]["top5"] > 2 * report["everyday_cloze_all"]["top5"]
    assert minilm_report["heldout_brown"]["top5"] >= 0.535
    assert minilm_report["heldout_wordnet"]["top5"] >= 0.505
