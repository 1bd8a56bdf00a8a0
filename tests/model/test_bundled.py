"""The bundled offline models: load fast with no network, have both heads, and docs/models.md's numbers are real.

Two ship: `bundled-minilm` (the default: MiniLM's encoder with MLM and NSP heads our loop re-learned) and
`bundled` (tiny, trained from scratch by this project).

docs/models.md's evaluation tables are checked against each item's result, committed beside the evaluation's data
(tests/data/evaluation/, written by `python -m bert_core.train.evaluate NAME --markdown --write-items` with the
tables): the tables must be exactly what those results add up to, and a seeded sample of the items, re-run on the
shipped weights, must give the committed results.
"""

from __future__ import annotations

import functools
import os
import random
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

import bert_core
from bert_core.train.evaluate import (
    CLOZE_LISTS,
    MLM_SETS,
    NSP_SETS,
    cloze_top5,
    markdown,
    mlm_sets,
    nsp_probabilities,
    nsp_sets,
    read_cloze,
    read_items,
    report_from_items,
)
from bert_core.train.trainer import mlm_line_scores

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


# The sample is drawn anew each UTC day: a fixed seed would check the same few percent of the items for ever, the
# date's covers every item in time; the seed is in every failure's message, and this variable replays it.
SAMPLE_SEED = int(os.environ.get("BERT_EXPLORER_SAMPLE_SEED") or datetime.now(UTC).date().toordinal())


@functools.cache
def committed(name: str) -> dict:
    """A bundled model's committed per-item results (read once)."""
    return read_items(name)


@pytest.fixture(scope="module")
def report():
    """The tiny from-scratch model's numbers (from its committed items, which the sample re-run checks)."""
    return report_from_items(committed("bundled"))


@pytest.fixture(scope="module")
def minilm_report():
    """The MiniLM's numbers (from its committed items, which the sample re-run checks)."""
    return report_from_items(committed("bundled-minilm"))


@pytest.mark.parametrize("marker, name", [("heldout", "bundled"), ("minilm", "bundled-minilm")])
def test_the_models_doc_evaluation_is_what_the_committed_items_add_up_to(marker, name):
    assert markdown(report_from_items(committed(name))).strip() == _readme_block(marker).strip()


def _sample(n: int, k: int, rng: random.Random, longest: list[int] = ()) -> list[int]:
    """`k` random indices of `n` (all of them when k >= n), with `longest` (lines a length bug would hit) added."""
    return sorted(set(rng.sample(range(n), min(k, n))) | set(longest))


@pytest.mark.parametrize("name", ["bundled", "bundled-minilm"])
def test_a_seeded_sample_of_the_committed_items_matches_a_rerun(name):
    """About 3% of the items, each run on the shipped weights as the evaluation runs it, give the committed result.

    Every line's masked-token count is checked (the draw is made for every line anyway); the model runs on a random
    sample and each set's longest lines. Tolerances: a line's summed loss within 1e-3, P(IsNext) within 1e-4 (a
    batch's padding moves them by about 1e-6); the cloze guesses exact; top-1 / top-5 hits exact but for up to two
    masked tokens a set (the 0.05 points of about 4,000 masked tokens the aggregate check allowed: an argmax tie
    between CPUs)."""
    want = committed(name)
    m = bert_core.load_model(name)
    rng = random.Random(f"{SAMPLE_SEED}-{name}")
    where = f"{name}, sample seed {SAMPLE_SEED} (BERT_EXPLORER_SAMPLE_SEED={SAMPLE_SEED} replays it)"
    for set_name, lines in mlm_sets().items():
        kept = want[set_name]
        by_size = sorted(range(len(kept)), key=lambda i: -kept[i][0])
        only = _sample(len(kept), 32, rng, by_size[:3])
        got = mlm_line_scores(m.model, m.tokenizer, lines, seed=want["seed"], only=only)
        assert [g[0] for g in got] == [c[0] for c in kept], f"{set_name}: the masked draw moved ({where})"
        flips = 0
        for i in only:
            assert got[i][1] == pytest.approx(kept[i][1], abs=1e-3), f"{set_name} line {i} loss ({where})"
            flips += abs(got[i][2] - kept[i][2]) + abs(got[i][3] - kept[i][3])
        assert flips <= 2, f"{set_name}: {flips} top-k hits differ ({where})"
    for set_name, path in CLOZE_LISTS.items():
        rows = read_cloze(path)
        assert len(want[set_name]) == len(rows)
        for i in _sample(len(rows), 6, rng):
            assert cloze_top5(m, rows[i][0]) == want[set_name][i], f"{set_name} sentence {i} ({where})"
    for set_name, pairs in nsp_sets(want["seed"]).items():
        assert len(want[set_name]) == len(pairs)
        size = [len(a) + len(b) for a, b, _ in pairs]
        only = _sample(len(pairs), 48 if set_name == "nsp" else 12, rng,
                       sorted(range(len(pairs)), key=lambda i: -size[i])[:3])
        got = nsp_probabilities(m, [pairs[i][:2] for i in only]).tolist()
        assert got == pytest.approx([want[set_name][i] for i in only], abs=1e-4), f"{set_name} ({where})"
    assert set(want) == {"seed", *MLM_SETS, *CLOZE_LISTS, *NSP_SETS}


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
