"""BERT's pre-training corruption: pick 15% of tokens; of those 80% -> [MASK], 10% -> random, 10% kept.

Every draw comes from a `torch.Generator` the caller passes in, never the global seed: sessions
share one process, and one user's draw must not move another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3
OUTCOME_NAMES = {NOT_SELECTED: "not selected", MASKED: "[MASK]", RANDOM: "random", KEPT: "kept"}


@dataclass
class MaskingDraw:
    """One draw. Shapes match the input ids: (T,) or (B, T)."""

    input_ids: torch.Tensor  # corrupted ids, what the model reads
    labels: torch.Tensor  # original id where selected, -100 elsewhere (ignored by the loss)
    outcome: torch.Tensor  # NOT_SELECTED / MASKED / RANDOM / KEPT per position


def mask_tokens(
    input_ids: torch.Tensor,
    special_tokens_mask: torch.Tensor,
    *,
    vocab_size: int,
    mask_token_id: int,
    generator: torch.Generator,
    mlm_probability: float = 0.15,
    mask_fraction: float = 0.8,
    random_fraction: float = 0.1,
    special_ids=None,
    word_ids: torch.Tensor | None = None,
    whole_word: bool = False,
) -> MaskingDraw:
    """Draw BERT's masking for `input_ids` (positions where `special_tokens_mask` is 1 never change).

    Each ordinary position is selected with probability `mlm_probability`. A selected position
    becomes [MASK] with probability 0.8, a random ordinary token with 0.1, and stays itself with
    0.1. `labels` keeps the original id at selected positions so the loss is taken only there.
    Random tokens come from the vocabulary minus `special_ids` (and [MASK]); a random draw may
    by chance equal the original token, as in BERT.

    With `whole_word`, selection is per word: `word_ids` (same shape, -1 for specials/padding)
    groups the pieces of a word, all selected or none; each selected piece then gets its own
    80/10/10 draw, as in Google's whole-word-masking release.

    Example: ids [CLS] the cat sat [SEP], one draw might select "cat" -> [CLS] the [MASK] sat [SEP],
    labels [-100, -100, id(cat), -100, -100], outcome [0, 0, 1, 0, 0].
    """
    if not 0.0 <= mlm_probability <= 1.0:
        raise ValueError(f"mlm_probability must be in [0, 1], got {mlm_probability}")
    if mask_fraction < 0 or random_fraction < 0 or mask_fraction + random_fraction > 1:
        raise ValueError("mask_fraction and random_fraction must be >= 0 and sum to at most 1")
    ids = torch.as_tensor(input_ids, dtype=torch.long)
    special = torch.as_tensor(special_tokens_mask).to(torch.bool)
    if special.shape != ids.shape:
        raise ValueError(f"special_tokens_mask shape {tuple(special.shape)} != ids {tuple(ids.shape)}")
    batched = ids.dim() == 2
    if not batched:
        ids, special = ids.unsqueeze(0), special.unsqueeze(0)  # (1, T)

    if whole_word:
        if word_ids is None:
            raise ValueError("whole_word masking needs word_ids")
        w = torch.as_tensor(word_ids, dtype=torch.long).reshape(ids.shape)  # (B, T)
        n_words = int(w.max().item()) + 1 if w.numel() else 0
        word_pick = torch.rand((ids.shape[0], max(n_words, 1)), generator=generator) < mlm_probability
        selected = torch.gather(word_pick, 1, w.clamp(min=0)) & (w >= 0)
    else:
        selected = torch.rand(ids.shape, generator=generator) < mlm_probability  # (B, T)
    selected &= ~special

    # One uniform number per position decides [MASK] / random / kept: u < 0.8, < 0.9, else.
    u = torch.rand(ids.shape, generator=generator)
    to_mask = selected & (u < mask_fraction)
    to_random = selected & (u >= mask_fraction) & (u < mask_fraction + random_fraction)

    excluded = set(int(i) for i in (special_ids if special_ids is not None else []))
    excluded.add(int(mask_token_id))
    excluded.update(int(i) for i in ids[special].unique().tolist())
    allowed = _ordinary_ids(vocab_size, tuple(sorted(excluded)))
    if len(allowed) == 0:
        raise ValueError("the vocabulary has no ordinary tokens to draw random replacements from")
    pick = torch.randint(len(allowed), ids.shape, generator=generator)
    random_ids = allowed[pick]  # (B, T): ordinary tokens only

    corrupted = torch.where(to_mask, torch.full_like(ids, mask_token_id), ids)
    corrupted = torch.where(to_random, random_ids, corrupted)
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    outcome = torch.full_like(ids, NOT_SELECTED)
    outcome[selected] = KEPT
    outcome[to_mask] = MASKED
    outcome[to_random] = RANDOM
    if not batched:
        corrupted, labels, outcome = corrupted[0], labels[0], outcome[0]
    return MaskingDraw(corrupted, labels, outcome)


@lru_cache(maxsize=32)
def _ordinary_ids(vocab_size: int, excluded: tuple[int, ...]) -> torch.Tensor:
    """The ids random replacements may take: the whole vocabulary minus the excluded ones."""
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[[i for i in excluded if 0 <= i < vocab_size]] = False
    return keep.nonzero().squeeze(1)


def masking_statistics(outcomes: torch.Tensor, special_tokens_mask: torch.Tensor) -> dict[str, float]:
    """Rates over many draws: selected / eligible, and the [MASK] / random / kept split of selected.

    `outcomes` is (N, T) for N draws of one sentence (or any stack of draws).
    """
    eligible = ~torch.as_tensor(special_tokens_mask).to(torch.bool).expand_as(outcomes)
    n_eligible = int(eligible.sum())
    sel = outcomes != NOT_SELECTED
    n_sel = int(sel.sum())
    out = {"draws": int(outcomes.shape[0]), "eligible": n_eligible, "selected": n_sel,
           "selected_rate": n_sel / max(n_eligible, 1)}
    for code, name in ((MASKED, "mask"), (RANDOM, "random"), (KEPT, "kept")):
        out[f"{name}_rate"] = int((outcomes == code).sum()) / max(n_sel, 1)
    return out
