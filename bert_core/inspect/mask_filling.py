"""Several [MASK]s at once, and how natural a sentence is to BERT (pseudo-log-likelihood).

One [MASK] is one word piece, predicted from both sides. With two or more, the order matters:
HF's fill-mask pipeline guesses each on its own (`independent`), so two masks that depend on each
other ("New [MASK] [MASK]") can get answers that do not fit together. Filling one at a time and
running the model again lets the later guesses see the earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.tokenization import Encoding
from .attribution import batched_positions, encoder_rows, top_candidate
from .masking_view import fill_mask

FILL_STRATEGIES = ("independent", "left_to_right", "confident_first")


@dataclass
class FillResult:
    """The [MASK]s of one input filled by one strategy."""

    strategy: str
    steps: list[tuple[int, str, float]]  # (position, token, probability when chosen), in fill order
    text: str  # sentence A with its [MASK]s filled
    text_pair: str | None  # sentence B filled (None for one sentence)
    tokens: list[str]  # the input's tokens after filling
    passes: int  # forward passes run
    notes: list[str] = field(default_factory=list)


def _require_mlm(m: LoadedModel) -> None:
    if not m.has_mlm:
        raise BertCoreError("this checkpoint has no masked-language-model head, so it cannot fill a [MASK]")


def fill_masks(m: LoadedModel, text: str, text_pair: str | None = None, strategy: str = "independent") -> FillResult:
    """Fill every [MASK] with a top-1 candidate (never a special token), in the order a strategy picks.

    independent:     one pass; every [MASK] gets its own top-1, none sees the others' answers.
    left_to_right:   fill the leftmost [MASK] with its top-1, run again, repeat.
    confident_first: fill the [MASK] whose top-1 is most probable, run again, repeat.
    Example: "the [MASK] [MASK] sat ." -> steps [(2, "big", 0.31), (3, "cat", 0.62)] (left_to_right).
    """
    if strategy not in FILL_STRATEGIES:
        raise BertCoreError(f"strategy must be one of {', '.join(FILL_STRATEGIES)}, got {strategy!r}")
    _require_mlm(m)
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids.copy())[None]  # (1, T): filled in place as we go
    types = torch.from_numpy(enc.token_type_ids)[None]  # (1, T)
    t = ids.shape[1]
    mask_id = m.tokenizer.mask_token_id
    remaining = np.flatnonzero(enc.input_ids == mask_id).tolist()
    notes = [enc.truncation.message] if enc.truncation is not None else []
    if not remaining:
        notes.append("There is no [MASK] in the text: nothing to fill.")
    steps: list[tuple[int, str, float]] = []
    passes = 0
    if strategy == "independent" and remaining:
        p, best = _top1(m, ids, types, remaining)
        passes = 1
        steps = [(q, m.tokenizer.id_to_token(b), pr) for q, b, pr in zip(remaining, best, p)]
        remaining = []
    # One pass per [MASK]: cap the passes as the batched passes are capped (MAX_WORK_TOKENS).
    limit = len(batched_positions(remaining, t))
    if limit < len(remaining):
        notes.append(f"Filled {limit} of the {len(remaining)} [MASK]s one at a time (one model pass each, "
                     f"{t} tokens per pass); the rest stay [MASK].")
    while remaining and len(steps) < limit:
        p, best = _top1(m, ids, types, remaining)
        passes += 1
        k = 0 if strategy == "left_to_right" else int(np.argmax(p))  # ties: the leftmost
        pos = remaining.pop(k)
        ids[0, pos] = best[k]
        steps.append((pos, m.tokenizer.id_to_token(best[k]), p[k]))
    filled_a, filled_b = _fill_text(enc, text, text_pair, steps)
    tokens = list(enc.tokens)
    for pos, tok, _ in steps:
        tokens[pos] = tok
    return FillResult(strategy, steps, filled_a, filled_b, tokens, passes, notes)


def _top1(m: LoadedModel, ids: torch.Tensor, types: torch.Tensor, positions: list[int]) -> tuple[list, list]:
    """One pass: at each position, the most probable non-special token and its probability."""
    with torch.inference_mode():
        h = m.model(ids, types)[0, positions]  # (P, H)
        probs = m.model.mlm_logits(h).softmax(-1)  # (P, V)
        best = top_candidate(m, probs)  # (P,)
        p = probs.gather(-1, best[:, None])[:, 0]
    return p.tolist(), best.tolist()


def _fill_text(enc: Encoding, text: str, text_pair: str | None, steps) -> tuple[str, str | None]:
    """Write the chosen tokens into the sentences, rightmost first so earlier offsets stay valid."""
    out = [text, text_pair]
    for pos, tok, _ in sorted(steps, key=lambda s: -enc.offsets[s[0]][0]):
        seq = enc.sequence_ids[pos]
        out[seq] = fill_mask(out[seq], enc.offsets[pos], tok)
    return out[0], out[1]


@dataclass
class PseudoLogLikelihood:
    """How natural BERT finds a text: each token's log-probability with only that token masked."""

    text: str
    text_pair: str | None
    per_token: list[tuple[str, float]]  # (token, log p(token_i | text with position i masked)), nats
    positions: list[int]  # the token position of each entry of per_token
    total: float  # sum of per_token
    n_scorable: int  # tokens that could be scored (all but special tokens and typed [MASK]s)
    notes: list[str] = field(default_factory=list)

    @property
    def capped(self) -> bool:
        """True when the batched pass scored only some of the tokens (MAX_WORK_TOKENS)."""
        return len(self.per_token) < self.n_scorable

    @property
    def mean(self) -> float:
        """Total / tokens scored: compares sentences of different lengths more fairly."""
        return self.total / len(self.per_token) if self.per_token else float("nan")


def pseudo_log_likelihood(m: LoadedModel, text: str, text_pair: str | None = None) -> PseudoLogLikelihood:
    """PLL(S) = sum_i log p(w_i | S with w_i replaced by [MASK]) (Salazar et al. 2020), in one batched pass.

    Row i of the batch is the input with position i masked; special tokens and typed [MASK]s are not
    scored. Higher (closer to 0) is more natural to the model. A word of several pieces is scored
    piece by piece, each with the others visible, which makes long words look easy.
    Example: "the cat sat ." -> per_token [("the", -1.2), ("cat", -3.4), ("sat", -2.8), (".", -0.1)]
    """
    _require_mlm(m)
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    t = len(enc)
    special_ids = set(m.tokenizer.all_special_ids)
    scorable = [i for i in range(t) if not enc.special_tokens_mask[i] and int(enc.input_ids[i]) not in special_ids]
    notes = [enc.truncation.message] if enc.truncation is not None else []
    skipped = [enc.tokens[i] for i in range(t) if not enc.special_tokens_mask[i] and i not in scorable]
    if skipped:
        notes.append(f"Not scored: {len(skipped)} special token{'s' * (len(skipped) != 1)} typed in the text "
                     f"({' '.join(dict.fromkeys(skipped))}).")
    positions = batched_positions(scorable, t)
    if len(positions) < len(scorable):
        notes.append(f"Scored the first {len(positions)} of {len(scorable)} tokens (one model pass of {t} tokens "
                     "per token would take too long); the total covers those only.")
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]
    per_token: list[tuple[str, float]] = []
    if positions:
        pos = torch.tensor(positions, dtype=torch.long)
        batch = ids.repeat(len(positions), 1)  # (n, T): row r masks position positions[r]
        batch[torch.arange(len(positions)), pos] = m.tokenizer.mask_token_id
        h = encoder_rows(m, batch, types.expand_as(batch), pos)  # (n, H)
        with torch.inference_mode():
            logp = m.model.mlm_logits(h).log_softmax(-1)  # (n, V)
            lp = logp.gather(-1, ids[0, pos][:, None])[:, 0].tolist()
        per_token = [(enc.tokens[i], float(v)) for i, v in zip(positions, lp)]
    total = float(sum(v for _, v in per_token))
    return PseudoLogLikelihood(text, text_pair, per_token, positions, total, len(scorable), notes)


__all__ = ["FILL_STRATEGIES", "FillResult", "PseudoLogLikelihood", "fill_masks", "pseudo_log_likelihood"]
