"""Training: pretrain a small BERT live in this session and watch its loss, guesses and attention."""

import math

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.training import attention_heatmap, loss_figure
from bert_core.objectives.catalog import OBJECTIVE_LOSSES, OBJECTIVE_NAMES, OBJECTIVE_NOTES, OBJECTIVES
from bert_core.runs.settings import (
    CORPUS_CHOICES,
    MAX_STEPS,
    MAX_TRAIN_SECONDS,
    TrainSettings,
    builtin_lines,
    bundled_tokenizer,
    decode_upload,
    example_run,
    preset_parameters,
    probe_sentences,
    user_lines,
)
from bert_core.runs.status import FINISHED, IDLE, PAUSED, QUEUED, RUNNING, WAITING, probe_history_rows, probe_rows
from bert_core.runs.training_run import TrainingSession
from bert_core.train.corpus import MAX_USER_CORPUS_BYTES
from bert_core.train.toy import ANIMALS, FARM_ANSWERS, FARM_PROBES, farm_lines, farm_tokenizer
from bert_core.train.trainer import PRESETS
from ui import callbacks
from ui.runs import shared
from ui.state import require_current
from ui.widgets import chart, memory_wait_ui, model_line, run_controls, table

TICK_SECONDS = 1.0  # the live view refreshes this often while training
# ...and this often while waiting for a slot: each refresh of a waiting page costs the server as much
# as a training one, so a class waiting in line would slow the runs that hold the slots (benchmarks/load.py
# measures it). Well inside the slot lease (server/slots.py: LEASE_SECONDS), so nobody loses their place.
QUEUED_TICK_SECONDS = 5.0
TRAIN_SECONDS = 0.8  # of each refresh spent training; drawing the page takes about 0.15 s more
FARM, WORDNET = CORPUS_CHOICES["farm"], CORPUS_CHOICES["wordnet"]
CORPORA = (FARM.label, WORDNET.label, "Paste text", "Upload a .txt file")  # the first is the default
CORPUS_NAMES = dict(zip(CORPORA, (FARM.name, WORDNET.name, "pasted text", "an uploaded file")))
CHOICES = {FARM.label: FARM}  # every other corpus trains with WordNet's settings and the bundled vocabulary
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)
WIDGET_KEYS = ("train_corpus", "train_text", "train_preset", "train_lr", "train_mask_p", "train_seed",
               "train_max_steps", "train_objective")

cur = require_current()
ts: TrainingSession = st.session_state.setdefault("train_session", TrainingSession(**shared()))

st.header("Training")
model_line(cur.model)
st.markdown(
    "Pretrain a small BERT from random weights, live, on the masked-language-model task (or, with the same "
    "layers, GPT's next-token task or ELECTRA's replaced-token task: pick the **objective** below). Each **step** "
    "takes a batch of lines (128 on the farm corpus, 32 on the others), draws a fresh masking (each token "
    "selected with probability p; of those 80% → [MASK], 10% → random token, 10% kept), and takes one AdamW "
    "step (Adam with decoupled weight decay, as BERT's code has it) on the cross-entropy at the selected "
    "positions S:"
)
st.latex(OBJECTIVE_LOSSES["mlm"])
_V, _VF = bundled_tokenizer().vocab_size, farm_tokenizer().vocab_size
st.caption(
    "x̃ is the corrupted line, x_i the original token at position i; log is the natural log, so the loss is in "
    "nats. A model that guesses uniformly over "
    f"the V word pieces has loss ln V (ln {_VF} ≈ {math.log(_VF):.1f} for the farm corpus's own vocabulary, "
    f"ln {_V:,} ≈ {math.log(_V):.1f} for the bundled tiny BERT's, which the other corpora use); the loss falls as it "
    "learns which words are common, then which fit their context. The learning rate rises linearly over the first "
    "10% of steps (warm-up, at most 100) and then falls linearly to 0 at the last step."
)

msg = st.session_state.pop("train_msg", None)
if msg:
    st.success(msg)
if ts.notice:  # the server dropped this idle run to make room: say so once
    st.warning(ts.notice)
    ts.notice = ""


def _tokenizer(kind: str) -> bert_core.WordPieceTokenizer:
    """The farm corpus's own small vocabulary; for the others the tiny bundled model's (see the settings' caption)."""
    if kind == FARM.label:
        return farm_tokenizer()
    tiny = cur.model.source == "bundled" and cur.model.name == bert_core.BUNDLED_NAME
    return cur.model.tokenizer if tiny else bundled_tokenizer()


def _choice(kind: str):
    return CHOICES.get(kind, WORDNET)


# What each corpus choice brings when picked (the user may change them after): plain values, so the callback
# holds no page namespace (ui/callbacks.py).
CORPUS_SETTINGS = {k: {"train_preset": _choice(k).preset, "train_lr": _choice(k).lr,
                       "train_mask_p": _choice(k).mlm_probability, "train_max_steps": _choice(k).max_steps}
                   for k in CORPORA}


def _init_widgets() -> dict:
    """Widget values outlive visits to other pages (streamlit forgets widgets a page did not draw)."""
    saved = st.session_state.setdefault("train_saved", {
        "train_corpus": CORPORA[0], "train_text": "", "train_preset": FARM.preset, "train_lr": FARM.lr,
        "train_mask_p": FARM.mlm_probability, "train_seed": cur.seed, "train_max_steps": FARM.max_steps,
        "train_objective": "mlm",
    })
    for k, v in saved.items():
        st.session_state.setdefault(k, v)
    return saved


def settings_ui(locked: bool, kind: str) -> TrainSettings:
    """Objective, model size, learning rate, mask probability, seed and step budget (locked while a run exists)."""
    objective = st.radio("Objective", list(OBJECTIVES), key="train_objective", horizontal=True, disabled=locked,
                         format_func=OBJECTIVE_NAMES.__getitem__,
                         help="The same encoder layers under three pre-training tasks (the BERT vs GPT page puts "
                              "them side by side).")
    st.caption(OBJECTIVE_NOTES[objective])
    if objective != "mlm":
        st.latex(OBJECTIVE_LOSSES[objective])
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 2, 2])
    preset = c1.selectbox("Model size", list(PRESETS), key="train_preset", disabled=locked)
    lr = c2.select_slider("Learning rate", LEARNING_RATES, key="train_lr", disabled=locked,
                          format_func=callbacks.number_label, help="The peak, reached after warm-up.")
    p = c3.slider("Mask probability p", 0.05, 0.5, step=0.05, key="train_mask_p",
                  disabled=locked or objective == "clm",
                  help="Share of tokens selected for prediction (BERT and ELECTRA use 0.15); clm masks nothing.")
    seed = c4.number_input("Seed", 0, 2**31 - 1, step=1, key="train_seed", disabled=locked,
                           help="Fixes the initial weights, the batches, the masking draws and dropout.")
    steps = c5.number_input("Max steps", 10, MAX_STEPS, step=50, key="train_max_steps", disabled=locked,
                            help=f"At most {MAX_STEPS:,} steps and {MAX_TRAIN_SECONDS / 60:g} minutes of training.")
    vocab = _tokenizer(kind).vocab_size
    st.caption(
        f"{preset_parameters(preset, vocab, objective):,} parameters"
        + (" (discriminator and generator, embeddings shared)" if objective == "rtd" else "")
        + (f". The farm corpus has its own vocabulary: its {vocab} words and pieces (its words whole, letters to "
           "spell any other word)." if kind == FARM.label else
           ". These corpora use the tiny bundled model's WordPiece "
           f"vocabulary ({vocab:,} pieces), also for your own text: learning a new vocabulary would take longer "
           "than the training itself; words it lacks are split into smaller pieces (or become [UNK]).")
    )
    return _choice(kind).settings(preset=preset, lr=float(lr), mlm_probability=float(p), seed=int(seed),
                                  max_steps=int(steps), objective=objective)


def corpus_ui(locked: bool):
    """The corpus choice; returns (kind, pasted text, uploaded file or None)."""
    kind = st.radio("Corpus", CORPORA, key="train_corpus", horizontal=True, disabled=locked,
                    on_change=callbacks.put_for_choice, args=("train_corpus", CORPUS_SETTINGS))
    text, upload = "", None
    if locked and ts.trainer is not None:  # (a run waiting for memory is not built yet)
        t = ts.trainer
        st.caption(f"Training on {ts.corpus_name}: {len(t.data.lines):,} lines, {t.data.n_tokens:,} word pieces.")
    elif kind == FARM.label:
        st.caption(
            f"{len(farm_lines()):,} generated sentences about {len(ANIMALS)} animals, each with its own sound, food "
            "and home (“the cow eats grass .”, “the dog barks at tom .”). It learns in a minute because its "
            "vocabulary is tiny and its sentences follow five regular patterns, so every fact comes back dozens of "
            "times a step; real BERT needed days of TPU time on 3.3 billion words of free text. The "
            "WordNet corpus shows what real definitions take: the loss falls, but a minute is not enough."
        )
    elif kind == WORDNET.label:
        st.caption(f"An evenly spaced sample of {len(builtin_lines()):,} WordNet 3.0 glosses (short definitions "
                   "of English words), one a line.")
    elif kind == CORPORA[2]:
        text = st.text_area("Your text: one sentence (or short paragraph) a line", key="train_text", height=160,
                            max_chars=MAX_USER_CORPUS_BYTES,
                            placeholder="The cat sat on the mat.\nThe dog sat on the rug.\n…")
        st.caption(f"At least 10 words on two lines, at most {MAX_USER_CORPUS_BYTES:,} bytes.")
    else:
        upload = st.file_uploader("A plain-text (UTF-8) .txt file", type=["txt"], key="train_upload",
                                  max_upload_size=max(1, MAX_USER_CORPUS_BYTES // 1_000_000))
        st.caption(f"At most {MAX_USER_CORPUS_BYTES:,} bytes; one sentence (or short paragraph) a line.")
    return kind, text, upload


def set_up(kind: str, text: str, upload, settings: TrainSettings) -> bool:
    """Build the corpus, model and trainer; a plain message and False when something is wrong."""
    try:
        with st.spinner("Preparing the corpus and building the model…"):
            probes = probe_sentences(cur.text)
            if kind in (FARM.label, WORDNET.label):
                lines, probes = _choice(kind).lines(), _choice(kind).probes(cur.text)
            elif kind == CORPORA[2]:
                lines = user_lines(text)
            elif upload is None:
                raise bert_core.BertCoreError("choose a .txt file to upload first")
            else:
                lines = user_lines(decode_upload(upload.getvalue()))
            ts.setup(_tokenizer(kind), lines, settings, corpus_name=CORPUS_NAMES[kind], probes=probes)
        return True
    except bert_core.BertCoreError as e:
        st.error(f"Cannot start: {e}")
        return False


def controls_ui(kind: str, text: str, upload, settings: TrainSettings) -> None:
    """Start / Pause / Run 10 steps / Reset."""
    live = ts.state in (RUNNING, QUEUED)
    c1, c2, c3, c4 = st.columns(4)
    start = c1.button("Resume" if ts.state == PAUSED and ts.step else "Start", key="train_start", type="primary",
                      disabled=live or ts.state == FINISHED, width="stretch")
    pause = c2.button("Pause", key="train_pause", disabled=not live, width="stretch")
    ten = c3.button("Run 10 steps", key="train_ten", disabled=live or ts.state == FINISHED, width="stretch",
                    help="Exactly ten steps, then stop: handy for following the loss step by step.")
    reset = c4.button("Reset", key="train_reset", disabled=ts.state == IDLE, width="stretch",
                      help="Forget this run's model and history (a model you stored with 'Use this model' stays).")
    if (start or ten) and ts.state == IDLE and not set_up(kind, text, upload, settings):
        return
    run_controls(ts, start, ten, pause, reset)


def status_ui() -> None:
    """The metrics row, and a note while waiting for a slot or after the run ended."""
    status = ts.status(smoothing=st.session_state.get("train_smooth", 0.9))
    shown = status.display()
    for row in (shown[:4], shown[4:]):  # two rows: seven metrics do not fit side by side
        for col, (label, value) in zip(st.columns(4), row):
            col.metric(label, value)
    if ts.state == QUEUED:
        st.info(
            f"All training slots on this server are in use: you are number {status.queue_position or 1} in line. "
            f"Training starts by itself when a slot frees up (each run trains for at most "
            f"{MAX_TRAIN_SECONDS / 60:g} minutes). Keep this page open."
        )
    elif ts.state == FINISHED:
        st.success(f"Finished: {ts.finish_reason}. Use or download the model below; Reset to train another.")
    elif ts.state == PAUSED and ts.step:
        st.caption("Paused. Training only runs while this page is open: leaving it pauses the run in effect.")


def curves_ui() -> None:
    """The loss curves, per outcome of the 80/10/10 draw, and the masked-token accuracy."""
    st.subheader("Loss")
    smoothing = st.slider("Smoothing", 0.0, 0.99, 0.9, 0.01, key="train_smooth",
                          help="Exponential moving average s ← a·s + (1−a)·loss, like TensorBoard's.")
    objective = ts.settings.objective if ts.settings else "mlm"
    chart(loss_figure(ts.curves(smoothing), objective=objective), "training loss", key="train-loss")
    if objective == "clm":
        st.caption("The thick line is the next-token cross-entropy averaged over every position of every line; the "
                   "dotted grey line (right axis) is how often the top guess is the actual next token.")
        return
    if objective == "rtd":
        st.caption("The thick line is what the optimiser minimises: the generator's MLM loss plus 50 × the "
                   "discriminator's binary cross-entropy (purple). A discriminator that always says \"original\" "
                   "is right on about 85-95% of tokens (only the generator's wrong guesses count as replaced), so "
                   "watch its accuracy (purple dots) climb above that share and its loss fall. The grey dots are "
                   "the generator's masked-token accuracy: as it improves, its replacements get harder to spot.")
        return
    st.caption(
        "The thick line is the loss the optimiser minimises. The thin lines split it by what happened to "
        "the selected token: replaced by [MASK], replaced by a random token, or kept. Kept tokens are "
        "the easiest (the answer is in the input, once the model learns to trust it); random ones are "
        "usually the hardest, because the input points the wrong way. The dotted grey line (right axis) is "
        "how often the top guess is the original token. Only a tenth of the selected tokens are random and a "
        "tenth kept (1.5% of all tokens each at p = 0.15), so those two lines are noisy."
    )


def probes_ui() -> None:
    """The model's top guesses for the probe sentences at the last probe, and how they changed."""
    probe = ts.last_probe
    st.subheader(f"What it guesses (step {probe.step})")
    objective = ts.trainer.cfg.objective
    who = {"mlm": "the model", "clm": "the model, reading only the words LEFT of each [MASK],",
           "rtd": "the generator (the discriminator has no MLM head)"}[objective]
    st.caption(
        f"Every {ts.trainer.cfg.probe_every} steps {who} (dropout off) fills in the [MASK] of a few fixed "
        "sentences. If the sidebar text is short and has a [MASK], it is the first probe."
    )
    rows = probe_rows(probe, dict(zip(FARM_PROBES, FARM_ANSWERS)))
    table(pd.DataFrame(rows), "probe predictions", key="csv-train-probe", hide_index=True)
    with st.expander("Top guess at every probe step"):
        table(pd.DataFrame(probe_history_rows(ts.probes)), "probe history", key="csv-train-history",
              hide_index=True)


def attention_ui() -> None:
    """One head's attention on the first probe sentence, at the last probe."""
    probe = ts.last_probe
    st.subheader("Attention on the first probe")
    n_layers, n_heads = probe.attentions.shape[:2]  # (L, nh, T, T)
    c1, c2 = st.columns(2)
    if st.session_state.get("train_layer", 0) >= n_layers or st.session_state.get("train_head", 0) >= n_heads:
        st.session_state["train_layer"], st.session_state["train_head"] = 0, 0  # a smaller model than before
    layer = c1.selectbox("Layer", list(range(n_layers)), key="train_layer",
                         format_func=callbacks.one_based,
                         help="Layers 1–L as everywhere in the app (here, inside the model: no embeddings row).")
    head = c2.selectbox("Head", list(range(n_heads)), key="train_head",
                        format_func=callbacks.one_based)
    chart(attention_heatmap(probe.attentions[layer, head], probe.tokens,
                            f"layer {layer + 1}, head {head + 1}, step {probe.step}"),
          "training attention", key="train-attn")
    st.caption(
        "Row i shows how token i spreads its attention over the tokens (each row sums to 1). At step 0 the "
        "weights are random and every row is nearly uniform; watch patterns form as the model learns."
        + (" Causal (clm): everything right of the diagonal is exactly 0, token i never sees a later token."
           if ts.trainer.cfg.objective == "clm" else "")
        + (" This is the discriminator's attention." if ts.trainer.cfg.objective == "rtd" else "")
    )


saved = _init_widgets()
locked = ts.state != IDLE
st.subheader("Set up")
kind, text, upload = corpus_ui(locked)
settings = settings_ui(locked, kind)
saved.update({k: st.session_state[k] for k in WIDGET_KEYS if k in st.session_state})
controls_ui(kind, text, upload, settings)

if ts.state == WAITING:  # the server's memory for users' runs is full: wait in line for it
    memory_wait_ui(ts, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
    st.stop()
if ts.trainer is None:
    st.info("Pick a corpus and a model size, then press **Start** (or **Run 10 steps**).")
    if (ex := example_run()) is not None:  # something to look at before the first run: a finished one
        st.subheader("What a run looks like: the bundled tiny BERT's own pretraining")
        chart(loss_figure(ex.curves), "example pretraining loss", key="train-example")
        st.caption(
            f"An example, not your run: the tiny BERT bundled with the app ({ex.parameters:,} parameters; not the "
            f"MiniLM, whose encoder came pretrained) trained from random "
            f"weights for {ex.steps:,} steps of {ex.batch_size} rows ({ex.tokens_seen:,} tokens, "
            f"{ex.minutes:g} minutes on this project's 2-core machine), logged every 50 steps. The MLM loss starts "
            "near ln V (every word equally likely) and falls as the model learns which words fit where; the "
            "dotted line is the share of masked tokens it gets right. Your run draws the same chart live."
        )
    st.stop()


@st.fragment(run_every={RUNNING: TICK_SECONDS, QUEUED: QUEUED_TICK_SECONDS}.get(ts.state))
def live_ui() -> None:
    """Train a little, then redraw: runs on a timer while the run is live and the page is open."""
    before = ts.state
    ts.advance(TRAIN_SECONDS)
    if before in (RUNNING, QUEUED) and ts.state != before:
        st.rerun()  # finished (redraw the buttons, stop the timer) or got a slot (tick at the training pace)
    status_ui()
    curves_ui()
    probes_ui()
    attention_ui()


live_ui()

st.subheader("Keep the model")
c1, c2 = st.columns(2)
if c1.button("Use this model", key="train_use", type="primary", width="stretch",
             help="Copy the model as it is now into the sidebar's model list, for every page."):
    try:
        st.session_state["session_model"] = ts.snapshot()
    except bert_core.BertCoreError as e:
        st.error(f"Cannot store a copy: {e}")
    else:
        st.session_state["session_model_version"] = st.session_state.get("session_model_version", 0) + 1
        st.session_state["train_msg"] = (
            f"Stored a copy of your model at step {ts.step}: choose “my trained model (this session)” in the "
            "sidebar's Model list to explore it on every page. Further training does not change the copy."
        )
        st.rerun()
c2.download_button("Download checkpoint (.zip)", data=ts.checkpoint_zip, file_name="bert-explorer-model.zip",
                   mime="application/zip", key="train_download", on_click="ignore", width="stretch",
                   help="config.json, model.safetensors and the tokenizer: bert_core.load_model(folder) and "
                        "transformers both read it (BertForMaskedLM; BertLMHeadModel for clm; "
                        "ElectraForPreTraining, the discriminator, for rtd).")
st.caption(
    f"Your run lives in this browser session only: closing the tab discards it. Memory: {ts.memory_usage()}. "
    f"Every user's runs share that budget (BERT_EXPLORER_SESSION_MB); when it is full, a run nobody has touched "
    f"for {ts.memory.idle_seconds / 60:g} minutes is dropped to make room, else a new run waits."
)
