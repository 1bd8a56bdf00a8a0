"""The model every session shares stays read-only: training, masking and predictions leave its weights alone."""

from __future__ import annotations

import torch
from support.apptest import assert_ok, open_page

from ui.state import shared_model


def test_pages_and_training_never_change_the_shared_model():
    at = open_page("tokenization")  # loads the shared bundled model into this process's resource cache
    assert_ok(at)
    m = shared_model("bundled")
    before = {k: v.clone() for k, v in m.model.state_dict().items()}
    assert not m.model.training  # eval mode: no dropout in what the pages show
    assert not any(p.requires_grad for p in m.model.parameters())  # no optimiser could step it

    at.switch_page("views/training.py").run()
    at.selectbox(key="train_preset").select("tiny (2 layers, 64 wide)")
    at.button(key="train_ten").click().run()  # a real run, on the bundled model's tokenizer
    assert_ok(at)
    assert at.session_state["train_session"].step == 10
    at.button(key="train_use").click().run()  # a snapshot of the user's model, not of the shared one
    for page in ("masking", "predictions", "attention", "embeddings"):
        at.switch_page(f"views/{page}.py").run()
        assert_ok(at)

    assert shared_model("bundled") is m  # still the one shared object
    after = m.model.state_dict()
    assert before.keys() == after.keys()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed == [], changed
    assert not m.model.training
