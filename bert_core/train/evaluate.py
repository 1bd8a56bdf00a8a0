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
import gzip
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
from .trainer import mlm_line_scores, mlm_metrics

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


def cloze_top5(m: LoadedModel, text: str) -> list[str]:
    """The model's five best words at the one [MASK] of `text`, best first."""
    (guesses,) = analyze(m, text, top_k=5).predictions.values()
    return [w for w, _ in guesses]


def cloze_counts(answers: list[str], guesses: list[list[str]]) -> dict:
    """Top-1 / top-5 share of sentences whose expected word is the first guess / among the five (lower-cased)."""
    top1 = sum(words[0].lower() == a.lower() for a, words in zip(answers, guesses))
    top5 = sum(a.lower() in (w.lower() for w in words) for a, words in zip(answers, guesses))
    return {"sentences": len(answers), "top1": top1 / len(answers), "top5": top5 / len(answers)}


def everyday_cloze(m: LoadedModel, path: Path = CLOZE_FILE) -> dict:
    """Top-1 / top-5 of the expected word at the [MASK] of each sentence (lower-cased comparison)."""
    rows = [{"text": text, "answer": answer, "top5": cloze_top5(m, text)} for text, answer in read_cloze(path)]
    return {**cloze_counts([r["answer"] for r in rows], [r["top5"] for r in rows]), "rows": rows}


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
    return nsp_right_of(nsp_probabilities(m, [(a, b) for a, b, _ in pairs]).tolist(), pairs)


def nsp_right_of(p_next: list[float], pairs: list[tuple[str, str, int]]) -> list[bool]:
    """`nsp_right` from each pair's P(IsNext)."""
    return [(float(p) < 0.5) == bool(label) for p, (_, _, label) in zip(p_next, pairs)]


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
    return everyday_nsp_counts(nsp_right(m, pairs), pairs)


def everyday_nsp_counts(right: list[bool], pairs: list[tuple[str, str, int]]) -> dict:
    """`everyday_nsp`'s numbers from each pair's right / wrong: the accuracy and its IsNext / NotNext halves."""
    by_label = [[r for r, (*_, label) in zip(right, pairs) if label == k] for k in (0, 1)]
    return {"pairs": len(pairs), "accuracy": sum(right) / len(pairs),
            "is_next": sum(by_label[0]) / len(by_label[0]), "not_next": sum(by_label[1]) / len(by_label[1])}


CLOZE_LISTS = {"everyday_cloze": CLOZE_FILE, "everyday_cloze_second": CLOZE_SECOND, "everyday_cloze_third": CLOZE_THIRD}
MLM_SETS = ("heldout_wordnet", "heldout_brown", "heldout_previous")
NSP_SETS = ("nsp", "everyday_nsp", "everyday_nsp_second")
ITEMS_DIR = CLOZE_FILE.with_name("evaluation")  # each model's per-item results, written with the docs' numbers


def everyday_cloze_lists(m: LoadedModel) -> dict[str, dict]:
    """Top-1 / top-5 on each everyday cloze list and on the three together (right answers added, over 190)."""
    return _with_all_lists({name: {k: v for k, v in everyday_cloze(m, path).items() if k != "rows"}
                            for name, path in CLOZE_LISTS.items()})


def _with_all_lists(out: dict[str, dict]) -> dict[str, dict]:
    """The three lists' counts and, under everyday_cloze_all, their right answers added over all sentences."""
    n = sum(out[name]["sentences"] for name in CLOZE_LISTS)
    right = {k: sum(out[name][k] * out[name]["sentences"] for name in CLOZE_LISTS) for k in ("top1", "top5")}
    out["everyday_cloze_all"] = {"sentences": n, **{k: v / n for k, v in right.items()}}
    return out


def mlm_sets() -> dict[str, list[str]]:
    """The held-out MLM sets' lines, in `MLM_SETS`' order (the split is fixed; the seed only draws the masks)."""
    _, _, heldout_lines, heldout_docs = _corpus()
    return {"heldout_wordnet": heldout_lines, "heldout_brown": [s for d in heldout_docs for s in d.sentences],
            "heldout_previous": previous_heldout_lines()}


def nsp_sets(seed: int = 0) -> dict[str, list[tuple[str, str, int]]]:
    """The NSP sets' (A, B, label) pairs, in `NSP_SETS`' order."""
    return {"nsp": nsp_pairs(seed), "everyday_nsp": everyday_nsp_pairs(seed, PAIRS_FILE),
            "everyday_nsp_second": everyday_nsp_pairs(seed, PAIRS_SECOND)}


def item_results(source: str | None = None, seed: int = 0) -> dict:
    """Every item's own result, from which `report_from_items` computes docs/models.md's numbers.

    MLM sets: each line's [masked tokens, summed loss, top-1 hits, top-5 hits]; cloze lists: each sentence's five
    best words; NSP sets (a model with an NSP head): each pair's P(IsNext). Rounded to 6 / 8 decimals, far below
    what the table prints.
    """
    m = load_model(source)
    out: dict = {"seed": seed}
    for name, lines in mlm_sets().items():
        out[name] = [[n, round(loss, 6), t1, t5] for n, loss, t1, t5 in mlm_line_scores(m.model, m.tokenizer, lines,
                                                                                          seed=seed)]
    for name, path in CLOZE_LISTS.items():
        out[name] = [cloze_top5(m, text) for text, _ in read_cloze(path)]
    if m.model.has_nsp:
        for name, pairs in nsp_sets(seed).items():
            out[name] = [round(p, 8) for p in nsp_probabilities(m, [(a, b) for a, b, _ in pairs]).tolist()]
    return out


def report_from_items(items: dict) -> dict:
    """`bundled_report`'s measurements, computed from `item_results`' per-item results."""
    report = {name: mlm_metrics(items[name]) for name in MLM_SETS}
    report.update(_with_all_lists({name: cloze_counts([a for _, a in read_cloze(path)], items[name])
                                   for name, path in CLOZE_LISTS.items()}))
    pairs = nsp_sets(items["seed"])
    right = {name: nsp_right_of(items[name], pairs[name]) for name in NSP_SETS if name in items}
    report["nsp"] = {"pairs": len(pairs["nsp"]), "accuracy": sum(right["nsp"]) / len(pairs["nsp"])} if right else None
    for name in NSP_SETS[1:]:
        report[name] = everyday_nsp_counts(right[name], pairs[name]) if right else None
    return report


def items_path(name: str) -> Path:
    """Where `python -m bert_core.train.evaluate NAME --markdown --write-items` keeps a bundled model's items."""
    return ITEMS_DIR / f"{name}.json.gz"


def read_items(name: str) -> dict:
    with gzip.open(items_path(name), "rt", encoding="utf-8") as f:
        return json.load(f)


def bundled_report(source: str | None = None, seed: int = 0) -> dict:
    """Every measurement docs/models.md reports, for the model `source` (the default offline model when None)."""
    return report_from_items(item_results(source, seed))


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
    ap.add_argument("--write-items", action="store_true",
                    help="a bundled model: also write each item's result to tests/data/evaluation/MODEL.json.gz "
                         "(tests/model/test_bundled.py checks the docs' table and a rerun against it)")
    ap.add_argument("--cloze-rows", action="store_true", help="also print every cloze sentence's top-5")
    args = ap.parse_args(argv)
    name = args.model or "bundled-minilm"
    if args.write_items and name not in ("bundled", "bundled-minilm"):
        ap.error("--write-items is for the two bundled models, whose numbers docs/models.md prints")
    items = item_results(args.model, args.seed)
    report = report_from_items(items)
    if args.write_items:
        ITEMS_DIR.mkdir(exist_ok=True)
        # mtime=0 and one key order: the same results give the same bytes, so a rerun leaves git with no change.
        with open(items_path(name), "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(json.dumps(items, separators=(",", ":")).encode())
    if args.cloze_rows:
        for (text, answer), words in zip((r for path in CLOZE_LISTS.values() for r in read_cloze(path)),
                                         (w for key in CLOZE_LISTS for w in items[key])):
            print(f"{answer:>12}  {' / '.join(words)}  <- {text}")
    print(markdown(report) if args.markdown else json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
