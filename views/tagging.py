"""Tagging: one label per token from its final hidden state; tag the sidebar's text, fine-tune a tagger live."""

import html

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.finetuning import confusion_figure, curves_figure
from bert_core.figures.tagging import legend_html, per_label_figure, tagged_html
from bert_core.finetune.cached_head import CachedHeadTagger
from bert_core.finetune.tagging import (
    MAX_CONLL_BYTES,
    MAX_CONLL_SENTENCES,
    builtin_pos_task,
    first_sentences,
    most_frequent_tag_baseline,
    per_label_accuracy,
    task_from_conll,
)
from bert_core.inspect.token_tasks import tag_words
from bert_core.model.token_heads import BertForTokenClassification
from bert_core.runs.finetune_run import FineTuneSession
from bert_core.runs.settings import decode_upload
from bert_core.runs.status import IDLE
from ui.finetune_ui import (
    head_run_ui,
    new_head_bases,
    new_head_settings,
    pick_ready,
    ready_models,
    recipe_config,
    run_status,
)
from ui.notebook_ui import head_run_button, notebook_button
from ui.runs import shared
from ui.state import page_text, require_current
from ui.transfer_ui import TransferTask, transfer_sections
from ui.widgets import chart, model_line, run_buttons, run_controls, table

BUILTIN, UPLOAD, PASTE = "Built-in: Brown part of speech", "Upload a CoNLL file", "Paste CoNLL"
SIZES = (1_000, 3_000, 12_000)  # training sentences of the built-in task
EXAMPLE_CONLL = "EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO\n\nPeter\tB-PER\nBlackburn\tI-PER\n…"
SESSION_TAGGER = "your fine-tuned tagger (this session)"

SE_SIZES = (8, 16, 32, 64, 128, 256, 512, 1_024, 2_048, 12_000)  # training sentences per point (capped at all)

cur = require_current()
TAG_EXAMPLE = "Ada Lovelace wrote the first program for Charles Babbage's engine in London."
ts: FineTuneSession = st.session_state.setdefault("tg_session", FineTuneSession(**shared()))
scratch: FineTuneSession = st.session_state.setdefault("tg_scratch", FineTuneSession(**shared()))  # fresh weights

st.header("Tagging")
model_line(cur.model)
st.markdown(
    "**Token classification** makes one prediction per token: a new linear layer reads each token's final "
    "hidden state h_t and gives it a label (part of speech, a named-entity tag). Words split into several "
    "pieces are labelled on their **first piece**; the other pieces are ignored by the loss (label -100), as "
    "in BERT's paper (Sec. 5.3, its NER task) and transformers' examples. It matters because it shows what "
    "the contextual vectors "
    "know word by word: *book* is a NOUN in \"a book\" and a VERB in \"book a table\", from context alone."
)
st.latex(r"p(y_t = c \mid x) = \operatorname{softmax}(W_c\,h_t + b_c)_c,\qquad "
         r"\mathcal{L} = -\frac{1}{|F|}\sum_{t \in F} \log p(y_t \mid x),\quad F = \text{first pieces of words}")

if ts.notice:  # the server dropped this idle run to make room: say so once
    st.warning(ts.notice)
    ts.notice = ""


def tag_ui() -> None:
    """The sidebar's text, each word coloured by its label, and the probability table per token."""
    st.subheader("Tag the sidebar's text")
    text = page_text(cur, TAG_EXAMPLE)  # the sidebar's default [MASK] would be cut into "[ MASK ]" and tagged
    if not text.strip():
        st.warning("The sidebar's text is empty: type a sentence there to tag it.")
        return
    found = ready_models(cur, ts, BertForTokenClassification, SESSION_TAGGER, "tagger")
    if not found:
        st.info(f"**{html.escape(cur.model.name)}** has no token-classification head (a `classifier` layer on every "
                "token's final vector, transformers' BertForTokenClassification), so it cannot tag. Add a new head "
                "and fine-tune it live below, on the built-in part-of-speech task or your own CoNLL file "
                "(for named entities, say), or pick a tagger in the sidebar.")
        return
    chosen = pick_ready(found, "Tagger", "tg_tagger")
    notebook_button(cur, "tagging", text, head="sidebar" if chosen is cur.model else "session", train=None)
    try:
        with st.spinner("Tagging…"):
            r = tag_words(chosen, text)
    except bert_core.BertCoreError as e:
        st.warning(f"Cannot tag this text: {e}")
        return
    if r.tokens.truncation_message:
        st.info(f"{r.tokens.truncation_message} Words past the cut have no label (–).")
    st.markdown(tagged_html(text, r.words, r.labels, r.tokens.label_names), unsafe_allow_html=True)
    st.markdown(legend_html(r.tokens.label_names), unsafe_allow_html=True)
    st.caption("Each word shows the label of its first piece (the argmax of softmax(W_c h_t + b_c)). The words are "
               "split as the Brown corpus splits them (punctuation apart, *don't* whole), joined by spaces and read "
               "by the tagger in one pass, exactly as it was trained.")
    words = {t: r.words[w][0] for t, w in enumerate(r.first) if w is not None}
    df = pd.DataFrame(r.tokens.probs, columns=r.tokens.label_names)
    df.insert(0, "piece", r.tokens.tokens)
    df.insert(1, "first piece of", [words.get(t, "") for t in range(len(r.tokens.tokens))])
    df.insert(2, "label", r.tokens.labels)
    table(df, "tag probabilities", key="tg-probs", hide_index=True,
          column_config={lab: st.column_config.NumberColumn(format="%.3f") for lab in r.tokens.label_names})
    st.caption("Every piece gets a probability over the labels, [CLS] and [SEP] too; only a word's first piece "
               "is trained and read ('first piece of' names its word), the others are the head's guesses.")


def task_ui(locked: bool):
    """The task: the built-in POS task (how many sentences) or a CoNLL file. Returns (choice, text, upload, n)."""
    choices = [BUILTIN, UPLOAD, PASTE]
    choice = st.radio("Task", choices, key="tg_task", horizontal=True, disabled=locked)
    text, upload, n = "", None, SIZES[1]
    if locked and ts.trainer is not None:
        t = ts.trainer.task
        st.caption(f"Fine-tuning on **{html.escape(t.name)}**: {len(t.train_words):,} training and "
                   f"{len(t.valid_words):,} validation sentences, {len(t.labels)} labels.")
    elif choice == BUILTIN:
        task = builtin_pos_task()
        n = st.select_slider("Training sentences", SIZES, value=SIZES[1], key="tg_n", format_func="{:,}".format,
                             help="The first sentences of the fixed training split (a fixed random sample). More "
                                  "sentences: a better tagger and a longer epoch.")
        st.caption(f"{task.description} {len(task.valid_words):,} validation sentences "
                   f"({sum(map(len, task.valid_words)):,} words).")
    elif choice == UPLOAD:
        upload = st.file_uploader("A UTF-8 text file: word TAB label a line, a blank line between sentences",
                                  type=["txt", "conll", "tsv", "bio", "iob"], key="tg_upload",
                                  max_upload_size=max(1, MAX_CONLL_BYTES // 1_000_000))
    else:
        text = st.text_area("CoNLL: word TAB label a line, a blank line between sentences", key="tg_conll",
                            height=160, max_chars=MAX_CONLL_BYTES, placeholder=EXAMPLE_CONLL)
    if choice != BUILTIN and not locked:
        st.caption(f"At least 10 sentences and two labels; at most {MAX_CONLL_SENTENCES:,} sentences and "
                   f"{MAX_CONLL_BYTES:,} bytes. CoNLL-2003 files (word POS chunk NER) work too: the first column "
                   "is the word, the last the label. A fifth of the sentences (chosen with the sidebar's seed) is "
                   "held out for validation. Labels are shown as plain text.")
    return choice, text, upload, n


def settings_ui(locked: bool) -> tuple[str, dict]:
    """Base model and what to train; the settings a run gets are `token_finetune_defaults`' (see the caption)."""
    base, freeze, lr, epochs, batch = new_head_settings(cur, "tg", locked, st.columns([3, 2, 2, 1, 1]), 1)
    if freeze:
        st.caption("**Head only, fit exactly** (the default): the frozen encoder reads every sentence once "
                   "and keeps each word's vector; the head (softmax regression on those vectors) is then fit to "
                   "convergence by L-BFGS, a quasi-Newton optimiser that estimates the loss's curvature from its "
                   "last few gradients. No learning rate or epochs to get wrong, and for 3,000 sentences under a "
                   "minute of one core's time with MiniLM (51 CPU seconds: docs/benchmarks.md), most of it reading. "
                   "Switch it off to train every weight "
                   "(slower: each step runs the encoder forwards and backwards).")
    return base, {"freeze": freeze, "lr": lr, "epochs": epochs, "batch_size": batch}


def set_up(choice, text, upload, n, base_label, cfg) -> bool:
    """Build the task, the tagger and the loop; a plain message and False when something is wrong."""
    try:
        with st.spinner("Preparing the task and evaluating the untrained tagger…"):
            if choice == BUILTIN:
                task = first_sentences(builtin_pos_task(), n)
            elif choice == PASTE:
                task = task_from_conll(text, seed=cur.seed)
            elif upload is None:
                raise bert_core.BertCoreError("choose a CoNLL file to upload first")
            else:
                task = task_from_conll(decode_upload(upload.getvalue()), name="your file", seed=cur.seed)
            base = new_head_bases(cur)[base_label][1]()
            scratch.reset()  # a new run: the old comparison no longer applies
            st.session_state.pop("tg_se_job", None)
            ts.setup(base, task, recipe_config(base, task, cfg, cur.seed))
            st.session_state["tg_baseline"] = most_frequent_tag_baseline(task)
        return True
    except bert_core.BertCoreError as e:
        st.error(f"Cannot start: {e}")
        return False


def controls_ui(choice, text, upload, n, base_label, cfg) -> None:
    start, ten, pause, reset = run_buttons(ts, "tg", "tagger")
    if (start or ten) and ts.state == IDLE and not set_up(choice, text, upload, n, base_label, cfg):
        return
    if reset:  # the comparison belongs to the run
        scratch.reset()
        st.session_state.pop("tg_se_job", None)
    run_controls(ts, start, ten, pause, reset)


def status_ui() -> None:
    run_status(ts, "Tag the sidebar's text above or download the tagger below.", ("accuracy", "accuracy (words)"))


def results_ui() -> None:
    """Curves, accuracy per label beside the baseline, and the confusion matrix (validation words)."""
    t = ts.trainer
    chart(curves_figure(ts.curves(0.9)), "tagging curves", key="tg-curves")
    st.caption(f"Thin lines: training batches (dropout on), smoothed. Thick lines: the {len(t.valid_rows):,} "
               "validation sentences, every word counted once (its first piece). Step 0 is the untrained head.")
    last = t.evals[-1]
    base = st.session_state.get("tg_baseline")
    labels = list(t.task.labels)
    counts = last.confusion.sum(1)
    mine = per_label_accuracy(last.confusion)
    theirs = per_label_accuracy(base["confusion"]) if base else None
    st.subheader(f"Accuracy per label (validation, step {last.step})")
    if base:
        verdict = "ahead of" if last.accuracy > base["accuracy"] else "behind"
        st.markdown(f"Your tagger: **{100 * last.accuracy:.1f}%** of validation words; the baseline, each word's most "
                    f"frequent tag in the training sentences (a word never seen there, {100 * base['unseen']:.1f}% "
                    f"of them, gets the most frequent tag, {html.escape(base['fallback'])}): "
                    f"**{100 * base['accuracy']:.1f}%**. Your tagger is {verdict} it.")
    chart(per_label_figure(labels, mine, theirs, counts, "your tagger"), "accuracy per label", key="tg-per-label")
    rows = {"label": labels, "validation words": counts.astype(int), "your tagger": mine}
    if base:
        rows["baseline"] = theirs
    table(pd.DataFrame(rows), "accuracy per label", key="tg-per-label-table", hide_index=True,
          column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("your tagger", "baseline")})
    st.subheader("Confusion matrix")
    chart(confusion_figure(last.confusion, labels), "tagging confusion matrix", key="tg-confusion")
    st.caption("Row = the true label of a validation word, column = the label the tagger gave it. Off-diagonal "
               "cells show which labels it mixes up (ADJ and NOUN, ADP and PRT are the usual ones in English).")


def examples_ui() -> None:
    """Two built-in training sentences, coloured by their gold tags: what the tagger learns from."""
    task = builtin_pos_task()
    st.subheader("What the tagger learns from")
    for ws, tags in zip(task.train_words[:2], task.train_tags[:2]):
        text = " ".join(ws)
        spans, pos = [], 0
        for w in ws:
            spans.append((w, pos, pos + len(w)))
            pos += len(w) + 1
        st.markdown(tagged_html(text, spans, [task.labels[i] for i in tags], list(task.labels)),
                    unsafe_allow_html=True)
    st.markdown(legend_html(list(task.labels)), unsafe_allow_html=True)
    st.caption("Gold tags of two training sentences. Each sentence goes in as [CLS] words [SEP]; the loss reads "
               "the first piece of every word.")


tag_ui()
st.divider()
st.subheader("Fine-tune a tagger")
locked = ts.state != IDLE
choice, text, upload, n = task_ui(locked)
base_label, cfg = settings_ui(locked)
controls_ui(choice, text, upload, n, base_label, cfg)
if choice == BUILTIN:  # (the radio keeps the run's task while it is locked)
    head_run_button(cur, "tagging", ts.trainer, base_label, first_sentences(builtin_pos_task(), n), cfg,
                    page_text(cur, TAG_EXAMPLE))


def live_ui() -> None:
    """What the timer redraws while the run is live: status, curves, accuracy per label, confusion matrix."""
    status_ui()
    results_ui()


head_run_ui(ts, "Pick a task and a base model, then press **Start** (or **Run 10 steps**): a new head is put on "
            "the encoder and trained; the sidebar's text is tagged above as it learns.", live_ui,
            ("tagger", "bert-explorer-tagger.zip", "AutoModelForTokenClassification", "tg_download"),
            examples_ui if choice == BUILTIN else None)


def transfer_task() -> TransferTask:
    """The comparison's terms for this run's task: word accuracy, the most-frequent-tag baseline on the same n."""
    task = ts.trainer.task
    return TransferTask("tg", "accuracy", lambda e: e.accuracy, st.session_state["tg_baseline"]["accuracy"],
                        "baseline: most frequent tag", "sentences", SE_SIZES,
                        lambda n: most_frequent_tag_baseline(first_sentences(task, n))["accuracy"], CachedHeadTagger)


transfer_sections(ts, scratch, transfer_task())
