"""The Lesson's 13 step views and the step's question, drawn on numbers `bert_core` computes for the step's sentence.

A view is `(cur, text, pair, revealed, large) -> None`, found by step key in VIEWS; `large` is the role's (a
projector: one chart per 1280 x 720 screen, every label, text at least 18 px, tables as HTML), never read here. It
draws with the same figure builders the full pages use, through the shared model cache, so the question and the view
share one computation; each chart is noted for the handout (`lesson_chart`)."""

from __future__ import annotations

import contextlib
import functools
import html
import json
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.attention import head_heatmap
from bert_core.figures.describe import alt_text, figure_table
from bert_core.figures.embeddings import norms_figure
from bert_core.figures.heads import without_head_figure
from bert_core.figures.layers import answer_trajectory, same_word_figure
from bert_core.figures.lesson import (
    bars_every_label,
    every_label,
    hidden_importance_figure,
    mask_heatmap,
    pretraining_start_figure,
    row_bars,
)
from bert_core.figures.masking import chips_html, legend_html
from bert_core.figures.predictions import candidates_figure, nsp_figure
from bert_core.figures.style import projector
from bert_core.inspect import input_tables
from bert_core.inspect.anatomy import anatomy_rows
from bert_core.inspect.masking_view import masking_draw
from bert_core.inspect.objectives_view import mask_comparison
from bert_core.inspect.residual import logit_lens, same_word
from bert_core.lesson import attention as lesson_attention
from bert_core.lesson import heads as lesson_heads
from bert_core.lesson import questions
from bert_core.lesson.naming import model_name
from bert_core.runs.settings import CORPUS_CHOICES, example_run
from bert_core.train.toy import farm_tokenizer
from ui.cache import ByteLRU
from ui.lesson import handout_record
from ui.lesson.content import STEPS, Step, in_the_box, lesson_model_line, question_call
from ui.lesson.state import QUESTION_ERROR, QUESTION_PAIR, next_draw
from ui.state import model_cached
from ui.widgets import chart, chart_data, chart_data_static


def _analysis(cur, text: str, pair: str | None, **keep):
    """`bert_core.analyze` of the step's sentence through the shared cache; None after a message."""
    return _cached(cur, bert_core.analyze, text, pair, top_k=keep.pop("top_k", 5), **keep)


def _cached(cur, fn, *args, **kwargs):
    """`fn(model, ...)` through the shared cache; None after a message when the input does not fit."""
    try:
        return model_cached(cur, fn, *args, **kwargs)
    except bert_core.BertCoreError as e:
        _warn(e)
        return None


def _warn(e: Exception) -> None:
    """The view's message, unless the step's question has just said the same thing."""
    if str(e) != st.session_state.get(QUESTION_ERROR):
        st.warning(in_the_box(str(e), st.session_state.get(QUESTION_PAIR)))


# (model, step, sentence(s), what) this process has computed once. A spinner starts a timer thread on every run;
# once a step's numbers are in the shared cache its run is short, and a class's 30 students redraw the same step
# at once (the teacher computed it first): their pages skip the spinner. Bounded in bytes like every cache here
# (each key is its own value, so its strings are what is counted).
_WARM = ByteLRU(1 << 20)


@contextlib.contextmanager
def busy(cur, k: int, text: str, pair: str | None, what: str, message: str) -> Iterator[None]:
    """`st.spinner(message)` the first time this process computes `what` of step k for this model and sentence."""
    key = (cur.model_key, k, text, pair, what)
    if key in _WARM:
        yield
        return
    with st.spinner(message):
        yield
    _WARM.get_or_compute(key, lambda: key)


def _table(df: pd.DataFrame, large: bool) -> None:
    """A step's table, whole: no scrolling inside it (an HTML table on a projector, so its type is large)."""
    if large:
        st.table(df, hide_index=True)  # hide_index: Streamlit 1.67's st.table
    else:
        st.dataframe(df, hide_index=True, height=35 * (len(df) + 1) + 3)  # every row shown, no inner scroll


def model_note(cur, large: bool) -> None:
    """The model whose guesses the slide shows, in one short line (and the paper's BERT where they differ)."""
    # A class, not a keyed container: a class's shared drawing is cached, and a keyed container counts as a widget.
    st.markdown(f'<em class="bx-model-line">{html.escape(lesson_model_line(cur.model, large))}</em>',
                unsafe_allow_html=True)  # 18 px on a projector (PRESENTER_CSS); a hub id is user text: escaped


def view_tokens(cur, text, pair, revealed, large) -> None:
    tok = cur.model.tokenizer
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None:
        return
    if revealed:
        st.html(input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True))
    else:
        st.caption("The pieces, with the special tokens, appear with the answer.")


def view_embeddings(cur, text, pair, revealed, large) -> None:
    t = _analysis(cur, text, pair, hidden_states=False, attentions=False)
    if t is None:
        return
    if not (revealed and large):  # a projector has room for one chart
        fig = norms_figure(input_tables.token_norms(t.embeddings), input_tables.token_labels(t.tokens),
                           input_tables.EMBEDDING_TITLES, t.token_type_ids)
        fig.update_layout(height=380)
        if large:  # every token labelled, upright; the legend under its labels, not over them
            fig.update_xaxes(tickmode="linear", dtick=1, tickangle=-90)
            fig.update_layout(height=470, margin=dict(b=220),
                              legend=dict(yref="container", y=0, yanchor="bottom", x=0, orientation="h"))
        lesson_chart(fig, "lesson embeddings", key="lesson-emb", large=large)
    if revealed:
        sw = _cached(cur, same_word, text, pair)
        words = questions.topic_words(cur.model, sw) if sw is not None else []  # no [MASK], no [UNK]
        if words:
            w = questions.topic_word(sw, words)  # the question's word, chosen among the same words
            lesson_chart(same_word_figure([w], f"“{w.word}” twice: cosine, layer by layer"),
                         "lesson same word", key="lesson-same-word", large=large)


def view_masking(cur, text, pair, revealed, large) -> None:
    masking_drawing(cur, text, pair, revealed, large)
    masking_widgets()


def masking_drawing(cur, text, pair, revealed, large) -> None:
    """The masking step's chips for this session's draw (no widget: a class's followers share it)."""
    draw = int(st.session_state.get("lesson_draw", 1))
    try:
        v = masking_draw(cur.model, text, pair, seed=cur.seed, draw=draw)
    except bert_core.BertCoreError as e:
        _warn(e)
        return
    st.markdown(chips_html(v.inp.tokens, v.corrupted_tokens, v.kinds), unsafe_allow_html=True)
    st.markdown(legend_html(), unsafe_allow_html=True)
    st.caption(f"Draw {draw} of seed {cur.seed}: {v.n_selected} token(s) selected. Top of each chip: what the "
               "model reads; below: the original where it was changed.")


def masking_widgets() -> None:
    st.button("Draw again", key="lesson_draw_again", on_click=next_draw)


def view_predictions(cur, text, pair, revealed, large) -> None:
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None or not t.predictions:
        return
    if revealed:
        pos = t.mask_positions[0]
        fig = candidates_figure(t.predictions[pos], f"Top 5 at the [MASK] ({pos}; [CLS] is 0)")
        lesson_chart(bars_every_label(fig) if large else fig, "lesson predictions", key="lesson-pred", large=large)
    else:
        st.caption("The model's bars appear with the answer.")


def view_both_sides(cur, text, pair, revealed, large) -> None:
    if not revealed:
        st.caption("Both guesses appear with the answer.")
        return
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None or not t.predictions:
        return
    pos = t.mask_positions[0]
    left = text[: t.offsets[pos][1]] if t.offsets[pos] else text
    t2 = _analysis(cur, left, None, **questions.PREDICTIONS)
    c1, c2 = st.columns(2)
    figs = [(c1, candidates_figure(t.predictions[pos], "Both sides"), "lesson both sides", "lesson-both")]
    if t2 is not None and t2.predictions:
        figs.append((c2, candidates_figure(t2.predictions[t2.mask_positions[0]], "Left side only"),
                     "lesson left only", "lesson-left"))
    top = max(f.layout.xaxis.range[1] for _, f, _, _ in figs)  # one scale: equal bars mean equal probabilities
    for col, fig, name, key in figs:
        with col:
            fig.update_layout(xaxis_range=[0, top])
            lesson_chart(bars_every_label(fig) if large else fig, name, key=key, large=large)


def view_attention(cur, text, pair, revealed, large) -> None:
    t = _analysis(cur, text, pair, **questions.ATTENTION)
    if t is None:
        return
    try:
        layer, head = lesson_attention.linking_head(t)  # the question's head, from the same analysis
    except bert_core.BertCoreError:
        return  # the step's question has said what its sentence needs
    # On a projector a map past 8 tokens has no room for its 18 px numbers in the cells, and colour alone must not
    # carry them (WCAG 1.4.1): the question's row as labelled bars instead.
    if revealed and large and len(t.tokens) > 8:
        q = lesson_attention.query_token(t)
        row = t.attentions[layer, head, q]
        lesson_chart(row_bars(row, t.tokens, f"Layer {layer + 1}, head {head + 1}: from “{t.tokens[q]}” ({q})"),
                     "lesson attention row", key="lesson-attn", large=large)
    elif revealed:
        fig = head_heatmap(t.attentions[layer, head], t.tokens, f"Layer {layer + 1}, head {head + 1}")
        fig.update_layout(height=min(fig.layout.height or 420, 420))
        if large:  # every token a choice names labelled, on both axes
            every_label(fig, 470)
        lesson_chart(fig, "lesson attention", key="lesson-attn", large=large)
    else:
        if large and len(t.tokens) > 8:  # what the reveal draws on a projector (above): the row as bars
            st.caption(f"With the answer: the row of “{t.tokens[lesson_attention.query_token(t)]}” in layer "
                       f"{layer + 1}, head {head + 1}, as bars (its weight on each token).")
        else:
            st.caption(f"The map of layer {layer + 1}, head {head + 1} appears with the answer (row = the token "
                       "that looks, column = the token looked at).")


def view_nsp(cur, text, pair, revealed, large) -> None:
    tok = cur.model.tokenizer
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None:
        return
    st.html(input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True))
    if revealed and t.nsp is not None:
        lesson_chart(nsp_figure(*t.nsp), "lesson nsp", key="lesson-nsp", large=large)


def view_layers(cur, text, pair, revealed, large) -> None:
    if not revealed:
        st.caption("The answer's rank after every layer appears with the answer.")
        return
    if not cur.model.has_mlm:
        return
    lens = _cached(cur, logit_lens, text, pair, top_k=1)
    if lens is None or not lens.mask_positions:
        return
    pos = lens.mask_positions[0]
    lesson_chart(answer_trajectory(lens.final_rank[pos], lens.final_prob[pos], lens.final_token[pos],
                                   f"“{lens.final_token[pos]}” after each layer"),
                 "lesson lens", key="lesson-lens", large=large)


def view_anatomy(cur, text, pair, revealed, large) -> None:
    if not revealed:
        st.caption("The parameter table of this model appears with the answer.")
        return
    m = cur.model
    if st.session_state.get("lesson_large"):
        rows, name = anatomy_rows(questions.bert_large_config(), nsp=True), "BERT-large"
    else:
        rows = anatomy_rows(m.config, mlm=m.has_mlm, nsp=m.has_nsp, pooler=m.model.bert.pooler is not None)
        name = "this model"
    df = pd.DataFrame([r for r in rows if r["parameters"]])
    if name == "BERT-large":  # the reveal above counts the model on screen: say which model this table counts
        total = next(r["parameters"] for r in rows if r["component"] == "total")
        heads = sum(r["parameters"] for r in rows if r["component"].startswith(("MLM head", "NSP head")))
        st.caption(f"Parameters of BERT-large (24 layers × 1,024, 16 heads), not {model_name(m).short} as in the "
                   f"answer, counted from its config: embeddings, layers and pooler {total - heads:,}, with the MLM "
                   f"and NSP heads {total:,}. The paper rounds BERT-large to 340M.")
    else:
        st.caption(f"Parameters of {name}, counted from its config:")
    df = df.assign(share=df["share"].map("{:.1%}".format))
    if large:  # a projector has room for the numbers, not the formulas
        df = df.drop(columns=["formula"]).assign(parameters=df["parameters"].map("{:,}".format))
    _table(df, large)


def view_pretraining(cur, text, pair, revealed, large) -> None:
    ex = example_run()
    if ex is None:
        return
    c = example_config()
    if not revealed:  # the curve starts at the answer
        st.caption(f"With the answer: the pre-training curve of this project's tiny BERT ({c['num_hidden_layers']} "
                   f"layers × {c['hidden_size']}, {ex.parameters / 1e6:.1f}M parameters; BERT-base has 110M), "
                   "trained from random weights.")
        return
    V, mine = example_vocab_size(), cur.model.tokenizer.vocab_size
    lesson_chart(pretraining_start_figure(ex.curves, V, mine), "lesson pretraining", key="lesson-pretrain", large=large)
    st.caption(f"An example, not the model on screen: this project's tiny BERT ({ex.parameters:,} parameters, its "
               f"own vocabulary of V = {V:,} pieces) trained from random weights for {ex.steps:,} steps on WordNet "
               f"and Brown: it starts at ln {V:,}. A fresh model with {model_name(cur.model).possessive} "
               f"vocabulary (V = {mine:,}) would start at ln {mine:,}.")
    if not large:  # a projector has room for the curve, not this note
        st.caption(f"Live: the Training page opens on {CORPUS_CHOICES['farm'].name} ({farm_tokenizer().vocab_size} "
                   "word pieces, five sentence patterns): press Start and its guesses turn right within about "
                   "a minute. Real BERT needed days on billions of words.")


@functools.cache  # a file that ships with the app: read once per process, not on every rerun
def example_config() -> dict:
    """The config of the tiny bundled model, whose pre-training curve is the example."""
    return json.loads((bert_core.BUNDLED_DIR / "config.json").read_text())


def example_vocab_size() -> int:
    """The vocabulary of the tiny bundled model, whose pre-training curve is the example."""
    return example_config()["vocab_size"]


def view_fine_tuning(cur, text, pair, revealed, large) -> None:
    if not revealed:
        st.caption("The shapes of both heads' outputs appear with the answer.")
        return
    shapes = _cached(cur, questions.head_outputs, text)
    if shapes is None:
        return
    T, n_clf, n_tag = shapes
    name = model_name(cur.model)
    st.caption(f"The heads' outputs on {name.long}:")
    _table(pd.DataFrame([
        {"head": "classifier", "reads": f"the paper: [CLS]; {name.short}: {questions.classifier_reads(cur.model)}",
         "outputs": f"({n_clf},)"},
        {"head": "tagger (NER)", "reads": "every token; labelled at each word's first piece",
         "outputs": f"({T}, {n_tag // max(T, 1)})"},
        {"head": "question answering", "reads": "[CLS] Q [SEP] P [SEP]; start and end: a softmax over P",
         "outputs": f"({T}, 2)"},
    ]), large)


MARKS_UP_TO = 14  # tokens: the default sentence (13) keeps its marks; the Try-this (20) is too dense for a mark a cell


def view_bert_vs_gpt(cur, text, pair, revealed, large) -> None:
    layer, head = lesson_attention.attention_layer_head(cur.model)
    r = _cached(cur, mask_comparison, text)  # the BERT vs GPT page's computation
    if r is None:
        return
    # A mark in every cell (✓ may attend, · masked), not colour alone, up to MARKS_UP_TO tokens; past that the
    # marks make a hatch too fine to read on a projector, and the caption's rule in words carries the mask.
    marks = len(r.tokens) <= MARKS_UP_TO
    c1, c2 = st.columns(2)
    for col, z, name in ((c1, r.attn_bidirectional[layer, head], "BERT: every token"),
                         (c2, r.attn_causal[layer, head], "GPT: only j ≤ i")):
        with col:
            fig = mask_heatmap(z, r.tokens, name)
            if marks:
                fig.update_traces(text=np.where(np.asarray(z) > 0, "✓", "·"), texttemplate="%{text}")
            if large:  # every row labelled; the columns are the same tokens (no room for 18 px labels)
                every_label(fig, 352, keys=False)
            lesson_chart(fig, f"lesson mask {name[:4]}", key=f"lesson-mask-{name[:4]}", large=large)
    st.caption(f"Layer {layer + 1}, head {head + 1} of {model_name(cur.model).short}, same weights, two masks: above "
               "GPT's diagonal every weight is exactly 0 (token i uses only the tokens j ≤ i)."
               + (" ✓ may attend, · masked." if marks else " The empty triangle is GPT's mask."))


def ask(cur, step: Step, text: str, pair: str | None):
    """The step's question for this text and model; None after a message saying what to change.

    Its model work goes through the shared cache, with the same arguments the step's view uses, so the
    question and the view share one computation.
    """
    fn, args, kwargs = question_call(step, text, pair, cur.seed)
    st.session_state[QUESTION_ERROR] = None
    st.session_state[QUESTION_PAIR] = pair
    try:
        return fn(cur.model, *args, run=functools.partial(model_cached, cur), **kwargs)
    except bert_core.BertCoreError as e:
        st.session_state[QUESTION_ERROR] = str(e)
        st.info(f"This step's question needs another sentence: {in_the_box(str(e), pair)}.")
        return None


def view_knockout(cur, text, pair, revealed, large) -> None:
    """Before the answer: which head matters most (the map); after: the guesses with and without it."""
    try:
        imp = model_cached(cur, bert_core.head_importance, text, pair,
                           layers=lesson_heads.last_layer(cur.model))  # (L, nh), the question's own
        layer, head = lesson_heads.top_head(imp)
        ko = model_cached(cur, bert_core.knock_out, text, pair, ((layer, head),))
    except bert_core.BertCoreError:
        return  # the step's question has said what to change
    pos = min(ko.guesses)
    if not revealed:
        lesson_chart(hidden_importance_figure(imp, (layer, head), ko.top_full[pos]), "lesson head importance",
                     key="lesson-heads-imp", large=large)
        st.caption(f"Each cell of the last layer: how much log p(guess) falls when that head alone is knocked out, "
                   f"relative to the most important head (red: it helps; the Heads & patching page ranks every "
                   f"layer). The framed cell is layer {layer + 1}, head {head + 1}. How much the guess loses "
                   "appears with the answer.")
        return
    tokens, p_full, p_without = ko.guesses[pos]
    fig = without_head_figure(tokens, p_full, p_without, f"without layer {layer + 1}, head {head + 1}")
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                      margin=dict(b=110))  # under the bars' labels, not over the title
    lesson_chart(fig, "lesson knock out", key="lesson-knockout", large=large)


def lesson_chart(fig, name: str, key: str, large: bool) -> None:
    """A step's chart, noted for the handout; on a projector every text in it at least 18 px, in dark ink."""
    handout_record.keep(st.session_state, fig, key, describe=_described)
    shared = bool(st.session_state.get(SHARED_DRAWING))
    chart(projector(fig) if large else fig, name, key=key, data=False)
    if shared:  # a class's shared drawing, replayed for every student: its Data expander cannot be a widget
        chart_data_static(fig, name)
    else:  # on a projector too, its numbers one keystroke away: the Data expander, collapsed
        chart_data(fig, name, key)


def _described(fig) -> tuple[str, dict]:
    """The chart's text alternative and its numbers, for the handout (as ui.widgets.chart gives them on the page)."""
    return alt_text(fig), figure_table(fig)


SHARED_DRAWING = "lesson_shared_drawing"  # set while live_class.shared draws the view every follower replays


def _with_model_note(view: Callable) -> Callable:
    """A view of the model's guesses, under the line that names the model."""
    @functools.wraps(view)
    def noted(cur, text, pair, revealed, large) -> None:
        model_note(cur, large)
        view(cur, text, pair, revealed, large)
    return noted


VIEWS: dict[str, Callable] = {  # step key -> its view
    "tokens": view_tokens,
    "embeddings": view_embeddings,
    "masking": view_masking,
    "predictions": view_predictions,
    "both-sides": view_both_sides,
    "attention": view_attention,
    "nsp": view_nsp,
    "layers": view_layers,
    "knockout": view_knockout,
    "anatomy": view_anatomy,
    "pretraining": view_pretraining,
    "fine-tuning": view_fine_tuning,
    "bert-vs-gpt": view_bert_vs_gpt,
}
GUESS_STEPS = {s.key for s in STEPS if s.guesses}  # the slides of the model's guesses: each names the model
VIEWS.update({key: _with_model_note(VIEWS[key]) for key in GUESS_STEPS})
