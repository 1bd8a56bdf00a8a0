"""Head only, fit exactly: a frozen encoder reads each example once, a linear head is fit to convergence on the
cached vectors (L-BFGS), for a tagger (`CachedHeadTagger`) and a reader (`CachedHeadReader`).

The loops they replace, every weight trained by AdamW, are `token_finetuning.py`'s `TokenFineTuner` and
`QAFineTuner`; these subclasses keep their tasks, encodings, evaluations and export, and change only what a step
does: first read a batch of examples into the cache, then fit the head (`HeadFit`). `SampleEfficiency` fits heads
on growing subsets of the cached examples (the Tagging and Question answering pages' curves).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import BertCoreError
from ..inspect.token_tasks import best_spans
from ..model.loaded import LoadedModel
from .finetuning import EvalResult, FineTuneConfig, FineTuneStep, _pad
from .qa import qa_scores
from .tagging import IGNORE, TaggingTask
from .token_finetuning import (
    MAX_ANSWER_TOKENS,
    QA_MAX_LEN,
    TAGGING_MAX_LEN,
    QAFineTuner,
    TokenFineTuner,
    _length_chunks,
)

FEATURE_BATCH = 32  # examples the frozen encoder reads per step while caching (shortest first: little padding)
LBFGS_ITERS = 5  # L-BFGS iterations per step once every feature is cached
FIT_STEPS = 30  # at most 150 iterations; a fit stops earlier once its loss stops moving
HEAD_L2 = 1e-4  # L2 penalty on the weights, in standardised feature units


class HeadFit:
    """A linear head fit to convergence on cached vectors by L-BFGS: softmax regression with an L2 penalty.

        z = (h - mu) / sd  (mu, sd over the training vectors: a well-conditioned problem)
        tagging:  L = mean_words CE(W z + b, y) + l2 |W|^2
        QA:       L = mean_questions (CE over the question's tokens of start, and of end) / 2 + l2 |W|^2
    The loss is convex, so L-BFGS reaches the one minimum wherever it starts (here: W = 0, b = 0); `raw()` folds
    the standardisation back into weights for h itself:  W_raw = W / sd,  b_raw = b - (mu / sd) · W.
    Z holds the standardised training vectors (tagging: (N, H) with y (N,); QA: every token's, (sum of tokens,
    H), with y (E, 2) token positions and `rows` the (E + 1,) offsets of each question's tokens in Z).
    `standardize(X)` gives (Z, mu, sd), overwriting X (the cache is kept once, standardised).
    """

    def __init__(self, Z: torch.Tensor, y: torch.Tensor, n_out: int, mu: torch.Tensor, sd: torch.Tensor,
                 rows: torch.Tensor | None = None, l2: float = HEAD_L2):
        self.Z, self.y, self.rows, self.l2, self.mu, self.sd = Z, y, rows, l2, mu, sd
        self.W = torch.zeros(Z.shape[1], n_out, requires_grad=True)
        self.b = torch.zeros(n_out, requires_grad=True)
        self.opt = torch.optim.LBFGS([self.W, self.b], lr=1, max_iter=LBFGS_ITERS, max_eval=4 * LBFGS_ITERS,
                                     history_size=20,
                                     line_search_fn="strong_wolfe", tolerance_grad=1e-6, tolerance_change=1e-9)
        if rows is not None:  # each token's (question, position), to lay flat logits out as (E, T_max)
            lengths = rows[1:] - rows[:-1]
            self.q = torch.repeat_interleave(torch.arange(len(lengths)), lengths)
            self.t = torch.arange(len(Z)) - rows[:-1][self.q]
            self.T = int(lengths.max())
        self.loss = math.inf
        self.converged = False
        self.iterations = 0

    @staticmethod
    @torch.no_grad()
    def standardize(X: torch.Tensor, mu: torch.Tensor | None = None, sd: torch.Tensor | None = None):
        """(Z, mu, sd): X standardised in place (mu, sd: X's own unless given)."""
        if mu is None:
            mu, sd = X.mean(0), X.std(0, correction=0) + 1e-6
        return X.sub_(mu).div_(sd), mu, sd

    def logits(self, Z: torch.Tensor) -> torch.Tensor:
        """(N, H) standardised vectors -> (N, n_out) head outputs."""
        return Z @ self.W + self.b

    def _objective(self) -> tuple[torch.Tensor, float]:
        out = self.logits(self.Z)
        if self.rows is None:
            loss, acc = F.cross_entropy(out, self.y), (out.argmax(-1) == self.y).float().mean().item()
        else:
            E = len(self.rows) - 1
            grid = torch.full((E, self.T, 2), torch.finfo(out.dtype).min).index_put((self.q, self.t), out)
            loss = (F.cross_entropy(grid[..., 0], self.y[:, 0]) + F.cross_entropy(grid[..., 1], self.y[:, 1])) / 2
            acc = ((grid[..., 0].argmax(-1) == self.y[:, 0]) & (grid[..., 1].argmax(-1) == self.y[:, 1])).float()
            acc = acc.mean().item()
        return loss + self.l2 * (self.W ** 2).sum(), acc

    def step(self) -> tuple[float, float]:
        """Up to LBFGS_ITERS iterations; the training loss (penalty included) and accuracy after them.

        Converged: the loss moved by less than 0.1% over them (on Brown POS with MiniLM the validation accuracy
        has then settled to 0.1 point: 95.67% after 55 iterations, 95.70% after 115).
        """
        def closure():
            self.opt.zero_grad()
            loss, _ = self._objective()
            loss.backward()
            return loss

        before = self.opt.state[self.opt._params[0]].get("n_iter", 0)
        self.opt.step(closure)
        done = self.opt.state[self.opt._params[0]].get("n_iter", 0) - before
        self.iterations += done
        with torch.no_grad():
            loss, acc = self._objective()
        loss = loss.item()
        self.converged = abs(self.loss - loss) <= 1e-3 * max(1e-3, abs(loss))
        self.loss = loss
        return loss, acc

    def fit(self, max_steps: int = FIT_STEPS) -> HeadFit:
        """Step until converged (or max_steps)."""
        for _ in range(max_steps):
            self.step()
            if self.converged:
                break
        return self

    def raw(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(n_out, H) weight and (n_out,) bias for raw vectors (nn.Linear's layout)."""
        with torch.no_grad():
            W = self.W / self.sd[:, None]
            return W.T.contiguous(), self.b - (self.mu / self.sd) @ self.W


class _CachedHead:
    """Head-only fine-tuning done exactly: the frozen encoder reads each sentence once, then the head is fit.

    The first steps run the frozen encoder over FEATURE_BATCH examples each (shortest first) and keep every
    token's last hidden state (tagging: each word's first piece; QA: every token); validation too. The
    remaining steps are L-BFGS iterations on those vectors (`HeadFit`), each followed by an evaluation on
    the cached validation vectors, until the loss stops moving. The head starts at zero (every label
    equally likely: the step-0 evaluation reads no vector). What comes out is an ordinary model whose
    head (`classifier` / `qa_outputs`) holds the fitted weights: the same numbers `evaluate` gives.
    """

    keeps_pooled = False
    head_layer = ""  # "classifier" or "qa_outputs"

    def __init__(self, base: LoadedModel, task, cfg: FineTuneConfig | None = None):
        cfg = cfg or self.default_config()
        if not cfg.freeze_encoder:
            raise BertCoreError("a head fit on cached features needs a frozen encoder (freeze_encoder=True)")
        self.fit: HeadFit | None = None
        self.cache: dict[str, dict[int, torch.Tensor]] = {"train": {}, "valid": {}}
        super().__init__(base, task, cfg)
        self.jobs = [(split, chunk) for split, rows in (("train", self.train_rows), ("valid", self.valid_rows))
                     for chunk in _length_chunks(rows, FEATURE_BATCH)]
        self.feature_steps = len(self.jobs)
        self.max_steps = self.feature_steps + FIT_STEPS
        self.steps_per_epoch = self.max_steps  # one pass over the data; "epochs" do not apply
        self.eval_every = 1

    def _new_model(self, base: LoadedModel, task, cfg: FineTuneConfig):
        model, notes = super()._new_model(base, task, cfg)
        with torch.no_grad():
            getattr(model, self.head_layer).weight.zero_()
        notes.append("Head only, fit exactly: the frozen encoder read every sentence once and its vectors were "
                     "kept; the head was then fit to convergence on them (L-BFGS, softmax regression with a small "
                     f"L2 penalty, {HEAD_L2:g} on standardised vectors).")
        return model, notes

    def feature_bytes(self) -> int:
        """Bytes of the cached vectors (while caching: what is kept so far)."""
        if self.fit is not None:
            return self.fit.Z.nbytes + self.valid_Z.nbytes
        return sum(v.nbytes for c in self.cache.values() for v in c.values())

    @torch.no_grad()
    def _read(self, split: str, idx: list[int]) -> None:
        """Run the frozen encoder on these examples; keep each one's vectors (`_keep`)."""
        rows = self.train_rows if split == "train" else self.valid_rows
        ids, mask = _pad([rows[j] for j in idx], self.tok.pad_token_id)
        hidden = self.model.bert(ids, self._segments(ids), mask)  # (B, T, H)
        for b, j in enumerate(idx):
            self.cache[split][j] = self._keep(split, j, hidden[b, : len(rows[j])]).clone()

    def _segments(self, ids):
        return None

    def step(self) -> FineTuneStep:
        """Read the next examples with the frozen encoder, or (all cached) a few L-BFGS iterations and an evaluation."""
        if self.done:
            raise BertCoreError(f"fine-tuning is finished ({self.max_steps} steps)")
        t0 = time.perf_counter()
        k = self.step_count
        loss = acc = math.nan
        if k < self.feature_steps:
            self._read(*self.jobs[k])
            if k + 1 == self.feature_steps:
                self._start_fit()
        else:
            loss, acc = self.fit.step()
            w, b = self.fit.raw()
            layer = getattr(self.model, self.head_layer)
            with torch.no_grad():
                layer.weight.copy_(w)
                layer.bias.copy_(b)
        self.step_count += 1
        if self.fit is not None and self.fit.converged:
            self.max_steps = self.step_count  # the minimum is reached: nothing left to do
        dt = time.perf_counter() - t0
        self.elapsed += dt
        out = FineTuneStep(self.step_count, self.step_count / self.steps_per_epoch, loss, acc, 0.0, dt)
        self.history.append(out)
        if k >= self.feature_steps:
            t1 = time.perf_counter()
            self.evals.append(self.evaluate())
            self.elapsed += time.perf_counter() - t1
        return out

    def fit_subset(self, n: int) -> HeadFit:
        """A new head fit to convergence on the first `n` training examples' cached vectors (standardised as
        the full fit), for the sample-efficiency figure."""
        if self.fit is None:
            raise BertCoreError("the features are not cached yet: run the feature steps first")
        return self._subset_fit(n).fit()

    def report(self) -> dict:
        out = super().report()
        out.update({"head_fit": "L-BFGS on cached features", "l2": HEAD_L2,
                    "lbfgs_iterations": self.fit.iterations if self.fit else 0})
        return out


class CachedHeadTagger(_CachedHead, TokenFineTuner):
    """A tagger's head fit exactly on a frozen encoder's cached vectors (`_CachedHead`)."""

    head_layer = "classifier"

    @staticmethod
    def default_config() -> FineTuneConfig:
        return FineTuneConfig(freeze_encoder=True, max_len=TAGGING_MAX_LEN)

    def _keep(self, split: str, j: int, hidden: torch.Tensor) -> torch.Tensor:
        y = torch.tensor((self.train_y if split == "train" else self.valid_y)[j])
        return hidden[y != IGNORE]  # (words kept, H): each word's first piece

    def _labels(self, split: str, n: int | None = None) -> torch.Tensor:
        ys = self.train_y if split == "train" else self.valid_y
        return torch.tensor([t for y in ys[:n] for t in y if t != IGNORE], dtype=torch.long)

    def _start_fit(self) -> None:
        Z, mu, sd = HeadFit.standardize(torch.cat([self.cache["train"].pop(j) for j in range(len(self.train_rows))]))
        self.valid_Z = HeadFit.standardize(torch.cat([self.cache["valid"].pop(j) for j in range(len(self.valid_rows))]),
                                           mu, sd)[0]
        self.word_offsets = np.cumsum([0] + [int(n) for n in self._word_counts()])
        self.fit = HeadFit(Z, self._labels("train"), len(self.task.labels), mu, sd)

    def _word_counts(self) -> list[int]:
        return [sum(t != IGNORE for t in y) for y in self.train_y]

    def _subset_fit(self, n: int) -> HeadFit:
        f, k = self.fit, int(self.word_offsets[n])
        return HeadFit(f.Z[:k], f.y[:k], len(self.task.labels), f.mu, f.sd)

    def score(self, fit: HeadFit) -> float:
        """Validation word accuracy of a head fit on the cached vectors."""
        with torch.no_grad():
            return float((fit.logits(self.valid_Z).argmax(-1) == self._labels("valid")).float().mean())

    @torch.no_grad()
    def evaluate(self, pooled: bool = False, batch_size: int = 64) -> EvalResult:
        """As `TokenFineTuner.evaluate`, from the cached validation vectors (before them: the zero head)."""
        C = len(self.task.labels)
        true = self._labels("valid")
        if self.fit is None:  # the zero head: every label's logit 0, so argmax picks label 0
            logits = torch.zeros(len(true), C)
        else:
            logits = self.fit.logits(self.valid_Z)  # (N, C)
        loss = F.cross_entropy(logits, true, reduction="sum").item()
        pred = logits.argmax(-1)
        confusion = torch.bincount(true * C + pred, minlength=C * C).reshape(C, C).numpy()
        return EvalResult(self.step_count, loss / max(1, len(true)), float((pred == true).float().mean()),
                          confusion, None)


class CachedHeadReader(_CachedHead, QAFineTuner):
    """A QA reader's start/end head fit exactly on a frozen encoder's cached vectors (`_CachedHead`)."""

    head_layer = "qa_outputs"

    @staticmethod
    def default_config() -> FineTuneConfig:
        return FineTuneConfig(freeze_encoder=True, max_len=QA_MAX_LEN)

    def _segments(self, ids):
        return QAFineTuner._segments(self, ids)

    def _keep(self, split: str, j: int, hidden: torch.Tensor) -> torch.Tensor:
        return hidden  # (T, H): any token may start or end the answer

    def _start_fit(self) -> None:
        self.token_offsets = torch.tensor(np.cumsum([0] + [len(r) for r in self.train_rows]))
        Z, mu, sd = HeadFit.standardize(torch.cat([self.cache["train"].pop(j) for j in range(len(self.train_rows))]))
        self.valid_Z = HeadFit.standardize(torch.cat([self.cache["valid"].pop(j) for j in range(len(self.valid_rows))]),
                                           mu, sd)[0]
        self.fit = HeadFit(Z, self.train_y, 2, mu, sd, rows=self.token_offsets)

    def _subset_fit(self, n: int) -> HeadFit:
        f, off = self.fit, self.token_offsets[: n + 1]
        return HeadFit(f.Z[: int(off[-1])], f.y[:n], 2, f.mu, f.sd, rows=off)

    def _predict(self, logits: list[np.ndarray]) -> list[str]:
        out = []
        for lg, (offsets, ctx, ex) in zip(logits, self.valid_meta):
            found = best_spans(lg[:, 0], lg[:, 1], ctx, 1, MAX_ANSWER_TOKENS)
            out.append(ex.context[offsets[found[0][0]][0]:offsets[found[0][1]][1]] if found else "")
        return out

    def _valid_logits(self, fit: HeadFit | None) -> list[np.ndarray]:
        if fit is None:
            return [np.zeros((len(r), 2), np.float32) for r in self.valid_rows]
        with torch.no_grad():
            flat = fit.logits(self.valid_Z).numpy()
        return np.split(flat, np.cumsum([len(r) for r in self.valid_rows])[:-1])

    def score(self, fit: HeadFit) -> float:
        """Validation token F1 of a head fit on the cached vectors."""
        return qa_scores(self._predict(self._valid_logits(fit)), [m[2] for m in self.valid_meta])["f1"]

    @torch.no_grad()
    def evaluate(self, pooled: bool = False, batch_size: int = 32) -> EvalResult:
        """As `QAFineTuner.evaluate`, from the cached validation vectors (before them: the zero head)."""
        logits = self._valid_logits(self.fit)
        loss = 0.0
        for lg, y in zip(logits, self.valid_y):
            t = torch.from_numpy(lg)
            loss += ((F.cross_entropy(t[:, 0][None], y[:1]) + F.cross_entropy(t[:, 1][None], y[1:])) / 2).item()
        predictions = self._predict(logits)
        scores = qa_scores(predictions, [m[2] for m in self.valid_meta])
        self.last_predictions = predictions
        return EvalResult(self.step_count, loss / len(self.valid_rows), scores["exact_match"],
                          np.zeros((0, 0), dtype=np.int64), None, scores["f1"])


def sample_efficiency(tuner: _CachedHead, sizes) -> Iterator[tuple[int, float]]:
    """(n, validation score) of a head fit to convergence on the first n training examples, for each n in `sizes`
    (n past the training set: all of it). Tagging: word accuracy; QA: token F1. One fit per yield."""
    n_all = len(tuner.train_rows)
    for n in sorted({min(int(s), n_all) for s in sizes}):
        yield n, tuner.score(tuner.fit_subset(n))


def cached_feature_bytes(base: LoadedModel, task, cfg: FineTuneConfig) -> int:
    """Bytes a head-only run's cached vectors will take, before it is built: 4·H per word (tagging) or token (QA)."""
    H = base.config.hidden_size
    if isinstance(task, TaggingTask):
        n = sum(map(len, task.train_words)) + sum(map(len, task.valid_words))
    else:
        lengths = base.tokenizer.encode_batch_plain([*task.train_texts, *task.valid_texts])
        n = sum(min(len(x) + 3, cfg.max_len) for x in lengths)  # [CLS] question [SEP] context [SEP]
    return 4 * H * n


class SampleEfficiency:
    """Validation score against training examples for several models, head only on cached vectors, a step at a time.

    For each model: its head-only tuner (`CachedHeadTagger` / `CachedHeadReader`) reads the task once (reused
    when given already cached), then a head is fit to convergence on the first n examples for every n in
    `sizes`. `baseline(n)` (optional) scores the task's baseline on the same n examples. A step is one feature
    batch or one fit, so a page can show progress and stop between steps.
    Example: SampleEfficiency({"MiniLM": tuner, "untrained": other}, [8, 64, 512, 3000]).run() ->
    {"MiniLM": ([8, 64, 512, 3000], [0.79, 0.91, 0.94, 0.957]), ...}
    """

    def __init__(self, tuners: dict[str, _CachedHead], sizes, baseline=None, baseline_name: str = "baseline"):
        if not tuners:
            raise BertCoreError("give at least one model")
        self.tuners = tuners
        n_all = len(next(iter(tuners.values())).train_rows)
        self.sizes = sorted({min(max(1, int(s)), n_all) for s in sizes})
        self.results: dict[str, tuple[list[int], list[float]]] = {name: ([], []) for name in tuners}
        if baseline is not None:
            self.results[baseline_name] = (self.sizes, [float(baseline(n)) for n in self.sizes])
        self._todo = [(name, n) for name in tuners for n in self.sizes]
        self.total = sum(max(0, t.feature_steps - t.step_count) for t in tuners.values()) + len(self._todo)
        self.steps = 0

    @property
    def done(self) -> bool:
        return not self._todo

    @property
    def progress(self) -> float:
        return min(1.0, self.steps / max(1, self.total))

    def step(self) -> str:
        """One feature batch (while a model's vectors are not all cached) or one fit; says what it did."""
        if self.done:
            raise BertCoreError("the sample-efficiency curves are complete")
        name, n = self._todo[0]
        if name not in self.tuners:
            raise BertCoreError("the cached vectors were dropped to make room on the server: compute the curves again")
        t = self.tuners[name]
        self.steps += 1
        if t.fit is None:
            t.step()
            return f"{name}: reading the examples ({t.step_count}/{t.feature_steps})"
        self._todo.pop(0)
        sizes, scores = self.results[name]
        sizes.append(n)
        scores.append(t.score(t.fit_subset(n)))
        return f"{name}: head fit on {n:,} examples"

    def run(self) -> dict[str, tuple[list[int], list[float]]]:
        while not self.done:
            self.step()
        return self.results
