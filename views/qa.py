"""Question answering: a passage and a question; start and end probabilities over the passage; fine-tune a reader."""

import html

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.finetuning import curves_figure
from bert_core.figures.qa import highlighted_passage_html, span_probabilities_figure
from bert_core.finetune.cached_head import CachedHeadReader
from bert_core.finetune.finetuning import default_lr
from bert_core.finetune.qa import builtin_qa_task, first_examples, heuristic_baseline
from bert_core.finetune.token_finetuning import MAX_ANSWER_TOKENS, qa_lr
from bert_core.inspect.token_tasks import answer, passage_probabilities
from bert_core.model.token_heads import BertForQuestionAnswering
from bert_core.runs.finetune_run import FineTuneSession
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
from ui.state import require_current
from ui.transfer_ui import TransferTask, transfer_sections
from ui.widgets import chart, model_line, run_buttons, run_controls, table

SIZES = (1_000, 2_000, 5_000)  # training examples of the built-in task
MAX_QUESTION_CHARS = 1_000
SESSION_READER = "your fine-tuned reader (this session)"
SE_SIZES = (8, 16, 32, 64, 128, 256, 512, 1_000, 2_000, 5_000)  # training questions per point (capped at all)

cur = require_current()
qs: FineTuneSession = st.session_state.setdefault("qa_session", FineTuneSession(**shared()))
scratch: FineTuneSession = st.session_state.setdefault("qa_scratch", FineTuneSession(**shared()))  # fresh weights
example = builtin_qa_task().valid[0]

st.header("Question answering")
model_line(cur.model)
st.markdown(
    "**Extractive question answering** reads the question and a passage together, `[CLS] question [SEP] passage "
    "[SEP]`, and points at the answer inside the passage. A new layer gives every token two scores from its final "
    "hidden state h_t, *start* and *end*; a softmax over the tokens turns each into a distribution, and the answer "
    "is the span of passage tokens s…e that maximises"
)
st.latex(r"\text{score}(s, e) = \operatorname{softmax}(W_{start} h)_s \cdot \operatorname{softmax}(W_{end} h)_e,"
         r"\qquad s \le e,\quad e - s + 1 \le L_{max}")
st.caption(f"L_max = {MAX_ANSWER_TOKENS} tokens here (transformers' pipeline uses 15 by default). Only passage "
           "tokens may start or end an answer. The answer's text is cut from the passage by the tokens' character "
           "offsets. This is how BERTs trained on SQuAD (the Stanford Question Answering Dataset: 100,000+ questions "
    "on Wikipedia paragraphs, each answered by a span of its paragraph) answer (transformers' "
    "BertForQuestionAnswering, `qa_outputs`); "
           "the paper (Sec. 4.2) learns a start vector S and an end vector E and ranks spans by S·h_s + E·h_e, "
           "the same order as the product of the two softmaxes. "
           "A question and passage longer than the model's positions are read as transformers' QA pipeline reads "
           "them: the passage in overlapping windows (128 tokens of overlap), each after the question, spans from "
           "every window ranked together.")

if qs.notice:
    st.warning(qs.notice)
    qs.notice = ""


def read_ui() -> None:
    """A passage and a question, the spans the reader picks, and its start / end probabilities."""
    st.subheader("Ask about a passage")
    passage = st.text_area("Passage", example.context, key="qa_context", height=130,
                           max_chars=bert_core.MAX_TEXT_CHARS)
    question = st.text_input("Question", example.question, key="qa_question", max_chars=MAX_QUESTION_CHARS)
    found = ready_models(cur, qs, BertForQuestionAnswering, SESSION_READER, "reader")
    if not found:
        st.info(f"**{html.escape(cur.model.name)}** has no question-answering head (`qa_outputs`: a start and an "
                "end score on every token, transformers' BertForQuestionAnswering), so it cannot answer. Add a new "
                "head and fine-tune it live below on the built-in WordNet task, or pick a SQuAD checkpoint in the "
                "sidebar when the hub is reachable (e.g. distilbert-base-cased-distilled-squad).")
        return
    chosen = pick_ready(found, "Reader", "qa_reader")
    c1, c2 = st.columns(2)
    top_k = c1.slider("Spans shown", 1, 10, 3, key="qa_top_k")
    max_tokens = c2.slider("Longest answer (tokens)", 1, 64, MAX_ANSWER_TOKENS, key="qa_max_tokens")
    notebook_button(cur, "qa", passage, question=question, top_k=top_k, max_tokens=max_tokens,
                    head="sidebar" if chosen is cur.model else "session", train=None)
    if not passage.strip() or not question.strip():
        st.warning("The passage or the question is empty: type both.")
        return
    try:
        with st.spinner("Reading…"):
            r = answer(chosen, question, passage, top_k=top_k, max_answer_tokens=max_tokens)
    except bert_core.BertCoreError as e:
        st.warning(f"Cannot answer: {e}")
        return
    for note in r.notes:
        st.info(note)
    if not r.spans:
        st.warning("No span fits: the passage has no tokens left beside the question.")
        return
    st.markdown(highlighted_passage_html(passage, [(a, b) for _, a, b, _ in r.spans]), unsafe_allow_html=True)
    table(pd.DataFrame(r.spans, columns=["answer", "start (character)", "end (character)", "score"]).assign(
        rank=range(1, len(r.spans) + 1)), "answer spans", key="qa-spans", hide_index=True,
        column_config={"score": st.column_config.NumberColumn(format="%.4f")})
    st.caption("Score = p_start[s] · p_end[e] over every pair of passage tokens with s ≤ e and at most the longest "
               "answer's length; the best pairs, best first (yellow: the best; grey: the others). Scores of all pairs "
               "sum to at most 1, so a low best score means the reader is unsure.")
    tokens, ps, pe, best = passage_probabilities(r, max_tokens)
    chart(span_probabilities_figure(tokens, ps, pe, best), "start and end probabilities", key="qa-probs")
    st.caption("Green: the probability that the answer starts at each passage token; red: that it ends there "
               "(each a softmax over all the tokens of the input, question included, so the bars need not sum to 1)."
               + (" The first window's." if r.windows > 1 else ""))


def settings_ui(locked: bool) -> tuple[int, str, dict]:
    task = builtin_qa_task()
    if locked and qs.trainer is not None:
        t = qs.trainer.task
        st.caption(f"Fine-tuning on the built-in task: {len(t.train):,} training and {len(t.valid):,} validation "
                   "questions.")
    else:
        st.caption(f"{task.description} {len(task.train):,} training and {len(task.valid):,} validation questions. "
                   f"Example: *{html.escape(example.question)}* → **{html.escape(example.answer_text)}**.")
    cols = st.columns([3, 2, 2, 2, 1.3, 1.3])  # 1.3: "16" in the batch box, not "1("
    n = cols[1].select_slider("Training questions", SIZES, value=SIZES[0], key="qa_n", disabled=locked,
                              format_func="{:,}".format)
    base, freeze, lr, epochs, batch = new_head_settings(
        cur, "qa", locked, [cols[0], *cols[2:]], 1,
        "Train the start/end layer only, fit exactly on vectors the frozen encoder gives once per question: fast, "
        "but the encoder reads the question and the passage as pretraining left them.", freeze_default=False,
        suggest_lr=lambda config, frozen: default_lr(config, True) if frozen else qa_lr(config))
    if not freeze:
        st.caption("**All weights** (the default): a reader must relate the question to the passage, which a "
                   "frozen encoder was never trained to do; training every weight for one epoch of 1,000 questions "
                   "at 3e-4 takes about two minutes of one core's time with MiniLM (docs/models.md: 60% F1, SQuAD's "
                   "word-overlap score between the predicted and the true answer, explained under the results, "
                   "against 29% for the heuristic baseline). The word-embedding matrix stays "
                   "frozen when it is a third of the encoder or more (MiniLM: 11.7M of its encoder's 22.7M weights; "
                   "Model anatomy's 22.9M also counts the pretraining heads, which a reader drops).")
    return n, base, {"freeze": freeze, "lr": lr, "epochs": epochs, "batch_size": batch}


def set_up(n: int, base_label: str, chosen: dict) -> bool:
    try:
        with st.spinner("Preparing the questions and evaluating the untrained reader…"):
            task = first_examples(builtin_qa_task(), n)
            base = new_head_bases(cur)[base_label][1]()
            scratch.reset()  # a new run: the old comparison no longer applies
            st.session_state.pop("qa_se_job", None)
            qs.setup(base, task, recipe_config(base, task, chosen, cur.seed))
        return True
    except bert_core.BertCoreError as e:
        st.error(f"Cannot start: {e}")
        return False


def status_ui() -> None:
    run_status(qs, "Ask it a question above or download the reader below.",
               ("Validation accuracy", "Validation exact match"))


def results_ui() -> None:
    t = qs.trainer
    chart(curves_figure(qs.curves(0.9)), "question answering curves", key="qa-curves")
    st.caption("Loss: (−log p_start[true start] − log p_end[true end]) / 2. Accuracy: the share of questions whose "
               "best span is exactly the answer (batches: both ends right; validation: SQuAD's exact match, the "
               "share of answers equal to the true one once case, punctuation and a/an/the are set aside).")
    last = t.evals[-1]
    base = st.session_state.setdefault("qa_baseline", heuristic_baseline(builtin_qa_task()))
    st.markdown(f"Validation ({len(t.valid_rows):,} questions, step {last.step}): exact match "
                f"**{100 * last.accuracy:.1f}%**, token F1 **{100 * last.f1:.1f}%** (SQuAD's F1: the harmonic mean of "
                "the share of predicted words that are in the answer and the share of answer words predicted). The "
                "heuristic baseline (the "
                "sentence sharing most word stems with the question, then its word closest to a question word) gets "
                f"{100 * base['exact_match']:.1f}% / {100 * base['f1']:.1f}%.")
    preds = getattr(t, "last_predictions", None)
    if preds:
        rows = [{"question": ex.question, "answer": ex.answer_text, "reader's span": p}
                for p, ex in zip(preds[:8], t.task.valid[:8])]
        table(pd.DataFrame(rows), "validation predictions", key="qa-preds", hide_index=True)


read_ui()
st.divider()
st.subheader("Fine-tune a reader on the built-in task")
locked = qs.state != IDLE
n, base_label, cfg = settings_ui(locked)
start, ten, pause, reset = run_buttons(qs, "qa", "reader")
if reset:  # the comparison belongs to the run
    scratch.reset()
    st.session_state.pop("qa_se_job", None)
if not ((start or ten) and qs.state == IDLE and not set_up(n, base_label, cfg)):
    run_controls(qs, start, ten, pause, reset)
head_run_button(cur, "qa", qs.trainer, base_label, first_examples(builtin_qa_task(), n), cfg,
                st.session_state.get("qa_context", example.context),
                question=st.session_state.get("qa_question", example.question),
                top_k=st.session_state.get("qa_top_k", 3), max_tokens=st.session_state.get("qa_max_tokens",
                                                                                          MAX_ANSWER_TOKENS))


def live_ui() -> None:
    """What the timer redraws while the run is live: status, curves, exact match and F1."""
    status_ui()
    results_ui()


head_run_ui(qs, "Press **Start** (or **Run 10 steps**): a new start/end head goes on the encoder and learns to "
            "point at the defined word; the passage above is read by it as it learns.", live_ui,
            ("reader", "bert-explorer-qa.zip", "AutoModelForQuestionAnswering", "qa_download"))


def transfer_task() -> TransferTask:
    """The comparison's terms: token F1, the heuristic reader (it learns nothing from the training questions)."""
    base = st.session_state.setdefault("qa_baseline", heuristic_baseline(builtin_qa_task()))
    return TransferTask("qa", "F1", lambda e: e.f1, base["f1"], "baseline: heuristic reader", "questions", SE_SIZES,
                        None, CachedHeadReader)


transfer_sections(qs, scratch, transfer_task())
