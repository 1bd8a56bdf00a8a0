"""Fine-tuning: put a classifier on BERT's pooled [CLS] vector and train it live on a labelled task."""

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.finetuning import confusion_figure, curves_figure, pca_figure, probabilities_figure
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.settings import decode_upload
from bert_core.runs.status import IDLE, RUNNING, WAITING
from bert_core.train.finetuning import FineTuneConfig, default_lr, pca_2d
from bert_core.train.tasks import MAX_CSV_BYTES, MAX_CSV_ROWS, bow_baseline, builtin_tasks, task_examples, task_from_csv
from ui import callbacks
from ui.finetune_ui import keep_ui, run_status
from ui.state import BUNDLED_LABEL, SESSION_LABEL, require_current, shared_model
from ui.widgets import chart, live_run, memory_wait_ui, run_buttons, run_controls, table

TICK_SECONDS = 1.0  # as the Training page: refresh while training ...
QUEUED_TICK_SECONDS = 5.0  # ... and more slowly while waiting for a slot
TRAIN_SECONDS = 0.8
PASTE, UPLOAD = "Paste CSV", "Upload a .csv file"
LEARNING_RATES = (2e-5, 3e-5, 5e-5, 1e-4, 3e-4, 1e-3, 3e-3)
LR_REASON = ("A head alone learns from scratch and takes 1e-3; fine-tuning every weight wants a rate that "
             "shrinks with the model: small models like the tiny bundled one (hidden size 256) 3e-4 (at 1e-4 it "
             "only just passes the bag-of-words baseline on the topic task, 87.7% vs 87.0%), 512-wide ones "
             "1e-4, bert-base-sized ones the classic 3e-5 (BERT's paper tried 2e-5 to 5e-5).")
EXAMPLE_CSV = ("text,label\nwhat a wonderful film,positive\na dull and tedious plot,negative\n"
               "I loved every minute,positive\nthe acting was awful,negative\n…")

cur = require_current()
fs: FineTuneSession = st.session_state.setdefault("ft_session", FineTuneSession())

st.header("Fine-tuning")
st.markdown(
    "Pretraining taught BERT to fill in masked words. **Fine-tuning** reuses it for a new task: classify a "
    "whole text. A small new layer (the *head*) reads the pooled [CLS] vector, and a few epochs of training "
    "with a small learning rate adapt the head (and, unless frozen, every weight of BERT) to labelled examples:"
)
st.latex(r"p(c \mid x) = \operatorname{softmax}\big(W_c\,\tanh(W_p\,h_{[CLS]} + b_p) + b_c\big)_c,\qquad "
         r"\mathcal{L} = -\frac{1}{B}\sum_{i=1}^{B} \log p(y_i \mid x_i)")
st.caption(
    "h_[CLS] is the last layer's vector at [CLS]; tanh(W_p h + b_p) is BERT's pooler; W_c, b_c the new "
    "classifier (Hugging Face's BertForSequenceClassification). The learning rate warms up over the first "
    "10% of steps, then falls linearly to 0. Fine-tuning all weights wants a small rate (2e-5 to 3e-4, smaller "
    "for bigger models): a large one overwrites what pretraining learned. A head alone can take 1e-3."
)

msg = st.session_state.pop("ft_msg", None)
if msg:
    st.success(msg)
if fs.notice:  # the server dropped this idle run to make room: say so once
    st.warning(fs.notice)
    fs.notice = ""


def _bases() -> dict[str, tuple[str, object]]:
    """Base models on offer: label -> (name shown, loader)."""
    out = {BUNDLED_LABEL: ("bundled", lambda: shared_model("bundled"))}
    if st.session_state.get("session_model") is not None:
        out[SESSION_LABEL] = ("my trained model", lambda: st.session_state["session_model"])
    if cur.model_key not in ("bundled",) and not cur.model_key.startswith("session:"):
        out[f"the sidebar's model: {cur.model.name}"] = (cur.model.name, lambda: cur.model)
    return out


def _init_widgets() -> dict:
    """Widget values outlive visits to other pages."""
    saved = st.session_state.setdefault("ft_saved", {
        "ft_task": "topic", "ft_csv": "", "ft_base": BUNDLED_LABEL, "ft_freeze": False, "ft_lr": None,
        "ft_epochs": 3, "ft_batch": 32,
    })
    for k, v in saved.items():
        if v is not None:  # ft_lr: None until first set (settings_ui suggests one per base model)
            st.session_state.setdefault(k, v)
    return saved


def task_ui(locked: bool):
    """The task: a built-in one, or the user's CSV. Returns (choice, pasted CSV, upload)."""
    tasks = builtin_tasks()
    choices = [*tasks, PASTE, UPLOAD]
    if st.session_state.get("ft_task") not in choices:
        st.session_state["ft_task"] = choices[0]
    choice = st.radio("Task", choices, key="ft_task", horizontal=True, disabled=locked,
                      format_func={c: f"Built-in: WordNet {c}" if c in tasks else c for c in choices}.get)
    text, upload = "", None
    if locked and fs.trainer is not None:  # (a run waiting for memory is not built yet)
        t = fs.trainer.task
        st.caption(f"Fine-tuning on **{'WordNet ' + t.name if t.name in tasks else 'your data'}**: "
                   f"{len(t.train_texts):,} training and {len(t.valid_texts):,} validation examples, "
                   f"{len(t.labels)} classes.")
    elif choice in tasks:
        t = tasks[choice]
        st.caption(f"{t.description} {len(t.train_texts):,} training / {len(t.valid_texts):,} validation "
                   f"definitions, balanced; the validation ones were held out of both bundled models' training here.")
    elif choice == PASTE:
        text = st.text_area("CSV: one example a line, text,label (quote a text that has commas)", key="ft_csv",
                            height=160, max_chars=MAX_CSV_BYTES, placeholder=EXAMPLE_CSV)
    else:
        upload = st.file_uploader("A UTF-8 .csv file with the columns text,label", type=["csv"], key="ft_upload",
                                  max_upload_size=max(1, MAX_CSV_BYTES // 1_000_000))
    if choice in (PASTE, UPLOAD) and not locked:
        st.caption(f"At least 10 rows and two classes (each with at least two examples), at most "
                   f"{MAX_CSV_ROWS:,} rows, 20 classes and {MAX_CSV_BYTES:,} bytes. A fifth of each class "
                   "(chosen with the sidebar's seed) is held out for validation.")
    return choice, text, upload


def settings_ui(locked: bool) -> tuple[str, FineTuneConfig]:
    """Base model, freeze, learning rate, epochs, batch size."""
    bases = _bases()
    if st.session_state.get("ft_base") not in bases:
        st.session_state["ft_base"] = BUNDLED_LABEL
    c1, c2, c3, c4, c5 = st.columns([3, 2, 2, 1, 1])
    base = c1.selectbox("Base model", list(bases), key="ft_base", disabled=locked,
                        help="The pretrained BERT to start from. The sidebar's model is offered when it is a hub "
                             "model; your model from the Training page once you pressed 'Use this model' there.")
    freeze = c2.toggle("Freeze the encoder (train the head only)", key="ft_freeze", disabled=locked,
                       help="Frozen: only the head learns (the classifier, and its pooling layer when that is new: "
                            "a pooler the model lacked, DistilBERT's pre_classifier, RoBERTa's classifier.dense); "
                            "BERT's vectors stay as pretraining left them.")
    # The learning rate follows the base model and the freeze switch until the user picks one.
    suggested = default_lr(bases[base][1]().config, bool(freeze))
    if not st.session_state.get("ft_lr_picked") and not locked:
        st.session_state["ft_lr"] = suggested
    lr = c3.select_slider("Learning rate", LEARNING_RATES, key="ft_lr", disabled=locked,
                          format_func=callbacks.number_label, help="The peak, reached after warm-up.",
                          on_change=callbacks.put, args=("ft_lr_picked", True))
    epochs = c4.number_input("Epochs", 1, 10, step=1, key="ft_epochs", disabled=locked,
                             help="Passes over the training set.")
    batch = c5.selectbox("Batch", (8, 16, 32, 64), key="ft_batch", disabled=locked)
    if not locked:
        st.caption(f"Suggested learning rate for this base: **{suggested:g}**"
                   + (" (your pick differs)" if lr != suggested else "") + ". " + LR_REASON)
    return base, FineTuneConfig(freeze_encoder=bool(freeze), lr=float(lr), epochs=int(epochs), batch_size=int(batch),
                                seed=cur.seed)


def set_up(choice: str, text: str, upload, base_label: str, cfg: FineTuneConfig) -> bool:
    """Build the task, the classifier and the loop; a plain message and False when something is wrong."""
    try:
        with st.spinner("Preparing the task and evaluating the untrained classifier…"):
            tasks = builtin_tasks()
            if choice in tasks:
                task = tasks[choice]
            elif choice == PASTE:
                task = task_from_csv(text, seed=cur.seed)
            elif upload is None:
                raise bert_core.BertCoreError("choose a .csv file to upload first")
            else:
                task = task_from_csv(decode_upload(upload.getvalue()), name="your file", seed=cur.seed)
            fs.setup(_bases()[base_label][1](), task, cfg)
        return True
    except bert_core.BertCoreError as e:
        st.error(f"Cannot start: {e}")
        return False


def controls_ui(choice, text, upload, base_label, cfg) -> None:
    """Start / Pause / Run 10 steps / Reset, as on the Training page."""
    start, ten, pause, reset = run_buttons(fs, "ft", "classifier")
    if (start or ten) and fs.state == IDLE and not set_up(choice, text, upload, base_label, cfg):
        return
    run_controls(fs, start, ten, pause, reset)


def status_ui() -> None:
    run_status(fs, "Try a sentence or download the classifier below.")
    for note in fs.trainer.notes:
        st.caption(note)


def curves_ui() -> None:
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


def confusion_ui() -> None:
    t = fs.trainer
    last = t.evals[-1]
    st.subheader(f"Confusion matrix (validation, step {last.step})")
    chart(confusion_figure(last.confusion, list(t.task.labels)), "confusion matrix", key="ft-confusion")
    st.caption("Row = the true class, column = the class the model picked. The diagonal is what it gets right; "
               "an off-diagonal cell shows which two classes it confuses.")


def pca_ui() -> None:
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
        "Each point is one validation example: the vector the classifier reads (the pooled [CLS], "
        f"{t.model.config.hidden_size} numbers) projected on its two directions of largest variance (PCA), "
        "coloured by the true class. Fine-tuning pulls the classes apart: the classifier only needs to draw "
        "straight boundaries between them." + (" The 'after' picture appears when you pause or finish."
                                              if fs.state == RUNNING else "")
    )


def try_ui() -> None:
    st.subheader("Try your own sentence")
    text = st.text_input("A sentence to classify", key="ft_try", max_chars=bert_core.MAX_TEXT_CHARS,
                         placeholder="e.g. a small furry animal that purrs")
    if not text.strip():
        st.caption("Type a sentence to see the class probabilities (the softmax of the head's logits).")
        return
    try:
        probs = fs.classify(text)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
        return
    chart(probabilities_figure(probs), "class probabilities", key="ft-probs")
    table(pd.DataFrame(probs, columns=["class", "probability"]), "class probabilities", key="csv-ft-probs",
          hide_index=True)


saved = _init_widgets()
locked = fs.state != IDLE
st.subheader("Set up")
choice, text, upload = task_ui(locked)
base_label, cfg = settings_ui(locked)
saved.update({k: st.session_state[k] for k in saved if k in st.session_state})
controls_ui(choice, text, upload, base_label, cfg)

if fs.state == WAITING:  # the server's memory for users' runs is full: wait in line for it
    memory_wait_ui(fs, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
    st.stop()
if fs.trainer is None:
    st.info("Pick a task and a base model, then press **Start** (or **Run 10 steps**).")
    if choice in builtin_tasks():  # something to look at before the first run: the task itself
        st.subheader("What the classifier learns from")
        st.caption("Two training examples of each class (the first in the split): each definition goes in as "
                   "[CLS] text [SEP]; the classifier reads the pooled [CLS] vector and must name the class.")
        table(pd.DataFrame(task_examples(builtin_tasks()[choice])), "task examples", key="ft-examples",
              hide_index=True)
    st.stop()


def baseline_ui() -> None:
    """The number to beat: a bag-of-words logistic regression on the same split (computed on request)."""
    t = fs.trainer.task
    st.subheader("The number to beat")
    st.markdown(
        "A classifier that ignores word order: each text becomes the set of its words (a 0/1 vector over the "
        "training vocabulary, scaled to length 1), and a multinomial logistic regression learns one weight "
        "per (word, class). Its strength shows how much of the task single words already give away."
    )
    st.latex(r"p(c \mid x) = \operatorname{softmax}(W^\top \phi(x) + b)_c,\qquad "
             r"\phi(x)_w = \frac{[w \in x]}{\sqrt{|\{w' \in x\}|}}")
    key = ("ft_baseline", t.name, len(t.train_texts), hash(t.train_texts), hash(t.valid_texts))
    if key not in st.session_state and st.button("Compute the baseline", key="ft_baseline_btn",
                                                 help="A few seconds: logistic regression in numpy."):
        with st.spinner("Fitting the bag-of-words logistic regression…"):
            st.session_state[key] = bow_baseline(t)
    base = st.session_state.get(key)
    if base is not None:
        mine = fs.trainer.evals[-1].accuracy
        verdict = "ahead of" if mine > base["accuracy"] else ("level with" if mine == base["accuracy"] else "behind")
        st.markdown(f"Bag-of-words logistic regression: **{100 * base['accuracy']:.1f}%** on the validation set "
                    f"(vocabulary {base['vocabulary']:,} words, L2 {base['l2']:g} picked on a fifth of the training "
                    f"set). Your classifier, at step {fs.trainer.evals[-1].step}: **{100 * mine:.1f}%**, "
                    f"{verdict} the baseline.")


def live_ui() -> None:
    """What the timer redraws while the run is live: status, curves, confusion matrix."""
    status_ui()
    curves_ui()
    confusion_ui()


live_run(fs, live_ui, TICK_SECONDS, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
pca_ui()
baseline_ui()
try_ui()

keep_ui(fs, "classifier", "bert-explorer-classifier.zip", "AutoModelForSequenceClassification", "ft_download")
