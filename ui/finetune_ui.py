"""What the three fine-tuning pages (Fine-tuning, Tagging, Question answering) draw alike: status and the download;
and the Fine-tuning page's classifier charts (curves, confusion matrix, pooled vectors, pretrained vs untrained)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from bert_core.figures.finetuning import comparison_figure, confusion_figure, curves_figure, pca_figure
from bert_core.finetune.finetuning import POOLINGS, default_lr, pca_2d
from bert_core.finetune.token_finetuning import token_finetune_defaults
from bert_core.runs.status import FINISHED, PAUSED, QUEUED, RUNNING, WAITING
from ui import callbacks
from ui.state import BUNDLED_LABEL, Current, shared_model
from ui.widgets import chart, live_run, memory_wait_ui, queued_info, table

TICK_SECONDS = 1.0  # as the Training page: refresh while training ...
QUEUED_TICK_SECONDS = 5.0  # ... and more slowly while waiting for a slot
TRAIN_SECONDS = 0.8


def new_head_bases(cur: Current) -> dict[str, tuple[str, object]]:
    """Base models a new head can go on: label -> (name, loader): the bundled model, and the sidebar's model."""
    out = {BUNDLED_LABEL: ("bundled", lambda: shared_model("bundled"))}
    if cur.model_key != "bundled":
        out[f"the sidebar's model: {cur.model.name}"] = (cur.model.name, lambda: cur.model)
    return out


def picked(key: str) -> dict:
    """A widget's on_change that marks it as the user's pick: `{key}_picked`, after which the recipe no longer
    moves it."""
    return {"on_change": callbacks.put, "args": (f"{key}_picked", True)}


def run_status(session, finished_hint: str, rename: tuple[str, str] | None = None) -> None:
    """The run's metrics in two rows (a label renamed if asked), then its place in line, end or pause."""
    shown = session.metrics(0.9)
    if rename:
        shown = [(k.replace(*rename), v) for k, v in shown]
    for row in (shown[:4], shown[4:]):
        for col, (label, value) in zip(st.columns(4), row):
            col.metric(label, value)
    if session.state == QUEUED:
        queued_info(session)
    elif session.state == FINISHED:
        st.success(f"Finished: {session.finish_reason}. {finished_hint}")
    elif session.state == PAUSED and session.step:
        st.caption("Paused. Training only runs while this page is open.")


def keep_ui(session, what: str, file_name: str, auto_class: str, key: str) -> None:
    """The fine-tuned model as a Hugging Face folder in a zip, and where it lives."""
    st.subheader(f"Keep the {what}")
    st.download_button(
        f"Download the fine-tuned {what} (.zip)", data=session.checkpoint_zip, file_name=file_name,
        mime="application/zip", key=key, on_click="ignore",
        help=f"A Hugging Face folder: config.json, model.safetensors, the tokenizer and training_report.json. "
             f"transformers' {auto_class}.from_pretrained(folder) and bert_core.load_model(folder) both read it.")
    st.caption(f"Your {what} lives in this browser session only: closing the tab discards it. Memory: "
               f"{session.memory_usage()}.")


LEARNING_RATES = (2e-5, 3e-5, 5e-5, 1e-4, 3e-4, 1e-3, 3e-3)


def ready_models(cur: Current, session, head_cls, session_label: str, what: str) -> dict[str, object]:
    """Models with this head now: the sidebar's model when it has one, and the run's model: label -> LoadedModel."""
    out = {}
    if isinstance(cur.model.model, head_cls):
        out[f"the sidebar's model ({cur.model.name})"] = cur.model
    if session.trainer is not None:
        out[session_label] = session.trainer.as_loaded(f"your {what}")
    return out


def recipe_config(base, task, chosen: dict, seed: int):
    """The Tagging and QA pages' settings: `token_finetune_defaults` (what a notebook gets), the user's rate, epochs
    and batch when every weight trains (`new_head_settings`' values), the sidebar's seed."""
    cfg = token_finetune_defaults(base, task, chosen["freeze"])
    if not chosen["freeze"]:
        cfg = replace(cfg, lr=chosen["lr"], epochs=chosen["epochs"], batch_size=chosen["batch_size"])
    return replace(cfg, seed=seed)


def pick_ready(found: dict[str, object], label: str, key: str):
    """A radio over the ready models (the first one until the user picks); returns the chosen LoadedModel."""
    if st.session_state.get(key) not in found:
        st.session_state[key] = next(iter(found))
    return found[st.radio(label, list(found), key=key, horizontal=True)]


def new_head_settings(cur: Current, prefix: str, locked: bool, cols, batch_index: int = 1, freeze_help: str = "",
                      freeze_default: bool = True, suggest_lr=default_lr):
    """Base model, freeze, learning rate, epochs and batch in five columns; returns (base label, freeze, lr,
    epochs, batch). The base starts on the sidebar's model. The learning rate follows the base and the freeze
    switch (`suggest_lr(config, freeze)`: the page's recipe's rate) until the user picks one; a frozen encoder's
    head is fit exactly (no rate, epochs or batch)."""
    bases = new_head_bases(cur)
    if st.session_state.get(f"{prefix}_base") not in bases:
        st.session_state[f"{prefix}_base"] = list(bases)[-1]  # the sidebar's model (the bundled one when it is)
    st.session_state.setdefault(f"{prefix}_freeze", freeze_default)
    base = cols[0].selectbox("Base model", list(bases), key=f"{prefix}_base", disabled=locked,
                             help="The pretrained encoder under the new head (a model's own head, if any, is "
                                  "replaced).")
    freeze = cols[1].toggle("Freeze the encoder", key=f"{prefix}_freeze", disabled=locked,
                            help=freeze_help or "Train the new head only; the encoder stays as pretraining left it. "
                                 "The encoder then reads every example once and the head is fit exactly "
                                 "(to convergence) on the vectors it gave.")
    suggested = suggest_lr(bases[base][1]().config, bool(freeze))
    if not st.session_state.get(f"{prefix}_lr_picked") and not locked:
        st.session_state[f"{prefix}_lr"] = suggested
    exact = bool(freeze)  # the head is fit by L-BFGS on cached vectors: no rate, epochs or batch to choose
    lr = cols[2].select_slider("Learning rate", LEARNING_RATES, key=f"{prefix}_lr", disabled=locked or exact,
                               format_func=callbacks.number_label, **picked(f"{prefix}_lr"))
    epochs = cols[3].number_input("Epochs", 1, 5, value=1, step=1, key=f"{prefix}_epochs", disabled=locked or exact)
    batch = cols[4].selectbox("Batch", (8, 16, 32), index=batch_index, key=f"{prefix}_batch",
                              disabled=locked or exact)
    return base, bool(freeze), float(lr), int(epochs), int(batch)


def head_run_ui(session, not_started: str, draw, keep: tuple[str, str, str, str], before=None) -> None:
    """The run below its buttons: its place in line for memory, or a hint before the first step, or (live on a
    timer) `draw()`, then the new head's notes and the download. `before()` draws under the hint."""
    if session.state == WAITING:
        memory_wait_ui(session, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
        st.stop()
    if session.trainer is None:
        st.info(not_started)
        if before is not None:
            before()
        st.stop()
    live_run(session, draw, TICK_SECONDS, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
    for note in session.trainer.notes:
        st.caption(note)
    keep_ui(session, *keep)


# --- the Fine-tuning page's classifier charts ---------------------------------------------------------

def curves_ui(fs) -> None:
    """A classifier run's training and validation curves."""
    t = fs.trainer
    st.subheader("Loss and accuracy")
    chart(curves_figure(fs.curves(0.9)), "fine-tuning curves", key="ft-curves")
    st.caption(
        f"Thin lines: each training batch (dropout on), smoothed. Thick lines with markers: the whole validation "
        f"set ({len(t.valid_rows):,} examples the model never trains on, dropout off), evaluated "
        f"{t.cfg.evals_per_epoch}× per epoch. Step 0 is the untrained head: accuracy near chance "
        f"(1/{len(t.task.labels)}), loss near ln {len(t.task.labels)} = {np.log(len(t.task.labels)):.2f}. Train loss "
        "far below validation loss means the model starts to memorise its training examples."
    )


def confusion_ui(fs) -> None:
    """A classifier run's confusion matrix at its last evaluation."""
    t = fs.trainer
    last = t.evals[-1]
    st.subheader(f"Confusion matrix (validation, step {last.step})")
    chart(confusion_figure(last.confusion, list(t.task.labels)), "confusion matrix", key="ft-confusion")
    st.caption("Row = the true class, column = the class the model picked. The diagonal is what it gets right; "
               "an off-diagonal cell shows which two classes it confuses.")


def pca_ui(fs) -> None:
    """A classifier run's pooled validation vectors before and (paused or finished) after fine-tuning."""
    t = fs.trainer
    st.subheader("The pooled vectors, before and after")
    before = t.evals[0]
    after = fs.pooled_now() if fs.state != RUNNING else None
    panels = [("before fine-tuning (step 0)", *pca_2d(before.pooled))]
    if after is not None and after.step > 0:
        panels.append((f"after {after.step} steps", *pca_2d(after.pooled)))
    chart(pca_figure(panels, np.asarray(t.task.valid_labels), list(t.task.labels)), "pooled vectors PCA",
          key="ft-pca")
    st.caption(
        f"Each point is one validation example: the vector the classifier reads ({POOLINGS[t.cfg.pooling]}, "
        f"{t.model.config.hidden_size} numbers) projected on its two directions of largest variance (PCA), "
        "coloured by the true class. Fine-tuning pulls the classes apart: the classifier only needs to draw "
        "straight boundaries between them." + (" The 'after' picture appears when you pause or finish."
                                              if fs.state == RUNNING else "")
    )


def compare_chart(fs, fs0, base: dict | None) -> None:
    """Both runs' validation accuracy (`fs` pretrained, `fs0` its untrained copy), the bag-of-words baseline
    (`bow_baseline`'s result, None until computed), one table and a sentence on the gap."""
    t, t0 = fs.trainer, fs0.trainer
    learners = {("pretrained", f"{t.base.name}, pretrained"): t}
    if t0 is not None:
        learners[("same network, untrained", "the same network, untrained (untrained_copy)")] = t0
    runs = {curve: (np.array([e.step for e in tr.evals]), np.array([e.accuracy for e in tr.evals]))
            for (curve, _), tr in learners.items()}
    chart(comparison_figure(runs, base["accuracy"] if base else None), "pretrained vs untrained", key="ft-compare")
    rows = [{"learner": name, "step": str(tr.step_count), "validation accuracy": f"{100 * tr.evals[-1].accuracy:.1f}%"}
            for (_, name), tr in learners.items()]
    if base is not None:
        rows.append({"learner": "bag of words (no BERT)", "step": "-",
                     "validation accuracy": f"{100 * base['accuracy']:.1f}%"})
    table(pd.DataFrame(rows), "pretrained vs untrained", key="csv-ft-compare", hide_index=True)
    if t0 is not None and t0.step_count:
        gap = 100 * (t.evals[-1].accuracy - t0.evals[-1].accuracy)
        same = t0.step_count == t.step_count
        st.markdown(
            f"After {t0.step_count:,} steps{'' if same else ' (the pretrained run: ' + format(t.step_count, ',') + ')'}"
            f", the pretrained model is **{gap:+.1f} points** ahead of the same network trained from scratch: with "
            f"{len(t.train_rows):,} labelled examples, the untrained network must learn what words mean and how "
            "they combine from these examples alone, while the pretrained one already knows it from reading raw "
            "text and only has to learn the task." + ("" if base is not None else
                                                      " Press **Compute the baseline** above to add bag of words."))
    if fs0.state == FINISHED:
        st.caption(f"The untrained run finished: {fs0.finish_reason}.")
