"""One text through several models: their tokens, their guesses at each [MASK], where they agree.

Models of different families tokenize differently (`##play`, `Ġplay`, `▁play`) and number their
masks at different positions, so masks are matched by order (the k-th [MASK] of the text) and
guesses are compared as words: the family's space/continuation mark removed, lower-cased.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..model.loaded import LoadedModel
from .analysis import analyze

MARKS = ("##", "Ġ", "▁")  # WordPiece continuation, byte-level BPE space, SentencePiece space


@dataclass
class ModelRun:
    """What one model made of the text."""

    name: str
    family: str
    parameters: int
    tokens: list[str]
    scheme: str  # "wordpiece" | "bpe" | "unigram"
    mask_token: str
    predictions: list[list[tuple[str, float]]]  # one top-k list per [MASK], in text order
    seconds: float  # wall time of one `analyze` call (tokenize + forward + top-k), best of `repeats`
    has_mlm: bool
    notes: list[str]
    mask_positions: list[int]  # each [MASK]'s position in `tokens` ([CLS] or <s> = 0), in text order


def word_of(piece: str) -> str:
    """A predicted piece as a plain word, for comparing across tokenizers.

    Example: "Ġwrote" -> "wrote", "▁Wrote" -> "wrote", "##s" -> "s", "[MASK]" -> "[mask]".
    """
    for m in MARKS:
        piece = piece.replace(m, "")
    return piece.strip().lower()


def run_model(m: LoadedModel, text: str, top_k: int = 5, repeats: int = 2) -> ModelRun:
    """Analyze `text` with `m` (timed, best of `repeats`) and keep what the Compare page shows."""
    best, trace = float("inf"), None
    for _ in range(max(int(repeats), 1)):
        t0 = time.perf_counter()
        trace = analyze(m, text, top_k=top_k)
        best = min(best, time.perf_counter() - t0)
    masks = [p for p in trace.mask_positions if int(trace.input_ids[p]) == m.tokenizer.mask_token_id]
    return ModelRun(
        name=m.name, family=m.family, parameters=m.model.num_parameters(), tokens=list(trace.tokens),
        scheme=m.tokenizer.scheme, mask_token=m.tokenizer.mask_token,
        predictions=[trace.predictions[p] for p in masks], seconds=best, has_mlm=m.has_mlm,
        notes=list(trace.notes), mask_positions=[int(p) for p in masks],
    )


def agreement_rows(runs: list[ModelRun]) -> list[dict]:
    """Per [MASK] (in text order): its position, each model's top-1 word, whether all agree, and top-k overlap.

    The position is the one of the Tokens table (from 0); models that tokenize differently put the same
    [MASK] at different positions, given then as one per model ("2 / 3").

    Overlap is |intersection| / |union| of the models' top-k word sets (1 = same candidates).
    Example: top-k {wrote, sent} and {sent, read} -> overlap 1/3.
    """
    with_mlm = [r for r in runs if r.has_mlm]
    n = min((len(r.predictions) for r in with_mlm), default=0)
    rows = []
    for k in range(n):
        tops = [word_of(r.predictions[k][0][0]) for r in with_mlm]
        sets = [{word_of(t) for t, _ in r.predictions[k]} for r in with_mlm]
        union = set().union(*sets)
        places = list(dict.fromkeys(r.mask_positions[k] for r in with_mlm))
        row = {"[MASK] at position": " / ".join(str(p) for p in places)}
        row.update({f"top-1 {r.name}": f"{r.predictions[k][0][0]} ({r.predictions[k][0][1]:.0%})" for r in with_mlm})
        row["top-1 agree"] = "yes" if len(set(tops)) == 1 else "no"
        row["top-k overlap"] = round(len(set.intersection(*sets)) / len(union), 3) if union else float("nan")
        rows.append(row)
    return rows


def summary_rows(runs: list[ModelRun]) -> list[dict]:
    """One row per model: family, tokenizer, token count, parameters, time per analysis."""
    return [{
        "model": r.name,
        "family": r.family,
        "tokenizer": r.scheme,
        "mask token": r.mask_token,
        "tokens": len(r.tokens),
        "parameters (M)": round(r.parameters / 1e6, 2),
        "ms per analysis": round(1000 * r.seconds, 1),
    } for r in runs]


def token_table(runs: list[ModelRun]) -> dict[str, list[str]]:
    """Each model's tokens as a column (shorter columns padded with ""), for a side-by-side table."""
    T = max((len(r.tokens) for r in runs), default=0)
    names = [r.name for r in runs]
    cols = {n: [*r.tokens, *[""] * (T - len(r.tokens))] for n, r in zip(names, runs)}
    return {"position": [str(i) for i in np.arange(T)], **cols}
