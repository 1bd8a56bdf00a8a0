"""The 15% / 80-10-10 draws: rates within 3 sigma over 100k+ draws, specials untouched, seeded."""

from __future__ import annotations

import math

import torch

from bert_core import KEPT, MASKED, NOT_SELECTED, RANDOM, mask_tokens, masking_statistics

V, MASK_ID, SPECIALS = 1000, 4, [0, 1, 2, 3, 4]


def batch(n_rows=2000, T=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (n_rows, T), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP]
    special = torch.zeros_like(ids)
    special[:, 0] = special[:, -1] = 1
    return ids, special


def within_3_sigma(k, n, p):
    sigma = math.sqrt(n * p * (1 - p))
    return abs(k - n * p) <= 3 * sigma, (k, n * p, sigma)


def test_rates_within_three_sigma():
    ids, special = batch()  # 2000 x 62 = 124,000 eligible positions
    d = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(1),
                    special_ids=SPECIALS)
    eligible = int((special == 0).sum())
    assert eligible >= 100_000
    sel = d.outcome != NOT_SELECTED
    n_sel = int(sel.sum())
    ok, info = within_3_sigma(n_sel, eligible, 0.15)
    assert ok, info
    for code, p in ((MASKED, 0.8), (RANDOM, 0.1), (KEPT, 0.1)):
        ok, info = within_3_sigma(int((d.outcome == code).sum()), n_sel, p)
        assert ok, (code, info)
    stats = masking_statistics(d.outcome, special)
    assert stats["selected"] == n_sel and abs(stats["selected_rate"] - 0.15) < 0.01


def test_outcomes_are_consistent_with_ids_and_labels():
    ids, special = batch(500)
    d = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(2),
                    special_ids=SPECIALS)
    sel = d.outcome != NOT_SELECTED
    assert torch.equal(d.labels[sel], ids[sel]) and bool((d.labels[~sel] == -100).all())
    assert bool((d.input_ids[d.outcome == MASKED] == MASK_ID).all())
    assert torch.equal(d.input_ids[d.outcome == KEPT], ids[d.outcome == KEPT])
    assert torch.equal(d.input_ids[~sel], ids[~sel])
    rnd = d.input_ids[d.outcome == RANDOM]
    assert rnd.numel() > 0 and not any(int(i) in SPECIALS for i in rnd)  # ordinary vocabulary only
    assert bool((special.bool() <= ~sel).all())  # specials never selected
    assert torch.equal(d.input_ids[special.bool()], ids[special.bool()])


def test_specials_never_selected_even_at_probability_one():
    ids, special = batch(10)
    d = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(0),
                    mlm_probability=1.0)
    assert bool((d.outcome[special.bool()] == NOT_SELECTED).all())
    assert bool((d.outcome[~special.bool()] != NOT_SELECTED).all())


def test_same_seed_same_draw_and_global_seed_untouched():
    ids, special = batch(50)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(7))
    after = torch.rand(1)
    b = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(7))
    c = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(8))
    assert torch.equal(before, after)  # the global RNG did not move
    assert torch.equal(a.input_ids, b.input_ids) and torch.equal(a.outcome, b.outcome)
    assert not torch.equal(a.outcome, c.outcome)


def test_whole_word_masking_selects_all_pieces_of_a_word():
    # [CLS] w0 w0 w1 w2 w2 w2 [SEP], repeated
    word_ids = torch.tensor([-1, 0, 0, 1, 2, 2, 2, -1]).repeat(3000, 1)
    ids = torch.randint(5, V, word_ids.shape, generator=torch.Generator().manual_seed(0))
    special = (word_ids < 0).long()
    d = mask_tokens(ids, special, vocab_size=V, mask_token_id=MASK_ID, generator=torch.Generator().manual_seed(3),
                    word_ids=word_ids, whole_word=True)
    sel = d.outcome != NOT_SELECTED
    assert torch.equal(sel[:, 1], sel[:, 2]) and torch.equal(sel[:, 4], sel[:, 5]) and torch.equal(sel[:, 5], sel[:, 6])
    ok, info = within_3_sigma(int(sel[:, 3].sum()), 3000, 0.15)  # words are picked at 15%
    assert ok, info
    assert not bool(sel[:, 0].any() or sel[:, -1].any())


def test_one_dimensional_input_keeps_its_shape():
    ids = torch.tensor([2, 10, 11, 12, 3])
    d = mask_tokens(ids, torch.tensor([1, 0, 0, 0, 1]), vocab_size=V, mask_token_id=MASK_ID,
                    generator=torch.Generator().manual_seed(0), mlm_probability=1.0)
    assert d.input_ids.shape == d.labels.shape == d.outcome.shape == (5,)
