"""What BERT attends to and relies on: attention rollout, per-head statistics, token salience.

Attention maps say where each head *reads*; these three summaries answer the next questions:
- `attention_rollout`: where information can have come from after several layers (Abnar & Zuidema 2020);
- `head_stats`: which heads look at the previous token, park on [CLS] or [SEP], or spread out;
- `sink_heads`: which heads park most of their attention on one kind of sink: [CLS], [SEP] or punctuation;
- `salience`: which input tokens a prediction depended on, by occlusion or by gradient x input.
Everything comes back as numpy.
"""

from __future__ import annotations

import unicodedata

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel

# Batched passes (occlusion here, pseudo-log-likelihood in mask_filling.py) run one copy of the
# input per scored position: T positions cost T forward passes of T tokens. Each chunk of the
# batch holds at most CHUNK_TOKENS tokens (rows x T), which bounds memory; the whole batch holds at
# most MAX_WORK_TOKENS, which bounds time (a 512-token input has 510 positions: 510 x 512 tokens
# would take minutes on bert-base). Beyond it, only the positions that fit are scored, and the
# result says so. 1024 tokens a chunk: fewer, larger matrix products than two of 512 (faster on
# bert-base at 32 tokens), and at 512 tokens a chunk's attention scores stay 2 rows x 12 heads x
# 512 x 512 floats, 25 MB.
CHUNK_TOKENS = 1024
MAX_WORK_TOKENS = 512 * 32

HEAD_STATS = ("entropy", "distance", "cls", "sep", "self", "prev", "next")
SALIENCE_METHODS = ("occlusion", "gradient")


# ----------------------------------------------------------------------------------------------
# Attention rollout
# ----------------------------------------------------------------------------------------------


def attention_rollout(attentions: np.ndarray) -> np.ndarray:
    """(L, heads, T, T) attention probabilities -> (L, T, T) rollout after each layer (Abnar & Zuidema 2020).

    Counting layers 1..L as the pages do: A_l = mean over heads of layer l; Â_l = 0.5 A_l + 0.5 I with rows
    renormalised to sum 1 (the residual connection carries half of each token forward unchanged); R_0 = I (the
    embeddings' output: each position holds only its own token), R_l = Â_l R_{l-1}. Entry [l - 1] of the result is
    R_l; row i of R_l: how much each input token j can have flowed into position i after layer l.
    Example: one layer, one head, A = [[0, 1], [1, 0]] -> R_1 = [[0.5, 0.5], [0.5, 0.5]].
    """
    att = np.asarray(attentions)
    if att.ndim != 4 or att.shape[-1] != att.shape[-2]:
        raise BertCoreError(f"attentions must be (layers, heads, T, T), got shape {att.shape}")
    n_layers, t = att.shape[0], att.shape[-1]
    eye = np.eye(t)
    out = np.empty((n_layers, t, t), dtype=np.float32)
    r = eye
    for layer in range(n_layers):
        a = 0.5 * att[layer].mean(axis=0, dtype=np.float64) + 0.5 * eye  # (T, T), no float64 copy of all heads
        a = a / a.sum(axis=-1, keepdims=True)
        r = a @ r  # (T, T): layer l's mixing applied after everything below it
        out[layer] = r
    return out


# ----------------------------------------------------------------------------------------------
# Head statistics
# ----------------------------------------------------------------------------------------------


def cls_sep_positions(special_tokens_mask: np.ndarray) -> tuple[list[int], list[int]]:
    """The [CLS] position (the special token at 0) and the [SEP] positions (the other special tokens).

    Works for any tokenizer that frames input as <cls> A <sep> (B <sep>), e.g. RoBERTa's <s> ... </s>.
    Example: special mask [1, 0, 0, 1, 0, 1] -> ([0], [3, 5])
    """
    special = np.flatnonzero(np.asarray(special_tokens_mask)).tolist()
    return [p for p in special if p == 0], [p for p in special if p != 0]


def head_stats(trace) -> list[dict]:
    """One dict per (layer, head), layer-major: what each head's attention map looks like in numbers.

    For a head's map a (T x T, row i = query i, rows sum to 1), each a mean over the query rows i:
      entropy   -sum_j a_ij ln a_ij (nats): 0 = all on one key, ln T = spread evenly
      distance  sum_j a_ij |i - j|: how far, in tokens, the head reads
      cls, sep  weight on the [CLS] position / on the [SEP] positions
      self      a_ii;   prev  a_i,i-1 over rows 1..T-1;   next  a_i,i+1 over rows 0..T-2
    """
    att = np.asarray(trace.attentions)  # (L, nh, T, T)
    n_layers, n_heads, t = att.shape[0], att.shape[1], att.shape[-1]
    cls_pos, sep_pos = cls_sep_positions(trace.special_tokens_mask)
    dist = np.abs(np.arange(t)[:, None] - np.arange(t)[None, :]).astype(np.float32)  # (T, T) |i - j|
    rows = []
    for layer in range(n_layers):  # one layer at a time: bounded temporaries at 512 tokens
        a = np.asarray(att[layer], dtype=np.float32)  # (nh, T, T)
        # 0 ln 0 = 0: a zero weight times the log of a tiny positive number is exactly 0.
        entropy = -(a * np.log(np.maximum(a, 1e-30))).sum(-1, dtype=np.float64).mean(-1)  # (nh,)
        distance = (a * dist).sum(-1, dtype=np.float64).mean(-1)
        cls = a[:, :, cls_pos].sum(-1, dtype=np.float64).mean(-1)
        sep = a[:, :, sep_pos].sum(-1, dtype=np.float64).mean(-1)
        diag = np.diagonal(a, 0, 1, 2).astype(np.float64)  # (nh, T)
        prev = np.diagonal(a, -1, 1, 2).astype(np.float64)  # (nh, T-1): a[i, i-1] for i = 1..T-1
        nxt = np.diagonal(a, 1, 1, 2).astype(np.float64)  # (nh, T-1): a[i, i+1] for i = 0..T-2
        for h in range(n_heads):
            rows.append({
                "layer": layer, "head": h,
                "entropy": float(entropy[h]), "distance": float(distance[h]),
                "cls": float(cls[h]), "sep": float(sep[h]),
                "self": float(diag[h].mean()),
                "prev": float(prev[h].mean()) if t > 1 else 0.0,
                "next": float(nxt[h].mean()) if t > 1 else 0.0,
            })
    return rows


SINKS = ("[CLS]", "[SEP]", "punctuation")
_WORD_MARKS = ("##", "Ġ", "▁")  # WordPiece's continuation mark, byte-level BPE's and SentencePiece's space marks


def is_punctuation(token: str) -> bool:
    """A token made only of punctuation once its piece marks are stripped. Example: "." -> True, "##," -> True."""
    for mark in _WORD_MARKS:
        token = token.removeprefix(mark)
    return bool(token) and all(unicodedata.category(ch).startswith("P") for ch in token)


def sink_heads(trace, at_least: float = 0.5) -> list[dict]:
    """The heads that park at least `at_least` of their attention on one kind of sink, strongest first.

    A head's share on a sink is the mean over query rows of its weight on the sink's positions: the [CLS]
    position, the [SEP] positions (cls_sep_positions) or the punctuation tokens (is_punctuation; never special).
    Each head is named with its largest of the three (Clark et al. 2019 found bert-base's heads parking on [CLS]
    low down, on [SEP] in the middle layers and on punctuation; the bundled MiniLM uses [CLS] from layer 2 up).
    One dict per head found: layer, head (0-based), sink (one of SINKS) and share.
    Example: a head whose every row puts 0.9 on position 0 -> {"sink": "[CLS]", "share": 0.9, ...}.
    """
    att = np.asarray(trace.attentions)  # (L, nh, T, T)
    special = np.asarray(trace.special_tokens_mask)
    cls_pos, sep_pos = cls_sep_positions(special)
    punct = [i for i, tok in enumerate(trace.tokens) if not special[i] and is_punctuation(tok)]
    found = []
    for layer in range(att.shape[0]):
        a = np.asarray(att[layer], dtype=np.float64)  # (nh, T, T)
        shares = np.stack([a[:, :, pos].sum(-1).mean(-1) for pos in (cls_pos, sep_pos, punct)])  # (3, nh)
        for h in range(att.shape[1]):
            k = int(shares[:, h].argmax())
            if shares[k, h] >= at_least:
                found.append({"layer": layer, "head": h, "sink": SINKS[k], "share": float(shares[k, h])})
    return sorted(found, key=lambda s: -s["share"])


def common_source(rollout_layer: np.ndarray) -> tuple[int, int]:
    """The input token most rows of one rollout matrix draw most from, and how many rows do. (T, T) -> (j, rows)."""
    top = np.asarray(rollout_layer).argmax(-1)  # (T,)
    j = int(np.bincount(top).argmax())
    return j, int((top == j).sum())


# ----------------------------------------------------------------------------------------------
# Salience
# ----------------------------------------------------------------------------------------------


def candidate_id(m: LoadedModel, token: str | int) -> int:
    """The vocabulary id of a candidate: a word piece, or a word that is exactly one piece.

    A word of several pieces is refused with a message: one [MASK] predicts one piece.
    Example: "cat" -> its id; "Cat" (lower-casing model) -> the id of "cat"; "unaffable" -> error.
    """
    tok = m.tokenizer
    if isinstance(token, (int, np.integer)):
        i = int(token)
        if not 0 <= i < m.config.vocab_size:
            raise BertCoreError(f"token id {i} is outside the vocabulary (0..{m.config.vocab_size - 1})")
    elif not isinstance(token, str) or not token.strip():
        raise BertCoreError("type a candidate word")
    elif token in tok.vocab:
        i = tok.vocab[token]
    else:
        ids = tok.encode_plain(token.strip())
        if not ids:
            raise BertCoreError(f"{token!r} has no word pieces after normalisation")
        if len(ids) > 1:
            pieces = " ".join(tok.convert_ids_to_tokens(ids))
            raise BertCoreError(
                f"{token!r} is {len(ids)} word pieces ({pieces}). One [MASK] predicts one piece, so the model "
                f"has no single probability for it: use one [MASK] per piece, or ask about its first piece "
                f"{tok.id_to_token(ids[0])!r}."
            )
        i = ids[0]
    if i in tok.all_special_ids:
        raise BertCoreError(f"{tok.id_to_token(i)} is a special token, not a candidate")
    return i


def top_candidate(m: LoadedModel, logits: torch.Tensor) -> torch.Tensor:
    """Argmax over the vocabulary with special tokens excluded: (..., V) -> (...,) ids."""
    special = torch.tensor(m.tokenizer.all_special_ids, dtype=torch.long)
    return logits.index_fill(-1, special, float("-inf")).argmax(-1)


def batched_positions(candidates: list[int], n_tokens: int, near: int | None = None) -> list[int]:
    """The positions a batched pass scores: all of `candidates`, or as many as MAX_WORK_TOKENS allows.

    When capped, the positions nearest `near` (or the first ones) are kept, in position order.
    Example: 600 candidates at T=600 -> the 27 nearest (27 x 600 <= 16,384).
    """
    budget = max(1, MAX_WORK_TOKENS // max(int(n_tokens), 1))
    if len(candidates) <= budget:
        return list(candidates)
    key = (lambda p: (abs(p - near), p)) if near is not None else (lambda p: p)
    return sorted(sorted(candidates, key=key)[:budget])


def encoder_rows(m: LoadedModel, ids: torch.Tensor, types: torch.Tensor, rows_at: torch.Tensor) -> torch.Tensor:
    """Last hidden state at one position per row: (B, T) inputs, (B,) positions -> (B, H), in chunks.

    Each chunk holds at most CHUNK_TOKENS tokens (at least one row); all rows have the same length,
    so no padding is needed and every row is exactly what a one-input pass computes.
    """
    b, t = ids.shape
    per = max(1, CHUNK_TOKENS // t)
    out = []
    with torch.inference_mode():
        for s in range(0, b, per):
            h = m.model(ids[s:s + per], types[s:s + per])  # (b', T, H)
            out.append(h[torch.arange(h.shape[0]), rows_at[s:s + per]])  # (b', H)
    return torch.cat(out) if out else torch.zeros(0, m.config.hidden_size)


def salience(m: LoadedModel, text: str, position: int, token: str | int | None = None,
             text_pair: str | None = None, method: str = "occlusion") -> np.ndarray:
    """(T,) how much the prediction of `token` at `position` depends on each input token.

    occlusion: s_i = p(token at position | x) - p(token at position | x with token i replaced by [MASK]),
        every i in one batched pass; > 0: the token helped, < 0: it pointed elsewhere. NaN where the
        pass was capped (see `batched_positions`).
    gradient:  s_i = || (d p(token at position) / d e_i) * e_i ||_2, e_i the summed input embedding
        (word + position + segment, as the model's family adds them) of token i: a first-order, one-pass
        estimate of the same.
    Both are 0 at special tokens ([CLS], [SEP]). token=None: the top-1 non-special candidate.
    """
    if method not in SALIENCE_METHODS:
        raise BertCoreError(f"method must be one of {', '.join(SALIENCE_METHODS)}, got {method!r}")
    if not m.has_mlm:
        raise BertCoreError("this checkpoint has no masked-language-model head, so there is no prediction to explain")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    t = len(enc)
    if not isinstance(position, (int, np.integer)) or not 0 <= int(position) < t:
        raise BertCoreError(f"position must be between 0 and {t - 1}, got {position}")
    position = int(position)
    if enc.special_tokens_mask[position]:
        raise BertCoreError(f"position {position} is {enc.tokens[position]}, a special token: pick a word piece")
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]  # (1, T)
    if token is None:
        h = encoder_rows(m, ids, types, torch.tensor([position]))  # (1, H)
        with torch.inference_mode():
            target = int(top_candidate(m, m.model.mlm_logits(h))[0])
    else:
        target = candidate_id(m, token)
    special = enc.special_tokens_mask.astype(bool)
    if method == "gradient":
        return _gradient_salience(m, ids, types, position, target, special)
    return _occlusion_salience(m, enc, ids, types, position, target, special)


def _occlusion_salience(m, enc, ids, types, position, target, special) -> np.ndarray:
    t = ids.shape[1]
    occluded = batched_positions(np.flatnonzero(~special).tolist(), t, near=position)
    batch = ids.repeat(len(occluded) + 1, 1)  # (1 + n, T): row 0 is the input as given
    batch[torch.arange(1, len(occluded) + 1), torch.tensor(occluded, dtype=torch.long)] = m.tokenizer.mask_token_id
    h = encoder_rows(m, batch, types.expand_as(batch), torch.full((batch.shape[0],), position))  # (1 + n, H)
    with torch.inference_mode():
        p = m.model.mlm_logits(h).softmax(-1)[:, target].double().numpy()  # (1 + n,)
    out = np.full(t, np.nan)
    out[special] = 0.0
    out[occluded] = p[0] - p[1:]
    return out


def _gradient_salience(m, ids, types, position, target, special) -> np.ndarray:
    model = m.model
    emb = model.bert.embeddings
    with torch.enable_grad():
        # The family's own embeddings (RoBERTa's offset positions, DistilBERT's missing segments, ALBERT's and
        # ELECTRA's E -> H projection) read a leaf word vector. The sum is word + terms that do not depend on it,
        # so d p / d(sum) = d p / d(word).
        word = emb.word_embeddings(ids).detach().requires_grad_(True)  # (1, T, E)
        h = model(ids, types, inputs_embeds=word)  # (1, T, H)
        p = model.mlm_logits(h[0, position]).softmax(-1)[target]
        (g,) = torch.autograd.grad(p, word)  # (1, T, E); the weights stay untouched (no .grad written)
    with torch.no_grad():
        e = emb(ids, types, parts=True)[1][3]  # (1, T, E) word + position + segment, the family's own sum
    out = (g * e)[0].norm(dim=-1).double().numpy()  # (T,)
    out[special] = 0.0
    return out


def heads_by(stats: list[dict], stat: str, at_least: float) -> list[dict]:
    """The heads whose `stat` is at least `at_least`, strongest first (for "which heads do X?").

    Example: heads_by(stats, "prev", 0.5) -> the heads that put half or more of each row on the previous token.
    """
    return sorted((s for s in stats if s[stat] >= at_least), key=lambda s: -s[stat])


__all__ = ["HEAD_STATS", "MAX_WORK_TOKENS", "SALIENCE_METHODS", "SINKS", "attention_rollout", "batched_positions",
           "cls_sep_positions", "common_source", "head_stats", "heads_by", "is_punctuation", "salience", "sink_heads"]
