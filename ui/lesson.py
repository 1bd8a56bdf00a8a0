"""The Lesson's steps: what each explains, the sentence it starts from, its live view and its question.

A step's view draws with the same figure builders the full pages use, on numbers `bert_core` computes
for the step's own sentence (a teacher can change it; the change travels in the URL as t<k> / b<k>).
The question's answer comes from `bert_core.lesson`, computed when the step is shown.
Callbacks live here, not in the page (see ui/callbacks.py for why).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.attention import head_heatmap
from bert_core.figures.embeddings import norms_figure
from bert_core.figures.layers import answer_trajectory, same_word_figure
from bert_core.figures.masking import chips_html, legend_html
from bert_core.figures.predictions import candidates_figure, nsp_figure
from bert_core.figures.training import loss_figure
from bert_core.inspect import input_tables
from bert_core.inspect.anatomy import anatomy_rows
from bert_core.inspect.masking_view import masking_draw, md_literal
from bert_core.inspect.objectives_view import mask_comparison
from bert_core.inspect.residual import logit_lens, same_word
from bert_core.lesson import heads as lesson_heads
from bert_core.lesson import questions
from bert_core.lesson.naming import model_name
from bert_core.runs.settings import CORPUS_CHOICES, example_run
from bert_core.train.toy import farm_tokenizer
from ui.cache import ByteLRU
from ui.lesson_heads import view_knockout
from ui.state import FELL_BACK, model_cached
from ui.widgets import lesson_chart as _chart
from ui.widgets import presenting

TICK, UNTICKED = ":material/check_box:", ":material/check_box_outline_blank:"  # Streamlit's own icon font
# The course's checklist; each item is ticked once every step behind it has been visited.
CHECKLIST = {
    "the MLM masking strategy (15%: [MASK], random, kept)": ("masking", "predictions", "both-sides"),
    "next-sentence prediction (NSP)": ("nsp",),
    "token, segment and position embeddings": ("embeddings",),
    "the role of [CLS]": ("nsp", "fine-tuning"),
    "fine-tuning methods: classification, NER, QA": ("fine-tuning",),
    "how BERT differs from GPT": ("both-sides", "bert-vs-gpt"),
    "which heads a guess needs (knocking one out)": ("knockout",),
}


@dataclass(frozen=True)
class Step:
    """One screen of the lesson."""

    key: str
    title: str
    explain: str  # markdown, our own words (no user text)
    text: str  # the sentence the step starts from
    pair: str | None  # its sentence B, if the step reads a pair
    question: str  # a key of bert_core.lesson.QUESTIONS
    try_label: str  # the one-click change
    try_text: str
    try_pair: str | None
    page: str  # url_path of the full page
    page_title: str
    view: Callable  # (cur, text, pair, revealed) -> None: the live view
    formula: str | None = None
    here: str = ""  # what the slide shows of the model on screen: {model} / {names} become its name (`explain`)


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


def plain(s: str) -> str:
    """User-derived text for st.markdown, shown literally: markdown escaped, < and > as entities."""
    return md_literal(s).replace("\\<", "&lt;").replace("\\>", "&gt;")


# ------------------------------------------------------------------------------------------ views
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


def _table(df: pd.DataFrame) -> None:
    """A step's table, whole: no scrolling inside it (an HTML table on a projector, so its type is large)."""
    if presenting():
        st.table(df, hide_index=True)  # hide_index: Streamlit 1.67's st.table
    else:
        st.dataframe(df, hide_index=True, height=35 * (len(df) + 1) + 3)  # every row shown, no inner scroll


def view_tokens(cur, text, pair, revealed) -> None:
    tok = cur.model.tokenizer
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None:
        return
    if revealed:
        st.html(input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True))
    else:
        st.caption("The pieces, with the special tokens, appear with the answer.")


def view_embeddings(cur, text, pair, revealed) -> None:
    t = _analysis(cur, text, pair, hidden_states=False, attentions=False)
    if t is None:
        return
    if not (revealed and presenting()):  # a projector has room for one chart
        fig = norms_figure(input_tables.token_norms(t.embeddings), input_tables.token_labels(t.tokens),
                           input_tables.EMBEDDING_TITLES, t.token_type_ids)
        _chart(fig.update_layout(height=380), "lesson embeddings", key="lesson-emb")
    if revealed:
        sw = _cached(cur, same_word, text, pair)
        if sw is not None and sw.words:
            w = questions.topic_word(sw)  # the question's word
            _chart(same_word_figure([w], f"“{w.word}” twice: cosine, layer by layer"),
                  "lesson same word", key="lesson-same-word")


def view_masking(cur, text, pair, revealed) -> None:
    masking_drawing(cur, text, pair, revealed)
    masking_widgets()


def masking_drawing(cur, text, pair, revealed) -> None:
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


def view_predictions(cur, text, pair, revealed) -> None:
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None or not t.predictions:
        return
    if revealed:
        pos = t.mask_positions[0]
        _chart(candidates_figure(t.predictions[pos], f"Top 5 at the [MASK] (position {pos}; [CLS] is 0)"),
              "lesson predictions", key="lesson-pred")
    else:
        st.caption("The model's bars appear with the answer.")


def view_both_sides(cur, text, pair, revealed) -> None:
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
            _chart(fig.update_layout(xaxis_range=[0, top]), name, key=key)


def view_attention(cur, text, pair, revealed) -> None:
    t = _analysis(cur, text, pair, **questions.ATTENTION)
    if t is None:
        return
    layer, head = questions.linking_head(t)  # the question's head, from the same analysis
    if revealed:
        fig = head_heatmap(t.attentions[layer, head], t.tokens, f"Layer {layer + 1}, head {head + 1}")
        fig.update_layout(height=min(fig.layout.height or 420, 420))
        if presenting() and len(t.tokens) > 8:  # 18 px numbers do not fit in the cells: hovering shows them
            fig.update_traces(texttemplate=None)
        _chart(fig, "lesson attention", key="lesson-attn")
    else:
        st.caption(f"The map of layer {layer + 1}, head {head + 1} appears with the answer (row = the token that "
                   "looks, column = the token looked at).")


def view_nsp(cur, text, pair, revealed) -> None:
    tok = cur.model.tokenizer
    t = _analysis(cur, text, pair, **questions.PREDICTIONS)
    if t is None:
        return
    st.html(input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id, as_read=True))
    if revealed and t.nsp is not None:
        _chart(nsp_figure(*t.nsp), "lesson nsp", key="lesson-nsp")


def view_layers(cur, text, pair, revealed) -> None:
    if not revealed:
        st.caption("The answer's rank after every layer appears with the answer.")
        return
    if not cur.model.has_mlm:
        return
    lens = _cached(cur, logit_lens, text, pair, top_k=1)
    if lens is None or not lens.mask_positions:
        return
    pos = lens.mask_positions[0]
    _chart(answer_trajectory(lens.final_rank[pos], lens.final_prob[pos], lens.final_token[pos],
                             f"“{lens.final_token[pos]}” after each layer"), "lesson lens", key="lesson-lens")


def view_anatomy(cur, text, pair, revealed) -> None:
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
    st.caption(f"Parameters of {name}, counted from its config:")
    df = df.assign(share=df["share"].map("{:.1%}".format))
    if presenting():  # a projector has room for the numbers, not the formulas
        df = df.drop(columns=["formula"]).assign(parameters=df["parameters"].map("{:,}".format))
    _table(df)


def view_pretraining(cur, text, pair, revealed) -> None:
    if not revealed:  # the curve starts at the answer
        st.caption("A real pre-training curve appears with the answer.")
        return
    ex = example_run()
    if ex is None:
        return
    fig = loss_figure(ex.curves, height=300)
    V, mine = example_vocab_size(), cur.model.tokenizer.vocab_size
    fig.add_hline(y=math.log(V), line_dash="dash", annotation_position="bottom right",
                  annotation_text=f"ln {V:,} = {math.log(V):.2f}: the example's start (its V = {V:,})")
    if mine != V:  # the question's V is the model on screen's: its line is labelled with its own V
        fig.add_hline(y=math.log(mine), line_dash="dot", annotation_position="top left",
                      annotation_text=f"ln {mine:,} = {math.log(mine):.2f}: a fresh model with V = {mine:,}")
    _chart(fig, "lesson pretraining", key="lesson-pretrain")
    st.caption(f"An example: the tiny bundled model ({ex.parameters:,} parameters, its own vocabulary of V = {V:,} "
               f"pieces) trained from random weights for {ex.steps:,} steps on WordNet and Brown: it starts at "
               f"ln {V:,}. A fresh model with {model_name(cur.model).possessive} vocabulary (V = {mine:,}) would "
               f"start at ln {mine:,}.")
    if not presenting():  # a projector has room for the curve, not this note
        st.caption(f"Live: the Training page opens on {CORPUS_CHOICES['farm'].name} ({farm_tokenizer().vocab_size} "
                   "word pieces, five sentence patterns): press Start and its guesses turn right within about "
                   "a minute. Real BERT needed days on billions of words.")


@functools.cache  # a file that ships with the app: read once per process, not on every rerun
def example_vocab_size() -> int:
    """The vocabulary of the tiny bundled model, whose pre-training curve is the example."""
    return json.loads((bert_core.BUNDLED_DIR / "config.json").read_text())["vocab_size"]


def view_fine_tuning(cur, text, pair, revealed) -> None:
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
    ]))


def view_bert_vs_gpt(cur, text, pair, revealed) -> None:
    layer, head = questions.attention_layer_head(cur.model)
    r = _cached(cur, mask_comparison, text)  # the BERT vs GPT page's computation
    if r is None:
        return
    c1, c2 = st.columns(2)
    for col, z, name in ((c1, r.attn_bidirectional[layer, head], "BERT: every token"),
                         (c2, r.attn_causal[layer, head], "GPT: only j ≤ i")):
        # zmax 0.3: the heavy [CLS] column saturates, so the empty triangle above the diagonal stands out.
        fig = head_heatmap(z, r.tokens, name, zmax=0.3)
        fig.update_traces(showscale=False, texttemplate=None)
        fig.update_layout(height=360, margin=dict(l=10, r=10, t=60, b=10), xaxis_title=None, yaxis_title=None)
        with col:
            _chart(fig, f"lesson mask {name[:4]}", key=f"lesson-mask-{name[:4]}")
    st.caption(f"Layer {layer + 1}, head {head + 1} of {model_name(cur.model).short}, once with each mask (the same "
               "weights): under GPT's causal mask every weight above the diagonal is exactly 0, so token i can use "
               "only the tokens before it.")


# ------------------------------------------------------------------------------------------ steps
STEPS: list[Step] = [
    Step("tokens", "Text becomes tokens",
         "BERT reads pieces from a fixed WordPiece vocabulary (about 30,000; 30,522 in the uncased release), not "
         "letters or whole words. A common word is one piece; a rarer one is cut, longest match first, into "
         "several (## marks a piece inside a word). The uncased models lower-case the text first. `[CLS]` opens "
         "every input; `[SEP]` closes each sentence.",
         "The unaffordable rent upset everyone.", None, "pieces",
         "Try a made-up word", "The flibbertigibbet zorblaxed everyone.", None,
         "tokenization", "Tokenization", view_tokens,
         here="The pieces are {names} tokenizer's."),
    Step("embeddings", "Three embeddings make the input",
         "Each token's input vector is the sum of three learned rows, the piece's **token** embedding, its "
         "**segment** (A or B) and its **position** (0, 1, 2, …), then LayerNorm (in the released code). The "
         "same word twice shares its token row: at the input only position and segment tell the two apart. "
         "The layers mix in the context: a word in two senses should end further apart than in one sense.",
         "I sat on the bank of the river.", "Then I went to the bank to get money.", "input_cosine",
         "Put “bank” in the same sense twice", "I went to the bank to get money.",
         "Then I went back to the bank to pay.", "embeddings", "Embeddings", view_embeddings,
         r"x_t = \mathrm{LayerNorm}(E_{tok}[id_t] + E_{seg}[s_t] + E_{pos}[t])",
         here="The cosines are {names}, for the repeated word the pair is about."),
    Step("masking", "Masked language modelling: choose 15%, then corrupt them",
         "To pre-train, BERT chooses 15% of the tokens at random (this app: each ordinary token with p = 15%) "
         "and takes the loss at those only. A chosen token is not always replaced by `[MASK]`: some become a "
         "**random** token, some stay **unchanged**. Below, one draw.",
         "She wrote the letter to her mother on a rainy Sunday afternoon.", None, "kept_share",
         "A longer sentence", "On a rainy Sunday afternoon she finally wrote the long letter to her old mother "
         "and posted it before the shop closed.", None, "masking", "Masking", view_masking,
         r"\mathcal{L}_{MLM} = -\frac{1}{|S|}\sum_{i \in S} \log p(x_i \mid \tilde{x})"),
    Step("predictions", "Filling a [MASK]",
         "At a `[MASK]` the final vector h goes through the MLM head and a softmax over the whole vocabulary: "
         "one probability for every piece. In the released code the head is a dense layer, GELU and LayerNorm, "
         "and its output matrix is the token-embedding matrix itself (tied).",
         "She [MASK] the letter to her mother.", None, "top_guess",
         "Mask the subject", "[MASK] wrote the letter to her mother.", None,
         "predictions", "Predictions", view_predictions,
         r"p = \mathrm{softmax}\big(E_{tok}\,\mathrm{LN}(\mathrm{gelu}(W h + b)) + b_v\big)",
         here="The guesses are {names}."),
    Step("both-sides", "BERT reads both sides",
         "BERT is **bidirectional**: a `[MASK]` is guessed from the words before it *and* after it. "
         "A left-to-right model (GPT) only has the words before. Cut the sentence after the gap and see "
         "whether the guess survives.",
         "She put the [MASK] in the oven to bake.", None, "right_context",
         "Change the words after the gap", "She put the [MASK] in the garage.", None,
         "predictions", "Predictions", view_both_sides,
         here="The guesses are {names}, with the whole sentence and with the words up to the gap."),
    Step("attention", "Attention: who looks at whom",
         "In each layer every token builds a query, a key and a value; a head's weights (softmax of query · key) "
         "say how much of each token's value a token takes in. Each head does this with its own smaller query, "
         "key and value (BERT-base: 12 heads of 64 in 768); their outputs are joined and projected back.",
         "She gave the letter to her mother.", None, "attention_target",
         "A longer sentence", "After dinner she finally gave the long letter to her grateful mother.", None,
         "attention", "Attention", view_attention,
         r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
         here="The map is one of {names} heads."),
    Step("nsp", "Next-sentence prediction and [CLS]",
         "BERT was also pre-trained on sentence pairs: half the time B follows A, half the time B is a random "
         "sentence from the corpus. The final `[CLS]` vector (through the pooler, in the released code) feeds a "
         "two-way classifier, IsNext or NotNext: the paper's model reached 97-98% on it. Without fine-tuning, "
         "the paper notes, that vector is not a meaningful sentence representation.",
         "She opened the door of the house.", "The room inside was dark and cold.", "next_sentence",
         "An unrelated sentence B", "She opened the door of the house.",
         "Penguins cannot fly but they swim very well.", "predictions", "Predictions", view_nsp),
    Step("layers", "Layer by layer",
         "Each layer updates every token's vector twice: it adds the attention's output and normalises "
         "(LayerNorm), then adds the feed-forward network's output and normalises again. BERT puts each "
         "LayerNorm after its residual addition (post-LN). Reading the vector after each layer with the MLM "
         "head (the *logit lens*) shows how far the answer has come.",
         "She [MASK] the letter to her mother.", None, "lens_layer",
         "Another blank", "He drove the [MASK] to work.", None,
         "layers", "Layers", view_layers,
         r"h' = \mathrm{LN}\big(h + \mathrm{Attn}(h)\big),\quad h_{out} = \mathrm{LN}\big(h' + "
         r"\mathrm{FFN}(h')\big)",
         here="The ranks are read from {names} layers."),
    Step("knockout", "Knock out one head",
         "A layer's heads work side by side; their outputs are joined, projected and added to every token's "
         "vector. Does a `[MASK]` guess need a given head? **Knock it out** (its output set to zero), run again, "
         "compare: head by head, this ranks the last layer's heads by what the guess loses.",
         "She [MASK] the letter to her mother.", None, "knockout_head",
         "Another blank", "I drank a cup of [MASK] this morning.", None,
         "heads", "Heads & patching", view_knockout,
         r"\mathrm{importance}(l,h) = \log p(y \mid x) - \log p\big(y \mid x;\ c^{(l)}_h = 0\big)",
         here="The heads are {names} last layer's."),
    Step("anatomy", "How big is BERT?",
         "The paper's BERT-base has 12 layers, 768-wide vectors and 12 heads (110M parameters); BERT-large 24 "
         "layers, 1,024 wide and 16 heads (340M). Every number is a learned parameter: the embedding tables, "
         "four attention matrices (query, key, value, output) and a two-layer feed-forward network (3,072 wide "
         "in BERT-base) per layer.",
         "She [MASK] the letter to her mother.", None, "bert_base_size",
         "Count BERT-large instead of this model", "", None, "anatomy", "Model anatomy", view_anatomy,
         here="On screen: {model}."),
    Step("pretraining", "Pre-training starts from nothing",
         "Pre-training fits all those parameters to the MLM and NSP losses: the paper's corpus was BooksCorpus "
         "(800M words) and English Wikipedia (2,500M words), 1,000,000 steps of 256 sequences. A model with "
         "random weights spreads its guess over the whole vocabulary; the loss then falls as it learns.",
         "The cat sat on the mat.", None, "initial_loss",
         "Another sentence", "Children like to play in the park after school.", None,
         "training", "Training", view_pretraining,
         r"\mathcal{L} = -\log p_\theta(x_i \mid \tilde{x}) \text{ at each masked } i",  # not its value: the answer
         here="The question's V is {names} vocabulary."),
    Step("fine-tuning", "Fine-tuning: classification, tagging, question answering",
         "Fine-tuning adds a small head and trains **every weight**, the encoder's too, on labelled examples. A "
         "**classifier** reads one vector per text (the paper: the final `[CLS]`); a **tagger** scores every "
         "token (the paper labels each word at its first piece); **question answering** learns a start and an "
         "end vector: their dot products with the passage's tokens, softmaxed over the passage, pick where the "
         "answer starts and ends.",
         "Ada Lovelace worked with Charles Babbage in London.", None, "head_sizes",
         "A longer sentence", "In 1843 Ada Lovelace published the first computer program, written for "
         "Charles Babbage's engine in London.", None, "finetuning", "Fine-tuning", view_fine_tuning),
    Step("bert-vs-gpt", "BERT versus GPT: one mask and one loss",
         "BERT is an **encoder**: every token attends to every other. GPT (Radford et al. 2018) is a "
         "**decoder**: a **causal mask** lets token i see only tokens up to i, and it is trained to predict the "
         "next token, so it can generate text left to right. BERT's loss is taken at the 15% of tokens it "
         "masks; GPT's at every next token.",
         "The cat sat on the mat because it was warm.", None, "learning_signal",
         "A longer sentence", "After a long day the old cat sat on the warm mat by the fire and slept.", None,
         "bert-vs-gpt", "BERT vs GPT", view_bert_vs_gpt,
         r"\text{GPT: } \mathcal{L} = -\sum_{t} \log p(x_{t+1} \mid x_{\le t})"),
]
KEYS = [s.key for s in STEPS]


# ------------------------------------------------------------------------------------- the question
# The step inputs each question reads, besides the model.
QUESTION_INPUTS = {
    "pieces": ("text",), "input_cosine": ("text", "pair"), "kept_share": ("text", "pair", "seed"),
    "top_guess": ("text", "pair"), "right_context": ("text", "pair"), "attention_target": ("text", "pair"),
    "next_sentence": ("text", "pair"), "lens_layer": ("text", "pair"), "bert_base_size": (),
    "initial_loss": ("text", "seed"), "head_sizes": ("text", "seed"), "learning_signal": ("text", "seed"),
    "knockout_head": ("text", "pair"),
}


def question_call(step: Step, text: str, pair: str | None, seed: int) -> tuple[Callable, tuple, dict]:
    """(function, args, kwargs) that compute the step's question from a model: fn(model, *args, **kwargs)."""
    names = QUESTION_INPUTS[step.question]
    values = {"text": text, "pair": pair}
    args = tuple(values[n] for n in names if n != "seed")
    return questions.QUESTIONS[step.question], args, ({"seed": seed} if "seed" in names else {})


QUESTION_ERROR = "_lesson_question_error"  # this run's question message, so the view does not repeat it
QUESTION_PAIR = "_lesson_question_pair"  # this run's sentence B (None: a single-sentence step), for messages


def explain(step: Step, m) -> str:
    """The step's text (the paper's BERT), then what the slide shows of the model on screen, named."""
    here = step.here if step.question != "next_sentence" or m.has_nsp else \
        "{model} has no NSP head: its question is about its segments."
    if not here:
        return step.explain  # the question names the model
    name = model_name(m)
    return f"{step.explain}\n\n*{questions.cap(here.format(model=name.long, names=name.possessive))}*"


def question_token(model_key: str, k: int, text: str, pair: str | None, q) -> str:
    """What makes a Lesson question one question: model, step, sentence, pair, prompt and choices ("" for none).

    Any change of sentence or pair (step 7's "Try this" keeps the prompt and the choices) is a new question:
    its guess, its class vote, its split and its reveal start empty."""
    if q is None:
        return ""
    return "\x1f".join((model_key, str(k), text, "\x00" if pair is None else pair, q.prompt, *q.choices))


def answer_label(q, capital: bool = False) -> str:
    """"the model's answer" only for what the model computed; "the tokenizer's answer", or "the answer" for a
    rule, a count or a shape (capital: as a sentence's first words)."""
    label = f"{q.answered_by}'s answer" if q.answered_by else "the answer"
    return f"{label[0].upper()}{label[1:]}" if capital else label


def in_the_box(message: str, pair: str | None) -> str:
    """A message about the input, naming the box on the step (not the sidebar); "sentence A" only for a pair."""
    box, box_b = "the box “This step's sentence”", "the box “Sentence B”"
    message = re.sub(r"the text is empty: type a sentence( in the sidebar)?", f"sentence A is empty: type one in {box}",
                     message)
    message = message.replace("sentence A is empty: type some text", f"sentence A is empty: type one in {box}")
    message = message.replace("sentence B is empty: type some text", f"sentence B is empty: type one in {box_b}")
    message = message.replace("in the sidebar", f"in {box}")
    return message if pair is not None else message.replace("sentence A", "the sentence")


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


# ------------------------------------------------------------------------------------------ state
def text_key(i: int) -> str:
    return f"lesson_text_{i}"


def pair_key(i: int) -> str:
    return f"lesson_pair_{i}"


TEXTS_READY = "lesson_texts_ready"


def init_texts() -> None:
    """Each step's sentence from the URL (t<k>, b<k>; 1-based) or the lesson's own, once per session."""
    q, state = st.query_params, st.session_state
    if state.get(TEXTS_READY):  # 15 look-ups of session state in every run (a class's pushed step: 2% of it)
        return
    for i, s in enumerate(STEPS, start=1):  # the URL read only for a key not set yet
        if text_key(i) not in state:
            state[text_key(i)] = q.get(f"t{i}", s.text)[: bert_core.MAX_TEXT_CHARS]
        if s.pair is not None and pair_key(i) not in state:
            state[pair_key(i)] = q.get(f"b{i}", s.pair)[: bert_core.MAX_TEXT_CHARS]
    state[TEXTS_READY] = True


def texts_in_url() -> None:
    """Write every changed sentence into the URL (and drop the unchanged ones), so one link shares them."""
    shown = st.query_params.to_dict()  # read once: most steps' sentences are not in the URL
    for i, s in enumerate(STEPS, start=1):
        for k, key, default in ((f"t{i}", text_key(i), s.text), (f"b{i}", pair_key(i), s.pair)):
            v = st.session_state.get(key)
            if default is None or v is None or v == default:
                if k in shown:
                    st.query_params.pop(k, None)
            elif shown.get(k) != v[:2000]:
                st.query_params[k] = v[:2000]


PAGES_WITHOUT_TEXT = ("anatomy", "training", "finetuning")  # full pages that do not read the step's sentence


def page_view(cur, step: Step, text: str, pair: str | None) -> dict:
    """What the step's full page should open on besides the sentence: the layer and head the slide showed,
    1-based as every page shows them (?layer=4&head=1 is layer 4, head 1), or the NSP section."""
    m, run = cur.model, functools.partial(model_cached, cur)
    try:
        if step.question == "attention_target":
            layer, head = questions.attention_head(m, text, pair, run=run)
        elif step.question == "knockout_head":
            layer, head = lesson_heads.top_head(run(bert_core.head_importance, text, pair,
                                                    layers=lesson_heads.last_layer(m)))
        elif step.question == "learning_signal":
            layer, head = questions.attention_layer_head(m)
        elif step.question == "next_sentence":
            return {"section": "nsp"}
        else:
            return {}
    except bert_core.BertCoreError:
        return {}  # the step has said what its sentence needs
    return {"layer": layer + 1, "head": head + 1}


def link_markdown(cur, step: Step, text: str, pair: str | None, model_param: str | None) -> str:
    """"[Open the full Attention page at layer 1, head 3 with this sentence ↗](/attention?...)"."""
    view = page_view(cur, step, text, pair)
    where = f" at layer {view['layer']}, head {view['head']}" if "layer" in view else ""
    if step.page in PAGES_WITHOUT_TEXT:
        return f"[Open the full {step.page_title} page ↗]({full_page_link(step, None, None, model_param)})"
    section = " at its next-sentence section" if view.get("section") == "nsp" else ""
    return (f"[Open the full {step.page_title} page{where}{section} with this sentence ↗]"
            f"({full_page_link(step, text, pair, model_param, view)})")


def built_truth(step: Step, text: str, pair: str | None) -> str | None:
    """For the NSP step, what the pair on screen really is when the lesson built it: its own pair (B follows A)
    or its "Try this" pair (B from elsewhere). None for a pair a teacher typed: nobody knows its truth here."""
    if step.question != "next_sentence" or pair is None:
        return None
    if (text, pair) == (step.text, step.pair):
        return "IsNext (B is the sentence that follows A)."
    if (text, pair) == (step.try_text, step.try_pair):
        return "NotNext (B was taken from somewhere else)."
    return None


def full_page_link(step: Step, text: str | None, pair: str | None, model_param: str | None,
                   view: dict | None = None) -> str:
    """A link that opens the step's full page on the same sentence (and model, and layer and head, or section)."""
    q = {"text": text[:2000]} if text is not None else {}
    if pair:
        q["pair"] = pair[:2000]
    if model_param:
        q["model"] = model_param
    q.update(view or {})
    return f"/{step.page}?{urllib.parse.urlencode(q)}"


# -------------------------------------------------------------------------------------- callbacks
def go(step: int) -> None:
    """Back / Next: move to step `step` (1-based)."""
    st.session_state["lesson_step"] = min(max(int(step), 1), len(STEPS))


def move(delta: int) -> None:
    go(int(st.session_state.get("lesson_step", 1)) + delta)


def step_from_url(v) -> int:
    """?step=k (1-based) as a step number, 1 when missing or not a number."""
    try:
        return min(max(int(str(v)), 1), len(STEPS))
    except (TypeError, ValueError):
        return 1


def goto_picked() -> None:
    """The "Go to step" box."""
    go(st.session_state["lesson_goto"])


def _widget(key: str) -> str:
    return f"w_{key}"


def _put_text(i: int, text: str, pair: str | None) -> None:
    """Set step i's sentence (and pair): the stored value and its input box."""
    for key, v in ((text_key(i), text), (pair_key(i), pair)):
        if v is not None:
            st.session_state[key] = v
            st.session_state[_widget(key)] = v


def try_this(i: int) -> None:
    """The step's one-click change: its alternative sentence (and pair)."""
    s = STEPS[i - 1]
    _put_text(i, s.try_text, s.try_pair if s.pair is not None else None)


def restore(i: int) -> None:
    """Back to the lesson's own sentence for step i."""
    s = STEPS[i - 1]
    _put_text(i, s.text, s.pair)


def keep_text(key: str) -> None:
    """An edit in a step's input box becomes the step's sentence."""
    st.session_state[key] = st.session_state[_widget(key)][: bert_core.MAX_TEXT_CHARS]


def sentence_ui(i: int, s: Step) -> None:
    """Step i's sentence (and sentence B) as input boxes, its one-click change, and a way back."""
    keys = [text_key(i)] + ([pair_key(i)] if s.pair is not None else [])
    for key, label in zip(keys, ("This step's sentence", "Sentence B")):
        st.session_state[_widget(key)] = st.session_state[key]  # the box shows the stored sentence
        st.text_input(label, key=_widget(key), on_change=keep_text, args=(key,),
                      max_chars=bert_core.MAX_TEXT_CHARS,
                      help="Change it and the step recomputes; your sentences go into the link, so a teacher "
                           "can prepare a lesson once and share it.")
    c1, c2 = st.columns(2)
    if s.try_text:
        c1.button(f"Try this: {s.try_label}", key="lesson_try", on_click=try_this, args=(i,), width="stretch")
    else:  # a step whose change is a setting, not a sentence (the anatomy table: this model or BERT-large)
        c1.toggle(f"Try this: {s.try_label}", key="lesson_large")
    c2.button("Back to the lesson's sentence", key="lesson_restore", on_click=restore, args=(i,), width="stretch",
              disabled=all(st.session_state[key] == default for key, default in zip(keys, (s.text, s.pair))))


def reveal(token: str, step_key: str, guess_key: str, answer: int) -> None:
    """Reveal the answer of the question `token`, and count the guess (the first one for this step)."""
    st.session_state.setdefault("lesson_revealed", set()).add(token)
    guess = st.session_state.get(guess_key)
    if guess is not None:
        st.session_state.setdefault("lesson_answers", {})[step_key] = guess == answer


def keep_guess(guess_key: str, token: str) -> None:
    """A guess outlives its widget: back on the step (← then →), the class's guess is still there."""
    st.session_state.setdefault("lesson_guesses", {})[token] = st.session_state.get(guess_key)


def kept_guess(token: str) -> int | None:
    guess = st.session_state.get("lesson_guesses", {}).get(token)
    return guess if isinstance(guess, int) else None  # a radio passes on a value none of its options has (forged)


def next_draw() -> None:
    st.session_state["lesson_draw"] = int(st.session_state.get("lesson_draw", 1)) + 1


def toggle_present() -> None:
    """Presenter mode on or off, kept in the URL (?present=1)."""
    if st.session_state.get("lesson_present"):
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)


def more_keys(k: int, n: int, reveal_args: tuple | None, n_choices: int = 0) -> None:
    """Presenter mode's second keys (Page Down / Page Up, as clickers send, and Enter), on buttons kept out of sight;
    with `n_choices` (and a guess still open), the number keys 1-4 pick the guess.

    Each is a Streamlit button with its own shortcut: Streamlit listens on the whole document, so a key works
    whatever was clicked last (a guess, a chart), except while typing in a text box.
    """
    with st.container(key="lesson_keys"):  # hidden by PRESENTER_CSS (.st-key-lesson_keys)
        st.button("Next", key="lesson_next_pd", disabled=k == n, on_click=go, args=(k + 1,), shortcut="PageDown")
        st.button("Back", key="lesson_back_pu", disabled=k == 1, on_click=go, args=(k - 1,), shortcut="PageUp")
        if reveal_args is not None:
            st.button("Reveal", key="lesson_reveal_enter", on_click=reveal, args=reveal_args, shortcut="Enter")
            token, _, guess_key, _ = reveal_args
            for i in range(min(n_choices, 4)):
                st.button(f"Guess {i + 1}", key=f"lesson_pick_{i + 1}", on_click=pick, args=(guess_key, token, i),
                          shortcut=str(i + 1))


def pick(guess_key: str, token: str, i: int) -> None:
    """A number key: choice i (0-based) becomes the guess, as a click on it would."""
    st.session_state[guess_key] = i
    keep_guess(guess_key, token)


def model_summary(cur) -> str:
    """"6 layers × 384 wide, 12 heads, 22.9M parameters": the model the slides are computed on."""
    c = cur.model.config
    n = sum(p.numel() for p in cur.model.model.parameters())
    size = f"{n / 1e6:.1f}M" if n < 1e9 else f"{n / 1e9:.2f}B"
    return f"{c.num_hidden_layers} layers × {c.hidden_size} wide, {c.num_attention_heads} heads, {size} parameters"


def presenter_corner(cur) -> None:
    """Presenter mode's bottom-right corner: the model on screen, and the way out."""
    with st.container(key="lesson_corner"):  # placed by PRESENTER_CSS
        st.markdown(f"Model: **{plain(cur.model_key.removeprefix('bundled-').replace('minilm', 'MiniLM'))}**, "
                    f"{model_summary(cur)}")
        if failed := st.session_state.get(FELL_BACK):
            st.markdown(f":red[Could not load **{plain(failed)}**: these slides are computed on the model above.]")
        st.button("Exit presenter mode", key="lesson_exit", on_click=exit_present, icon=":material/close:",
                  type="tertiary", shortcut="Escape")


def exit_present() -> None:
    """The corner's button (or Esc): back to the normal page, the step kept."""
    st.session_state["lesson_present"] = False
    st.query_params.pop("present", None)


# Presenter mode: no sidebar or header, large type, tight spacing, so one step fits 1280 x 720.
PRESENTER_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"], header[data-testid="stHeader"] {display: none !important;}
div[data-testid="stMainBlockContainer"], .block-container {padding: 0.6rem 1.5rem 0.4rem 1.5rem !important;
  max-width: 100% !important;}
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] label p, [data-testid="stMain"] [role="radiogroup"] p,
[data-testid="stMain"] button p {font-size: 22px !important; line-height: 1.3 !important;}
[data-testid="stMain"] [data-testid="stCaptionContainer"] p {font-size: 20px !important; line-height: 1.3 !important;}
[data-testid="stMain"] p code, [data-testid="stMain"] li code {font-size: 0.9em !important;}  /* [CLS] at 19.8 px */
[data-testid="stMain"] .katex-display {margin: 0.3em 0 0.45em 0 !important;}
[data-testid="stMain"] h2 {font-size: 34px !important; padding: 0 0 0.2rem 0 !important;}
[data-testid="stMain"] .katex {font-size: 23px !important;}
/* KaTeX draws a script at 0.7 of its formula (16 px): 0.79 of 23 px keeps every sub- and superscript at 18 px. */
[data-testid="stMain"] .katex .reset-size6.size3, [data-testid="stMain"] .katex .reset-size6.size1
  {font-size: 0.79em !important;}
[data-testid="stMain"] .katex .reset-size3.size1 {font-size: 1em !important;}
[data-testid="stMain"] button kbd, .st-key-lesson_corner kbd {font-size: 18px !important;}
/* Token chips (steps 1, 3, 7: bert_core's chips_html and tokens_html) and their labels at 22 px. */
.bx-tokens, .bx-tokens *, .bx-chips .bx-chip, .bx-chips .bx-chip * {font-size: 22px !important;}
.bx-legend span {font-size: 18px !important;}
div[data-testid="stVerticalBlock"] {gap: 0.35rem !important;}
.st-key-lesson_keys {display: none !important;}
[data-testid="stMain"] button kbd {color: inherit !important; opacity: 1 !important;}  /* AA on a red button */
[data-testid="stMain"] [data-testid="stTable"] td, [data-testid="stMain"] [data-testid="stTable"] th
  {font-size: 18px !important; padding: 0.2rem 0.5rem !important;}
.st-key-lesson_corner {position: fixed; bottom: 0.2rem; right: 2.5rem; z-index: 100; width: max-content !important;
  flex-direction: row !important; align-items: center; gap: 0.8rem !important; background: #ffffff;
  white-space: nowrap;}
.st-key-lesson_corner p, .st-key-lesson_corner button p {font-size: 18px !important;}
/* A clicked guess must not take the keys: the radio's input cannot hold focus (its label still picks it). */
[data-testid="stMain"] [data-testid="stRadio"] input {display: none !important;}
</style>
"""
