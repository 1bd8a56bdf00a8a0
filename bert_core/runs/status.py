"""What a run's page reads: its states and their labels, the metrics row, the probe tables, times.

No streamlit here; `training_run.py` and `finetune_run.py` hold the runs themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..train.trainer import Probe

IDLE, QUEUED, RUNNING, PAUSED, FINISHED = "idle", "queued", "running", "paused", "finished"
WAITING = "waiting"  # for memory: the run is not built yet, it waits in the ledger's queue
OUTCOMES = ("[MASK]", "random", "kept")
STATE_LABELS = {IDLE: "not started", WAITING: "waiting for memory", QUEUED: "waiting for a slot",
                RUNNING: "training", PAUSED: "paused", FINISHED: "finished"}


@dataclass
class Status:
    """What the page's metrics row shows."""

    state: str
    step: int
    max_steps: int
    elapsed: float  # seconds spent training
    max_seconds: float
    tokens_per_sec: float  # over the last few steps
    lr: float  # of the last step
    loss: float  # smoothed
    accuracy: float  # smoothed
    queue_position: int | None  # 0 training, n waiting n-th, None not asking for a slot
    memory_position: int | None = None  # n: n-th in line for memory (the run is not built yet)

    def display(self) -> list[tuple[str, str]]:
        """(label, value) pairs for the metrics row; "–" where there is no number yet."""
        def num(x: float, fmt: str, unit: str = "") -> str:
            return "–" if math.isnan(x) else format(x, fmt) + unit

        return [
            ("State", STATE_LABELS[self.state]),
            ("Step", f"{self.step:,} / {self.max_steps:,}"),
            ("Training time", f"{format_seconds(self.elapsed)} / {format_seconds(self.max_seconds)}"),
            ("Tokens / s", num(self.tokens_per_sec, ",.0f") if self.step else "–"),
            ("Learning rate", f"{self.lr:.2e}"),
            ("Loss (smoothed)", num(self.loss, ".3f")),
            ("Accuracy (smoothed)", num(100 * self.accuracy, ".1f", " %")),
        ]


def probe_rows(probe: Probe, answers: dict[str, str] | None = None) -> list[dict]:
    """One row per probe [MASK]: the sentence, the top guess with its probability, and the top-k.

    `answers`: sentence -> the right word, for probes that have one (the farm corpus's); those rows get a
    "right answer" column and a ✓ on a right top guess.
    """
    rows = []
    answers = answers or {}
    known = any(s in answers for s in probe.predictions)
    for sentence, preds in probe.predictions.items():
        for pos, top in sorted(preds.items()):
            right = answers.get(sentence)
            guess = top[0][0] + (" ✓" if right is not None and top[0][0] == right else "")
            rows.append({"sentence": sentence, "position": pos, "top guess": guess,
                         "probability": round(top[0][1], 4),
                         **({"right answer": right or ""} if known else {}),
                         "top-k": ", ".join(f"{tok} {p:.3f}" for tok, p in top)})
    return rows


def probe_history_rows(probes: list[Probe]) -> list[dict]:
    """The top guess at each probe sentence's first [MASK], one row per probe step."""
    rows = []
    for pr in probes:
        row = {"step": pr.step}
        for sentence, preds in pr.predictions.items():
            if preds:
                tok, p = preds[min(preds)][0]
                row[sentence] = f"{tok} ({p:.2f})"
        rows.append(row)
    return rows


def format_seconds(s: float) -> str:
    """Seconds as m:ss. Example: 75.4 -> '1:15'."""
    s = int(s)
    return f"{s // 60}:{s % 60:02d}"
