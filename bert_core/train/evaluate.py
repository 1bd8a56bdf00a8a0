"""Measure a model as docs/models.md reports it: `python -m bert_core.train.evaluate [model] [--markdown]`.

Four measurements, each seeded and in a fixed order, so the same model prints the same numbers:
- held-out MLM on the bundled corpus's held-out split (cleaned WordNet lines and Brown sentences never
  trained on; one seeded 15% draw per line): loss, perplexity, top-1 / top-5 on the masked positions;
- the same on the previous bundled model's held-out set (uncleaned WordNet glosses), for comparison,
  minus the glosses whose cleaned form is in today's training lines (cleaning changes a line's hash,
  so about 10% of that set moved to the training side; they are left out for every model);
- everyday cloze: `tests/data/everyday_cloze.tsv`, ordinary sentences with one [MASK] and the expected
  word (written for this project, not from the corpus): is it the top-1 / among the top-5? The same on two
  later lists (`everyday_cloze_dev.tsv`, `everyday_cloze_third.tsv`), and on all three together;
- next-sentence prediction on held-out Brown pairs: a held-out sentence with the sentence that really
  follows it (IsNext), and the same sentence with a random sentence of another text (NotNext);
- next-sentence prediction on everyday pairs: `tests/data/everyday_pairs.tsv` (written for this project),
  each A with its own B (IsNext) and with another pair's B (NotNext, a seeded shuffle without fixed points);
  the same on a second list (`everyday_pairs_second.tsv`).
"""

from __future__ import annotations

import argparse
import functools
import json
import random
from pathlib import Path

import torch

from ..inspect.analysis import analyze
from ..model.loaded import LoadedModel
from ..model.loading import load_model
from .corpus import (
    _brown,
    _heldout_score,
    clean_gloss,
    load_builtin_corpus,
    load_pretraining_corpus,
    split_heldout,
)
from .trainer import evaluate_mlm

CLOZE_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "everyday_cloze.tsv"
PAIRS_FILE = CLOZE_FILE.with_name("everyday_pairs.tsv")
# The later lists, each written before the model stage it first measured (bundled_minilm/MODEL.md says when).
CLOZE_SECOND = CLOZE_FILE.with_name("everyday_cloze_dev.tsv")
CLOZE_THIRD = CLOZE_FILE.with_name("everyday_cloze_third.tsv")
PAIRS_SECOND = CLOZE_FILE.with_name("everyday_pairs_second.tsv")
HELDOUT_FRACTION = 0.02


@functools.lru_cache(maxsize=1)
def _corpus() -> tuple[list[str], list, list[str], list]:
    """`load_pretraining_corpus` at the evaluation's split, read once per process (the lists are only read)."""
    return load_pretraining_corpus(seed=0, fraction=HELDOUT_FRACTION)


def previous_heldout_lines() -> list[str]:
    """The previous model's held-out glosses (original WordNet split) that no model here trained on."""
    _, heldout = split_heldout(load_builtin_corpus(), fraction=HELDOUT_FRACTION, seed=0)
    trained = set(_corpus()[0])
    return [g for g in heldout if clean_gloss(g) not in trained]


def heldout_metrics(source: str | None = None, seed: int = 0) -> dict[str, float]:
    """Held-out MLM metrics of the model `source` (the default offline model when None) on `previous_heldout_lines`."""
    m = load_model(source)
    return evaluate_mlm(m.model, m.tokenizer, previous_heldout_lines(), seed=seed)


def _two_columns(path: Path) -> list[tuple[str, str]]:
    """The rows of a two-column, tab-separated file, stripped; lines starting with # are comments."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            left, right = line.split("\t")
            rows.append((left.strip(), right.strip()))
    return rows


def read_cloze(path: Path = CLOZE_FILE) -> list[tuple[str, str]]:
    """(sentence, expected word) pairs."""
    return _two_columns(path)


def everyday_cloze(m: LoadedModel, path: Path = CLOZE_FILE) -> dict:
    """Top-1 / top-5 of the expected word at the [MASK] of each sentence (lower-cased comparison)."""
    rows, top1, top5 = [], 0, 0
    for text, answer in read_cloze(path):
        t = analyze(m, text, top_k=5)
        (guesses,) = t.predictions.values()
        words = [w for w, _ in guesses]
        top1 += words[0].lower() == answer.lower()
        top5 += answer.lower() in (w.lower() for w in words)
        rows.append({"text": text, "answer": answer, "top5": words})
    n = len(rows)
    return {"sentences": n, "top1": top1 / n, "top5": top5 / n, "rows": rows}


def nsp_pairs(seed: int = 0, fraction: float = HELDOUT_FRACTION) -> list[tuple[str, str, int]]:
    """(A, B, label) for every held-out Brown sentence A that has a successor: label 0 = IsNext, 1 = NotNext.

    Each A appears twice: with its real next sentence, and with a random sentence of another text.
    """
    docs = _brown()
    rng = random.Random(seed)
    pairs = []
    for d_i, d in enumerate(docs):
        for i, a in enumerate(d.sentences[:-1]):
            if _heldout_score(a, seed) >= fraction:
                continue
            pairs.append((a, d.sentences[i + 1], 0))
            other = docs[(d_i + rng.randrange(1, len(docs))) % len(docs)]
            pairs.append((a, rng.choice(other.sentences), 1))
    return pairs


@torch.no_grad()
def nsp_probabilities(m: LoadedModel, pairs: list[tuple[str, str]], batch_size: int = 64) -> torch.Tensor:
    """(N,) P(IsNext) for each (A, B): softmax of the NSP logits on the pooled [CLS], batched with padding.

    Batches hold pairs of similar length (sorted; the result is put back in the pairs' order): a pair's output does
    not depend on its batch, and Brown pairs padded to their batch's longest were 2.4x the real tokens."""
    model, tok = m.model, m.tokenizer
    model.eval()
    all_encs = [tok.encode(a, b) for a, b in pairs]
    order = sorted(range(len(pairs)), key=lambda i: len(all_encs[i].input_ids))
    out = []
    for start in range(0, len(pairs), batch_size):
        encs = [all_encs[i] for i in order[start:start + batch_size]]
        T = max(len(e.input_ids) for e in encs)
        ids = torch.full((len(encs), T), tok.pad_token_id, dtype=torch.long)
        types, attn = torch.zeros_like(ids), torch.zeros_like(ids)
        for r, e in enumerate(encs):
            n = len(e.input_ids)
            ids[r, :n], types[r, :n], attn[r, :n] = torch.from_numpy(e.input_ids), torch.from_numpy(e.token_type_ids), 1
        pooled = model(ids, types, attn, trace=True).pooled  # (B, H): tanh(W h_[CLS] + b)
        out.append(model.nsp_logits(pooled).softmax(-1)[:, 0])
    p_next = torch.empty(len(pairs))
    if pairs:
        p_next[torch.tensor(order)] = torch.cat(out)
    return p_next


def nsp_right(m: LoadedModel, pairs: list[tuple[str, str, int]]) -> list[bool]:
    """For each (A, B, label): does argmax(P(IsNext), P(NotNext)) give the label (0 = IsNext, 1 = NotNext)?"""
    p_next = nsp_probabilities(m, [(a, b) for a, b, _ in pairs])
    return [(float(p) < 0.5) == bool(label) for p, (_, _, label) in zip(p_next, pairs)]


def nsp_accuracy(m: LoadedModel, seed: int = 0) -> dict | None:
    """Accuracy of argmax(P(IsNext), P(NotNext)) on `nsp_pairs`; None for a model without NSP head."""
    if not m.model.has_nsp:
        return None
    pairs = nsp_pairs(seed)
    return {"pairs": len(pairs), "accuracy": sum(nsp_right(m, pairs)) / len(pairs)}


def read_pairs(path: Path = PAIRS_FILE) -> list[tuple[str, str]]:
    """(A, the sentence that follows A) rows."""
    return _two_columns(path)


def everyday_nsp_pairs(seed: int = 0, path: Path = PAIRS_FILE) -> list[tuple[str, str, int]]:
    """(A, B, label) from the everyday pairs: each A with its own B (0 = IsNext) and another row's B (1 = NotNext).

    The other row is a seeded random derangement (a shuffle in which no row keeps its own B).
    """
    rows = read_pairs(path)
    rng = random.Random(seed)
    order = list(range(len(rows)))
    while any(i == j for i, j in enumerate(order)):
        rng.shuffle(order)
    return [p for (a, b), j in zip(rows, order) for p in ((a, b, 0), (a, rows[j][1], 1))]


def everyday_nsp(m: LoadedModel, seed: int = 0, path: Path = PAIRS_FILE) -> dict | None:
    """Accuracy of argmax(P(IsNext), P(NotNext)) on `everyday_nsp_pairs`; None for a model without NSP head."""
    if not m.model.has_nsp:
        return None
    pairs = everyday_nsp_pairs(seed, path)
    right = nsp_right(m, pairs)
    by_label = [[r for r, (*_, label) in zip(right, pairs) if label == k] for k in (0, 1)]
    return {"pairs": len(pairs), "accuracy": sum(right) / len(pairs),
            "is_next": sum(by_label[0]) / len(by_label[0]), "not_next": sum(by_label[1]) / len(by_label[1])}


def everyday_cloze_lists(m: LoadedModel) -> dict[str, dict]:
    """Top-1 / top-5 on each everyday cloze list and on the three together (right answers added, over 190)."""
    names = ("everyday_cloze", "everyday_cloze_second", "everyday_cloze_third")
    out = {name: {k: v for k, v in everyday_cloze(m, path).items() if k != "rows"}
           for name, path in zip(names, (CLOZE_FILE, CLOZE_SECOND, CLOZE_THIRD))}
    n = sum(out[name]["sentences"] for name in names)
    out["everyday_cloze_all"] = {"sentences": n, **{k: sum(out[name][k] * out[name]["sentences"] for name in names) / n
                                                    for k in ("top1", "top5")}}
    return out


def bundled_report(source: str | None = None, seed: int = 0) -> dict:
    """Every measurement docs/models.md reports, for the model `source` (the default offline model when None)."""
    m = load_model(source)
    _, _, heldout_lines, heldout_docs = _corpus()
    brown = [s for d in heldout_docs for s in d.sentences]
    return {
        "heldout_wordnet": evaluate_mlm(m.model, m.tokenizer, heldout_lines, seed=seed),
        "heldout_brown": evaluate_mlm(m.model, m.tokenizer, brown, seed=seed),
        "heldout_previous": heldout_metrics(source, seed),
        **everyday_cloze_lists(m),
        "nsp": nsp_accuracy(m, seed),
        "everyday_nsp": everyday_nsp(m, seed),
        "everyday_nsp_second": everyday_nsp(m, seed, PAIRS_SECOND),
    }


def markdown(report: dict) -> str:
    """docs/models.md's evaluation table."""
    rows = ["| set | masked tokens | loss | perplexity | top-1 | top-5 |", "| --- | --- | --- | --- | --- | --- |"]
    for key, name in (("heldout_wordnet", "held-out WordNet lines (cleaned)"),
                      ("heldout_brown", "held-out Brown sentences"),
                      ("heldout_previous", "previous model's held-out glosses (uncleaned), not trained on")):
        r = report[key]
        rows.append(f"| {name} | {r['masked_tokens']:,} | {r['loss']:.4f} | {r['perplexity']:.2f} | "
                    f"{100 * r['top1']:.2f}% | {100 * r['top5']:.2f}% |")
    for key, name in (("everyday_cloze", "everyday cloze"), ("everyday_cloze_second", "everyday cloze, second list"),
                      ("everyday_cloze_third", "everyday cloze, third list"),
                      ("everyday_cloze_all", "everyday cloze, the three lists")):
        c = report[key]
        rows.append(f"| {name} ({c['sentences']} sentences) | {c['sentences']} | | | "
                    f"{100 * c['top1']:.2f}% | {100 * c['top5']:.2f}% |")
    nsp = report["nsp"]
    nsp_row = "no NSP head" if nsp is None else f"{100 * nsp['accuracy']:.2f}% of {nsp['pairs']:,} held-out pairs"
    for key, name in (("everyday_nsp", "everyday pairs"), ("everyday_nsp_second", "everyday pairs of the second list")):
        every = report.get(key)
        if every is not None:
            nsp_row += (f"; {100 * every['accuracy']:.2f}% of {every['pairs']} {name} (IsNext "
                        f"{100 * every['is_next']:.0f}% right, NotNext {100 * every['not_next']:.0f}%)")
    return "\n".join(rows) + f"\n\nNext-sentence prediction: {nsp_row}.\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None,
                    help="bundled (the tiny one), bundled-minilm, a local folder or hub id; default: bundled-minilm")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", action="store_true", help="print docs/models.md's table")
    ap.add_argument("--cloze-rows", action="store_true", help="also print every cloze sentence's top-5")
    args = ap.parse_args(argv)
    report = bundled_report(args.model, args.seed)
    if args.cloze_rows:
        for r in everyday_cloze(load_model(args.model))["rows"]:
            print(f"{r['answer']:>12}  {' / '.join(r['top5'])}  <- {r['text']}")
    print(markdown(report) if args.markdown else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
