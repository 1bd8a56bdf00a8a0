"""Measure a model on the built-in corpus's held-out lines: `python -m bert_core.evaluate [model]`.

Prints MLM loss, perplexity, and top-1 / top-5 accuracy on masked positions (one seeded 15%
draw per held-out line), as JSON. With no argument it measures the bundled model; the README's
numbers are what this prints.
"""

from __future__ import annotations

import argparse
import json

from .corpus import load_builtin_corpus, split_heldout
from .pretrained import load_model
from .training import evaluate_mlm


def heldout_metrics(source: str | None = None, seed: int = 0) -> dict[str, float]:
    """Held-out metrics of the model `source` (bundled when None)."""
    m = load_model(source)
    _, heldout = split_heldout(load_builtin_corpus(), fraction=0.02, seed=0)
    return evaluate_mlm(m.model, m.tokenizer, heldout, seed=seed)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None, help="a local folder or hub id; default: bundled")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps(heldout_metrics(args.model, args.seed), indent=2))


if __name__ == "__main__":
    main()
