"""Why pre-train: the same task learned by the pretrained model, by the same network untrained, and without BERT.

Two pictures (the Fine-tuning page draws them; `python -m bert_core.finetune.finetune_eval --compare` prints them):

- side by side at one budget: `FineTuner(model, task, cfg)` and `FineTuner(untrained_copy(model), task, cfg)`
  (same data, settings and seed) and the bag-of-words baseline;
- sample efficiency: validation accuracy against training examples per class (2, 4, 8, ..., all). Each point
  fits a head exactly on features the frozen encoder computed once per text, a logistic regression

      min_W,b  mean_i -log softmax(W z_i + b)[y_i] + (l2 / 2) |W|^2,   z = (feature - mean) / std (train split)

  solved by L-BFGS (convex, so the fit converges whatever the size: no learning rate, no epochs to pick);
  the baseline fits the same regression on bag-of-words features. Each size averages a few random draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..model.classifiers import mean_pool
from ..model.loaded import LoadedModel
from ..model.untrained import untrained_copy
from .finetuning import _encode, _pad, default_pooling
from .tasks import BagOfWords, ClassificationTask

SIZES = (2, 4, 8, 16, 32, None)  # examples per class; None: the whole training set
HEAD_L2 = 1e-2  # on standardised features; fixed, not tuned on any validation set
BOW_L2 = 1e-3  # bow_baseline's usual pick on the built-in tasks
DRAWS = 5  # random subsets per size (one for "all")
Progress = Callable[[str, float], None]


@torch.no_grad()
def frozen_features(m: LoadedModel, texts, pooling: str | None = None, max_len: int = 64, batch_size: int = 64,
                    progress: Progress | None = None) -> np.ndarray:
    """(N, H) what a head reads from the frozen encoder: the mean of the tokens, or [CLS] through the pooler
    (the [CLS] vector itself when the model has no pooler)."""
    pooling = pooling or default_pooling(m)
    model = m.model.eval()
    rows = _encode(m.tokenizer, texts, min(max_len, m.max_length))
    out = []
    for s in range(0, len(rows), batch_size):
        ids, mask = _pad(rows[s:s + batch_size], m.tokenizer.pad_token_id)
        hidden = model.bert(ids, None, mask)  # (B, T, H)
        if pooling == "mean":
            out.append(mean_pool(hidden, mask))
        elif model.bert.pooler is not None:
            out.append(model.bert.pooler(hidden))
        else:
            out.append(hidden[:, 0])
        if progress:
            done = min(s + batch_size, len(rows))
            progress(f"encoding {done:,} of {len(rows):,} texts", done / len(rows))
    return torch.cat(out).numpy().astype(np.float32)


def fit_head(x: np.ndarray, y: np.ndarray, n_classes: int, l2: float = HEAD_L2) -> tuple[np.ndarray, ...]:
    """A logistic-regression head fitted exactly (L-BFGS) on standardised features: (mean, std, W, b)."""
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = torch.from_numpy(((x - mu) / sd).astype(np.float64))
    yt = torch.from_numpy(np.asarray(y, dtype=np.int64))
    W = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], lr=1, max_iter=500, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(z @ W + b, yt) + 0.5 * l2 * (W * W).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return mu, sd, W.detach().numpy(), b.detach().numpy()


def head_accuracy(head, x: np.ndarray, y: np.ndarray) -> float:
    """Share of `x` the fitted head labels right."""
    mu, sd, W, b = head
    return float(((((x - mu) / sd) @ W + b).argmax(1) == np.asarray(y)).mean())


def per_class_subset(labels, k: int | None, rng: np.random.Generator) -> np.ndarray:
    """Indices of k random training examples of each class (all of a class that has fewer; all when k is None)."""
    labels = np.asarray(labels)
    if k is None:
        return np.arange(len(labels))
    return np.sort(np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:k] for c in np.unique(labels)]))


@dataclass
class SampleEfficiency:
    """Validation accuracy against training examples per class, for the three learners."""

    sizes: list[int]  # examples per class actually used (the last: the whole training set, per class on average)
    labels: list[str]  # "2", "4", ..., "all"
    accuracy: dict[str, list[float]]  # learner -> mean validation accuracy per size
    spread: dict[str, list[float]]  # learner -> standard deviation over the draws
    draws: int


def sample_efficiency(m: LoadedModel, task: ClassificationTask, sizes=SIZES, draws: int = DRAWS, seed: int = 0,
                      pooling: str | None = None, max_len: int = 64, progress: Progress | None = None,
                      scratch: LoadedModel | None = None) -> SampleEfficiency:
    """Head-only accuracy of `m` and of its untrained copy (features cached once), and bag-of-words, per size.

    A size no smaller than the largest class's training count is left out (it would be "all" again, mislabelled).
    """
    pooling = pooling or default_pooling(m)
    scratch = scratch or untrained_copy(m, seed=seed)
    texts = [*task.train_texts, *task.valid_texts]
    n = len(task.train_texts)
    feats = {}
    for i, (name, model) in enumerate((("pretrained", m), ("from scratch", scratch))):
        def part(msg, f, i=i, name=name):
            if progress:
                progress(f"{name}: {msg}", (i + f) / 2 * 0.8)
        x = frozen_features(model, texts, pooling, max_len, progress=part)
        feats[name] = (x[:n], x[n:])
    ytr, yva = np.asarray(task.train_labels), np.asarray(task.valid_labels)
    C = len(task.labels)
    largest = int(np.bincount(ytr, minlength=C).max())
    sizes = [k for k in sizes if k is None or k < largest]  # k >= every class's count would repeat "all"
    acc = {k: [] for k in ("pretrained", "from scratch", "bag of words")}
    spread = {k: [] for k in acc}
    used, names = [], []
    for j, k in enumerate(sizes):
        if progress:
            progress(f"fitting heads on {k or 'all'} examples per class", 0.8 + 0.2 * j / len(sizes))
        rng = np.random.default_rng(seed + j)
        runs = {key: [] for key in acc}
        for _ in range(1 if k is None else draws):
            idx = per_class_subset(ytr, k, rng)
            for name, (xtr, xva) in feats.items():
                runs[name].append(head_accuracy(fit_head(xtr[idx], ytr[idx], C), xva, yva))
            bow = BagOfWords.fit([task.train_texts[i] for i in idx], ytr[idx], C, l2=BOW_L2)
            runs["bag of words"].append(float((bow.predict(task.valid_texts) == yva).mean()))
        for key in acc:
            acc[key].append(float(np.mean(runs[key])))
            spread[key].append(float(np.std(runs[key])))
        used.append(k if k is not None else round(n / C))
        names.append(str(k) if k is not None else "all")
    if progress:
        progress("done", 1.0)
    return SampleEfficiency(used, names, acc, spread, draws)


__all__ = ["DRAWS", "SIZES", "SampleEfficiency", "fit_head", "frozen_features", "head_accuracy", "per_class_subset",
           "sample_efficiency"]
