"""What a user picks for a training run and the text it trains on: presets, limits, upload, probes, bytes."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.config import BertConfig
from ..model.counts import param_counts
from ..model.heads import BertForPreTraining
from ..model.loading import BUNDLED_DIR
from ..model.tokenization import WordPieceTokenizer
from ..objectives.rtd import new_generator
from ..train.corpus import MAX_USER_CORPUS_BYTES, load_builtin_corpus, parse_user_corpus
from ..train.toy import FARM_PROBES, farm_lines, farm_tokenizer, farm_words
from ..train.trainer import DEFAULT_PROBES, OBJECTIVES, PRESETS, TrainConfig

MAX_STEPS = 2000  # per run
MAX_TRAIN_SECONDS = 600.0  # per run: time spent inside training steps
BUILTIN_SAMPLE_LINES = 10_000  # of the built-in corpus, so a run starts within a few seconds
MAX_PROBE_CHARS = 300
DEFAULT_PRESET = "small (4 layers, 128 wide)"
QUICK_PRESET = "quick (2 layers, 64 wide, 4 heads, no dropout)"  # the farm corpus's: learns it within a minute


@dataclass(frozen=True)
class CorpusChoice:
    """A built-in corpus a run can train on, with the tokenizer, probes and settings that suit it."""

    key: str
    label: str  # what the page's radio shows
    name: str  # "training on {name}"
    preset: str
    lr: float
    max_steps: int
    random_rows: bool
    batch_size: int = 32
    mlm_probability: float = 0.15

    def lines(self) -> list[str]:
        return farm_lines() if self.key == "farm" else builtin_lines()

    def tokenizer(self) -> WordPieceTokenizer:
        """Its own ~120-piece vocabulary for the farm corpus; the tiny bundled model's for WordNet."""
        return farm_tokenizer() if self.key == "farm" else bundled_tokenizer()

    def probes(self, text: str | None) -> tuple[str, ...]:
        """The probes: the sidebar's text first when it suits (see probe_sentences), then this corpus's own."""
        if self.key != "farm":
            return probe_sentences(text)
        words = set(farm_words())
        ok = text and all(w in words for w in text.lower().replace("[mask]", " ").replace(".", " . ").split())
        return probe_sentences(text, FARM_PROBES) if ok else FARM_PROBES

    def settings(self, **kw) -> TrainSettings:
        """This corpus's default settings, overridden by `kw`."""
        base = dict(preset=self.preset, lr=self.lr, max_steps=self.max_steps, random_rows=self.random_rows,
                    batch_size=self.batch_size, mlm_probability=self.mlm_probability)
        return TrainSettings(**{**base, **kw})


# The first is the pages' default: a corpus that visibly learns within a minute on 2 cores.
CORPUS_CHOICES = {
    "farm": CorpusChoice("farm", "Quick: farm sentences (learns in a minute)", "the farm sentences",
                         QUICK_PRESET, 3e-3, 600, True, batch_size=128, mlm_probability=0.25),
    "wordnet": CorpusChoice("wordnet", "Built-in: WordNet glosses (slow: real definitions)",
                            "the built-in WordNet glosses", DEFAULT_PRESET, 1e-3, 500, False),
}


@dataclass(frozen=True)
class TrainSettings:
    """What a user picks for one run."""

    preset: str = DEFAULT_PRESET
    lr: float = 1e-3
    mlm_probability: float = 0.15
    seed: int = 0
    max_steps: int = 500
    batch_size: int = 32
    seq_len: int = 64
    probe_every: int = 25
    objective: str = "mlm"  # "mlm" (BERT), "clm" (GPT) or "rtd" (ELECTRA): trainer.OBJECTIVES
    random_rows: bool = False  # batches of random lines (the farm corpus) instead of length-sorted neighbours

    def validate(self) -> None:
        """Refuse settings outside the server's budgets (BertCoreError with the allowed range)."""
        if self.preset not in PRESETS:
            raise BertCoreError(f"unknown model size {self.preset!r}; pick one of: {', '.join(PRESETS)}")
        if self.objective not in OBJECTIVES:
            raise BertCoreError(f"unknown objective {self.objective!r}; pick one of: {', '.join(OBJECTIVES)}")
        checks = [
            ("max steps", self.max_steps, 1, MAX_STEPS),
            ("learning rate", self.lr, 1e-6, 0.1),
            ("mask probability", self.mlm_probability, 0.01, 0.9),
            ("seed", self.seed, 0, 2**31 - 1),
            ("batch size", self.batch_size, 1, 128),
            ("sequence length", self.seq_len, 8, 128),
            ("probe interval", self.probe_every, 1, MAX_STEPS),
        ]
        for name, v, lo, hi in checks:
            if not lo <= v <= hi:
                raise BertCoreError(f"{name} must be between {lo:g} and {hi:g}, got {v:g}")

    def train_config(self) -> TrainConfig:
        """The Trainer's config: warm up over the first tenth (at most 100 steps), then decay to 0."""
        return TrainConfig(batch_size=self.batch_size, seq_len=self.seq_len, lr=self.lr,
                           warmup_steps=max(1, min(100, self.max_steps // 10)), max_steps=self.max_steps,
                           mlm_probability=self.mlm_probability, seed=self.seed, probe_every=self.probe_every,
                           objective=self.objective, random_rows=self.random_rows)


def run_bytes(weight_bytes: int, data_bytes: int, optimizer: bool = True) -> int:
    """What a run holds between steps: its weights, Adam's two moments (until it finishes), its corpus as ids.

    Gradients (one more copy of the weights) exist only inside a step, and at most the slot cap's runs
    step at once, so they are not charged to paused runs.
    """
    return weight_bytes * (3 if optimizer else 1) + data_bytes


def corpus_bytes(lines: list[str]) -> int:
    """An upper estimate of a corpus held as token-id lists (measured: ~36 bytes a token, ~7.5 a character)."""
    return 8 * sum(len(s) for s in lines) + 100 * len(lines)


def ids_bytes(rows: list[list[int]]) -> int:
    """What rows of token ids held as Python lists take (measured: ~36 bytes a token, ~100 a list)."""
    return 36 * sum(map(len, rows)) + 100 * len(rows)


def preset_parameters(preset: str, vocab_size: int, objective: str = "mlm") -> int:
    """Parameters a run of this preset, vocabulary and objective trains (tied and shared weights counted once).

    mlm and clm: an MLM-only BERT (clm reads the same head left to right). rtd: the discriminator and its
    generator, which share the embeddings (built on torch's meta device: shapes only, no memory).
    """
    cfg = BertConfig(vocab_size=vocab_size, max_position_embeddings=128, **PRESETS[preset])
    if objective != "rtd":
        return param_counts(cfg, mlm=True, nsp=False, pooler=False)["total"]
    with torch.device("meta"):
        disc = BertForPreTraining(replace(cfg, model_type="electra"), mlm=False, nsp=False, rtd=True)
        gen = new_generator(disc)
    return sum(p.numel() for p in {id(p): p for p in (*disc.parameters(), *gen.parameters())}.values())


@functools.lru_cache(maxsize=1)
def bundled_tokenizer() -> WordPieceTokenizer:
    """The tiny bundled model's WordPiece tokenizer alone (the Training page's; read-only, shared by every session)."""
    if not (BUNDLED_DIR / "config.json").is_file():
        raise BertCoreError("the bundled model is missing: run `python -m bert_core.train.pretrain` to build it")
    return WordPieceTokenizer.from_dir(BUNDLED_DIR, model_max_length=128)


def builtin_lines(n: int = BUILTIN_SAMPLE_LINES) -> list[str]:
    """An evenly spaced sample of `n` lines of the built-in corpus (the same lines every time)."""
    lines = load_builtin_corpus()
    return lines[:: max(1, len(lines) // n)][:n]


def decode_upload(data: bytes) -> str:
    """An uploaded file's bytes as text; refuses files over the corpus limit or not UTF-8."""
    if len(data) > MAX_USER_CORPUS_BYTES:
        raise BertCoreError(
            f"the file is {len(data):,} bytes, more than the limit of {MAX_USER_CORPUS_BYTES:,} bytes: "
            "use a smaller text"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BertCoreError("the file is not UTF-8 text: save it as plain text (UTF-8) and upload it again") from e


def user_lines(text: str) -> list[str]:
    """Pasted or uploaded text as training lines (size and word-count bounded, see parse_user_corpus)."""
    lines = parse_user_corpus(text)
    if len(lines) < 2:
        raise BertCoreError("the corpus needs at least two lines: put one sentence on each line")
    return lines


def probe_sentences(text: str | None, defaults: tuple[str, ...] = DEFAULT_PROBES) -> tuple[str, ...]:
    """The probes: the sidebar text first when it is short and has a [MASK], then the defaults."""
    if not text or "[MASK]" not in text or len(text) > MAX_PROBE_CHARS:
        return defaults
    # Our models are uncased: "The cat ..." and "the cat ..." are the same probe.
    return (text, *(p for p in defaults if p.lower() != text.strip().lower()))


def ema(values, smoothing: float) -> np.ndarray:
    """Exponential moving average, bias-corrected, skipping NaNs (steps where a series had no token).

    s_t = a s_{t-1} + (1 - a) x_t, reported as s_t / (1 - a^n) after n finite values (as TensorBoard).
    Example: values [1, 3], smoothing 0.5 -> [1.0, 2.333...].
    """
    x = np.asarray(values, dtype=float)
    out = np.full_like(x, np.nan)
    s, w = 0.0, 0.0
    for i, v in enumerate(x):
        if not math.isnan(v):
            s = smoothing * s + (1 - smoothing) * v
            w = smoothing * w + (1 - smoothing)
        if w > 0:
            out[i] = s / w
    return out


@dataclass(frozen=True)
class ExampleRun:
    """A finished pretraining run to show before the user's own: the tiny bundled model's first phase."""

    curves: dict  # "step", "loss" (the MLM loss), "accuracy": each (S,), as the live chart reads them
    steps: int
    batch_size: int
    parameters: int
    minutes: float
    tokens_seen: int


@functools.lru_cache(maxsize=1)
def example_run() -> ExampleRun | None:
    """The bundled model's phase-1 log (from random weights), or None when the report is not there."""
    path = BUNDLED_DIR / "training_report_phase1.json"
    if not path.is_file():
        return None
    r = json.loads(path.read_text())
    log = r["log"]
    curves = {"step": np.array([row["step"] for row in log]), "loss": np.array([row["mlm"] for row in log]),
              "accuracy": np.array([row["acc"] for row in log])}
    return ExampleRun(curves, r["steps"], r["batch_size"], r["parameters"], r["training_minutes"], r["tokens_seen"])
