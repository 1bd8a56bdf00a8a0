"""Seconds of training until the probes are right: the farm corpus's quick preset against the old default.

    python benchmarks/bench_quick_training.py [--threads 1] [--seconds 120] [--seed 0] [--compare-steps 300]
                                              [--objectives mlm,clm] [--skip 1|2]

Part 1 (the Training page): two runs with the page's settings, stepped alternately in one process (each gets
about 0.5 s of training in turn, so a neighbour's load hits both alike):
  new: the farm corpus (bert_core/train/toy.py), the "quick" preset, the farm's own settings (CORPUS_CHOICES);
  old: the WordNet glosses, the "small" preset, the old defaults (the bundled model's 12,000-piece vocabulary).
Each runs the page's default step budget (farm 600, WordNet 500) or --seconds of training, whichever comes
first. Every 25 steps both are probed (dropout off; probe time not counted as training). A farm probe is right when the
top guess is its answer; the old probes have no single answer, so any of a few plausible words counts (listed in
OLD_ANSWERS). Printed: steps/s of each, the loss at the start and at the end, and the training seconds until
every probe was right (or "not within the budget").

Part 2 (BERT vs GPT): the three objectives on the farm corpus for --compare-steps steps each, as the page runs
them (ObjectiveComparison, cloze mode): wall seconds, and each run's share of the "left" and "right" fill-in
probes right (toy.FARM_CLOZE); plus the causal run's greedy continuations of toy.FARM_PROMPTS.

Timings depend on the machine's load: the ratio between the two runs is what counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bert_core  # noqa: E402
from bert_core.runs.objective_runs import ObjectiveComparison  # noqa: E402
from bert_core.runs.settings import CORPUS_CHOICES, DEFAULT_PRESET, TrainSettings, builtin_lines  # noqa: E402
from bert_core.train.toy import FARM_ANSWERS, FARM_PROBES, FARM_PROMPTS, farm_lines  # noqa: E402
from bert_core.train.trainer import DEFAULT_PROBES, PRESETS, Trainer, new_model  # noqa: E402
from server.ledger import SessionMemory  # noqa: E402
from server.slots import SlotManager  # noqa: E402

PROBE_EVERY = 25
OLD_ANSWERS = (  # plausible fillers of trainer.DEFAULT_PROBES
    {"mat", "floor", "ground", "table", "chair", "bed", "grass", "rug"},
    {"lake", "sea", "ocean", "river", "bay", "pond", "gulf"},
    {"wrote", "sent", "gave", "read", "mailed", "handed", "delivered", "addressed"},
)


class Run:
    """One run of the Training page's loop, timed step by step, probed on schedule."""

    def __init__(self, name, tok, lines, settings: TrainSettings, probes, answers):
        self.name, self.answers = name, answers
        model = new_model(tok, PRESETS[settings.preset], seed=settings.seed)
        self.t = Trainer(model, tok, lines, settings.train_config(), probes=probes)
        self.seconds, self.right_at, self.first_loss, self.losses = 0.0, None, None, []
        self.guesses = self.probe()

    def probe(self) -> list[str]:
        p = self.t.probe()
        guesses = [top[min(top)][0][0] for top in p.predictions.values()]
        if self.right_at is None and all(g in a for g, a in zip(guesses, self.answers)):
            self.right_at = (self.t.step_count, self.seconds)
        return guesses

    def advance(self, seconds: float) -> None:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds and self.t.step_count < self.t.cfg.max_steps:
            m = self.t.step()
            self.seconds += m.seconds
            self.losses.append(m.loss)
            if self.t.step_count % PROBE_EVERY == 0:
                self.guesses = self.probe()

    def busy(self, budget: float) -> bool:
        """Still training: inside the time budget and the run's own step budget (the page's max steps)."""
        return self.seconds < budget and self.t.step_count < self.t.cfg.max_steps

    def report(self) -> str:
        n = len(self.losses)
        start = sum(self.losses[:10]) / max(1, min(10, n))
        end = sum(self.losses[-10:]) / max(1, min(10, n))
        when = (f"all probes right at step {self.right_at[0]}, after {self.right_at[1]:.1f} s of training"
                if self.right_at else "probes not all right within the budget")
        return (f"{self.name:<5} {n:5d} steps in {self.seconds:6.1f} s = {n / max(self.seconds, 1e-9):5.1f} steps/s; "
                f"loss {start:.2f} -> {end:.2f} (mean of first/last 10 steps); {when}; last guesses: "
                f"{', '.join(self.guesses)}")


def part1(args) -> None:
    farm, old = CORPUS_CHOICES["farm"], CORPUS_CHOICES["wordnet"]
    new = Run("new", farm.tokenizer(), farm_lines(), farm.settings(seed=args.seed), FARM_PROBES,
              [{a} for a in FARM_ANSWERS])
    was = Run("old", old.tokenizer(), builtin_lines(),
              old.settings(preset=DEFAULT_PRESET, seed=args.seed), DEFAULT_PROBES, OLD_ANSWERS)
    t0 = time.perf_counter()
    while any(r.busy(args.seconds) for r in (new, was)):
        for r in (new, was):
            if r.busy(args.seconds):
                r.advance(0.5)
    print(f"Part 1, {args.seconds:g} s of training each ({time.perf_counter() - t0:.0f} s wall, probes included):")
    print(" ", new.report())
    print(" ", was.report())
    print(f"  steps/s new / old = {len(new.losses) / new.seconds / (len(was.losses) / was.seconds):.1f}")


def part2(args) -> None:
    farm = CORPUS_CHOICES["farm"]
    t0 = time.perf_counter()
    comp = ObjectiveComparison.build(farm.tokenizer(), farm.lines(), farm.preset, args.compare_steps, args.seed,
                                     farm.name, slots=SlotManager(capacity=1), memory=SessionMemory(10**9),
                                     base=farm.settings(), cloze=True, objectives=tuple(args.objectives.split(",")))
    while comp.advance(50) not in ("", None):
        pass
    wall = time.perf_counter() - t0
    print(f"Part 2, BERT vs GPT on the farm corpus, {args.compare_steps} steps each: {wall:.1f} s wall for the "
          f"{len(comp.sessions)} runs (probes included)")
    for obj, scores in comp.cloze_scores.items():
        s = comp.sessions[obj]
        left, right = (" ".join(f"{x[k]:.0%}" for x in scores) for k in ("left", "right"))
        print(f"  {obj}: {s.trainer.elapsed:5.1f} s training; fill-in probes right at steps 0, 1/4 .. 4/4: "
              f"left {left} | right {right}")
    for p in FARM_PROMPTS:
        print(f"  clm continues {p!r}: {bert_core.generate(comp.model('clm'), p, max_new_tokens=6).text!r}")
    comp.reset()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0, help="training seconds per run in part 1")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare-steps", type=int, default=300)
    ap.add_argument("--objectives", default="mlm,clm", help="part 2's runs (the page's default: mlm,clm)")
    ap.add_argument("--skip", choices=("1", "2"), help="skip part 1 or part 2")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch threads: {args.threads}")
    if args.skip != "1":
        part1(args)
    if args.skip != "2":
        part2(args)


if __name__ == "__main__":
    main()
