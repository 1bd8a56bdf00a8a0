"""How a corpus becomes training batches: token ids, NSP pairs (IsNext / NotNext), padding, special-token masks."""

from __future__ import annotations

import bisect

import torch

from ..errors import BertCoreError
from ..model.tokenization import WordPieceTokenizer

# Model sizes a user may pick for live training: small enough to step several times a second.


class TextDataset:
    """Corpus lines (and, optionally, documents of ordered sentences) as token ids.

    Without documents, NSP pairs a line with the next line of the corpus. With documents (the
    bundled model's Brown texts), a row is either a single line (no NSP label) or a sentence of a
    document with its real successor or a random sentence (the paper's 50/50 IsNext/NotNext).
    """

    POOL_BATCHES = 16  # document mode: rows of this many batches are sorted by length together

    def __init__(self, lines: list[str], tokenizer: WordPieceTokenizer, seq_len: int,
                 documents: list[list[str]] | None = None, same_text_negatives: float = 0.0,
                 genres: list[str] | None = None, same_genre_negatives: float = 0.0, random_rows: bool = False):
        # random_rows: each batch is lines drawn at random; else neighbours in length order (little padding,
        # but a corpus of a few sentence patterns then gets batches of one pattern each, which slows learning).
        self.random_rows = random_rows
        ids = tokenizer.encode_batch_plain(list(lines))
        self.lines = [x[: seq_len - 3] for x in ids if x]  # room for [CLS] A [SEP] (B [SEP])
        self.tok = tokenizer
        self.seq_len = seq_len
        # Document sentences, flattened; next_of[i] is the sentence after i in its document, or -1.
        self.sents: list[list[int]] = []
        next_of: list[int] = []
        self.doc_span: list[tuple[int, int]] = []  # [start, end) of each sentence's document in self.sents
        p_text, p_genre = same_text_negatives, same_genre_negatives
        if not (min(p_text, p_genre) >= 0 and p_text + p_genre <= 1):
            raise BertCoreError("the same-text and same-genre shares of NotNext pairs are >= 0 and add up to <= 1")
        if p_genre and (genres is None or len(genres) != len(documents or [])):
            raise BertCoreError("same-genre negatives need one genre per document")
        # Sentences of each genre, in increasing order (a document's sentences are one block of its genre's list).
        self.genre_pool: dict[str, list[int]] = {}
        self.sent_genre: list[str] = []
        for d, doc in enumerate(documents or []):
            doc_ids = [x[: seq_len - 3] for x in tokenizer.encode_batch_plain(list(doc)) if x]
            base = len(self.sents)
            self.sents += doc_ids
            next_of += [base + k + 1 for k in range(len(doc_ids) - 1)] + ([-1] if doc_ids else [])
            self.doc_span += [(base, base + len(doc_ids))] * len(doc_ids)
            if genres is not None:
                self.genre_pool.setdefault(genres[d], []).extend(range(base, base + len(doc_ids)))
                self.sent_genre += [genres[d]] * len(doc_ids)
        # Share of NotNext rows whose B is another sentence of A's own text (not A, not its successor):
        # it shares A's topic, genre and style, so only coherence tells it from the real next sentence.
        self.same_text_negatives = same_text_negatives
        # Share whose B comes from another text of A's genre (Brown's fiction with fiction, news with news):
        # register and style match, so topic is what tells them apart, as in two everyday sentences.
        self.same_genre_negatives = same_genre_negatives
        self.anchors = [i for i, j in enumerate(next_of) if j >= 0]
        self.next_of = next_of
        if len(self.lines) + len(self.sents) < 2:
            raise BertCoreError("the corpus needs at least two non-empty lines")
        self.n_tokens = sum(len(x) for x in self.lines) + sum(len(x) for x in self.sents)
        # Line indices sorted by length: a batch of neighbours in this order needs almost no
        # padding, so compute goes to real tokens (one sentence per input, as the pages show).
        self.by_length = sorted(range(len(self.lines)), key=lambda i: len(self.lines[i]))
        self.queue: list[list[tuple[int, int, int]]] = []  # document mode: batches drawn, not yet used

    def batch(self, batch_size: int, g: torch.Generator, nsp: bool):
        """A padded batch: ids, segments, attention mask, special mask, NSP labels (-100: none)."""
        if self.sents:
            if not self.queue:
                self._fill_queue(batch_size, g, nsp)
            return self._collate(self.queue.pop())
        n = len(self.lines)
        if nsp or self.random_rows:
            idx = torch.randint(n, (batch_size,), generator=g).tolist()
        else:
            start = int(torch.randint(max(n - batch_size, 0) + 1, (), generator=g))
            idx = self.by_length[start:start + batch_size]
        rows, segs, nsp_labels = [], [], []
        cls, sep = self.tok.cls_token_id, self.tok.sep_token_id
        for i in idx:
            a = self.lines[i]
            if not nsp:
                rows.append([cls, *a, sep])
                segs.append([0] * (len(a) + 2))
                continue
            # Half the time the true next line, half a random one (label 0 = is next).
            is_next = bool(torch.rand((), generator=g) < 0.5)
            j = (i + 1) % n if is_next else int(torch.randint(n, (), generator=g))
            b = self.lines[j]
            budget = self.seq_len - 3
            a, b = a[: max(budget - min(len(b), budget // 2), 1)], b
            b = b[: budget - len(a)]
            rows.append([cls, *a, sep, *b, sep])
            segs.append([0] * (len(a) + 2) + [1] * (len(b) + 1))
            nsp_labels.append(0 if is_next else 1)
        return self._pad(rows, segs, torch.tensor(nsp_labels) if nsp else None)

    def _fill_queue(self, batch_size: int, g: torch.Generator, nsp: bool) -> None:
        """Draw POOL_BATCHES batches of rows, sort them by length, cut, and queue in random order.

        A row is (kind, i, j): kind 0 = single line i; kind 1 = sentence i then sentence j, is next;
        kind 2 = sentence i then random sentence j, not next. Sorting a pool by length keeps padding
        low without sorting the whole corpus (batches stay random samples).
        """
        S, A = len(self.lines), len(self.anchors)
        rows: list[tuple[int, int, int]] = []
        for k in torch.randint(S + A, (batch_size * self.POOL_BATCHES,), generator=g).tolist():
            if k < S:
                rows.append((0, k, -1))
            elif not nsp:
                rows.append((0, -1 - self.anchors[k - S], -1))  # a document sentence alone
            elif bool(torch.rand((), generator=g) < 0.5):
                i = self.anchors[k - S]
                rows.append((1, i, self.next_of[i]))
            else:
                i = self.anchors[k - S]
                rows.append((2, i, self._not_next(i, g)))
        rows.sort(key=self._row_len)
        batches = [rows[b:b + batch_size] for b in range(0, len(rows), batch_size)]
        self.queue = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]

    def _not_next(self, i: int, g: torch.Generator) -> int:
        """A NotNext sentence for sentence i: from i's own text, from another text of its genre, or from anywhere.

        Drawn in that order with the shares `same_text_negatives` and `same_genre_negatives` (the second as a
        share of all NotNext rows, so it is drawn with probability P_genre / (1 - P_text) once the first missed).
        """
        lo, hi = self.doc_span[i]
        p_text, p_genre = self.same_text_negatives, self.same_genre_negatives
        if p_text and hi - lo > 2 and bool(torch.rand((), generator=g) < p_text):
            j = lo + int(torch.randint(hi - lo - 2, (), generator=g))  # uniform over the text minus i, i + 1
            j += j >= i
            j += j >= i + 1
            return j
        if p_genre and bool(torch.rand((), generator=g) * (1 - p_text) < p_genre):
            pool = self.genre_pool[self.sent_genre[i]]
            n = len(pool) - (hi - lo)  # the genre's sentences minus A's own text
            if n > 0:
                k = int(torch.randint(n, (), generator=g))
                own = bisect.bisect_left(pool, lo)  # A's text is pool[own:own + (hi - lo)]
                return pool[k + (hi - lo) * (k >= own)]
        return int(torch.randint(len(self.sents), (), generator=g))

    def _row_len(self, row: tuple[int, int, int]) -> int:
        kind, i, j = row
        if kind == 0:
            return len(self.lines[i]) if i >= 0 else len(self.sents[-1 - i])
        return min(len(self.sents[i]) + len(self.sents[j]), self.seq_len - 3)

    def _collate(self, spec: list[tuple[int, int, int]]):
        cls, sep = self.tok.cls_token_id, self.tok.sep_token_id
        rows, segs, labels = [], [], []
        for kind, i, j in spec:
            if kind == 0:
                a = self.lines[i] if i >= 0 else self.sents[-1 - i]
                rows.append([cls, *a, sep])
                segs.append([0] * (len(a) + 2))
                labels.append(-100)
                continue
            a, b = self.sents[i], self.sents[j]
            budget = self.seq_len - 3
            a = a[: max(budget - min(len(b), budget // 2), 1)]
            b = b[: budget - len(a)]
            rows.append([cls, *a, sep, *b, sep])
            segs.append([0] * (len(a) + 2) + [1] * (len(b) + 1))
            labels.append(0 if kind == 1 else 1)
        return self._pad(rows, segs, torch.tensor(labels))

    def _pad(self, rows, segs, labels):
        cls, sep = self.tok.cls_token_id, self.tok.sep_token_id
        # A corpus with fewer lines than batch_size gives a smaller batch, not rows of padding.
        T, pad = max(len(r) for r in rows), self.tok.pad_token_id
        # Padded as Python lists, then one tensor each: one torch.tensor call per row cost more than the
        # tiny farm model's whole forward pass.
        ids = torch.tensor([row + [pad] * (T - len(row)) for row in rows], dtype=torch.long)  # (B, T)
        types = torch.tensor([seg + [0] * (T - len(seg)) for seg in segs], dtype=torch.long)
        attn = torch.tensor([[1] * len(row) + [0] * (T - len(row)) for row in rows], dtype=torch.long)
        special = torch.ones_like(ids)
        special[(ids != cls) & (ids != sep) & (attn == 1)] = 0
        return ids, types, attn, special, labels


def pad_rows(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids of different lengths -> (B, T) ids padded with `pad_id` and the (B, T) 0/1 attention mask."""
    T = max(map(len, rows))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = torch.tensor(row)
        attn[r, : len(row)] = 1
    return ids, attn


def continuation_table(tokenizer: WordPieceTokenizer) -> torch.Tensor:
    """(V,) bool: True for the pieces that continue a word (WordPiece's "##" pieces, or its own prefix)."""
    if tokenizer.scheme != "wordpiece":  # BPE marks where a word starts (Ġ), Unigram too (▁): not read here
        raise BertCoreError(f"whole-word masking reads WordPiece's continuation pieces; this tokenizer is "
                            f"{tokenizer.scheme}")
    prefix = tokenizer.continuation_prefix
    table = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)
    for piece, i in tokenizer.vocab.items():
        if piece.startswith(prefix) and i < len(table):
            table[i] = True
    return table


def batch_word_ids(ids: torch.Tensor, special: torch.Tensor, continues: torch.Tensor) -> torch.Tensor:
    """(B, T) ids -> (B, T) word numbers per row (pieces of one word share one), -1 at specials and padding.

    A word starts at every ordinary piece that is not a "##" piece (or that follows a special token).
    Example: [CLS] the un ##aff ##able cat [SEP] -> -1 0 1 1 1 2 -1.
    """
    special = special.bool()
    after_special = torch.ones_like(special)
    after_special[:, 1:] = special[:, :-1]
    starts = ~special & (~continues[ids] | after_special)  # (B, T)
    words = starts.long().cumsum(1) - 1
    return words.masked_fill(special, -1)
