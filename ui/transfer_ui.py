"""Why pre-train, on the Tagging and Question answering pages: the same run on fresh weights, the baseline beside
both, and a sample-efficiency figure (head only on cached vectors), each computed live."""

from __future__ import annotations

import html
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.token_transfer import sample_efficiency_figure, transfer_curves_figure
from bert_core.finetune.cached_head import SampleEfficiency, cached_feature_bytes
from bert_core.finetune.finetuning import EvalResult
from bert_core.finetune.token_finetuning import token_finetune_defaults
from bert_core.runs.memory import tensor_bytes
from bert_core.runs.status import FINISHED, IDLE, WAITING
from ui.finetune_ui import QUEUED_TICK_SECONDS, TICK_SECONDS, TRAIN_SECONDS
from ui.widgets import chart, live_run, table

SE_TICK_SECONDS = 1.0


@dataclass
class TransferTask:
    """What the comparison needs to know about a page's task."""

    prefix: str  # session-state prefix: "tg" or "qa"
    metric: str  # "accuracy" (tagging) or "F1" (QA)
    score: Callable[[EvalResult], float]  # the validation number compared
    baseline: float  # the task's baseline on the same validation set
    baseline_name: str
    examples: str  # "sentences" / "questions"
    sizes: tuple[int, ...]  # training examples for the sample-efficiency figure
    baseline_at: Callable[[int], float] | None = None  # the baseline trained on n examples (None: needs no training)
    cached_class: type | None = None  # the head-only tuner (CachedHeadTagger / CachedHeadReader)


def _scratch_label(main) -> str:
    return f"{main.trainer.base.name}, fresh weights"


def _curve(session, t: TransferTask):
    ev = session.trainer.evals
    return [e.step for e in ev], [t.score(e) for e in ev]


def comparison_ui(main, scratch, t: TransferTask) -> None:
    """Curves together, one table, a sentence on the gap (the scratch run's part redrawn while it trains)."""
    runs = {f"{main.trainer.base.name} (pretrained)": _curve(main, t)}
    if scratch.trainer is not None:
        runs[_scratch_label(main) + " (from scratch)"] = _curve(scratch, t)
    chart(transfer_curves_figure(runs, t.baseline, t.metric, t.baseline_name), "pretrained vs from scratch",
          key=f"{t.prefix}-transfer-curves")
    rows = [{"model": name, "steps": int(x[-1]), f"validation {t.metric}": y[-1]} for name, (x, y) in runs.items()]
    rows.append({"model": t.baseline_name, "steps": 0, f"validation {t.metric}": t.baseline})
    table(pd.DataFrame(rows), "pretrained vs from scratch", key=f"{t.prefix}-transfer-table", hide_index=True,
          column_config={f"validation {t.metric}": st.column_config.NumberColumn(format="percent")})
    if scratch.trainer is None:
        return
    pre, fresh = runs[next(iter(runs))][1][-1], runs[list(runs)[1]][1][-1]
    gap = 100 * (pre - fresh)
    unfinished = "" if main.state == scratch.state == FINISHED else " (so far: the runs are not both finished)"
    st.markdown(
        f"Same network, same data, same settings and seed{unfinished}: pretraining is worth **{gap:+.1f} points** "
        f"of validation {t.metric} ({100 * pre:.1f}% against {100 * fresh:.1f}% from fresh weights; the "
        f"{html.escape(t.baseline_name)} gets {100 * t.baseline:.1f}%). "
        + ("The vectors the pretrained model learned from raw text already carry what this task needs; fresh "
           "weights must learn it from these few labelled examples alone, and do not get far."
           if gap >= 5 else "Here pretraining bought little: the labelled data alone is enough, or the run too short."))


def transfer_ui(main, scratch, t: TransferTask) -> None:
    """The "why pre-train" section under a finished (or running) fine-tuning run."""
    st.subheader("Why pre-train? The same network with fresh weights")
    st.markdown(
        "Pretraining's whole claim: a network that first read lots of raw text, then saw a few labelled examples, "
        "beats **the same network with fresh random weights** trained on those examples alone, at the same "
        "budget. Train the copy (transformers' initialisation, N(0, 0.02)) with exactly the settings of your run "
        "above; the dashed line is the baseline.")
    if main.trainer is None:
        return
    b1, b2 = st.columns(2)
    go = b1.button("Train the same network from scratch", key=f"{t.prefix}_scratch_start", type="primary",
                   disabled=scratch.state != IDLE, width="stretch",
                   help="Same task, settings and seed as the run above; every weight drawn afresh.")
    if b2.button("Reset the from-scratch run", key=f"{t.prefix}_scratch_reset", disabled=scratch.state == IDLE,
                 width="stretch"):
        scratch.reset()
        st.rerun()
    if go:
        try:
            with st.spinner("Drawing fresh weights and preparing the run…"):
                fresh = bert_core.untrained_copy(main.trainer.base, seed=main.settings.seed)
                scratch.setup(fresh, main.trainer.task, main.settings)
            scratch.start()
            st.rerun()
        except bert_core.BertCoreError as e:
            st.error(f"Cannot start: {e}")
    if scratch.state == WAITING:
        st.info("The from-scratch run waits for memory on this server; it is built when there is room.")
        scratch.advance(0)
    if scratch.trainer is None:
        comparison_ui(main, scratch, t)
        return
    live_run(scratch, lambda: comparison_ui(main, scratch, t), TICK_SECONDS, QUEUED_TICK_SECONDS, TRAIN_SECONDS)


def sample_efficiency_ui(main, scratch, t: TransferTask) -> None:
    """Validation score against training examples, pretrained vs fresh weights vs baseline, computed live."""
    st.subheader("Few labels, many labels")
    st.markdown(
        f"How many labelled {t.examples} does each model need? For every size n a new head is fit to convergence "
        f"on the first n training {t.examples} only (head only, on vectors cached once: fast enough for every "
        "point), for the pretrained model and for its fresh-weights copy; "
        + ("the baseline learns from the same n. " if t.baseline_at is not None else
           "the baseline learns nothing from examples (a flat line). ")
        +
        "The gap at small n is why pretraining changed NLP: labels are expensive, raw text is not.")
    if main.trainer is None:
        return
    key = f"{t.prefix}_se_job"
    job: SampleEfficiency | None = st.session_state.get(key)
    if st.button("Compute the sample-efficiency figure", key=f"{t.prefix}_se_start",
                 disabled=job is not None and not job.done):
        sid = uuid.uuid4().hex
        try:
            with st.spinner("Preparing…"):
                job = _new_job(main, scratch, t, sid)
        except bert_core.BertCoreError as e:
            st.error(f"Cannot compute it now: {e}")
            return
        st.session_state[key] = job
        st.session_state[f"{t.prefix}_se_id"] = sid
    if job is None:
        return
    sid = st.session_state[f"{t.prefix}_se_id"]

    @st.fragment(run_every=None if job.done else SE_TICK_SECONDS)
    def live() -> None:
        if not job.done:
            place = main.slots.request(sid)  # the page's runs' slots and ledger
            if place == 0:
                try:
                    with st.spinner("Computing…"):
                        t0 = time.perf_counter()
                        while not job.done and time.perf_counter() - t0 < TRAIN_SECONDS:
                            st.session_state[f"{t.prefix}_se_what"] = job.step()
                except bert_core.BertCoreError as e:
                    main.slots.release(sid)
                    main.memory.release(f"se:{sid}")
                    st.session_state.pop(key, None)
                    st.warning(f"The sample-efficiency figure stopped: {e}")
                    return
            else:
                st.info(f"All training slots are in use: number {place} in line.")
            if job.done:
                main.slots.release(sid)
                job.tuners = {}  # the curves are drawn: the cached vectors go, and their bytes
                main.memory.release(f"se:{sid}")
                st.rerun()
            st.progress(job.progress, text=st.session_state.get(f"{t.prefix}_se_what", "starting"))
        curves = {k: v for k, v in job.results.items() if v[0]}
        if curves:
            chart(sample_efficiency_figure(curves, t.metric, t.examples), "sample efficiency",
                  key=f"{t.prefix}-sample-efficiency")
            if job.done:
                st.caption(f"Each point: a head fit exactly (L-BFGS) on the first n training {t.examples}' cached "
                           f"vectors, scored on the whole validation set. Log scale: each step doubles n.")

    live()


def transfer_sections(main, scratch, t: TransferTask) -> None:
    """Both "why pre-train" sections under a page's run: the from-scratch comparison, the sample-efficiency figure."""
    st.divider()
    transfer_ui(main, scratch, t)
    st.divider()
    sample_efficiency_ui(main, scratch, t)


def _new_job(main, scratch, t: TransferTask, sid: str) -> SampleEfficiency:
    """The job's tuners: the runs' own when they cached their vectors (head only), else new head-only ones, whose
    vectors (and a new untrained copy) are charged to the runs' ledger (the server's) until the curves are done."""
    base, task = main.trainer.base, main.trainer.task
    cfg = token_finetune_defaults(base, task, freeze_encoder=True)
    fresh = scratch.trainer.base if scratch.trainer is not None else bert_core.untrained_copy(
        base, seed=main.settings.seed)
    nbytes = sum(cached_feature_bytes(base, task, cfg) for s in (main, scratch)
                 if getattr(s.trainer, "fit", None) is None)
    if scratch.trainer is None:
        nbytes += tensor_bytes(list(fresh.model.parameters()))
    job_box: dict = {}

    def drop() -> bool:  # memory is short and this tab idle: forget the unfinished curves
        if "job" in job_box:
            job_box["job"].tuners = {}
        return True

    main.memory.reserve(f"se:{sid}", nbytes, "the sample-efficiency figure", evict=drop)

    def cached(session, model):
        tr = session.trainer
        if tr is not None and getattr(tr, "fit", None) is not None:
            return tr
        return t.cached_class(model, task, replace(cfg, seed=main.settings.seed))

    tuners = {f"{base.name} (pretrained)": cached(main, base), _scratch_label(main) + " (from scratch)":
              cached(scratch, fresh)}
    flat = (lambda n: t.baseline) if t.baseline_at is None else t.baseline_at  # a baseline that needs no training
    job_box["job"] = job = SampleEfficiency(tuners, t.sizes, flat, t.baseline_name)
    return job


__all__ = ["TransferTask", "sample_efficiency_ui", "transfer_sections", "transfer_ui"]
