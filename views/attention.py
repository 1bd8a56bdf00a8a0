"""Attention: every head's softmax(QK^T / sqrt(d_k)) map as heatmaps, plus bertviz's head and model views."""

import pandas as pd
import streamlit as st

from bert_core import BertCoreError, attention_rollout, head_stats
from bert_core.figures import attention as fa
from bert_core.inspect.attribution import common_source, heads_by, is_punctuation, sink_heads
from bert_core.inspect.bertviz_html import head_view_height, head_view_html, model_view_height, model_view_html
from ui import callbacks
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import analysis, model_cached, require_current, set_url, url_index
from ui.widgets import chart, html_document, model_line, numbering_note, table


def selector_ui(label: str, key: str, url_key: str, n: int, container, **kwargs) -> int:
    """A 0-based index selector, shown 1..n, that starts at the shared link's value and stays in range."""
    kept = f"{key}_kept"  # a plain key: Streamlit forgets widget state while another page is shown
    if st.session_state.get(key) is None or st.session_state[key] >= n:  # first visit, or a smaller model
        st.session_state[key] = min(st.session_state.get(kept, url_index(url_key, n)), n - 1)
    kwargs.setdefault("format_func", callbacks.one_based)  # users count from 1
    st.session_state[kept] = container.selectbox(label, list(range(n)), key=key, **kwargs)
    return st.session_state[kept]


def finder_ui(title: str, stats: list[dict], stat: str, what) -> None:
    """A plain-words list of the heads where `stat` is at least one half, or the strongest one if none is.

    `what` says what the number is: a string, or a function of the head's dict (the sink finder names each sink).
    """
    st.markdown(f"**{title}**")
    found = heads_by(stats, stat, 0.5)
    if found:
        say = what if callable(what) else (lambda s: what)
        lines = [f"- layer {s['layer'] + 1}, head {s['head'] + 1}: {s[stat]:.0%} {say(s)}" for s in found[:6]]
        more = f"\n- … and {len(found) - 6} more" if len(found) > 6 else ""
        st.markdown("\n".join(lines) + more)
    else:
        if not stats:
            st.markdown("No head puts half of its attention there.")
            return
        best = max(stats, key=lambda s: s[stat])
        say = what if callable(what) else (lambda s: what)
        st.markdown(f"No head puts half of its attention there. The strongest is layer {best['layer'] + 1}, "
                    f"head {best['head'] + 1}: {best[stat]:.0%} {say(best)}.")


def attention_summaries(_model, text: str, text_pair: str | None) -> tuple:
    """Head statistics and the (L, T, T) rollout of the current input, from its (cached) analysis.

    Called through `model_cached`, so a rerun that only changes a widget does not recompute them
    (at 512 tokens on bert-base they take about a second).
    """
    t = analysis(cur, embeddings=False, hidden_states=False)  # the page's own analysis: a cache hit, not a second
    return head_stats(t), attention_rollout(t.attentions)    # trace with embeddings (170 MB on bert-base, 512)


cur = require_current()
st.header("Attention")
model_line(cur.model)
st.markdown(
    "In every layer, each head projects every token to a query **q**, a key **k** and a value **v** "
    "(each of size d_k = hidden size / heads) and mixes the values with the weights"
)
st.latex(r"A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right)")
st.caption(
    "Row i of A is how query token i spreads its attention over the key tokens j: every row sums to 1. "
    "Dividing by √d_k keeps the dot products from growing with the head size, so the softmax stays soft."
)

with st.spinner("Running the model…"):
    trace = analysis(cur, embeddings=False, hidden_states=False)
if trace is None:
    st.stop()
if trace.truncation is not None:
    st.info(trace.truncation.message)

n_layers, n_heads, n_tokens = trace.attentions.shape[:3]  # (L, nh, T, T)
numbering_note(n_layers, n_heads)
n = fa.capped(n_tokens, fa.ATTENTION_TOKEN_CAP)
if n < n_tokens:
    st.warning(
        f"This input has {n_tokens} tokens. To stay fast, the maps below show only the first {n} tokens "
        f"(the top-left {n}×{n} block of each {n_tokens}×{n_tokens} map), so a row can sum to less than 1."
    )
att, tokens = fa.crop(trace.attentions, trace.tokens, n)  # (L, nh, n, n)

c1, c2, c3 = st.columns(3)
layer = selector_ui("Layer", "attn_layer", "layer", n_layers, c1, help="1 is the first layer.")
average = c3.toggle("Average over heads", key="attn_average",
                    help="Show the mean of all heads of this layer instead of one head.")
head = selector_ui("Head", "attn_head", "head", n_heads, c2, disabled=average)
set_url(layer=layer + 1, head=head + 1)  # the link counts as the page does
fixed = st.toggle("Fixed colour scale 0 to 1", key="attn_fixed",
                  help="On: the same scale in every map, so heads and layers compare. "
                       "Off: the scale runs to each map's largest weight, so faint patterns show.")
zmax = 1.0 if fixed else None
notebook_button(cur, "attention", layer=layer, head=head, average=average, fixed=fixed)

st.subheader("One head" if not average else "All heads, averaged")
if average:
    fig = fa.head_average_figure(att[layer], tokens, layer, zmax=zmax)
    chart(fig, f"attention layer {layer + 1} average", key="attn-main",
          point=fa.attended_text(fa.head_average(att[layer]), tokens))
else:
    fig = fa.head_heatmap(att[layer, head], tokens, f"Layer {layer + 1}, head {head + 1}", zmax=zmax)
    chart(fig, f"attention layer {layer + 1} head {head + 1}", key="attn-main",
          point=fa.attended_text(att[layer, head], tokens))
st.caption("Hover a cell for query → key and its weight. Labels start with the token's position, "
           "so repeated words (and two [MASK]s) stay apart.")

st.subheader(f"Every head of layer {layer + 1}")
chart(fa.layer_grid(att[layer], tokens, layer, zmax=zmax), f"attention layer {layer + 1} all heads",
      key="attn-grid")

st.markdown(
    "**How to read the maps**\n"
    "- A bright column: many queries look at the same key. In trained BERTs this is often "
    "[CLS], [SEP] or a full stop or comma, a *sink* where a head parks attention when it has nothing useful to "
    "do (Clark et al. 2019 found bert-base's heads parking on [CLS] in the lowest layers, on [SEP] in the "
    "middle ones and on full stops and commas in the deepest ones; the bundled MiniLM parks on [CLS] from "
    "layer 2 on).\n"
    "- A bright diagonal (or the diagonal just beside it): the head attends to the token itself "
    "(or to the previous / next token): a positional head.\n"
    "- Scattered bright cells: content heads that link related words (a verb and its object, "
    "a pronoun and its noun, a [MASK] and the words that help guess it).\n"
    "- In bert-base (Clark et al. 2019) the broadest heads and most positional heads are in the lowest layers, "
    "[SEP] sinks in the middle, and heads that follow syntax (a verb to its object, a noun to its determiner) "
    "in the middle and upper layers. "
    "Attention shows where a head reads from, not why the model predicts what it does."
)
chart(fa.special_share_figure(fa.special_share(trace.attentions, trace.special_tokens_mask)),
      "attention share on cls and sep", key="attn-special")
st.caption("Each cell: the mean, over all query tokens of the full input, of the weight a head gives to "
           "[CLS] and [SEP] together. Values near 1 mark heads that sink on them (the finder below also counts "
           "punctuation).")

st.subheader("Which heads do what: head statistics")
st.markdown("Each head's map A (row i: how query token i spreads its attention, rows sum to 1) summed up in a "
            "few numbers, each a mean over the query rows i, for example:")
st.latex(r"\text{prev} = \frac{1}{T-1}\sum_{i=1}^{T-1} a_{i,i-1} \qquad "
         r"\text{sep} = \frac{1}{T}\sum_{i}\sum_{j \in \text{[SEP]}} a_{ij} \qquad "
         r"\text{entropy} = -\frac{1}{T}\sum_{i}\sum_{j} a_{ij} \ln a_{ij}")
st.caption("next and self are the same for a_{i,i+1} and a_{ii}; cls for the [CLS] column; distance = mean of "
           "Σ_j a_ij·|i−j|, how far a head reads; i and j are positions as the maps number them (0 = [CLS]). Entropy "
           "uses the natural log, so it is in nats: 0 when every row looks at one token, ln T when it spreads "
           "evenly. Computed on the whole input, not only the tokens the maps show.")
stats, rollout = model_cached(cur, attention_summaries, cur.text, cur.text_pair)  # per (layer, head); (L, T, T)
stat = st.selectbox("Colour the grid by", list(fa.STAT_LABELS), format_func=fa.STAT_LABELS.get, key="attn_stat")
chart(fa.head_stats_figure(stats, stat), f"head statistics {stat}", key="attn-stats")
f1, f2 = st.columns(2)
with f1:
    finder_ui("Heads that look at the previous token", stats, "prev",
              "of each token's attention on the token before it")
with f2:
    sinks = sink_heads(trace)
    finder_ui("Sink heads on [CLS], [SEP] or punctuation", sinks, "share",
              lambda s: f"of all attention parked on {s['sink']}")
    kinds = {k: sorted({s["layer"] + 1 for s in sinks if s["sink"] == k}) for k in ("[CLS]", "[SEP]", "punctuation")}
    if sinks:
        st.caption(f"{len(sinks)} of {n_layers * n_heads} heads park half or more of their attention on one sink: "
                   + "; ".join(f"{sum(s['sink'] == k for s in sinks)} on {k} (layers "
                               f"{', '.join(map(str, ls))})" for k, ls in kinds.items() if ls) + ".")
ranked = sorted(stats, key=lambda s: -s[stat])
o1, o2 = st.columns([3, 1], vertical_alignment="bottom")
pick = o1.selectbox("Open a head in the heatmap and bertviz above (strongest first by the colour statistic)",
                    range(len(ranked)), key="attn_open_pick",
                    format_func=callbacks.labels(f"layer {s['layer'] + 1}, head {s['head'] + 1}: {stat} = {s[stat]:.3f}"
                                                 for s in ranked))
pick = min(pick or 0, len(ranked) - 1)
o2.button("Open this head", key="attn_open", on_click=callbacks.put_many,
          args=({"attn_layer": ranked[pick]["layer"], "attn_layer_kept": ranked[pick]["layer"],
                 "attn_head": ranked[pick]["head"], "attn_head_kept": ranked[pick]["head"], "attn_average": False},),
          width="stretch")
table(pd.DataFrame(stats).round(4).assign(layer=lambda d: d["layer"] + 1, head=lambda d: d["head"] + 1),
      "head statistics", key="attn-stats-csv", hide_index=True)  # 1-based, as on every chart
st.caption("Click a column header to sort the table. These numbers describe where heads read, for this input; "
           "a head that looks at the previous token here usually does so for every input.")

st.subheader("Attention rollout: where information can have come from")
st.markdown(
    "One map shows one layer. Rollout (Abnar & Zuidema, 2020) follows attention through the layers: average the "
    "heads, add the residual connection as half of each token staying where it is, and multiply layer by layer:"
)
st.latex(r"\hat A_l = \mathrm{rownorm}\!\left(\tfrac12\,\overline{A}_l + \tfrac12\,I\right), \qquad "
         r"R_0 = I, \qquad R_l = \hat A_l\,R_{l-1} \quad (l = 1, \dots, L)")
st.caption("Ā_l is layer l's attention averaged over its heads; R_0 = I is the embeddings' output, where each "
           "position holds only its own token. "
           "Row i of R_l: how much of input token j can have reached position i after layer l (each row sums to 1). "
           "It ignores what the values and the feed-forward layers do, so it is a map of possible routes, not of "
           "what the prediction used; the Predictions page's salience asks that.")
st.session_state.setdefault("attn_rollout_layer_kept", n_layers - 1)  # start at the last layer
if "rollout_query" not in st.query_params:  # start at the first [MASK], else the first word: [CLS] draws on itself
    st.session_state.setdefault("attn_rollout_query_kept", next(
        (i for i, t in enumerate(tokens) if t == cur.model.tokenizer.mask_token), min(1, n - 1)))
r1, r2 = st.columns(2)
r_layer = selector_ui("Rollout after layer", "attn_rollout_layer", "rollout_layer", n_layers, r1)
query = selector_ui("What does this token draw from?", "attn_rollout_query", "rollout_query", n, r2,
                    format_func=callbacks.labels(f"{i} {t}" for i, t in enumerate(tokens)))
r_shown = rollout[:, :n, :n]  # (L, n, n)
chart(fa.head_heatmap(r_shown[r_layer], tokens, f"Rollout after layer {r_layer + 1}", zmax=None),
      f"attention rollout layer {r_layer + 1}", key="attn-rollout")
chart(fa.rollout_row_figure(r_shown, tokens, query), f"rollout of token {query}", key="attn-rollout-row")
top = sorted(range(n), key=lambda j: -float(r_shown[r_layer, query, j]))[:3]
st.caption(f"After layer {r_layer + 1}, {md_literal(f'{query} {tokens[query]}')} draws most from "
           + ", ".join(f"{md_literal(f'{j} {tokens[j]}')} ({float(r_shown[r_layer, query, j]):.0%})" for j in top)
           + ".")
source, rows = common_source(r_shown[r_layer])
if rows > n // 2 and n > 2:
    sink = bool(trace.special_tokens_mask[source]) or is_punctuation(tokens[source])
    st.caption(f"After layer {r_layer + 1}, {rows} of the {n} rows draw most from "
               f"{md_literal(f'{source} {tokens[source]}')}"
               + (": rollout counts every route, so the weight the sink heads park there adds up layer by layer "
                  "and the rows come to look alike." if sink else "."))

st.subheader("bertviz: the same weights as lines")
show = st.toggle("Show the bertviz views", value=True, key="attn_bertviz",
                 help="Each view is a small web page of its own; turn them off for a faster page.")
if show:
    nb = fa.capped(n_tokens, fa.BERTVIZ_TOKEN_CAP)
    if nb < n_tokens:
        st.info(f"bertviz draws one line per pair of tokens, so it shows only the first {nb} of the "
                f"{n_tokens} tokens.")
    b_att, b_tokens = fa.crop(trace.attentions, trace.tokens, nb)  # (L, nh, nb, nb)
    b_start = fa.sentence_b_start(trace.token_type_ids, nb)
    layers = fa.bertviz_layers(n_layers, n_heads, nb, layer)
    if len(layers) < n_layers:
        st.caption(f"To keep the page light, bertviz shows layers {layers[0] + 1}–{layers[-1] + 1} of 1–{n_layers} "
                   f"(those around the layer chosen above; {n_layers} layers × {n_heads} heads would be "
                   "too many lines for the browser).")
    if b_start is not None:
        st.caption("Sentence pair: bertviz's filter menu shows A→A, B→B, A→B and B→A attention.")
    try:
        with st.spinner("Building the bertviz views…"):
            head_doc = head_view_html(b_att, b_tokens, sentence_b_start=b_start, layer=layer, include_layers=layers)
            model_doc = model_view_html(b_att, b_tokens, sentence_b_start=b_start, include_layers=layers,
                                        display_mode="light")
    except BertCoreError as e:
        st.warning(f"bertviz cannot draw this input: {e}")
    else:
        # html_document puts each one in a srcdoc iframe (st.iframe), as components.v1.html (now deprecated) did.
        st.markdown("**Head view.** Left: query tokens, right: key tokens; line opacity is the weight "
                    "(bertviz's own menus count layers and heads from 0: its layer 0 is this page's layer 1). "
                    "Colours are heads: double-click a colour to show only that head, hover a token to see "
                    "only its lines.")
        html_document(head_doc, head_view_height(nb),
                      alt=f"bertviz head view: lines from each query token to the tokens it attends to, "
                          f"layer {layer + 1}, all heads as colours (for the keyboard: the table below)")
        shown_map = fa.head_average(att[layer]) if average else att[layer, head]
        which = "average of all heads" if average else f"head {head + 1}"
        with st.expander(f"Head view as text: layer {layer + 1}, {which} (the Layer and Head choices above)"):
            st.table(pd.DataFrame(fa.attended(shown_map, tokens), columns=["query token", "attends most to (weight)"]),
                     hide_index=True)
        st.markdown("**Model view.** Every layer (rows) × head (columns) as a thumbnail; click one to enlarge it.")
        html_document(model_doc, model_view_height(len(layers), n_heads, nb),
                      alt=f"bertviz model view: a thumbnail of every head's attention, layers {layers[0] + 1} to "
                          f"{layers[-1] + 1} (the same weights are in the Data tables of the maps above)")
