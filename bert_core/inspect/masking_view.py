"""Data for the Masking and Predictions pages: one seeded masking draw token by token, the
statistics of many draws, and the small text edits behind "fill this [MASK]" / "mask this word".

No streamlit here: every function takes a `LoadedModel` and plain text (or a `Trace`) and returns
arrays, lists of row dicts or strings that a page can draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..model.loaded import LoadedModel
from ..objectives.masking import KEPT, MASKED, NOT_SELECTED, RANDOM, mask_tokens, masking_statistics

STATS_CHUNK = 2000  # draws per batch in `masking_stats`: bounds memory at 20k draws x 512 tokens


# ----------------------------------------------------------------------------------------------
# One draw
# ----------------------------------------------------------------------------------------------


def draw_seed(seed: int, draw: int) -> int:
    """The generator seed for draw number `draw` under the sidebar seed (same pair, same draw).

    Mixed with numpy's SeedSequence so nearby pairs (seed 0 draw 1, seed 1 draw 0) give
    unrelated streams. Draw 0 is reserved for the many-draw statistics.
    """
    return int(np.random.SeedSequence([int(seed), int(draw)]).generate_state(1, np.uint64)[0])


def unique_word_ids(word_ids: list[int | None], sequence_ids: list[int | None]) -> np.ndarray:
    """Word ids that are unique across sentences A and B; -1 for [CLS]/[SEP]. (T,)

    The tokenizer numbers words per sentence, so A's word 0 and B's word 0 would be masked
    together under whole-word masking. B's ids are shifted past A's largest.
    Example: word_ids [None, 0, 1, 1, None, 0, 1, None], sequence_ids [None, 0, 0, 0, None, 1, 1, None]
    -> [-1, 0, 1, 1, -1, 2, 3, -1].
    """
    a = [w for w, s in zip(word_ids, sequence_ids) if s == 0 and w is not None]
    shift = (max(a) + 1) if a else 0
    out = [-1 if (w is None or s is None) else w + (shift if s == 1 else 0) for w, s in zip(word_ids, sequence_ids)]
    return np.asarray(out, dtype=np.int64)


@dataclass
class MaskInput:
    """One input prepared for masking: ids, which positions may never be picked, word groups."""

    tokens: list[str]
    input_ids: np.ndarray  # (T,)
    special: np.ndarray  # (T,) bool: [CLS]/[SEP] and any special token typed in the text ([MASK], [UNK])
    segments: list[str]  # "A" / "B" per token: [CLS] and the first [SEP] are in A
    word_ids: np.ndarray  # (T,) unique across A and B, -1 for specials
    truncation_note: str | None


def mask_input(m: LoadedModel, text: str, text_pair: str | None = None) -> MaskInput:
    """Tokenize for masking. Raises `BertCoreError` on empty or too-long text."""
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    # Like Hugging Face's data collator, every special id counts as special, so a [MASK] or [UNK]
    # already in the text is never picked (its label would teach nothing).
    special = enc.special_tokens_mask.astype(bool) | np.isin(enc.input_ids, m.tokenizer.all_special_ids)
    segments = ["AB"[int(t)] for t in enc.token_type_ids]  # the segment embedding each token gets
    return MaskInput(
        tokens=list(enc.tokens),
        input_ids=enc.input_ids,
        special=special,
        segments=segments,
        word_ids=unique_word_ids(enc.word_ids, enc.sequence_ids),
        truncation_note=enc.truncation.message if enc.truncation is not None else None,
    )


@dataclass
class DrawView:
    """One masking draw of one input, token by token. Arrays are (T,)."""

    inp: MaskInput
    corrupted_ids: np.ndarray  # what the model reads
    corrupted_tokens: list[str]
    labels: np.ndarray  # original id where selected, -100 elsewhere
    outcome: np.ndarray  # NOT_SELECTED / MASKED / RANDOM / KEPT
    seed: int
    draw: int
    mlm_probability: float
    whole_word: bool

    @property
    def kinds(self) -> list[str]:
        """Per token: "special", "not selected", "mask", "random" or "kept" (for colours and tables)."""
        names = {NOT_SELECTED: "not selected", MASKED: "mask", RANDOM: "random", KEPT: "kept"}
        return ["special" if s else names[int(o)] for s, o in zip(self.inp.special, self.outcome)]

    @property
    def n_selected(self) -> int:
        return int((self.outcome != NOT_SELECTED).sum())


def _word_ids_for(inp: MaskInput, shape: tuple[int, ...]) -> torch.Tensor:
    """Word ids broadcast to `shape` ((T,) or (N, T)); specials get -1 so they are never grouped."""
    w = torch.from_numpy(np.where(inp.special, -1, inp.word_ids))
    return w.expand(shape).contiguous()


def masking_draw(m: LoadedModel, text: str, text_pair: str | None = None, *, seed: int, draw: int,
                 mlm_probability: float = 0.15, whole_word: bool = False) -> DrawView:
    """Draw number `draw` of BERT's 15% / 80-10-10 corruption of the input, from `draw_seed(seed, draw)`."""
    inp = mask_input(m, text, text_pair)
    ids = torch.from_numpy(inp.input_ids)
    g = torch.Generator().manual_seed(draw_seed(seed, draw))
    d = mask_tokens(ids, torch.from_numpy(inp.special), vocab_size=m.config.vocab_size,
                    mask_token_id=m.tokenizer.mask_token_id, special_ids=m.tokenizer.all_special_ids,
                    generator=g, mlm_probability=mlm_probability,
                    word_ids=_word_ids_for(inp, ids.shape) if whole_word else None, whole_word=whole_word)
    corrupted = d.input_ids.numpy()
    return DrawView(inp, corrupted, m.tokenizer.convert_ids_to_tokens(corrupted), d.labels.numpy(),
                    d.outcome.numpy(), int(seed), int(draw), float(mlm_probability), bool(whole_word))


def draw_loss(m: LoadedModel, view: DrawView) -> tuple[np.ndarray, float | None]:
    """The model's p(original token) at each selected position, and the MLM loss of this draw.

    loss = mean over selected positions i of -log p(x_i | corrupted input): the cross-entropy
    with labels = original id where selected and -100 (ignored) elsewhere.
    Returns (p (T,) with NaN where not selected, loss or None when nothing was selected / no MLM head).
    """
    p = np.full(len(view.labels), np.nan)
    sel = np.flatnonzero(view.labels != -100)
    if not m.has_mlm or len(sel) == 0:
        return p, None
    ids = torch.from_numpy(view.corrupted_ids).unsqueeze(0)  # (1, T)
    types = torch.tensor([[0 if s != "B" else 1 for s in view.inp.segments]])  # (1, T)
    with torch.inference_mode():
        h = m.model(ids, types)[0, sel]  # (S, H): only the selected rows go through the vocabulary
        logp = m.model.mlm_logits(h).log_softmax(-1)  # (S, V)
        target = torch.from_numpy(view.labels[sel])
        lp = logp.gather(1, target[:, None])[:, 0]  # (S,)
    p[sel] = lp.exp().numpy()
    return p, float(-lp.mean())


def draw_rows(view: DrawView, p_original: np.ndarray | None = None) -> list[dict]:
    """The draw as table rows: token, selected?, outcome, what the model reads, the loss label."""
    rows = []
    for i, (tok, kind) in enumerate(zip(view.inp.tokens, view.kinds)):
        outcome = {"mask": "[MASK]", "random": f"random → {view.corrupted_tokens[i]}"}.get(kind, kind)
        label = int(view.labels[i])
        row = {
            "position": i,
            "segment": view.inp.segments[i],
            "token": tok,
            "word id": int(view.inp.word_ids[i]),
            "selected": kind in ("mask", "random", "kept"),
            "outcome": outcome,
            "model reads": view.corrupted_tokens[i],
            "label id": label,
            "label token": tok if label != -100 else "",
        }
        if p_original is not None:
            row["p(original)"] = None if np.isnan(p_original[i]) else float(f"{p_original[i]:.3g}")  # 3 digits
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------------------------
# Many draws
# ----------------------------------------------------------------------------------------------


@dataclass
class MaskStats:
    """N draws of one input: observed rates against BERT's expected ones, and per-position frequency."""

    names: list[str]  # the four rates compared
    observed: np.ndarray  # (4,)
    expected: np.ndarray  # (4,)
    sigma: np.ndarray  # (4,) one standard deviation of the observed rate if the draws are right
    counts: dict[str, float]  # masking_statistics(...) of all draws
    tokens: list[str]
    special: np.ndarray  # (T,)
    position_rate: np.ndarray  # (T,) fraction of draws in which each position was selected
    position_sigma: float  # sigma of one position's rate: sqrt(p (1 - p) / N)
    n_eligible: int  # ordinary tokens in the input (each draw may select any of them)
    n_draws: int
    mlm_probability: float
    whole_word: bool


def masking_stats(m: LoadedModel, text: str, text_pair: str | None = None, *, seed: int, n_draws: int = 1000,
                  mlm_probability: float = 0.15, whole_word: bool = False) -> MaskStats:
    """Draw the masking `n_draws` times (generator `draw_seed(seed, 0)`) and compare with 15% / 80-10-10.

    Sigmas: the selected rate is a sum of independent coin flips, one per eligible word and draw,
    each adding that word's piece count n_w: var = p (1 - p) N sum(n_w^2) / (N sum(n_w))^2 (all
    n_w = 1 without whole-word masking). Given S selected positions, each [MASK] / random / kept
    share q is binomial: sigma = sqrt(q (1 - q) / S).
    """
    if not 1 <= int(n_draws) <= 100_000:
        raise ValueError(f"n_draws must be between 1 and 100000, got {n_draws}")
    inp = mask_input(m, text, text_pair)
    special = torch.from_numpy(inp.special)
    g = torch.Generator().manual_seed(draw_seed(seed, 0))
    chunks, left = [], int(n_draws)
    while left > 0:
        n = min(left, STATS_CHUNK)
        ids = torch.from_numpy(inp.input_ids).expand(n, -1)  # (n, T)
        d = mask_tokens(ids, special.expand(n, -1), vocab_size=m.config.vocab_size,
                        mask_token_id=m.tokenizer.mask_token_id, special_ids=m.tokenizer.all_special_ids,
                        generator=g, mlm_probability=mlm_probability,
                        word_ids=_word_ids_for(inp, ids.shape) if whole_word else None, whole_word=whole_word)
        chunks.append(d.outcome.to(torch.int8))
        left -= n
    outcomes = torch.cat(chunks)  # (N, T)
    st = masking_statistics(outcomes, special)

    p, N = float(mlm_probability), int(n_draws)
    eligible = ~inp.special
    if whole_word:
        _, sizes = np.unique(inp.word_ids[eligible], return_counts=True)
    else:
        sizes = np.ones(int(eligible.sum()))
    total = sizes.sum()
    sel_sigma = math.sqrt(p * (1 - p) * N * float((sizes**2).sum())) / (N * total) if total else 0.0
    S = st["selected"]
    expected = np.array([p, 0.8, 0.1, 0.1])
    split_sigma = np.sqrt(expected[1:] * (1 - expected[1:]) / S) if S else np.zeros(3)
    return MaskStats(
        names=["selected (of eligible)", "[MASK] (of selected)", "random (of selected)", "kept (of selected)"],
        observed=np.array([st["selected_rate"], st["mask_rate"], st["random_rate"], st["kept_rate"]]),
        expected=expected,
        sigma=np.concatenate([[sel_sigma], split_sigma]),
        counts=st,
        tokens=inp.tokens,
        special=inp.special,
        position_rate=(outcomes != NOT_SELECTED).float().mean(0).numpy(),  # (T,)
        position_sigma=math.sqrt(p * (1 - p) / N),
        n_eligible=int(eligible.sum()),
        n_draws=N,
        mlm_probability=p,
        whole_word=bool(whole_word),
    )


def stats_rows(s: MaskStats) -> list[dict]:
    """The compared rates as table rows, with whether each is within 3 sigma of the expected value."""
    return [{"rate": n, "observed": round(float(o), 4), "expected": float(e), "sigma": round(float(sd), 5),
             "within 3 sigma": bool(abs(o - e) <= 3 * sd + 1e-12)}
            for n, o, e, sd in zip(s.names, s.observed, s.expected, s.sigma)]


# ----------------------------------------------------------------------------------------------
# Predictions: fill a [MASK], mask a word
# ----------------------------------------------------------------------------------------------


def fill_mask(text: str, span: tuple[int, int], candidate: str) -> str:
    """Replace `text[start:end]` (a [MASK]) with `candidate`; a `##piece` glues to the word before it.

    Example: "The cat [MASK] on the [MASK].", span (22, 28), "mat" -> "The cat [MASK] on the mat."
    Example: "The cat [MASK] .", span (8, 14), "##s" -> "The cats ."
    """
    start, end = span
    before, after = text[:start], text[end:]
    if candidate.startswith("##") and len(candidate) > 2:
        candidate = candidate[2:]
        before = before.rstrip()  # a continuation piece has no space before it
    return before + candidate + after


def fill_at(trace, position: int, candidate: str) -> tuple[str, str]:
    """Fill the [MASK] at token `position` of a `Trace`: returns ("text" or "pair", the edited sentence)."""
    span = trace.offsets[position]
    seq = trace.sequence_ids[position]
    if span is None or seq is None:
        raise ValueError(f"position {position} is a special token, not a [MASK] in the text")
    if seq == 1:
        return "pair", fill_mask(trace.text_pair, span, candidate)
    return "text", fill_mask(trace.text, span, candidate)


@dataclass
class Word:
    """One word of a sentence as the tokenizer split it."""

    text: str  # as typed (original case and accents)
    span: tuple[int, int]  # characters in the sentence
    positions: list[int]  # its token positions in the trace
    pieces: list[str]  # its word pieces, e.g. ["play", "##ing"]


def words_of(trace, sequence: int = 0) -> list[Word]:
    """The words of sentence A (`sequence` 0) or B (1) of a `Trace`, in order, with their pieces.

    Example: "The cat playing." -> the (0, 3) [the]; cat (4, 7) [cat]; playing (8, 15) [play, ##ing]; . (15, 16)
    """
    text = trace.text if sequence == 0 else trace.text_pair
    groups: dict[int, list[int]] = {}
    for i, (s, w) in enumerate(zip(trace.sequence_ids, trace.word_ids)):
        if s == sequence and w is not None and trace.offsets[i] is not None:
            groups.setdefault(w, []).append(i)
    out = []
    for pos in groups.values():
        span = (trace.offsets[pos[0]][0], trace.offsets[pos[-1]][1])
        out.append(Word(text[span[0]:span[1]], span, pos, [trace.tokens[i] for i in pos]))
    return out


def mask_word(text: str, span: tuple[int, int], mask_token: str = "[MASK]") -> str:
    """Replace the word at `span` with a single [MASK] (one mask, however many pieces the word had).

    Example: "The cat sat.", span (4, 7) -> "The [MASK] sat."
    """
    return text[: span[0]] + mask_token + text[span[1]:]


def rank_of(candidates: list[tuple[str, float]], pieces: list[str]) -> tuple[str, int | None, float | None]:
    """Where the original word ranks among a [MASK]'s top-k candidates.

    One [MASK] predicts one word piece, so a word of several pieces is looked up by its first piece.
    Returns (the piece looked for, 1-based rank or None when outside the top-k, its probability or None).
    Example: [("sat", 0.5), ("lay", 0.2)], ["lay"] -> ("lay", 2, 0.2)
    """
    target = pieces[0]
    for r, (tok, p) in enumerate(candidates, start=1):
        if tok == target:
            return target, r, p
    return target, None, None


def mask_context(tokens: list[str], position: int, width: int = 6) -> str:
    """The tokens around `position` as readable text, with the [MASK] shown as ___ (pieces glued).

    Example: [CLS] the cat [MASK] on the mat . [SEP], position 3 -> "the cat ___ on the mat ."
    """
    lo, hi = max(position - width, 0), min(position + width + 1, len(tokens))
    out = "… " if lo > 1 else ""
    for i in range(lo, hi):
        t = tokens[i]
        if t in ("[CLS]", "[SEP]") and i in (0, len(tokens) - 1):
            continue
        t = "___" if i == position else t
        if t.startswith("##") and len(t) > 2:
            out = out.rstrip() + t[2:] + " "
        else:
            out += t + " "
    return out.rstrip() + (" …" if hi < len(tokens) - 1 else "")


def default_word(words: list[Word]) -> int:
    """Index of the word to offer first for masking: the last one with a letter or digit (often the noun).

    Example: the cat sat . -> 2 ("sat")
    """
    return next((i for i in range(len(words) - 1, -1, -1) if any(c.isalnum() for c in words[i].text)), 0)
