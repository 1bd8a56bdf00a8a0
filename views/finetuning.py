"""Fine-tuning: put a classifier on BERT and train it live on a labelled task; beside it, the same network
untrained and a bag-of-words baseline (why pre-train), and accuracy against examples per class."""

from dataclasses import replace

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.finetuning import probabilities_figure, sample_efficiency_figure
from bert_core.finetune.finetuning import POOLINGS, FineTuneConfig, finetune_defaults, run_cost
from bert_core.finetune.tasks import (
    MAX_CSV_BYTES,
    MAX_CSV_ROWS,
    MAX_EPOCHS,
    bow_baseline,
    builtin_tasks,
    task_examples,
    task_from_csv,
)
from bert_core.finetune.transfer import sample_efficiency
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.memory import format_mb, tensor_bytes
from bert_core.runs.settings import decode_upload
from bert_core.runs.status import IDLE, WAITING, format_seconds
from ui import callbacks
from ui.finetune_ui import (
    LEARNING_RATES,
    QUEUED_TICK_SECONDS,
    TICK_SECONDS,
    TRAIN_SECONDS,
    compare_chart,
    confusion_ui,
    curves_ui,
    keep_ui,
    pca_ui,
    picked,
    run_status,
)
from ui.notebook_ui import finetuning_button
from ui.runs import shared
from ui.state import BUNDLED_LABEL, SESSION_LABEL, require_current, shared_model
from ui.widgets import chart, live_run, memory_wait_ui, model_line, run_buttons, run_controls, table

PASTE, UPLOAD = "Paste CSV", "Upload a .csv file"
LR_REASON = ("A head alone learns from scratch and takes 1e-3; fine-tuning every weight wants a rate that "
             "shrinks with the model: small models like the tiny bundled one (hidden size 256) 3e-4, 384- and "
             "512-wide ones (MiniLM) 1e-4, bert-base-sized ones the classic 3e-5 (BERT's paper tried 2e-5 to 5e-5).")
SIDEBAR_PREFIX = "the sidebar's model: "
TRAIN_CHOICES = {"all": "all weights", "words": "all but the word embeddings", "head": "the head only"}
EXAMPLE_CSV = ("text,label\nwhat a wonderful film,positive\na dull and tedious plot,negative\n"
               "I loved every minute,positive\nthe acting was awful,negative\n…")

cur = require_current()
fs: FineTuneSession = st.session_state.setdefault("ft_session", FineTuneSession(**shared()))
fs0: FineTuneSession = st.session_state.setdefault("ft_scratch", FineTuneSession(**shared()))  # from scratch

st.header("Fine-tuning")
model_line(cur.model)
st.markdown(
    "Pretraining taught BERT to fill in masked words and to tell whether sentence B follows A. **Fine-tuning** "
    "reuses it for a new task: classify a whole text. A small new layer (the *head*) reads one vector per text, "
    "and a short run of training with a small learning rate adapts the head (and, unless frozen, BERT's weights) "
    "to labelled examples. The paper trained for 2 to 4 *epochs* (passes over the examples); this page's default "
    "recipe takes as many as fit in about two minutes, which for the bundled MiniLM on the built-in task is 1 epoch "
    "(188 steps of 16 texts). "
    "The vector is the one the model was trained to produce: BERT's pooled [CLS] (its next-sentence head read "
    "it), or, for a sentence-transformers model like MiniLM, the mean of the last layer's token vectors:"
)
# One line each, the pooling's two choices too: KaTeX does not wrap inside `gathered` (a phone's page is narrow).
st.latex(r"\begin{gathered}p(c \mid x) = \operatorname{softmax}(W_c\,v(x) + b_c)_c,\\ "
         r"v(x) = \tanh(W_p\,h_{[CLS]} + b_p)\\ \text{or}\ v(x) = \tfrac{1}{T}\textstyle\sum_t h_t,\\ "
         r"\mathcal{L} = -\frac{1}{B}\sum_{i=1}^{B} \log p(y_i \mid x_i)\end{gathered}")
st.caption(
    "h_[CLS] is the last layer's vector at [CLS] (the paper's C, Sec. 3: its classifier reads C; its released "
    "code and Hugging Face's BertForSequenceClassification read C through the pooler); tanh(W_p h + b_p) is "
    "BERT's pooler; W_c, b_c the new classifier. The paper fine-tuned for 2 to 4 epochs with batches of 16 or "
    "32 at 2e-5 to 5e-5 (Appendix A.3). The learning rate warms up over the first "
    "10% of steps, then falls linearly to 0. Fine-tuning all weights wants a small rate (2e-5 to 3e-4, smaller "
    "for bigger models): a large one overwrites what pretraining learned. A head alone can take 1e-3. The "
    "page starts on the sidebar's model with the recipe `bert_core.finetune_defaults(model, task)` picks (a "
    "run of about two minutes); a notebook running `FineTuner(model, task, finetune_defaults(model, task))` "
    "gets this page's numbers."
)

msg = st.session_state.pop("ft_msg", None)
if msg:
    st.success(msg)
if fs.notice:  # the server dropped this idle run to make room: say so once
    st.warning(fs.notice)
    fs.notice = ""


def _bases() -> dict[str, tuple[str, object]]:
    """Base models on offer, the sidebar's first: label -> (name shown, loader)."""
    out = {}
    if not cur.model_key.startswith("session:"):
        out[f"{SIDEBAR_PREFIX}{cur.model.name}"] = (cur.model.name, lambda: cur.model)
    if cur.model_key != "bundled":
        out[BUNDLED_LABEL] = ("bundled", lambda: shared_model("bundled"))
    if st.session_state.get("session_model") is not None:
        out[SESSION_LABEL] = ("my trained model", lambda: st.session_state["session_model"])
    return out


def _init_widgets() -> dict:
    """Widget values outlive visits to other pages."""
    saved = st.session_state.setdefault("ft_saved", {
        "ft_task": "topic", "ft_csv": "", "ft_base": None, "ft_freeze": None, "ft_words": None, "ft_pooling": None,
        "ft_lr": None, "ft_epochs": None, "ft_batch": None, "ft_recipe_for": None,
    })
    for k, v in saved.items():
        if v is not None:  # None until first set (the recipe fills them per base model and task)
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


def _task(choice: str, text: str, upload):
    """The chosen task (built once per CSV text), or raises BertCoreError with what is wrong."""
    tasks = builtin_tasks()
    if choice in tasks:
        return tasks[choice]
    if choice == PASTE:
        raw, name = text, "your data"
    elif upload is None:
        raise bert_core.BertCoreError("choose a .csv file to upload first")
    else:
        raw, name = decode_upload(upload.getvalue()), "your file"
    if len(raw) > MAX_CSV_BYTES:  # refused before parsing (a text area's limit can be bypassed)
        raise bert_core.BertCoreError(f"the CSV is {len(raw):,} characters, larger than the limit of "
                                      f"{MAX_CSV_BYTES:,}: use fewer or shorter rows")
    key = (name, hash(raw), cur.seed)
    memo = st.session_state.get("ft_task_memo")
    if memo is None or memo[0] != key:
        try:
            memo = (key, task_from_csv(raw, name=name, seed=cur.seed), None)
        except bert_core.BertCoreError as e:
            memo = (key, None, str(e))
        st.session_state["ft_task_memo"] = memo
    if memo[1] is None:
        raise bert_core.BertCoreError(memo[2])
    return memo[1]


def _recipe(base_label: str, base, task, freeze: bool = False) -> FineTuneConfig:
    """finetune_defaults for this base and task (head only or not) inside this server's budget for a user's run,
    computed once per (base, task, freeze)."""
    key = (base_label, base.name, task.name, len(task.train_texts), hash(task.train_texts), freeze)
    memo = st.session_state.setdefault("ft_recipe_memo", {})
    if key not in memo:
        memo.clear()  # one base and task at a time: both freeze settings' recipes
        memo[key] = finetune_defaults(base, task, freeze_encoder=freeze, max_bytes=fs.memory.max_bytes)
    return memo[key]


def _budget_note(base_label: str, base, task, cfg: FineTuneConfig, nbytes: int, budget: int) -> None:
    """Say plainly when this server's budget for a user's run made the recipe freeze more, or refuses this run."""
    if nbytes > budget:
        st.warning(f"This run needs about {format_mb(nbytes)}, more than this server's {format_mb(budget)} for a "
                   "user's runs (BERT_EXPLORER_SESSION_MB): Start will be refused. Freeze the word-embedding matrix "
                   "or the encoder, or pick a smaller base model.")
        return
    recipe = _recipe(base_label, base, task)
    if cfg == replace(recipe, seed=cfg.seed) and (recipe.freeze_encoder or recipe.freeze_word_embeddings):
        key = ("ft_unlimited", base.name, task.name, hash(task.train_texts))
        if key not in st.session_state:  # what the recipe would train with no budget, once per base and task
            st.session_state[key] = finetune_defaults(base, task)
        free = st.session_state[key]
        if (free.freeze_encoder, free.freeze_word_embeddings) != (recipe.freeze_encoder,
                                                                  recipe.freeze_word_embeddings):
            full = run_cost(base, task, free)["bytes"]
            what = "the head only" if recipe.freeze_encoder else "every weight but the word-embedding matrix"
            st.info(f"Training {'every weight' if not free.freeze_word_embeddings else TRAIN_CHOICES['words']} of "
                    f"{base.name} would need about {format_mb(full)}, more than this server's {format_mb(budget)} "
                    f"for a user's runs (BERT_EXPLORER_SESSION_MB): the recipe trains {what} instead.")


def settings_ui(locked: bool, task) -> tuple[str, FineTuneConfig | None]:
    """Base model, what trains, pooling, learning rate, epochs, batch: the recipe's values until changed."""
    bases = _bases()
    if st.session_state.get("ft_base") not in bases:
        st.session_state["ft_base"] = next(iter(bases))
    base_label = st.session_state["ft_base"]
    base = bases[base_label][1]()
    frozen = bool(st.session_state.get("ft_freeze"))
    recipe = _recipe(base_label, base, task, frozen) if task is not None else None
    recipe_for = (base_label, task.name if task is not None else None,
                  len(task.train_texts) if task is not None else 0, frozen)
    if recipe is not None and not locked and st.session_state.get("ft_recipe_for") != recipe_for:
        # A new base or task: the settings the user has not touched follow its recipe.
        st.session_state["ft_recipe_for"] = recipe_for
        st.session_state.update({k: v for k, v in (
            ("ft_freeze", recipe.freeze_encoder), ("ft_words", recipe.freeze_word_embeddings),
            ("ft_pooling", recipe.pooling), ("ft_epochs", recipe.epochs), ("ft_batch", recipe.batch_size))
            if not st.session_state.get(f"{k}_picked")})  # what the user set stays set
    for k, v in (("ft_freeze", False), ("ft_words", False), ("ft_pooling", "cls"), ("ft_epochs", 3), ("ft_batch", 32)):
        if st.session_state.get(k) is None:
            st.session_state[k] = v
    c1, c2, c3 = st.columns([3, 2, 2])
    c1.selectbox("Base model", list(bases), key="ft_base", disabled=locked,
                 help="The pretrained BERT to start from: the sidebar's model (change it there), the tiny bundled "
                      "model, or your model from the Training page once you pressed 'Use this model' there.")
    freeze = c2.toggle("Freeze the encoder (train the head only)", key="ft_freeze", disabled=locked,
                       **picked("ft_freeze"),
                       help="Frozen: only the head learns (the classifier, and its pooling layer when that is new); "
                            "BERT runs once over each text and its vectors are cached, so many epochs are cheap.")
    words = c3.toggle("Freeze the word-embedding matrix", key="ft_words", disabled=locked or bool(freeze),
                      **picked("ft_words"),
                      help="Train every weight but the (vocabulary x hidden) word-embedding table. It is most of a "
                           "small model (MiniLM: 11.7M of its encoder's 22.7M parameters, 22.9M with the pretraining "
                           "heads Model anatomy counts); a task of a few thousand texts "
                           "touches only a few thousand of its 30,522 rows, and freezing it spares its gradient and "
                           "Adam's two moments (3 x 47 MB for MiniLM) and a little time. The recipe freezes it when "
                           "it is at least a third of the encoder.")
    c4, c5, c6, c7 = st.columns([3, 3, 1, 1])
    pooling = c4.radio("The vector the head reads", list(POOLINGS), key="ft_pooling", disabled=locked,
                       **picked("ft_pooling"), horizontal=True, format_func=POOLINGS.get,
                       help="[CLS] + pooler: BERT's way (its pooler was trained for next-sentence prediction); "
                            "transformers' classifiers read it, so only this one downloads as one. Mean: the "
                            "average of the last layer's token vectors, what sentence-transformers models (MiniLM) "
                            "were trained to produce. The recipe picks what the model was trained for.")
    suggested = recipe.lr if recipe is not None and recipe.freeze_encoder == freeze else 1e-3 if freeze else 1e-4
    if not st.session_state.get("ft_lr_picked") and not locked:
        st.session_state["ft_lr"] = suggested
    lr = c5.select_slider("Learning rate", LEARNING_RATES, key="ft_lr", disabled=locked,
                          format_func=callbacks.number_label, help="The peak, reached after warm-up.",
                          **picked("ft_lr"))
    epochs = c6.number_input("Epochs", 1, MAX_EPOCHS, step=1, key="ft_epochs", disabled=locked,
                             **picked("ft_epochs"),
                             help="Passes over the training set.")
    if st.session_state.get("ft_batch") not in (8, 16, 32, 64):
        st.session_state["ft_batch"] = 32
    batch = c7.selectbox("Batch", (8, 16, 32, 64), key="ft_batch", disabled=locked, **picked("ft_batch"))
    if not locked:
        st.caption(f"Suggested learning rate for this base: **{suggested:g}**"
                   + (" (your pick differs)" if lr != suggested else "") + ". " + LR_REASON)
    if recipe is None:
        return base_label, None
    cfg = replace(recipe, freeze_encoder=bool(freeze), freeze_word_embeddings=bool(words) and not freeze,
                  pooling=str(pooling), lr=float(lr), epochs=int(epochs), batch_size=int(batch), seed=cur.seed)
    return base_label, cfg


def cost_ui(base_label: str, task, cfg: FineTuneConfig) -> None:
    """Before Start: the parameters trained, the bytes the run needs, the time per step and in all."""
    base = _bases()[base_label][1]()
    key = (base_label, base.name, task.name, hash(task.train_texts), cfg)
    memo = st.session_state.get("ft_cost_memo")
    if memo is None or memo[0] != key:  # it tokenizes the training texts: once per settings, not every rerun
        memo = (key, run_cost(base, task, cfg))
        st.session_state["ft_cost_memo"] = memo
    c = memo[1]
    used, budget, _ = fs.memory.usage()
    same = cfg == replace(_recipe(base_label, base, task), seed=cfg.seed)
    what = "head only" if cfg.freeze_encoder else TRAIN_CHOICES["words" if cfg.freeze_word_embeddings else "all"]
    acts = "" if cfg.freeze_encoder else (f", plus one step's activations at batch {cfg.batch_size} x "
                                          f"{c['tokens']} tokens")
    st.markdown(
        f"**This run** trains {c['trainable']:,} parameters ({what}) and needs about **{format_mb(c['bytes'])}** of "
        f"memory: the weights it trains, their gradients and AdamW's two moments (4 x 4 bytes a parameter){acts}. "
        f"About **{c['seconds_per_step']:.2f} s a step** x {c['steps']:,} steps = **{format_seconds(c['seconds'])}** "
        "(estimated for one core of a 2-core server; the real time shows once it runs). Memory for users' runs on "
        f"this server: {format_mb(used)} of {format_mb(budget)} in use."
        + (" These are the settings `finetune_defaults` picks for this model and task." if same else
           " (You changed the settings `finetune_defaults` picks.)"))
    _budget_note(base_label, base, task, cfg, c["bytes"], budget)


def set_up(task, base_label: str, cfg: FineTuneConfig) -> bool:
    """Build the classifier and the loop; a plain message and False when something is wrong."""
    try:
        with st.spinner("Preparing the task and evaluating the untrained classifier…"):
            fs0.reset()  # a comparison belongs to the run it compares with
            fs.setup(_bases()[base_label][1](), task, cfg)
        st.session_state["ft_run_base"] = base_label
        return True
    except bert_core.BertCoreError as e:
        st.error(f"Cannot start: {e}")
        return False


def controls_ui(task, task_error: str | None, base_label, cfg) -> None:
    """Start / Pause / Run 10 steps / Reset, as on the Training page."""
    start, ten, pause, reset = run_buttons(fs, "ft", "classifier")
    if (start or ten) and fs.state == IDLE:
        if task is None or cfg is None:
            st.error(f"Cannot start: {task_error}")
            return
        if not set_up(task, base_label, cfg):
            return
    if reset:
        fs0.reset()
    run_controls(fs, start, ten, pause, reset)


def status_ui() -> None:
    run_status(fs, "Try a sentence or download the classifier below.")
    for note in fs.trainer.notes:
        st.caption(note)


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
task, task_error = None, None
if locked and fs.trainer is not None:
    task = fs.trainer.task
else:
    try:
        task = _task(choice, text, upload)
    except bert_core.BertCoreError as e:
        task_error = str(e)
        if choice in (PASTE, UPLOAD) and (text.strip() or upload is not None):
            st.error(f"This CSV cannot be used: {task_error}")
base_label, cfg = settings_ui(locked, task)
saved.update({k: st.session_state[k] for k in saved if k in st.session_state})
if cfg is not None and not locked:
    cost_ui(base_label, task, cfg)
controls_ui(task, task_error, base_label, cfg)
finetuning_button(cur, fs.trainer, task, {BUNDLED_LABEL: "bundled", SESSION_LABEL: "session"}.get(base_label,
                                                                                        cur.model_key), cfg)

if fs.state == WAITING:  # the server's memory for users' runs is full: wait in line for it
    memory_wait_ui(fs, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
    st.stop()
if fs.trainer is None:
    st.info("Pick a task and a base model, then press **Start** (or **Run 10 steps**).")
    if choice in builtin_tasks():  # something to look at before the first run: the task itself
        st.subheader("What the classifier learns from")
        st.caption("Two training examples of each class (the first in the split): each definition goes in as "
                   "[CLS] text [SEP]; the classifier reads the vector picked above ("
                   + POOLINGS.get(st.session_state.get("ft_pooling"), "its one vector per text")
                   + ") and must name the class.")
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


def _baseline_of(t):
    """The bag-of-words result for this task if computed in this session (the baseline's button), else None."""
    return st.session_state.get(("ft_baseline", t.name, len(t.train_texts), hash(t.train_texts), hash(t.valid_texts)))


def _run_base():
    """The base model the current run started from."""
    bases = _bases()
    return bases.get(st.session_state.get("ft_run_base"), next(iter(bases.values())))[1]()


def compare_ui() -> None:
    """Why pre-train: the same recipe on the same network with fresh random weights, beside the baseline."""
    t = fs.trainer
    st.subheader("Why pre-train: the same network, untrained")
    st.markdown(
        "Everything the pretrained model knows came from reading raw text. To see what that is worth, train **the "
        "same architecture with fresh random weights** (`bert_core.untrained_copy`: every weight drawn as "
        "transformers initialises a new model) on the same data, with the same settings, budget and seed. The "
        "gap between the two curves is what pretraining gave."
    )
    if fs0.trainer is not None and (fs0.trainer.task is not t.task or fs0.settings != t.cfg):
        fs0.reset()  # it compared with an earlier run
    start, ten, pause, reset = run_buttons(fs0, "ft0", "untrained run")
    if (start or ten) and fs0.state == IDLE:
        try:
            with st.spinner("Drawing fresh weights and evaluating the untrained classifier…"):
                fs0.setup(_run_base(), t.task, t.cfg, untrained_seed=t.cfg.seed)
        except bert_core.BertCoreError as e:
            st.error(f"Cannot start: {e}")
            return
    run_controls(fs0, start, ten, pause, reset)
    if fs0.state == WAITING:
        memory_wait_ui(fs0, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
        return
    if fs0.trainer is None:
        st.caption("Press **Start** above to train the untrained copy with your run's settings "
                   f"({t.max_steps:,} steps); both curves then share one chart.")
    live_run(fs0, lambda: compare_chart(fs, fs0, _baseline_of(t.task)), TICK_SECONDS, QUEUED_TICK_SECONDS,
             TRAIN_SECONDS)


def sample_efficiency_ui() -> None:
    """Validation accuracy against examples per class, for pretrained, untrained and bag of words (head-only)."""
    t = fs.trainer
    st.subheader("Few labels, many labels")
    st.markdown(
        "How many labelled examples does each learner need? For 2, 4, 8, 16, 32 training examples per class and "
        "for all of them: the pretrained model and its untrained copy each run once over every text (frozen), "
        "and a logistic-regression head is fitted **to convergence** on those vectors by L-BFGS (a quasi-Newton "
        "optimiser: it estimates the loss's curvature from its last few gradients, so there is no learning rate "
        "and no epochs to tune); bag of words fits the same regression on word counts. Each point averages 5 random "
        "draws of the examples (bars: their spread). This is the picture that explains why BERT changed NLP: "
        "with a handful of labels, the pretrained vectors already separate the classes."
    )
    base_model = _run_base()
    key = ("ft_sample_eff", base_model.name, t.task.name, hash(t.task.train_texts), t.cfg.pooling, t.cfg.seed)
    if key not in st.session_state:
        n = len(t.task.train_texts) + len(t.task.valid_texts)
        if not st.button("Compute the sample-efficiency figure", key="ft_sample_btn",
                         help=f"Runs both encoders once over {n:,} texts, then fits 3 x 26 heads: about a minute "
                              "for the built-in tasks on MiniLM."):
            return
        bar = st.progress(0.0, text="Starting…")
        # The untrained copy and both models' vectors are held while the figure computes: charged to the server's
        # ledger like a run (a bert-base copy is 0.44 GB), refused with the ledger's message when it is full.
        mem_key = f"ft-se:{id(fs)}"
        try:
            fs.memory.reserve(mem_key, tensor_bytes(list(base_model.model.parameters()))
                              + 2 * 4 * base_model.config.hidden_size * n, "the sample-efficiency figure")
            res = sample_efficiency(base_model, t.task, pooling=t.cfg.pooling, seed=t.cfg.seed,
                                    max_len=t.cfg.max_len,
                                    progress=lambda msg, f: bar.progress(min(1.0, f), text=msg))
        except bert_core.BertCoreError as e:
            bar.empty()
            st.error(f"Cannot compute: {e}")
            return
        finally:
            fs.memory.release(mem_key)
        bar.empty()
        st.session_state[key] = res
    res = st.session_state[key]
    chart(sample_efficiency_figure(res.labels, res.accuracy, res.spread), "sample efficiency", key="ft-sample")
    df = pd.DataFrame({"examples per class": res.labels,
                       **{k: [f"{100 * a:.1f}%" for a in v] for k, v in res.accuracy.items()}})
    table(df, "sample efficiency", key="csv-ft-sample", hide_index=True)
    few = res.accuracy["pretrained"][0] - res.accuracy["from scratch"][0]
    first = "every training example" if res.labels[0] == "all" else f"{res.labels[0]} examples per class"
    st.caption(f"With {first} the pretrained vectors are {100 * few:+.1f} points ahead "
               "of the untrained network's; bag of words needs many examples to see each useful word at least once.")


def keep_classifier_ui() -> None:
    """The download (a transformers classifier reads [CLS]: a mean-pooled head cannot be saved in its layout)."""
    if fs.trainer.cfg.pooling == "mean":
        st.subheader("Keep the classifier")
        st.caption("This classifier reads the mean of the tokens; transformers' AutoModelForSequenceClassification "
                   "reads the [CLS] vector through the pooler, so it cannot be saved in that layout. Fine-tune with "
                   "'[CLS] + pooler' to download a classifier transformers loads. It lives in this browser session "
                   f"only. Memory: {fs.memory_usage()}.")
        return
    keep_ui(fs, "classifier", "bert-explorer-classifier.zip", "AutoModelForSequenceClassification", "ft_download")


def live_ui() -> None:
    """What the timer redraws while the run is live: status, curves, confusion matrix."""
    status_ui()
    curves_ui(fs)
    confusion_ui(fs)


live_run(fs, live_ui, TICK_SECONDS, QUEUED_TICK_SECONDS, TRAIN_SECONDS)
pca_ui(fs)
baseline_ui()
compare_ui()
sample_efficiency_ui()
try_ui()
keep_classifier_ui()
