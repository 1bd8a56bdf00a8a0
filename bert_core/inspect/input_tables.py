"""Data helpers for the Tokenization and Embeddings pages: spans, tables, counts, norms (no UI here).

Everything returns plain Python lists/dicts or numpy arrays; the pages only draw them.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

import numpy as np

from ..model.tokenization import WordPieceTokenizer, WordSplit
from .analysis import EmbeddingParts, Trace

CONTINUATION_PREFIX = "##"  # BERT's WordPiece marks a piece that continues a word with this
SEGMENT_NAMES = ("A", "B")

# The five rows of the input embedding, in the order the formula builds them.
EMBEDDING_PARTS = ("word", "segment", "position", "sum", "normed")
EMBEDDING_TITLES = {
    "word": "token embedding E_tok[id_t]",
    "segment": "segment embedding E_seg[s_t]",
    "position": "position embedding E_pos[t]",
    "sum": "sum E_tok + E_seg + E_pos",
    "normed": "LayerNorm(sum): what layer 1 reads",
    "projected": "E → H projection W·LayerNorm(sum) + b: what layer 1 reads",
}


# ---------------------------------------------------------------- highlighted text


@dataclass
class Span:
    """A stretch of one sentence's characters and the token positions drawn over it."""

    text: str  # the characters exactly as typed
    kind: str  # "piece" (a token covers it), "gap" (between pieces, e.g. spaces), "cut" (truncated away)
    positions: list[int] = field(default_factory=list)  # token positions in the trace; [] unless "piece"


def highlight_spans(text: str, pieces: list[tuple[int, tuple[int, int]]], truncated: bool = False) -> list[Span]:
    """Cut `text` into spans: one per token (from its offsets), the gaps between, and a cut tail.

    `pieces` is [(position, (start, end)), ...] for this sentence's tokens, in order. The spans'
    texts joined give back `text` exactly. Pieces whose characters were already covered (some
    normalisations map one character to several pieces) join the previous piece's span.
    Example: "Hi  you", [(1, (0, 2)), (2, (4, 7))] -> "Hi"[1], "  " gap, "you"[2].
    """
    spans: list[Span] = []
    cursor = 0
    for pos, (start, end) in pieces:
        start, end = max(start, cursor), min(end, len(text))
        if end <= start:  # nothing new to cover: the characters belong to an earlier piece too
            if spans and spans[-1].kind == "piece":
                spans[-1].positions.append(pos)
            else:
                spans.append(Span("", "piece", [pos]))
            continue
        if start > cursor:
            spans.append(Span(text[cursor:start], "gap"))
        spans.append(Span(text[start:end], "piece", [pos]))
        cursor = end
    if cursor < len(text):
        tail = text[cursor:]
        # Trailing spaces of a sentence that was not truncated are just a gap.
        spans.append(Span(tail, "cut" if truncated and tail.strip() else "gap"))
    return spans


def _sentence_pieces(trace: Trace, seq: int) -> list[tuple[int, tuple[int, int]]]:
    return [(i, o) for i, (o, s) in enumerate(zip(trace.offsets, trace.sequence_ids)) if s == seq and o is not None]


def _truncated(trace: Trace, seq: int) -> bool:
    t = trace.truncation
    return t is not None and seq < len(t.kept) and t.kept[seq] < t.original[seq]


def sentence_spans(trace: Trace, seq: int) -> list[Span]:
    """`highlight_spans` for sentence A (seq 0) or B (seq 1) of a trace."""
    text = trace.text if seq == 0 else (trace.text_pair or "")
    return highlight_spans(text, _sentence_pieces(trace, seq), _truncated(trace, seq))


# Colours: words alternate blue / orange; pieces inside one word alternate two shades of it.
_WORD_SHADES = (("#cfe2ff", "#9ec5fe"), ("#ffe3b3", "#ffc870"))
_UNK_STYLE = "background:#f8c4c4;outline:2px solid #c0392b;"
_PIECE_STYLE = "color:#111;border-radius:3px;padding:1px 0;"
# Not by colour alone (WCAG 1.4.1): the two shades of one word's pieces are ~1.2:1 apart, so a piece that continues
# a word opens with a dark bar (10.6:1 or more on every shade), where the word was cut.
_CONTINUES_STYLE = "border-left:2px solid #14120f;border-radius:0 3px 3px 0;"
_CHIP_STYLE = ("color:#111;border-radius:9px;padding:0 6px;margin:0 2px;font-family:monospace;"
               "font-size:0.85em;border:1px solid #888;")
_CHIP_COLORS = {"mask": "#e2d4f7", "other": "#e9ecef"}
_CUT_CHARS = 300  # a long cut tail is shown shortened


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _chip(token: str, pos: int, tok_id: int, kind: str) -> str:
    title = _esc(f"#{pos} {token} (id {tok_id}): special token")
    return (f'<span class="bx-chip" title="{title}" style="{_CHIP_STYLE}background:{_CHIP_COLORS[kind]};">'
            f'{_esc(token)}</span>')


def _closes(trace: Trace, i: int) -> int:
    """The sentence a special token at i closes: that of the nearest text token before it (0 if none)."""
    return next((s for s in reversed(trace.sequence_ids[:i]) if s is not None), 0)


def tokens_html(trace: Trace, special_ids, unk_id: int, mask_id: int | None = None, as_read: bool = False) -> str:
    """The input as BERT reads it, as HTML: each piece highlighted over its characters, specials as chips.

    `as_read` (the Lesson's chips): each piece shows the token the model reads (lower-cased by an uncased model,
    [UNK] for an unknown piece), a piece that continues a word with its ## in grey; off, the text reads as
    typed, each piece highlighted over its own characters. Every fragment of user text goes through
    html.escape; whitespace is kept (`pre-wrap`). Pieces and chips carry the class bx-chip, the whole
    bx-tokens (presenter mode sizes them).
    """
    special_ids = set(int(i) for i in special_ids) - {int(unk_id)}
    ids = [int(i) for i in trace.input_ids]
    piece_in_word = _piece_index_in_word(trace)
    lines = []
    n_seq = 1 if trace.text_pair is None else 2
    for seq in range(n_seq):
        # [CLS] leads sentence A; each sentence is closed by its own [SEP] (RoBERTa: A's </s></s>).
        lead = [i for i, o in enumerate(trace.offsets) if o is None and i == 0 and seq == 0]
        trail = [i for i, o in enumerate(trace.offsets) if o is None and i > 0 and _closes(trace, i) == seq]
        parts = [f'<span style="font-weight:bold;color:#666;margin-right:6px;">{SEGMENT_NAMES[seq]}</span>']
        parts += [_chip(trace.tokens[i], i, ids[i], "other") for i in lead]
        for span in sentence_spans(trace, seq):
            if span.kind == "gap":
                parts.append(_esc(span.text))
            elif span.kind == "cut":
                shown = span.text if len(span.text) <= _CUT_CHARS else (
                    span.text[:_CUT_CHARS] + f"… ({len(span.text) - _CUT_CHARS:,} more characters)")
                parts.append(f'<span title="cut: beyond the model\'s positions" '
                             f'style="color:#999;text-decoration:line-through;">{_esc(shown)}</span>')
            else:
                parts.append(_piece_html(trace, span, ids, special_ids, unk_id, mask_id, piece_in_word, as_read))
        parts += [_chip(trace.tokens[i], i, ids[i], "other") for i in trail]
        lines.append(f'<div style="margin:4px 0;">{"".join(parts)}</div>')
    return ('<div class="bx-tokens" style="white-space:pre-wrap;line-height:2.1;font-size:1.05em;">'
            + "".join(lines) + "</div>")


def _piece_html(trace, span: Span, ids, special_ids, unk_id, mask_id, piece_in_word, as_read: bool = False) -> str:
    first = span.positions[0]
    tip = "; ".join(f"#{p} {trace.tokens[p]} (id {ids[p]})" for p in span.positions)
    if all(ids[p] in special_ids for p in span.positions):  # e.g. a [MASK] typed in the text
        kind = "mask" if mask_id is not None and ids[first] == mask_id else "other"
        return (f'<span class="bx-chip" title="{_esc(tip)}: special token" '
                f'style="{_CHIP_STYLE}background:{_CHIP_COLORS[kind]};">{_esc(span.text)}</span>')
    if any(ids[p] == unk_id for p in span.positions):
        style = _PIECE_STYLE + _UNK_STYLE
        tip += ": not in the vocabulary"
    else:
        word = trace.word_ids[first] or 0
        style = _PIECE_STYLE + f"background:{_WORD_SHADES[word % 2][piece_in_word[first] % 2]};"
        if piece_in_word[first] > 0 and not as_read:  # as_read shows the piece's ## itself
            style += _CONTINUES_STYLE
    shown = _esc(span.text)
    if as_read:  # the tokens themselves, ## in grey, a hair apart
        shown = " ".join(f'<span style="color:#555">##</span>{_esc(trace.tokens[p][2:])}'
                         if trace.tokens[p].startswith("##") else _esc(trace.tokens[p]) for p in span.positions)
        style += "margin-left:2px;padding:1px 2px;"
    return f'<span class="bx-chip" title="{_esc(tip)}" style="{style}">{shown}</span>'


def _piece_index_in_word(trace: Trace) -> list[int]:
    """For each token, how many pieces of the same word come before it (0 for specials)."""
    out, prev, n = [], None, 0
    for s, w in zip(trace.sequence_ids, trace.word_ids):
        key = None if w is None else (s, w)
        n = n + 1 if key is not None and key == prev else 0
        out.append(n)
        prev = key
    return out


# ---------------------------------------------------------------- tables and counts


def _sentence_text(trace: Trace, seq: int | None) -> str:
    return trace.text if seq == 0 else (trace.text_pair or "") if seq == 1 else ""


def token_rows(trace: Trace, special_ids, unk_id: int) -> list[dict]:
    """One row per token: position, token, id, segment, ## continuation, special, word, characters, text."""
    special_ids = set(int(i) for i in special_ids) - {int(unk_id)}
    rows = []
    for i, tok in enumerate(trace.tokens):
        tid, seq, off = int(trace.input_ids[i]), trace.sequence_ids[i], trace.offsets[i]
        special = tid in special_ids
        rows.append({
            "position": i,
            "token": tok,
            "id": tid,
            "segment": SEGMENT_NAMES[int(trace.token_type_ids[i])],
            "## continuation": "yes" if tok.startswith(CONTINUATION_PREFIX) and not special else "no",
            "special": "yes" if special else "no",
            "word index": trace.word_ids[i],
            "characters": "" if off is None else f"{off[0]}-{off[1]}",
            "text": "" if off is None else _sentence_text(trace, seq)[off[0]:off[1]],
        })
    return rows


def token_counts(trace: Trace, special_ids, unk_id: int) -> dict[str, int]:
    """Words, word pieces, [UNK]s and all tokens (with [CLS]/[SEP]) of the encoded input."""
    words = {(s, w) for s, w in zip(trace.sequence_ids, trace.word_ids) if w is not None}
    ids = [int(i) for i in trace.input_ids]
    return {
        "words": len(words),
        "pieces": sum(1 for o in trace.offsets if o is not None),
        "unknown": sum(1 for i in ids if i == int(unk_id)),
        "tokens": len(ids),
        "special": sum(1 for i in ids if i in set(int(s) for s in special_ids) - {int(unk_id)}),
    }


def split_words(tokenizer: WordPieceTokenizer, text: str) -> list[WordSplit]:
    """`tokenizer.split_words`, except that special tokens typed in the text stay whole.

    `encode` matches [MASK] (and the other specials) in the raw text before normalising, so they
    never reach WordPiece; a split made without that would show "[MASK]" as "[", "mask", "]".
    Example: "the [MASK]." -> the | [MASK] (no steps) | .
    """
    specials = sorted(set(tokenizer.specials.values()), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(s) for s in specials))
    out: list[WordSplit] = []
    cursor = 0
    for m in pattern.finditer(text):
        if text[cursor:m.start()].strip():
            out += tokenizer.split_words(text[cursor:m.start()])
        out.append(WordSplit(m.group(), [m.group()], []))
        cursor = m.end()
    if text[cursor:].strip():
        out += tokenizer.split_words(text[cursor:])
    return out


def word_split_rows(splits: list[WordSplit], unk_token: str, special_tokens=(), sentence: str = "A") -> list[dict]:
    """One row per word: the word, its pieces, how many vocabulary look-ups it took, [UNK] or not."""
    rows = []
    for i, s in enumerate(splits):
        rows.append({
            "sentence": sentence,
            "word #": i,
            "word": s.word,
            "pieces": " ".join(s.pieces),
            "number of pieces": len(s.pieces),
            "look-ups": len(s.steps),
            "[UNK]": "yes" if s.pieces == [unk_token] and s.word != unk_token else "no",
            "special": "yes" if not s.steps and s.word in special_tokens else "no",
        })
    return rows


def step_rows(split: WordSplit) -> list[dict]:
    """The greedy longest-match-first look-ups of one word, in the order WordPiece made them."""
    return [{
        "try": n + 1,
        "characters": f"{st.start}-{st.end}",
        "candidate": st.candidate,
        "in vocabulary": "yes → piece" if st.found else "no",
    } for n, st in enumerate(split.steps)]


def pieces_per_word(splits: list[WordSplit]) -> dict[int, int]:
    """How many words became 1, 2, 3... pieces. Example: [the], [un, ##aff, ##able] -> {1: 1, 3: 1}."""
    out: dict[int, int] = {}
    for s in splits:
        out[len(s.pieces)] = out.get(len(s.pieces), 0) + 1
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- embeddings


def token_labels(tokens: list[str]) -> list[str]:
    """Axis labels that stay unique when a token repeats: "3: the". Plain text (escape before HTML)."""
    return [f"{i}: {t}" for i, t in enumerate(tokens)]


def embedding_parts(emb: EmbeddingParts) -> dict[str, np.ndarray]:
    """The (T, E) arrays of the input embedding, keyed as in EMBEDDING_PARTS.

    DistilBERT has no segment table (no "segment"); ALBERT adds its E -> H "projected" (T, H).
    """
    parts = {name: getattr(emb, name) for name in EMBEDDING_PARTS if name != "segment" or emb.has_segments}
    if emb.projected is not None:
        parts["projected"] = emb.projected
    return parts


def token_norms(emb: EmbeddingParts) -> dict[str, np.ndarray]:
    """L2 norm of each token's vector, for each of the five parts. Each (T,)."""
    return {name: np.linalg.norm(a, axis=-1) for name, a in embedding_parts(emb).items()}


def norm_rows(trace: Trace) -> list[dict]:
    """Per token: the five norms, plus mean and standard deviation before and after LayerNorm."""
    norms = token_norms(trace.embeddings)
    s, n = trace.embeddings.sum, trace.embeddings.normed  # (T, H) each
    rows = []
    for i, label in enumerate(token_labels(trace.tokens)):
        row = {"token": label, "segment": SEGMENT_NAMES[int(trace.token_type_ids[i])]}
        row.update({f"|{name}|": round(float(v[i]), 4) for name, v in norms.items()})
        row.update({"sum mean": round(float(s[i].mean()), 4), "sum std": round(float(s[i].std()), 4),
                    "normed mean": round(float(n[i].mean()), 4), "normed std": round(float(n[i].std()), 4)})
        rows.append(row)
    return rows


def segment_rows(trace: Trace) -> list[dict]:
    """Per segment: how many tokens use it, how many distinct segment vectors they got (1), its norm."""
    seg = trace.embeddings.segment  # (T, H)
    types = np.asarray(trace.token_type_ids)
    rows = []
    for s in sorted(set(types.tolist())):
        vecs = seg[types == s]  # (n_s, H)
        rows.append({
            "segment": SEGMENT_NAMES[s],
            "tokens": int(len(vecs)),
            "distinct vectors": int(len(np.unique(vecs, axis=0))),
            "L2 norm": round(float(np.linalg.norm(vecs[0])), 4),
        })
    return rows
