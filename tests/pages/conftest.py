"""Fixtures for the page tests (AppTest)."""

from __future__ import annotations

import pytest
from support.family import write_family_checkpoint


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    """A folder of tiny random checkpoints, one per family (roberta, distilbert, albert), under one local root."""
    root = tmp_path_factory.mktemp("families")
    for fam in ("roberta", "distilbert", "albert"):
        write_family_checkpoint(root / fam, fam, "mlm")
    return root
