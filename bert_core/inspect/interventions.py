"""Interventions: knock heads out, patch activations, and measure what the [MASK] guess loses.

Every number here comes from `BertModel.forward`'s own options (`head_mask`, `patch`), the pass `analyze`
runs, batched: one batch row per variant (one knocked-out head, one patched place), so L x nh or
(L+1) x T variants cost a few batched passes, not that many separate ones.

- Head importance (after HF's bertology script and Michel et al. 2019, "Are Sixteen Heads Really Better
  than One?"): for each head alone, the mean over the [MASK] positions of
  log p_full(top-1) - log p_without the head(top-1), top-1 being the full model's best token there.
- Pruning curve: remove the k least important heads together, k = 0 .. L x nh, and read p(top-1).
- Activation patching (causal tracing; Vig et al. 2020, Meng et al. 2022): run a corrupt sentence, but put
  the clean sentence's hidden state at layer l, position t in its place; p(target) at the corrupt [MASK]
  says how much of the clean answer that one vector carries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.encoder import Patch
from ..model.loaded import LoadedModel
from ..model.tokenization import Encoding
from .analysis import check_heads

MAX_PATCH_TOKENS = 64  # patching runs (L+1) x T variants of T tokens: cost grows as T^2 (bert-base, 64: 832 variants)
BATCH_TOKENS = 4096  # tokens per batched pass (rows x T): bounds memory (bert-base: ~50 MB of activations)

Progress = Callable[[float], None]  # fraction done in [0, 1]


def _need_mlm(m: LoadedModel) -> None:
    if not m.has_mlm:
        raise BertCoreError("this model has no masked-language-model head, so there is no [MASK] guess to "
                            "measure: pick a model with one (both bundled models have one)")


def _masks(m: LoadedModel, enc: Encoding, what: str) -> list[int]:
    """The [MASK] positions of an encoding, or a message saying one is needed."""
    pos = np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist()
    if not pos:
        raise BertCoreError(f"{what} has no [MASK]: put [MASK] where the word to guess is "
                            "(e.g. “The king said that [MASK] was tired.”)")
    return pos


def _chunks(n: int, t: int) -> list[range]:
    """Rows 0..n-1 in batches of at most BATCH_TOKENS // t rows (at least one)."""
    size = max(1, BATCH_TOKENS // max(t, 1))
    return [range(a, min(a + size, n)) for a in range(0, n, size)]


def _encode(m: LoadedModel, text: str, text_pair: str | None) -> tuple[Encoding, torch.Tensor, torch.Tensor]:
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)  # (1, T)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)  # (1, T)
    return enc, ids, types


def _states(m: LoadedModel, ids, types) -> list[torch.Tensor]:
    """The unchanged run's hidden states 0..L, each (1, T, H): where variants resume (`forward(start=...)`)."""
    return m.model(ids, types, trace=True).hidden_states


def _at_masks(m: LoadedModel, ids, types, positions: list[int], head_masks: torch.Tensor, states, reduce,
              progress: Progress | None = None) -> torch.Tensor:
    """reduce(log p(. | [MASK])) at `positions` for each head mask, stacked: (n, ...), in batched passes.

    head_masks (n, L, nh); `reduce` maps (b, P, V) log-probabilities to a small (b, ...) tensor, so a
    hundred variants never hold a hundred (P, V) distributions. A variant resumes at the hidden state
    before its first knocked-out head (`states`, the unchanged run's): the layers before are the same for
    it. The last layer runs on the [MASK] rows only (`rows`), which the MLM head reads.
    """
    model, T = m.model, ids.shape[1]
    n, L = head_masks.shape[:2]
    off = (head_masks == 0).any(-1)  # (n, L): layers with a knocked-out head
    starts = torch.where(off.any(-1), off.float().argmax(-1), L - 1)  # (n,) the first such layer
    work = []
    for layer in starts.unique().tolist():
        idx = (starts == layer).nonzero().flatten()
        work += [(layer, idx[c.start:c.stop]) for c in _chunks(len(idx), T)]
    out = None
    for k, (layer, idx) in enumerate(work):
        b = len(idx)
        sel = torch.zeros(b, T, dtype=torch.bool)
        sel[:, positions] = True  # (b, T)
        h = model(ids.expand(b, -1), types.expand(b, -1), head_mask=head_masks[idx], rows=sel,
                  start=(layer, states[layer]))  # (b * P, H), row-major: variant, then position
        r = reduce(model.mlm_logits(h).log_softmax(-1).view(b, len(positions), -1))  # (b, ...)
        out = r.new_empty((n, *r.shape[1:])) if out is None else out
        out[idx] = r
        if progress is not None:
            progress((k + 1) / len(work))
    return out


def _full_top1(m: LoadedModel, states, positions: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The unablated model's best token at each [MASK] and its log probability: (P,), (P,)."""
    lp = m.model.mlm_logits(states[-1][0, positions]).log_softmax(-1)  # (P, V)
    top = lp.argmax(-1)  # (P,)
    return top, lp.gather(-1, top[:, None])[:, 0]


def one_head_masks(L: int, nh: int) -> torch.Tensor:
    """(L * nh, L, nh) ones, row i with head (i // nh, i % nh) set to 0: each head knocked out alone."""
    hm = torch.ones(L * nh, L * nh)
    hm.fill_diagonal_(0.0)
    return hm.view(L * nh, L, nh)


def head_importance(m: LoadedModel, text: str, text_pair: str | None = None, *,
                    progress: Progress | None = None, layers: tuple[int, ...] | None = None) -> np.ndarray:
    """(L, nh): for each head alone, mean over the [MASK]s of log p_full(top-1) - log p_ablated(top-1).

    top-1 is the unablated model's best token at that [MASK]; ablated = that one head's context zeroed
    before the attention output projection. Positive: the guess leans on the head; near 0: it does not
    (a negative value means the guess got surer without it). L x nh variants, run as batched passes.
    `layers` (0-based), when given, ranks only those layers' heads (the rest of the array is NaN): the last
    layer alone costs nh variants of one layer each.
    """
    _need_mlm(m)
    enc, ids, types = _encode(m, text, text_pair)
    positions = _masks(m, enc, "The sentence")
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    with torch.inference_mode():
        states = _states(m, ids, types)
        top, full = _full_top1(m, states, positions)  # (P,), (P,)
        hm = one_head_masks(L, nh)  # (L*nh, L, nh)
        keep = torch.arange(L * nh) // nh  # (L*nh,) each variant's layer
        if layers is not None:
            bad = [x for x in layers if not 0 <= int(x) < L]
            if bad or not layers:
                raise BertCoreError(f"layers must be among 0..{L - 1} (0-based), got {list(layers)}")
            keep = torch.isin(keep, torch.tensor([int(x) for x in layers]))
        else:
            keep = torch.ones(L * nh, dtype=torch.bool)
        ablated = _at_masks(m, ids, types, positions, hm[keep], states,
                            lambda lp: lp[:, torch.arange(len(positions)), top], progress)  # (n, P)
        out = torch.full((L * nh,), float("nan"))
        out[keep] = (full[None] - ablated).mean(-1)
        return out.view(L, nh).numpy()


@dataclass
class KnockOut:
    """The [MASK] guesses of the full model and of the model with some heads knocked out, side by side."""

    heads: tuple[tuple[int, int], ...]  # (layer, head), 0-based
    tokens: list[str]  # the input's tokens
    # [MASK] position -> the union of both models' top-k tokens (full model's first), p_full, p_without
    guesses: dict[int, tuple[list[str], list[float], list[float]]]
    top_full: dict[int, str]
    top_without: dict[int, str]
    notes: list[str] = field(default_factory=list)  # the tokenizer's (a [mask] read as [MASK], truncation)


def knock_out(m: LoadedModel, text: str, text_pair: str | None = None, heads=(), top_k: int = 5) -> KnockOut:
    """Both models' probabilities of both models' top-k tokens at every [MASK].

    One pass of the full model, then the knocked-out one resumed at its first changed layer (a head of
    the last layer: one layer more).

    Example: knock_out(m, "She [MASK] the letter.", heads=[(5, 10)]).guesses[2] ->
    (["sent", "gave", ...], [0.11, 0.09, ...], [0.02, 0.15, ...]).
    """
    _need_mlm(m)
    heads = check_heads(m, heads)
    enc, ids, types = _encode(m, text, text_pair)
    positions = _masks(m, enc, "The sentence")
    hm = torch.ones(1, m.config.num_hidden_layers, m.config.num_attention_heads)  # (1, L, nh)
    if heads:
        hm[0][tuple(zip(*heads))] = 0.0
    with torch.inference_mode():
        states = _states(m, ids, types)
        full = m.model.mlm_logits(states[-1][0, positions]).softmax(-1)[None]  # (1, P, V)
        without = _at_masks(m, ids, types, positions, hm, states, lambda lp: lp.exp()) if heads else full
        p = torch.cat([full, without])  # (2, P, V)
        k = min(int(top_k), p.shape[-1])
        top = p.topk(k, dim=-1).indices  # (2, P, k)
    guesses, top_full, top_without = {}, {}, {}
    for i, pos in enumerate(positions):
        ids_ = list(dict.fromkeys(top[0, i].tolist() + top[1, i].tolist()))
        guesses[pos] = (m.tokenizer.convert_ids_to_tokens(ids_), p[0, i, ids_].tolist(), p[1, i, ids_].tolist())
        top_full[pos] = m.tokenizer.id_to_token(int(top[0, i, 0]))
        top_without[pos] = m.tokenizer.id_to_token(int(top[1, i, 0]))
    notes = [*enc.notes] + ([enc.truncation.message] if enc.truncation is not None else [])
    return KnockOut(heads=heads, tokens=enc.tokens, guesses=guesses, top_full=top_full, top_without=top_without,
                    notes=notes)


@dataclass
class PruningCurve:
    """p(top-1) at the [MASK]s as the least important heads are removed together, k = 0 .. L x nh."""

    order: list[tuple[int, int]]  # (layer, head), 0-based, least important first: the k-th removed is order[k-1]
    removed: np.ndarray  # (n+1,) k = 0 .. n heads removed
    prob: np.ndarray  # (n+1,) mean over the [MASK]s of p(the full model's top-1) with those k heads removed
    kept_top: np.ndarray  # (n+1,) share of the [MASK]s whose top-1 is still the full model's
    top_tokens: list[str]  # the full model's top-1 at each [MASK]
    importance: np.ndarray  # (L, nh) the head importance the order comes from


def pruning_curve(m: LoadedModel, text: str, text_pair: str | None = None, *,
                  progress: Progress | None = None) -> PruningCurve:
    """Remove the k least important heads (k = 0 .. L x nh) at once and read p(top-1) at the [MASK]s.

    Importance is `head_importance` (each head alone); the heads go least important first, ties by
    (layer, head). Row k of the batch has the first k heads of that order knocked out.
    """
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    n = L * nh

    def part(a: float, b: float) -> Progress | None:
        return None if progress is None else (lambda f: progress(a + (b - a) * f))

    imp = head_importance(m, text, text_pair, progress=part(0.0, 0.5))  # (L, nh)
    enc, ids, types = _encode(m, text, text_pair)
    positions = _masks(m, enc, "The sentence")
    flat = np.argsort(imp.ravel(), kind="stable")  # (n,) least important first
    hm = torch.ones(n + 1, n)
    hm[torch.arange(n + 1)[:, None] > torch.arange(n)[None, :]] = 0.0  # row k: the first k of the order removed
    hm = hm[:, np.argsort(flat)].view(n + 1, L, nh)  # column j of row k: is head j among the first k removed?
    with torch.inference_mode():
        states = _states(m, ids, types)
        top, _ = _full_top1(m, states, positions)  # (P,)
        both = _at_masks(m, ids, types, positions, hm, states,  # (n+1, 2, P): log p(top-1), is it still top-1?
                         lambda lp: torch.stack([lp[:, torch.arange(len(positions)), top],
                                                 (lp.argmax(-1) == top).float()], 1), part(0.5, 1.0))
        p, still = both[:, 0].exp(), both[:, 1]  # (n+1, P) each
    return PruningCurve(
        order=[(int(i) // nh, int(i) % nh) for i in flat],
        removed=np.arange(n + 1),
        prob=p.mean(-1).numpy(),
        kept_top=still.mean(-1).numpy(),
        top_tokens=m.tokenizer.convert_ids_to_tokens(top.tolist()),
        importance=imp,
    )


@dataclass
class PatchResult:
    """Causal tracing: p(target) at the corrupt [MASK] with one clean hidden state patched in."""

    grid: np.ndarray  # (L+1, T) row l: hidden state l (0 = the embeddings' output), column t: position t
    clean_prob: float  # p(target) at the clean sentence's [MASK], clean run
    corrupt_prob: float  # p(target) at the corrupt sentence's [MASK], corrupt run (nothing patched)
    tokens: list[str]  # the corrupt sentence's tokens (the grid's columns)
    clean_tokens: list[str]
    target: str  # the vocabulary piece whose probability is read
    target_id: int
    mask_position: int  # the corrupt [MASK]'s position
    notes: list[str] = field(default_factory=list)


def target_id(m: LoadedModel, target: str) -> int:
    """The vocabulary id of `target`, which must be one piece (after the tokenizer's normalisation).

    Example (uncased WordPiece): "He" -> id of "he"; "tiredness" (tired ##ness) is refused with its pieces.
    """
    word = (target or "").strip()
    if not word:
        raise BertCoreError("type the target word whose probability to trace (e.g. “he”)")
    if any(c.isspace() for c in word):
        raise BertCoreError(f"the target must be one word, got “{word}”")
    tok = m.tokenizer
    tries = [word]
    if tok.scheme == "bpe":  # byte-level BPE: a word after a space is its own piece, "Ġhe"
        tries.insert(0, " " + word)
    for t in tries:
        ids = tok.encode_plain(t)
        if len(ids) == 1 and ids[0] != tok.unk_token_id:
            return ids[0]
    ids = tok.encode_plain(tries[-1])
    if len(ids) == 1:
        raise BertCoreError(f"“{word}” is not in this model's vocabulary (it reads as {tok.unk_token}): "
                            "pick a word the model knows as one piece")
    raise BertCoreError(f"“{word}” is not one vocabulary piece for this model (it is "
                        f"{' + '.join(tok.convert_ids_to_tokens(ids))}): the grid reads the probability of "
                        "one piece, so pick a target the model knows whole")


def _one_mask(m: LoadedModel, enc: Encoding, which: str) -> int:
    pos = _masks(m, enc, f"The {which} sentence")
    if len(pos) > 1:
        raise BertCoreError(f"the {which} sentence has {len(pos)} [MASK]s: keep exactly one, the word to guess")
    return pos[0]


def patch_activations(m: LoadedModel, clean: str, corrupt: str, target: str, *,
                      progress: Progress | None = None) -> PatchResult:
    """grid[l, t] = p(target) at the corrupt [MASK] when the corrupt run's hidden state l at position t is the
    clean run's (l = 0: the embeddings' output; every position, [CLS] and [SEP] included). (L+1) x T variants,
    one batch row each, run as a few batched passes of the same forward.

    Example: clean "The king said that [MASK] was tired.", corrupt "The queen said that [MASK] was tired.",
    target "he": the cells that bring p(he) back up show where "king" is carried, layer by layer.
    """
    _need_mlm(m)
    if m.config.is_decoder:
        raise BertCoreError("this model reads left to right: its [MASK] guess is made at the position before, "
                            "which this grid does not trace; pick a bidirectional (BERT) model")
    tok = m.tokenizer
    tid = target_id(m, target)
    ce, c_ids, c_types = _encode(m, clean, None)
    xe, x_ids, x_types = _encode(m, corrupt, None)
    c_mask, x_mask = _one_mask(m, ce, "clean"), _one_mask(m, xe, "corrupt")
    if len(ce) != len(xe):
        raise BertCoreError(
            f"the clean sentence has {len(ce)} tokens and the corrupt one {len(xe)}: patching swaps vectors "
            "position by position, so both need the same number of tokens (swap a word for one that splits into "
            f"as many pieces). Clean: {' '.join(ce.tokens)} / corrupt: {' '.join(xe.tokens)}")
    if len(xe) > MAX_PATCH_TOKENS:
        raise BertCoreError(f"these sentences have {len(xe)} tokens; patching tries every position of every layer, "
                            f"(L+1) x T variants, so it takes sentences of at most {MAX_PATCH_TOKENS} tokens: "
                            "shorten both")
    notes = [*ce.notes, *xe.notes]
    if c_mask != x_mask:
        notes.append(f"The [MASK] is at position {c_mask} in the clean sentence and {x_mask} in the corrupt one; "
                     "the grid reads the corrupt one's.")
    for e, which in ((ce, "clean"), (xe, "corrupt")):
        if e.truncation is not None:
            notes.append(f"The {which} sentence: {e.truncation.message}")
    model = m.model
    L, T = m.config.num_hidden_layers, len(xe)
    with torch.inference_mode():
        ct = model(c_ids, c_types, trace=True)
        clean_h = torch.cat(ct.hidden_states)  # (L+1, T, H)
        clean_prob = float(model.mlm_logits(clean_h[L, c_mask]).softmax(-1)[tid])
        x_states = _states(m, x_ids, x_types)  # the corrupt run's: a variant patched at state l resumes there
        corrupt_prob = float(model.mlm_logits(x_states[L][0, x_mask]).softmax(-1)[tid])
        work = [(layer, c) for layer in range(L + 1) for c in _chunks(T, T)]
        grid = torch.empty(L + 1, T)
        for k, (layer, c) in enumerate(work):
            b, pos = len(c), torch.arange(c.start, c.stop)  # variants: position t patched at state `layer`
            patch = Patch(torch.full((b,), layer), pos, clean_h[layer, pos])
            h = model(x_ids.expand(b, -1), x_types.expand(b, -1), patch=patch,
                      start=(layer, x_states[layer]))[:, x_mask]  # (b, H)
            grid[layer, pos] = model.mlm_logits(h).softmax(-1)[:, tid]
            if progress is not None:
                progress((k + 1) / len(work))
        grid = grid.numpy()
    return PatchResult(grid=grid, clean_prob=clean_prob, corrupt_prob=corrupt_prob, tokens=xe.tokens,
                       clean_tokens=ce.tokens, target=tok.id_to_token(tid), target_id=tid, mask_position=x_mask,
                       notes=notes)
