"""Which head the Lesson's attention step shows, and which word it reads from: the query word (the last word of
sentence A) and the head that links it clearly to one content word away from it, by meaning or syntax rather
than position. Pure functions of one analysis (`bert_core.analyze` with attentions); the question is
questions.attention_target."""

from __future__ import annotations

import numpy as np

from ..errors import BertCoreError
from ..finetune.qa import STOPWORDS

# A head "links" the query word to a content word when that word takes at least MIN_LINK of the query's attention
# and LINK_MARGIN times as much as any other content word away from it: a clear link, not a spread (a head giving
# 7% to one word beside 30% to [CLS] links nothing a class could see).
MIN_LINK = 0.2
LINK_MARGIN = 1.5
EXAMPLE = "She wrote a long letter to her mother yesterday."  # "yesterday" -> "wrote" on both bundled models


def attention_layer_head(m) -> tuple[int, int]:
    """The head the BERT versus GPT step draws under both masks: the middle layer's first head (0-based)."""
    return m.config.num_hidden_layers // 2, 0


def is_word(t) -> np.ndarray:
    """(T,) True where the token is a piece of a word of the text (no special token, no punctuation, and no
    [MASK] or [UNK] the text holds: they are not words)."""
    def special(tok: str) -> bool:
        return tok[:1] + tok[-1:] in ("[]", "<>")
    return np.array([w is not None and any(c.isalnum() for c in t.tokens[i]) and not special(t.tokens[i])
                     for i, w in enumerate(t.word_ids)])


def query_token(t) -> int:
    """The token the attention question reads from: the last word of sentence A, its first piece."""
    words = [i for i in np.flatnonzero(is_word(t)) if t.sequence_ids[i] == 0]
    if not words:
        raise BertCoreError("this question needs a word in the first sentence")
    return int(min(i for i in words if t.word_ids[i] == t.word_ids[words[-1]]))


def other_words(t, q: int) -> np.ndarray:
    """(T,) True at the tokens of the text's other words: no [CLS], [SEP], punctuation or the query word itself."""
    same = (np.asarray(t.sequence_ids) == t.sequence_ids[q]) & np.array([w == t.word_ids[q] for w in t.word_ids])
    return is_word(t) & ~same


def far_content(t, q: int) -> np.ndarray:
    """(T,) True at the content words a head must link the query to, the question's possible answers: a word of the
    text (no [CLS], [SEP] or punctuation), not the query's own word, not a stop word, and not next to the query
    word (a head that reads the previous or next token links by position alone)."""
    other = other_words(t, q)
    same = [i for i, w in enumerate(t.word_ids) if w == t.word_ids[q] and t.sequence_ids[i] == t.sequence_ids[q]]
    near = {min(same) - 1, max(same) + 1}
    content = np.array([t.tokens[i].lower().lstrip("#") not in STOPWORDS for i in range(len(t.tokens))])
    return other & content & ~np.isin(np.arange(len(t.tokens)), list(near))


def linking_head(t) -> tuple[int, int]:
    """(layer, head), 0-based, of the head that links the query word (`query_token`) most clearly to a content word
    away from it: of the heads whose largest weight among all the other words lands on such a word (`far_content`),
    with at least MIN_LINK there and LINK_MARGIN times any other such word's weight, the one with the largest
    weight on it; the first on a tie. A previous- or next-token head, or one that spreads its attention, is never
    chosen. Raises BertCoreError when the sentence has fewer than two such words or no head links clearly."""
    q = query_token(t)
    far, other = far_content(t, q), other_words(t, q)
    word = t.tokens[q]
    if far.sum() < 2:
        raise BertCoreError(f"this question needs two content words that are not next to “{word}” (the last word "
                            f"of the first sentence), e.g. “{EXAMPLE}”")
    rows = t.attentions[:, :, q, :]  # (L, nh, T)
    best = np.where(other, rows, -1.0).argmax(-1)  # (L, nh): the other word each head weighs most
    top = np.take_along_axis(rows, best[..., None], -1)[..., 0]  # (L, nh): its weight
    runner = np.where(far & (np.arange(rows.shape[-1]) != best[..., None]), rows, 0.0).max(-1)  # next far word
    clear = far[best] & (top >= MIN_LINK) & (top >= LINK_MARGIN * runner)
    if not clear.any():
        raise BertCoreError(f"no head of this model links “{word}” clearly to one content word away from it (at "
                            f"least {MIN_LINK:.0%} of its attention, {LINK_MARGIN:g} times any other; a model with "
                            "random weights has none)")
    layer, head = np.unravel_index(int(np.where(clear, top, -1.0).argmax()), top.shape)
    return int(layer), int(head)
