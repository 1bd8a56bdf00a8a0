"""Three live runs, one per objective (mlm, clm, rtd), on the same corpus, preset and seed: the BERT vs GPT page's.

No streamlit here. Each run is a `TrainingSession` (the Training page's), so the comparison goes through the
slots and the ledger it is given (the app's: the process's cap and byte budget; rtd's generator charged too) and
the same budgets. The page calls
`advance()` repeatedly; each call trains one objective for a few steps inside a slot, and at fixed points
(steps 0, 1/4, 1/2, 3/4 and the end) scores the encoder with the frozen linear probe (train/linear_probe.py),
so the sample-efficiency curve (probe accuracy against tokens seen) is measured here, not quoted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.tokenization import WordPieceTokenizer
from ..objectives.catalog import OBJECTIVES
from ..train.linear_probe import probe_accuracy, without_probe_texts
from ..train.toy import FARM_CLOZE, cloze_accuracy, top_guess
from .settings import TrainSettings, ema
from .sharing import Ledger, Slots
from .training_run import TrainingSession

COMPARE_STEPS = 200  # default steps per objective
MAX_COMPARE_STEPS = 600  # three runs of this many steps stay within a few minutes on the small preset
PROBE_POINTS = 4  # probe after every quarter of the run (and at step 0)
CHUNK_STEPS = 20  # steps per `advance` call: the page redraws its progress bar in between


@dataclass
class ObjectiveComparison:
    """One run of each objective and their probe curves; `advance` until `done`."""

    preset: str
    steps: int
    seed: int
    corpus_name: str
    sessions: dict[str, TrainingSession] = field(default_factory=dict)
    probes: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # objective -> [(tokens seen, acc)]
    tokens_seen: dict[str, int] = field(default_factory=dict)
    probe_fn: Callable | None = field(default=None, repr=False)  # (model, tokenizer) -> accuracy; None: linear probe
    # cloze: the probe is instead the share of the farm corpus's fill-in probes (toy.FARM_CLOZE) each run's
    # mask-filler gets right (BERT's MLM head, GPT's next-token guess from the left, ELECTRA's generator).
    cloze: bool = False
    cloze_scores: dict[str, list[dict[str, float]]] = field(default_factory=dict)  # objective -> per probe point

    @classmethod
    def build(cls, tokenizer: WordPieceTokenizer, lines: list[str], preset: str, steps: int, seed: int,
              corpus_name: str, slots: Slots | None = None, memory: Ledger | None = None,
              probe: Callable | None = None, base: TrainSettings | None = None,
              cloze: bool = False, objectives: tuple[str, ...] = OBJECTIVES) -> ObjectiveComparison:
        """Set up one run per objective (models built, memory charged); a BertCoreError when they do not fit.

        `base`: the corpus's settings (learning rate, batch, masking, row sampling), else TrainSettings' defaults.
        """
        if not objectives or set(objectives) - set(OBJECTIVES):
            raise BertCoreError(f"objectives must be some of {', '.join(OBJECTIVES)}")
        if not 10 <= steps <= MAX_COMPARE_STEPS:
            raise BertCoreError(f"steps must be between 10 and {MAX_COMPARE_STEPS}")
        comp = cls(preset, steps, seed, corpus_name, probe_fn=probe, cloze=cloze)
        lines = without_probe_texts(lines)  # the probe's validation definitions stay unseen
        try:
            for obj in objectives:
                s = TrainingSession(slots=slots, memory=memory)
                s.setup(tokenizer, lines, replace(base or TrainSettings(), preset=preset, seed=seed, max_steps=steps,
                                                  objective=obj, probe_every=steps), corpus_name=corpus_name)
                comp.sessions[obj] = s
                if s.trainer is None:  # the memory for users' runs is full: it would wait in line
                    raise BertCoreError("this server's memory for users' models is full right now: try again in "
                                        "a few minutes, or reset a run on the Training page")
        except BaseException:
            comp.reset()
            raise
        comp.probes = {obj: [] for obj in objectives}
        comp.cloze_scores = {obj: [] for obj in objectives}
        comp.tokens_seen = {obj: 0 for obj in objectives}
        return comp

    def reset(self) -> None:
        """Drop the three runs (their memory and slots go back)."""
        for s in self.sessions.values():
            s.reset()
        self.sessions = {}

    @property
    def done(self) -> bool:
        return all(s.step >= self.steps and len(self.probes.get(o, [])) > PROBE_POINTS
                   for o, s in self.sessions.items())

    def progress(self) -> float:
        """Share of all steps done, in [0, 1]."""
        total = sum(min(s.step, self.steps) for s in self.sessions.values())
        return total / max(1, self.steps * len(self.sessions))

    def _probe_due(self, obj: str) -> bool:
        step, done = self.sessions[obj].step, len(self.probes[obj])
        return done <= PROBE_POINTS and step >= done * self.steps / PROBE_POINTS

    def advance(self, steps: int = CHUNK_STEPS) -> str | None:
        """Train the first unfinished objective for up to `steps` steps (probing when due): its name, "" when
        all are done, None when no training slot is free now (try again later)."""
        for obj, s in self.sessions.items():
            if s.step >= self.steps and not self._probe_due(obj):
                continue
            if self._probe_due(obj):
                if self.cloze:
                    self.cloze_scores[obj].append(cloze_accuracy(s.trainer.guesser()))
                    score = self.cloze_scores[obj][-1]["all"]
                else:
                    score = (self.probe_fn or probe_accuracy)(s.trainer.model, s.trainer.tok)
                self.probes[obj].append((self.tokens_seen[obj], score))
                return obj
            next_probe = len(self.probes[obj]) * self.steps / PROBE_POINTS
            n = max(1, min(steps, int(np.ceil(next_probe)) - s.step, self.steps - s.step))
            out = s.run_steps(n)
            if out is None:
                return None
            self.tokens_seen[obj] += sum(m.tokens for m in out)
            return obj
        return ""

    def curves(self, smoothing: float = 0.9) -> dict[str, dict[str, np.ndarray]]:
        """objective -> {"step", "loss" (smoothed), "raw"}: each run's own optimised loss."""
        out = {}
        for obj, s in self.sessions.items():
            h = s.trainer.history if s.trainer else []
            raw = np.array([m.loss for m in h], dtype=float)
            out[obj] = {"step": np.array([m.step for m in h], dtype=int), "loss": ema(raw, smoothing), "raw": raw}
            if obj == "rtd":
                out[obj]["discriminator"] = ema([m.rtd_loss for m in h], smoothing)
                out[obj]["generator"] = ema([m.mlm_loss for m in h], smoothing)
        return out

    def probe_curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """objective -> (tokens seen (P,), probe accuracy (P,))."""
        return {o: (np.array([t for t, _ in ps]), np.array([a for _, a in ps])) for o, ps in self.probes.items()}

    def cloze_rows(self) -> list[dict]:
        """One row per farm fill-in probe: its answer, which side decides it, and each run's top guess."""
        guessers = {o: s.trainer.guesser() for o, s in self.sessions.items() if s.trainer is not None}
        rows = []
        for c in FARM_CLOZE:
            row = {"sentence": c.sentence, "answer": c.answer, "decided by the words": c.side}
            for obj, m in guessers.items():
                tok, p = top_guess(m, c.sentence)
                row[obj] = f"{tok} {p:.2f}" + (" ✓" if tok == c.answer else "")
            rows.append(row)
        return rows

    def model(self, objective: str) -> LoadedModel:
        """The run's model, read-only use (the runs are over): BERT's encoder, GPT's, or ELECTRA's discriminator."""
        s = self.sessions.get(objective)
        if s is None or s.trainer is None:
            raise BertCoreError("train the three models first")
        return s.trainer.as_loaded(f"{objective} model ({s.step} steps)")

    def summary_rows(self) -> list[dict]:
        """One row per objective: steps, tokens, time, last loss, final probe accuracy."""
        rows = []
        for obj, s in self.sessions.items():
            h = s.trainer.history
            rows.append({"objective": obj, "steps": s.step, "tokens seen": self.tokens_seen[obj],
                         "training seconds": round(s.trainer.elapsed, 1),
                         "last loss": round(h[-1].loss, 3) if h else None,
                         "probe accuracy": round(self.probes[obj][-1][1], 3) if self.probes[obj] else None})
        return rows
