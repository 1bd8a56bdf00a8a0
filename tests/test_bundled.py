"""The bundled offline model: loads fast with no network, and the README's numbers are real."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

import bert_core
from bert_core.evaluate import heldout_metrics

README = Path(__file__).resolve().parent.parent / "README.md"


def test_bundled_model_loads_and_predicts():
    t0 = time.perf_counter()
    m = bert_core.load_model()
    elapsed = time.perf_counter() - t0
    assert m.source == "bundled" and m.has_mlm and not m.has_nsp
    assert elapsed < 10  # the README says ~0.15 s; this only guards against pathologies
    size = sum(f.stat().st_size for f in bert_core.BUNDLED_DIR.iterdir())
    assert size <= 25 * 2**20
    t = bert_core.analyze(m, "she [MASK] the letter to her mother.")
    assert len(t.predictions) == 1


def test_readme_heldout_numbers_match_a_rerun():
    block = README.read_text().split("<!-- heldout:start -->")[1].split("<!-- heldout:end -->")[0]
    row = [r for r in block.strip().splitlines() if re.match(r"\| [0-9]", r)][0]
    loss, ppl, top1, top5 = (float(x.strip().rstrip("%")) for x in row.strip("|").split("|"))
    got = heldout_metrics()
    assert got["loss"] == pytest.approx(loss, abs=5e-5)
    assert got["perplexity"] == pytest.approx(ppl, abs=5e-3)
    assert 100 * got["top1"] == pytest.approx(top1, abs=5e-3)
    assert 100 * got["top5"] == pytest.approx(top5, abs=5e-3)
    assert got["top5"] >= 0.40
