"""One user's live fine-tuning run, with the same slots, ledger and time budget as a pretraining run.

`FineTuneSession` is a `TrainingSession` (training_run.py) whose trainer is a `FineTuner` (a sentence
classifier) or a `TokenFineTuner` (a tagger, when the task is a `TaggingTask`): start,
pause, reset, the queue and the lease (`advance`, `run_steps`) are the Training page's own code; only
what a step does, when a run is finished and what it exports differ. No streamlit here.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from ..errors import BertCoreError
from ..finetune.budget import activation_bytes
from ..finetune.cached_head import CachedHeadReader, CachedHeadTagger, cached_feature_bytes
from ..finetune.finetuning import EvalResult, FineTuneConfig, FineTuner, FineTuneStep, run_cost
from ..finetune.qa import QATask
from ..finetune.tagging import TaggingTask
from ..finetune.tasks import ClassificationTask
from ..finetune.token_finetuning import QAFineTuner, TokenFineTuner
from ..inspect.classify import classify
from ..inspect.token_tasks import AnswerResult, WordTagging, answer, tag_words
from ..model.classifier_io import classifier_zip
from ..model.loaded import LoadedModel
from ..model.token_heads_io import token_model_zip
from ..model.untrained import untrained_copy
from .memory import tensor_bytes
from .settings import MAX_TRAIN_SECONDS, corpus_bytes, ema, ids_bytes
from .status import FINISHED, STATE_LABELS, format_seconds
from .training_run import TrainingSession


def tuner_class(task: ClassificationTask | TaggingTask | QATask, cfg: FineTuneConfig | None = None) -> type[FineTuner]:
    """The loop for this kind of task: a classifier per text, a tagger per word, a reader of answer spans (the
    last two with a frozen encoder: the head fit exactly on cached vectors, `cached_head._CachedHead`)."""
    frozen = cfg is not None and cfg.freeze_encoder
    if isinstance(task, TaggingTask):
        return CachedHeadTagger if frozen else TokenFineTuner
    if isinstance(task, QATask):
        return CachedHeadReader if frozen else QAFineTuner
    return FineTuner


def finetune_bytes(base: LoadedModel, task: ClassificationTask | TaggingTask | QATask, cfg: FineTuneConfig) -> int:
    """What a fine-tuning run will hold, before it is built: the weights it trains with their gradients and AdamW's
    two moments, the activations of one step at the chosen batch and length (`finetune/budget.py`), its texts.

    Fine-tuning all weights copies the encoder (but a frozen word-embedding matrix, which stays the base's);
    a frozen encoder is shared with the base (read-only), so only the head is the run's own, plus its cached
    features (one vector per text).
    """
    texts = [*task.train_texts, *task.valid_texts]
    if isinstance(task, ClassificationTask):
        cost = run_cost(base, task, cfg)
        nbytes = cost["bytes"]
    else:
        enc, H = base.model.bert, base.config.hidden_size
        trainable = 2 * H * H + H * (len(getattr(task, "labels", ())) + 2)
        if not cfg.freeze_encoder:
            trainable += sum(p.numel() for p in enc.parameters())
            if cfg.freeze_word_embeddings:
                trainable -= enc.embeddings.word_embeddings.weight.numel()
        T = min(cfg.max_len, base.max_length)
        nbytes = 16 * trainable + (0 if cfg.freeze_encoder else
                                   activation_bytes(base.config, min(cfg.batch_size, len(task.train_texts)), T))
    if cfg.freeze_encoder and isinstance(task, ClassificationTask):
        nbytes += 4 * base.config.hidden_size * len(texts)  # the cached features
    elif cfg.freeze_encoder:
        nbytes += cached_feature_bytes(base, task, cfg)  # a vector per word (tagging) or per token (QA)
    if cfg.freeze_encoder and base.source == "session":  # an untrained copy: its frozen encoder is the run's own
        nbytes += tensor_bytes(list(base.model.parameters()))
    return nbytes + corpus_bytes(texts)


class FineTuneSession(TrainingSession):
    """A fine-tuning run: states idle -> paused <-> running/queued -> finished, as a training run."""

    trainer: FineTuner | None

    def setup(self, base: LoadedModel, task: ClassificationTask | TaggingTask | QATask,  # type: ignore[override]
              cfg: FineTuneConfig, untrained_seed: int | None = None) -> None:
        """Build the classifier (or tagger) and its loop for this base model, task and settings (replacing any run).

        untrained_seed: start instead from `untrained_copy(base, untrained_seed)` (the same network with fresh
        weights: "from scratch"); the copy is built after its bytes are charged, and held by the run.
        """
        # FineTuner evaluates once: the "before" picture.
        def install(tuner: FineTuner) -> None:
            with self._lock:
                self._clear()  # the reservation already replaced the old run's bytes
                self.trainer, self.settings, self.corpus_name = tuner, cfg, task.name
                self.state = "paused"
                self._pooled_now = None
                self.memory.resize(self.mem_key, self._held_bytes())

        self._pooled_now: EvalResult | None = None
        if untrained_seed is None:
            self._base_bytes = 0
            self._charged_build(finetune_bytes(base, task, cfg), "a fine-tuning run",
                                lambda: tuner_class(task, cfg)(base, task, cfg), install)
            return
        self._base_bytes = tensor_bytes(*[p.detach() for p in base.model.parameters()])  # the copy's own weights
        self._charged_build(finetune_bytes(base, task, cfg) + self._base_bytes, "a fine-tuning run from scratch",
                            lambda: tuner_class(task, cfg)(untrained_copy(base, untrained_seed), task, cfg), install)

    def _held_bytes(self) -> int:
        """Weights this run trains (not a frozen, shared encoder or word-embedding matrix), and until it finishes
        their gradients, AdamW's moments and one step's activations; cached features, texts, plots, the zip."""
        t = self.trainer
        if t is None:
            return 0
        weights = tensor_bytes([p.detach() for p in t.trainable])
        live = self.state != FINISHED
        acts = 0
        if live and not t.cfg.freeze_encoder:
            longest = max(map(len, t.train_rows))
            acts = activation_bytes(t.model.config, min(t.cfg.batch_size, len(t.train_rows)), longest)
        now = getattr(self, "_pooled_now", None)  # set after the first charge, in setup
        kept = sum(e.pooled.nbytes for e in [*t.evals, *([now] if now else [])] if e.pooled is not None)
        feats = sum(4 * t.model.config.hidden_size * len(c) for c in getattr(t, "_features", {}).values())
        if hasattr(t, "feature_bytes"):  # a tagger's or reader's cached vectors: one per word or token
            feats = t.feature_bytes()
        if t.cfg.freeze_encoder and t.base.source == "session" and not getattr(self, "_base_bytes", 0):
            # an untrained copy's encoder, made by the caller, is the run's own (one made here is in _base_bytes)
            feats += tensor_bytes(list(t.base.model.parameters()))
        data = ids_bytes(t.train_rows) + ids_bytes(t.valid_rows)
        zipped = len(self._zip[1]) if self._zip else 0
        return weights * (4 if live else 1) + acts + data + kept + feats + zipped + getattr(self, "_base_bytes", 0)

    def _steps_done(self) -> str:
        t = self.trainer
        return f"{t.cfg.epochs} epoch{'s' * (t.cfg.epochs > 1)} done ({t.max_steps} steps)" if t.done else ""

    def _final_record(self) -> None:
        """The "after" picture: an evaluation with the pooled vectors at the last step."""
        t = self.trainer
        if t.evals[-1].step != t.step_count or (t.keeps_pooled and t.evals[-1].pooled is None):
            t.evals.append(t.evaluate(pooled=t.keeps_pooled))

    def _one_step(self) -> FineTuneStep:
        return self.trainer.step()  # evaluations happen inside, on their schedule

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

    def tag(self, text: str) -> WordTagging:
        """The tagger's reading of one text, as it is now."""
        if not isinstance(self.trainer, TokenFineTuner):
            raise BertCoreError("set up a tagging run first")
        with self._lock:
            return tag_words(self.trainer.as_loaded(), text)

    def answer(self, question: str, context: str, **kw) -> AnswerResult:
        """The QA model's best spans for one question and context, as it is now."""
        if not isinstance(self.trainer, QAFineTuner):
            raise BertCoreError("set up a question-answering run first")
        with self._lock:
            return answer(self.trainer.as_loaded(), question, context, **kw)

    def _build_zip(self) -> bytes:
        """A zip of an HF folder: config.json (id2label), model.safetensors, tokenizer, training_report.json."""
        with self._lock:
            report = {**self.trainer.report(), "settings": asdict(self.settings)}
            save = token_model_zip if isinstance(self.trainer, TokenFineTuner | QAFineTuner) else classifier_zip
            return save(self.trainer.as_loaded(), report)


__all__ = ["MAX_TRAIN_SECONDS", "FineTuneSession", "finetune_bytes"]
