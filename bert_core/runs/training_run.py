"""One user's live training run: its model, its budgets, its copies; a slot to step in and a ledger for its bytes.

No streamlit here. The Training page keeps a `TrainingSession` in its session state and calls
`advance()` from a timer while the page is open; this module decides whether that session may
train now (a slot from its `Slots`), for how long (budgets), and hands out copies of the model (snapshots and
checkpoint zips), charging their bytes to its `Ledger` (sharing.py). The app passes the process-wide slot cap and
byte budget every user of one server shares; a notebook passes nothing and trains whenever it asks.
"""

from __future__ import annotations

import copy
import io
import json
import math
import tempfile
import threading
import time
import uuid
import weakref
import zipfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import BertCoreError
from ..model.checkpoint import save_pretrained
from ..model.loaded import LoadedModel
from ..model.tokenization import WordPieceTokenizer
from ..train.corpus import MAX_USER_CORPUS_BYTES
from ..train.trainer import DEFAULT_PROBES, PRESETS, Probe, StepMetrics, Trainer, new_model
from .memory import format_mb, tensor_bytes
from .settings import (
    MAX_TRAIN_SECONDS,
    TrainSettings,
    corpus_bytes,
    ema,
    ids_bytes,
    preset_parameters,
    run_bytes,
)
from .sharing import Ledger, OwnSlots, Slots, Unmetered
from .status import (
    FINISHED,
    IDLE,
    OUTCOMES,
    PAUSED,
    QUEUED,
    RUNNING,
    WAITING,
    Status,
)


class TrainingSession:
    """One user's run: a Trainer, its probe history, its state and its budgets.

    States: idle (nothing set up) -> paused (built) <-> running, running -> queued (waiting for a slot)
    -> running, and running -> finished when a budget is spent. reset() goes back to idle. When the server's
    memory for users' runs is full, setup leaves the run waiting for memory (not built, a place in the ledger's
    queue); `advance` builds it when its turn comes, and starts it if Start was pressed meanwhile.
    """

    def __init__(self, slots: Slots | None = None, max_seconds: float = MAX_TRAIN_SECONDS,
                 clock: Callable[[], float] = time.perf_counter, memory: Ledger | None = None):
        self.id = uuid.uuid4().hex
        self.slots: Slots = slots if slots is not None else OwnSlots()  # None: a notebook's run, nobody to share with
        self.memory: Ledger = memory if memory is not None else Unmetered()
        self.mem_key = f"run:{self.id}"
        self.notice = ""  # why the run was dropped, shown once by the page
        weakref.finalize(self, self.memory.release, self.mem_key)  # a closed tab's run gives its bytes back
        weakref.finalize(self, self.memory.cancel, self.mem_key)  # ... and its place in the memory queue
        self.max_seconds = max_seconds
        self.clock = clock
        self.state = IDLE
        self.trainer: Trainer | None = None
        self.settings: TrainSettings | None = None
        self.corpus_name = ""
        self.probes: list[Probe] = []
        self.finish_reason = ""
        # The page's script thread steps the model; a download runs on another thread.
        self._lock = threading.RLock()
        self._zip: tuple[int, bytes] | None = None
        self._pending: tuple | None = None  # (bytes, what, build, install) of a run waiting for memory
        self._start_wanted = False  # Start was pressed while the run waited for memory

    # --- set-up and controls -------------------------------------------------------------

    def setup(self, tokenizer: WordPieceTokenizer, lines: list[str], settings: TrainSettings,
              corpus_name: str = "", probes: tuple[str, ...] = DEFAULT_PROBES) -> None:
        """Build a fresh model and trainer for these settings (replacing any previous run)."""
        settings.validate()
        if sum(len(s.encode("utf-8")) for s in lines) > MAX_USER_CORPUS_BYTES:
            raise BertCoreError(f"the corpus is larger than {MAX_USER_CORPUS_BYTES:,} bytes: use a smaller text")
        # rtd: the generator's weights are charged too (preset_parameters counts both models).
        weights = 4 * preset_parameters(settings.preset, tokenizer.vocab_size, settings.objective)

        def build() -> Trainer:
            model = new_model(tokenizer, PRESETS[settings.preset], max_position_embeddings=128, seed=settings.seed,
                              causal=settings.objective == "clm", rtd=settings.objective == "rtd")
            return Trainer(model, tokenizer, lines, settings.train_config(), probes=probes)

        def install(trainer: Trainer) -> None:
            with self._lock:
                self._clear()  # the reservation already replaced the old run's bytes
                self.trainer, self.settings, self.corpus_name = trainer, settings, corpus_name
                self.memory.resize(self.mem_key, self._held_bytes())  # measured, usually under the estimate
                self.probes = [trainer.probe()]  # step 0: what the untrained model guesses
                self.state = PAUSED

        self._charged_build(run_bytes(weights, corpus_bytes(lines)), "a training run", build, install)

    # --- memory -------------------------------------------------------------------------------

    def _charged_build(self, nbytes: int, what: str, build: Callable[[], object],
                       install: Callable[[object], None]) -> None:
        """Charge `nbytes` for a new run, build it and install it; when memory is full, wait for it in line.

        Replacing a built run is charged at once (refused with a BertCoreError when it cannot fit, the old run
        kept); a first run that does not fit waits in the ledger's queue (state waiting) and `advance` retries.
        """
        if self.trainer is not None:
            self._reserve(nbytes, what)  # replaces this session's previous charge
            try:
                run = build()
            except BaseException:  # the previous run stays: charge its own bytes again
                self.memory.resize(self.mem_key, self._held_bytes())
                raise
            install(run)
            return
        with self._lock:
            self._pending, self._start_wanted = (nbytes, what, build, install), False
        self._try_pending()

    def _try_pending(self) -> bool:
        """Ask the ledger for the waiting run's bytes; build and install it when granted (True)."""
        with self._lock:
            if self._pending is None:
                return False
            nbytes, what, build, install = self._pending
            ref = weakref.WeakMethod(self._evict)  # the ledger must not keep a closed tab's run alive
            if self.memory.request(self.mem_key, nbytes, what, evict=lambda: (m := ref()) is not None and m()):
                self.state = WAITING
                return False
            self._pending, start = None, self._start_wanted
            try:
                run = build()
            except BaseException:
                self.memory.release(self.mem_key)
                self.state, self._start_wanted = IDLE, False
                raise
            install(run)
        if start:
            self.start()
        return True

    @property
    def starts_when_built(self) -> bool:
        """Start was pressed while the run waited for memory: it trains as soon as it is built."""
        return self._start_wanted

    def memory_position(self) -> int | None:
        """This run's place in the queue for memory (1 = next), or None when it is not waiting."""
        return self.memory.position(self.mem_key) if self.state == WAITING else None

    def _reserve(self, nbytes: int, what: str) -> None:
        ref = weakref.WeakMethod(self._evict)  # the ledger must not keep a closed tab's run alive
        self.memory.reserve(self.mem_key, nbytes, what, evict=lambda: (m := ref()) is not None and m())

    def _held_bytes(self) -> int:
        """The bytes this run is charged: weights (and Adam's moments while it can still step), corpus, zip."""
        t = self.trainer
        if t is None:
            return 0
        zipped = len(self._zip[1]) if self._zip else 0
        data = ids_bytes(t.data.lines) + ids_bytes(t.data.sents)
        models = [t.model] + ([t.generator] if t.generator is not None else [])  # rtd: the generator too
        return run_bytes(tensor_bytes(*models), data, optimizer=self.state != FINISHED) + zipped

    def _evict(self) -> bool:
        """Drop this run to make room for another user's (called by the ledger when it sat idle); False if busy."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self.trainer is None:
                self.memory.release(self.mem_key)
                return True
            step, minutes = self.step, self.memory.idle_seconds / 60
            self.reset()
            self.notice = (f"Your run (step {step:,}) was dropped after {minutes:g} minutes without use, to make "
                           "room on this server for someone else's. Start a new one; download a checkpoint "
                           "before leaving a run alone for long.")
            return True
        finally:
            self._lock.release()

    def memory_usage(self) -> str:
        """What this run and the server hold, for the page: 'this run 76 MB; all users' ... 152 MB of 600 MB'
        (this run's alone when its ledger has no budget)."""
        used, budget, _ = self.memory.usage()
        mine = f"this run {format_mb(self.memory.held(self.mem_key))}"
        if budget is None:
            return mine
        return f"{mine}; all users' runs and copies on this server {format_mb(used)} of {format_mb(budget)}"

    def start(self) -> int:
        """Ask to train: 0 when training now, else the place in the queue."""
        if self.state == WAITING:
            self._start_wanted = True  # starts as soon as it is built
            return self.memory_position() or 1
        if self.trainer is None:
            raise BertCoreError("set up a run first: pick a corpus and a model size")
        if self.state == FINISHED:
            raise BertCoreError(f"this run is finished ({self.finish_reason}): reset to train again")
        self.state = RUNNING
        return self._claim()

    def pause(self) -> None:
        """Stop training and give the slot to the next in line (a run waiting for memory keeps its place)."""
        self._start_wanted = False
        self.slots.release(self.id)
        if self.state in (RUNNING, QUEUED):
            self.state = PAUSED

    def reset(self) -> None:
        """Drop the model and its history; back to idle."""
        with self._lock:
            self.memory.release(self.mem_key)
            self.memory.cancel(self.mem_key)
            self._pending, self._start_wanted = None, False
            self._clear()

    def _clear(self) -> None:
        with self._lock:
            self.slots.release(self.id)
            self.state, self.trainer, self.settings, self.probes = IDLE, None, None, []
            self.corpus_name, self.finish_reason, self._zip = "", "", None

    def _claim(self) -> int:
        self.memory.touch(self.mem_key)
        pos = self.slots.request(self.id)
        self.state = RUNNING if pos == 0 else QUEUED
        return pos

    def queue_position(self) -> int | None:
        """0 training, n waiting n-th in line, None when not asking for a slot."""
        return self.slots.position(self.id)

    # --- training ---------------------------------------------------------------------------

    # A fine-tuning run (finetune_run.py) differs in the three hooks: when its steps are done, what it
    # records at the end, and what one step does.

    def _steps_done(self) -> str:
        """Why the run's own step budget is spent, or ""."""
        n = self.settings.max_steps
        return f"reached {n} steps" if self.trainer.step_count >= n else ""

    def _final_record(self) -> None:
        """What a finished run keeps for the page: a last probe at its last step."""
        if self.probes[-1].step != self.trainer.step_count:
            self._add_probe(self.trainer.probe())

    def _one_step(self):
        """One training step, and a probe when one is due."""
        t = self.trainer
        m = t.step()
        if t.step_count % t.cfg.probe_every == 0:
            self._add_probe(t.probe())
        return m

    def _budget_spent(self) -> str:
        if reason := self._steps_done():
            return reason
        if self.trainer.elapsed >= self.max_seconds:
            return f"reached the {self.max_seconds / 60:g}-minute training limit"
        return ""

    def _finish(self, reason: str) -> None:
        self.state, self.finish_reason = FINISHED, reason
        self._final_record()  # a last probe: model work, so still inside this run's slot
        self.trainer.opt.state.clear()  # a finished run never steps again: Adam's moments (2x the model) go
        self.memory.resize(self.mem_key, self._held_bytes())
        self.slots.release(self.id)  # last: the next in line must not start while this run still computes

    def _add_probe(self, probe: Probe) -> None:
        """Keep every probe's predictions but only the newest probe's attention maps (the page draws that one)."""
        if self.probes:
            self.probes[-1].attentions = None
        self.probes.append(probe)

    def _steps(self, seconds: float | None, steps: int | None) -> list[StepMetrics]:
        """Step until `seconds` pass or `steps` are done or a budget is spent; probe on schedule."""
        out: list[StepMetrics] = []
        t0 = self.clock()
        with self._lock:
            while True:
                reason = self._budget_spent()
                if reason:
                    self._finish(reason)
                    break
                if (steps is not None and len(out) >= steps) or (seconds is not None and self.clock() - t0 >= seconds):
                    break
                out.append(self._one_step())
        return out

    def advance(self, seconds: float = 0.5) -> list[StepMetrics]:
        """While running: renew the slot and train for about `seconds`; the new steps' metrics.

        Called from the page's timer, so training happens only while the page is open. Returns []
        while waiting for a slot (state queued) or when not running. While waiting for memory it renews the
        run's place in line and builds the run when its turn comes.
        """
        if self.state == WAITING and not self._try_pending():
            return []
        if self.state not in (RUNNING, QUEUED) or self.trainer is None:
            return []
        if self._claim() != 0:
            return []
        return self._steps(seconds, None)

    def run_steps(self, n: int) -> list[StepMetrics] | None:
        """Exactly `n` steps now (fewer if a budget runs out); None when no slot is free."""
        if self.trainer is None:
            raise BertCoreError("set up a run first: pick a corpus and a model size")
        if self.state == FINISHED:
            raise BertCoreError(f"this run is finished ({self.finish_reason}): reset to train again")
        was_running = self.state in (RUNNING, QUEUED)
        self.memory.touch(self.mem_key)
        if self.slots.request(self.id) != 0:
            if not was_running:
                self.slots.release(self.id)  # only asked for a moment: do not hold a place in line
            return None
        try:
            return self._steps(None, n)
        finally:
            if not was_running and self.state != FINISHED:
                self.slots.release(self.id)
                self.state = PAUSED

    # --- reading the run --------------------------------------------------------------------

    @property
    def step(self) -> int:
        return self.trainer.step_count if self.trainer else 0

    def status(self, smoothing: float = 0.9) -> Status:
        """Step, time, throughput, lr and smoothed loss/accuracy for the metrics row."""
        t = self.trainer
        self.memory.touch(self.mem_key)  # the page is open: this run is in use
        h = t.history if t else []
        recent = h[-10:]
        secs = sum(m.seconds for m in recent)
        tps = sum(m.tokens for m in recent) / secs if secs > 0 else 0.0
        loss = self.curves(smoothing)["loss"][-1] if h else math.nan
        acc = ema([m.accuracy for m in h], smoothing)[-1] if h else math.nan
        return Status(state=self.state, step=self.step, max_steps=self.settings.max_steps if self.settings else 0,
                      elapsed=t.elapsed if t else 0.0, max_seconds=self.max_seconds, tokens_per_sec=tps,
                      lr=h[-1].lr if h else (t.lr_at(0) if t else 0.0), loss=float(loss), accuracy=float(acc),
                      queue_position=self.queue_position() if self.state in (RUNNING, QUEUED) else None,
                      memory_position=self.memory_position())

    def curves(self, smoothing: float = 0.9) -> dict[str, np.ndarray]:
        """Per-step series for the loss chart, smoothed: step, loss, [MASK]/random/kept, accuracy."""
        h = self.trainer.history if self.trainer else []
        # A step whose draw selected no token has loss 0 by convention: leave it out (NaN), not 0.
        loss = [m.loss if not math.isnan(m.accuracy) else math.nan for m in h]
        out = {"step": np.array([m.step for m in h], dtype=int), "loss": ema(loss, smoothing)}
        if self.settings is None or self.settings.objective == "mlm":  # the 80/10/10 split is MLM's alone
            for name in OUTCOMES:
                out[name] = ema([m.loss_by_outcome.get(name, math.nan) for m in h], smoothing)
        out["accuracy"] = ema([m.accuracy for m in h], smoothing)
        if h and h[0].rtd_loss is not None:  # rtd: the discriminator's own loss and accuracy
            out["rtd"] = ema([m.rtd_loss for m in h], smoothing)
            out["rtd_accuracy"] = ema([m.rtd_accuracy for m in h], smoothing)
        return out

    @property
    def last_probe(self) -> Probe | None:
        return self.probes[-1] if self.probes else None

    def snapshot(self, name: str | None = None) -> LoadedModel:
        """A copy of the model as it is now (eval mode, no gradients): later training leaves it alone."""
        if self.trainer is None:
            raise BertCoreError("there is no model yet: start a run first")
        # One copy a session: the page replaces its previous copy with this one, so the key's bytes are
        # replaced; the old copy's finalizer then finds another token and frees nothing.
        key, token = f"copy:{self.id}", uuid.uuid4().hex
        self.memory.touch(self.mem_key)  # in use: never evicted to make room for its own copy
        self.memory.reserve(key, tensor_bytes(self.trainer.model), "a copy of your model", token=token)
        with self._lock:
            model = copy.deepcopy(self.trainer.model)
            step = self.trainer.step_count
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        s = self.settings
        note = (f"Trained in this session: {s.preset}, {step} steps on {self.corpus_name or 'a corpus'}, "
                f"seed {s.seed}.")
        # The tokenizer is shared, never copied: nothing mutates it (see tokenization.py).
        loaded = LoadedModel(model, self.trainer.tok, name or f"my model (step {step})", "session", [note])
        weakref.finalize(loaded, self.memory.release, key, token)  # gone with the session that holds it
        return loaded

    def checkpoint_zip(self) -> bytes:
        """A zip of the checkpoint (config.json, model.safetensors, tokenizer files, training_report.json)."""
        if self.trainer is None:
            raise BertCoreError("there is no model yet: start a run first")
        with self._lock:
            if self._zip is not None and self._zip[0] == self.trainer.step_count:
                return self._zip[1]
            return self._keep_zip(self._build_zip())

    def _build_zip(self) -> bytes:
        """The zip's bytes for the model as it is now (a fine-tuning run writes a classifier's folder)."""
        with self._lock:
            with tempfile.TemporaryDirectory() as d:
                save_pretrained(self.trainer.model, self.trainer.tok, d)
                report = {"settings": asdict(self.settings), "steps": self.trainer.step_count,
                          "corpus": self.corpus_name, "training_seconds": round(self.trainer.elapsed, 1),
                          "last_loss": self.trainer.history[-1].loss if self.trainer.history else None}
                (Path(d) / "training_report.json").write_text(json.dumps(report, indent=2) + "\n")
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                    for f in sorted(Path(d).iterdir()):
                        z.write(f, f.name)
            return buf.getvalue()

    def _keep_zip(self, data: bytes) -> bytes:
        """Keep the zip for repeated downloads at this step when the memory budget has room; return it."""
        old, self._zip = self._zip, (self.trainer.step_count, data)
        if not self.memory.resize(self.mem_key, self._held_bytes()):
            self._zip = None  # no room: built again on the next download
            if old is not None:
                self.memory.resize(self.mem_key, self._held_bytes())
        return data


__all__ = ["TrainingSession"]
