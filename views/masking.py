"""Masking: BERT's pre-training corruption (15% selected; 80% [MASK], 10% random, 10% kept) on your text."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.masking import chips_html, legend_html, position_figure, rates_figure
from bert_core.inspect.masking_view import draw_loss, draw_rows, masking_draw, masking_stats, stats_rows
from ui import callbacks, page_defaults
from ui.notebook_ui import notebook_button
from ui.state import page_text, require_current
from ui.widgets import chart, model_line, table

cur = require_current()
st.header("Masking")
model_line(cur.model)
st.markdown(
    "To pre-train BERT, each ordinary token is **selected** with probability p = 15%. A selected token "
    "becomes **[MASK]** 80% of the time, a **random token** 10% of the time, and is **kept** unchanged "
    "10% of the time; the model must then recover the original token at every selected position "
    "(the paper, Sec. 3.1). The paper's code picks 15% of each sequence's tokens; this page, like Hugging "
    "Face's data collator, flips a 15% coin for each token, so the count varies from draw to draw."
)
if cur.model_key == bert_core.MINILM_NAME:
    st.caption("The model on screen learned its fill-in head here with this rule on word pieces at first, then "
               "(its last three stages) with whole-word masking at 30% of the words; the paper's BERT: 15% of "
               "the word pieces (whole-word masking came with Google's later release of BERT, May 2019).")
mask_tok = cur.model.tokenizer.mask_token
if mask_tok != "[MASK]":
    st.info(f"This {cur.model.family} model's mask token is **{mask_tok}**: below, [MASK] means {mask_tok} "
            f"(id {cur.model.tokenizer.mask_token_id}), and a typed [MASK] is read as it.")
if cur.model.family == "roberta":
    st.info(
        "**RoBERTa masks dynamically.** BERT's data pipeline drew the masks once, when the data was "
        "prepared: the training data was copied 10 times, each copy masked differently, so over 40 epochs "
        "each sequence was seen with the same mask 4 times (RoBERTa, Sec. 4.1). RoBERTa draws a fresh mask "
        "every time a sequence is fed to the model — what *Draw again* does here — which matched or slightly "
        "beat static masking in its Table 1 and matters more the longer a model trains. The 15% / 80-10-10 rule "
        "is unchanged."
    )
st.caption(
    "Why not always [MASK]? (The paper, Sec. 3.1 and Appendix A.1.) When fine-tuned and used, the model "
    "reads no [MASK] tokens, so a model that only ever "
    "learned to repair [MASK] would have no reason to build good vectors for ordinary words. The random "
    "10% means any token it reads might be wrong, so it has to check every token against its context; "
    "the kept 10% ties the representation of a correct word to the word itself."
)


# The draw number outlives a visit to another page (streamlit forgets widgets that were not drawn).
if "mask_draw" not in st.session_state:
    st.session_state["mask_draw"] = st.session_state.get("mask_draw_n", 1)

# The sidebar's default sentence has a typed [MASK], which masking would only show as a special token.
text = page_text(cur, "She wrote the letter to her mother on a rainy Sunday afternoon.")
c1, c2, c3, c4 = st.columns([3, 2, 2, 2], vertical_alignment="bottom")
opening = page_defaults.of("masking", cur.model.config)
p = c1.slider("Mask probability p", 0.0, 1.0, opening["p"], 0.01, key="mask_p",
              help="Chance that each ordinary token is selected (BERT uses 0.15).")
whole_word = c2.checkbox("Whole-word masking", key="mask_whole_word",
                         help="Select whole words: all pieces of a word (token ##ization) or none.")
draw = c3.number_input("Draw number", min_value=1, max_value=10**9, step=1, key="mask_draw",
                       help="Seed and draw number fix the draw: the same pair always gives the same result.")
st.session_state["mask_draw_n"] = int(draw)
c4.button("Draw again", key="mask_draw_again", on_click=callbacks.next_draw, width="stretch")

try:
    view = masking_draw(cur.model, text, cur.text_pair, seed=cur.seed, draw=int(draw),
                        mlm_probability=p, whole_word=whole_word)
except bert_core.BertCoreError as e:
    st.warning(str(e))
    st.stop()
if view.inp.truncation_note:
    st.caption(view.inp.truncation_note)

st.subheader(f"Seed {cur.seed}, draw {int(draw)}")
st.caption(
    "The draw comes from torch.Generator().manual_seed(…) of the sidebar seed and the draw number, "
    "never the global random state: share the seed and draw number and anyone gets the same draw."
)
st.markdown(chips_html(view.inp.tokens, view.corrupted_tokens, view.kinds), unsafe_allow_html=True)
st.markdown(legend_html(), unsafe_allow_html=True)
st.caption("Top of each chip: what the model reads; below: the original token where it was changed.")

p_orig, loss = draw_loss(cur.model, view)
df = pd.DataFrame(draw_rows(view, p_orig if cur.model.has_mlm else None))
if not whole_word:
    df = df.drop(columns=["word id"])
table(df, f"masking seed {cur.seed} draw {int(draw)}", key="csv-mask-draw", hide_index=True)

st.markdown(
    "**What the MLM loss is computed on.** The labels are the original token ids at the selected "
    "positions and −100 everywhere else (−100 is ignored by the cross-entropy), so "
    r"$\text{loss} = -\frac{1}{|S|}\sum_{i \in S} \log p(x_i \mid \tilde{x})$, with S the selected "
    r"positions, $x_i$ the original token and $\tilde{x}$ the corrupted input. Kept and random "
    "positions count too: the model is graded there although the token it reads may already be right, "
    "or may be wrong."
)
n_sel = view.n_selected
if not cur.model.has_mlm:
    st.info("This model has no MLM head, so it cannot score the draw: " + " ".join(cur.model.notes))
elif loss is None:
    st.info("No position was selected in this draw: the loss has no terms. Draw again.")
else:
    st.metric(f"MLM loss of this model on this draw ({n_sel} selected position{'s' * (n_sel != 1)})",
              f"{loss:.3f}")

st.subheader("Many draws")
st.markdown(
    "Over many draws the share of selected tokens should approach p and the [MASK] / random / kept "
    "split 80 / 10 / 10. The grey bars carry ±3σ error bars: an observed rate outside them would "
    "happen by chance less than 0.3% of the time."
)
n = st.number_input("Number of draws N", min_value=100, max_value=20000, value=opening["n_draws"], step=100,
                    key="mask_n")
notebook_button(cur, "masking", text, p=p, whole_word=whole_word, draw=int(draw), n_draws=int(n))
with st.spinner(f"Drawing {int(n):,} maskings…"):
    stats = masking_stats(cur.model, text, cur.text_pair, seed=cur.seed, n_draws=int(n),
                          mlm_probability=p, whole_word=whole_word)
if stats.counts["eligible"] == 0:
    st.info("This input has no ordinary tokens to select.")
else:
    st.caption(
        f"{stats.counts['eligible']:,} eligible token slots ({stats.n_draws:,} draws × "
        f"{stats.n_eligible} ordinary tokens), {stats.counts['selected']:,} selected. "
        "These draws use their own stream (draw 0 of the seed), apart from the single draws above."
        + (" With whole-word masking the words, not the pieces, are the coin flips, so σ is wider."
           if whole_word else "")
    )
    chart(rates_figure(stats.names, stats.observed, stats.expected, stats.sigma, stats.n_draws),
          "masking rates", key="chart-mask-rates")
    table(pd.DataFrame(stats_rows(stats)), "masking rates", key="csv-mask-rates", hide_index=True)
    chart(position_figure(stats.tokens, stats.position_rate, stats.special, stats.mlm_probability,
                          stats.position_sigma, stats.n_draws), "selection per position", key="chart-mask-pos")
