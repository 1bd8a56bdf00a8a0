"""What each objective's prediction sees and where its loss is computed, on one text."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core
from bert_core.inspect.objectives_view import HIDDEN, TARGET, VISIBLE, loss_targets, visibility


def test_visibility_example_and_rules():
    v = visibility(4, 2)
    assert v["mlm"].tolist() == [1, 1, 2, 1] and v["clm"].tolist() == [1, 1, 2, 0] and v["rtd"].tolist() == [1, 1, 2, 1]
    for T in (1, 5, 9):
        for i in range(T):
            v = visibility(T, i)
            assert (v["clm"][i + 1:] == HIDDEN).all() and (v["clm"][:i] == VISIBLE).all()
            assert (v["mlm"] != HIDDEN).all() and v["mlm"][i] == v["rtd"][i] == TARGET
    with pytest.raises(bert_core.BertCoreError):
        visibility(3, 3)


def test_loss_targets_follow_one_seeded_masking_draw(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["mlm"][0])
    text = "the cat sat on the mat and the dog sat on the mat and she went to the store"
    lt = loss_targets(m, text, seed=4, mlm_probability=0.5)
    enc = m.tokenizer.encode(text)
    draw = bert_core.mask_tokens(torch.as_tensor(enc.input_ids), torch.as_tensor(enc.special_tokens_mask),
                                 vocab_size=m.config.vocab_size, mask_token_id=m.tokenizer.mask_token_id,
                                 generator=torch.Generator().manual_seed(4), mlm_probability=0.5,
                                 special_ids=m.tokenizer.all_special_ids)
    assert lt.tokens == enc.tokens
    assert (lt.mlm == (draw.labels != -100).numpy()).all() and lt.mlm.any()
    assert not lt.mlm[0] and not lt.mlm[-1]  # [CLS] and [SEP] are never selected
    assert lt.clm_target == enc.tokens[1:] + [None]
    assert lt.rtd.all()
    s = lt.shares()
    assert s["rtd"] == 1.0 and s["clm"] == pytest.approx(1 - 1 / len(enc.tokens))
    assert s["mlm"] == pytest.approx(float(np.mean(lt.mlm)))
    with pytest.raises(bert_core.BertCoreError, match="empty"):
        loss_targets(m, "  ")
