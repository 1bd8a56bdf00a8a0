"""One user's live fine-tuning run, under the same slot cap, queue, lease and time budget as pretraining.

`FineTuneSession` is a `TrainingSession` (session_training.py) whose trainer is a `FineTuner`: start,
pause, reset, the queue and the lease (`advance`, `run_steps`) are the Training page's own code; only
what a step does, when a run is finished and what it exports differ. No streamlit here.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from .classification import classifier_zip, classify
from .errors import BertCoreError
from .finetuning import ClassificationTask, EvalResult, FineTuneConfig, FineTuner, FineTuneStep
from .pretrained import LoadedModel
from .session_training import FINISHED, MAX_TRAIN_SECONDS, STATE_LABELS, TrainingSession, ema, format_seconds


class FineTuneSession(TrainingSession):
    """A fine-tuning run: states idle -> paused <-> running/queued -> finished, as a training run."""

    trainer: FineTuner | None

    def setup(self, base: LoadedModel, task: ClassificationTask, cfg: FineTuneConfig) -> None:  # type: ignore[override]
        """Build the classifier and its loop for this base model, task and settings (replacing any run)."""
        tuner = FineTuner(base, task, cfg)  # evaluates once: the "before" picture
        with self._lock:
            self.reset()
            self.trainer, self.settings, self.corpus_name = tuner, cfg, task.name
            self.state = "paused"
        self._pooled_now: EvalResult | None = None

    def _budget_spent(self) -> str:
        t = self.trainer
        if t.done:
            return f"{t.cfg.epochs} epoch{'s' * (t.cfg.epochs > 1)} done ({t.max_steps} steps)"
        if t.elapsed >= self.max_seconds:
            return f"reached the {self.max_seconds / 60:g}-minute training limit"
        return ""

    def _finish(self, reason: str) -> None:
        self.slots.release(self.id)
        self.state, self.finish_reason = FINISHED, reason
        if self.trainer.evals[-1].pooled is None or self.trainer.evals[-1].step != self.trainer.step_count:
            self.trainer.evals.append(self.trainer.evaluate(pooled=True))  # the "after" picture

    def _steps(self, seconds: float | None, steps: int | None) -> list[FineTuneStep]:
        """Step until `seconds` pass or `steps` are done or the run is finished (evaluations included)."""
        out: list[FineTuneStep] = []
        t0 = self.clock()
        with self._lock:
            while True:
                reason = self._budget_spent()
                if reason:
                    self._finish(reason)
                    break
                if (steps is not None and len(out) >= steps) or (seconds is not None and self.clock() - t0 >= seconds):
                    break
                out.append(self.trainer.step())
        return out

    # --- reading the run --------------------------------------------------------------------

    def metrics(self, smoothing: float = 0.9) -> list[tuple[str, str]]:
        """(label, value) pairs for the metrics row; "–" where there is no number yet."""
        t = self.trainer
        h = t.history
        last = t.evals[-1]
        loss = ema([m.loss for m in h], smoothing)[-1] if h else math.nan
        return [
            ("State", STATE_LABELS[self.state]),
            ("Step", f"{t.step_count:,} / {t.max_steps:,}"),
            ("Epoch", f"{t.step_count / t.steps_per_epoch:.2f} / {t.cfg.epochs}"),
            ("Training time", f"{format_seconds(t.elapsed)} / {format_seconds(self.max_seconds)}"),
            ("Train loss (smoothed)", "–" if math.isnan(loss) else f"{loss:.3f}"),
            ("Validation loss", f"{last.loss:.3f}"),
            ("Validation accuracy", f"{100 * last.accuracy:.1f} %"),
            ("Evaluated at step", f"{last.step:,}"),
        ]

    def curves(self, smoothing: float = 0.9) -> dict[str, np.ndarray]:
        """Per-step train loss/accuracy (smoothed) and per-evaluation validation loss/accuracy."""
        t = self.trainer
        h, ev = t.history, t.evals
        return {"step": np.array([m.step for m in h], dtype=int),
                "train_loss": ema([m.loss for m in h], smoothing),
                "train_accuracy": ema([m.accuracy for m in h], smoothing),
                "eval_step": np.array([e.step for e in ev], dtype=int),
                "valid_loss": np.array([e.loss for e in ev]), "valid_accuracy": np.array([e.accuracy for e in ev])}

    def pooled_now(self) -> EvalResult:
        """The validation set's pooled vectors at the current step (the last evaluation's if it has them)."""
        t = self.trainer
        if t.evals[-1].pooled is not None and t.evals[-1].step == t.step_count:
            return t.evals[-1]
        cached = getattr(self, "_pooled_now", None)
        if cached is None or cached.step != t.step_count:
            with self._lock:
                self._pooled_now = cached = t.evaluate(pooled=True)
        return cached

    def classify(self, text: str) -> list[tuple[str, float]]:
        """The classifier's probabilities for one text, as it is now."""
        if self.trainer is None:
            raise BertCoreError("set up a run first")
        with self._lock:
            return classify(self.trainer.as_loaded(), text)

    def checkpoint_zip(self) -> bytes:
        """A zip of an HF folder: config.json (id2label), model.safetensors, tokenizer, training_report.json."""
        if self.trainer is None:
            raise BertCoreError("there is no model yet: start a run first")
        with self._lock:
            if self._zip is not None and self._zip[0] == self.trainer.step_count:
                return self._zip[1]
            report = {**self.trainer.report(), "settings": asdict(self.settings)}
            self._zip = (self.trainer.step_count, classifier_zip(self.trainer.as_loaded(), report))
            return self._zip[1]


__all__ = ["MAX_TRAIN_SECONDS", "FineTuneSession"]
