"""Inside a layer: one query token followed through one encoder layer, every number from `layer_steps`."""

import streamlit as st

import bert_core
from bert_core.figures import layers as fl
from bert_core.inspect.inside_layers import follow_token
from ui import callbacks
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import model_cached, require_current, set_url, url_index
from ui.widgets import chart, model_line, numbering_note

cur = require_current()
cfg = cur.model.config
L, nh, H, F = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size, cfg.intermediate_size
dk = H // nh
st.header("Inside a layer")
model_line(cur.model)
st.markdown(
    f"One encoder layer, one token, every step with its real numbers. This model has {L} layers, each with "
    f"{nh} attention heads of size d_k = {H} / {nh} = {dk} and a feed-forward block of {F} neurons. Pick a "
    "layer, a head and a query token, then read from top to bottom."
)
numbering_note(L, nh)


def index_ui(label: str, key: str, n: int, container, default: int = 0, **kwargs) -> int:
    """A 0-based selector kept in range when the model or the text changes."""
    kept = f"{key}_kept"  # a plain key survives page switches (widget state does not)
    if st.session_state.get(key) is None or st.session_state[key] >= n:
        st.session_state[key] = min(st.session_state.get(kept, default), n - 1)
    st.session_state[kept] = container.selectbox(label, list(range(n)), key=key, **kwargs)
    return st.session_state[kept]


c1, c2, c3 = st.columns(3)
one_based = {"format_func": callbacks.one_based}  # users count layers and heads from 1
layer = index_ui("Layer", "in_layer", L, c1, url_index("layer", L), help="1 is the first layer.", **one_based)
head = index_ui("Head", "in_head", nh, c2, url_index("head", nh), **one_based)
set_url(layer=layer + 1, head=head + 1)  # the link counts as the page does

try:
    with st.spinner(f"Running layer {layer + 1} step by step…"):
        s = model_cached(cur, bert_core.layer_steps, cur.text, layer, cur.text_pair)
except bert_core.BertCoreError as e:
    st.warning(str(e))
    st.stop()
if s.truncation is not None:
    st.info(s.truncation.message)
tokens = s.tokens
T = len(tokens)
labels = [f"{i}: {t}" for i, t in enumerate(tokens)]
masks = [i for i, t in enumerate(tokens) if t == cur.model.tokenizer.mask_token]
token = index_ui("Query token", "in_token", T, c3, masks[0] if masks else min(1, T - 1),
                 format_func=callbacks.labels(labels), help="The token whose path through the layer is shown.")
p = follow_token(s, head, token)
notebook_button(cur, "inside_layer", layer=layer, head=head, token=token)
name = md_literal(tokens[token])
nk = min(T, fl.KEY_CAP)
if nk < T:
    st.warning(f"This input has {T} tokens. The key charts show the first {nk} keys (the query still attends "
               f"to all {T}; every other number below is complete).")

st.subheader("1. The input x")
st.markdown(f"Token {token} (**{name}**) enters layer {layer + 1} as a vector of H = {H} numbers: "
            + ("the embeddings' output (layer 0)." if layer == 0 else f"the output of layer {layer}."))
chart(fl.vector_strip({"x": p.x}, f"x  (‖x‖ = {float((p.x ** 2).sum()) ** 0.5:.3f})"), "input x", key="in-x")

st.subheader("2. Query, key and value")
st.latex(r"q = W_Q\,x + b_Q,\quad k = W_K\,x + b_K,\quad v = W_V\,x + b_V")
st.markdown(f"Three learned H×H projections, applied to every token, cut into {nh} heads of {dk} numbers. "
            f"Head {head + 1} uses numbers {head * dk}–{(head + 1) * dk - 1} of each (numbers, i.e. dimensions, "
            f"count from 0 like the vector's index, heads from 1 like the app's selectors). The query asks *what am I "
            "looking for*, each key says *what I offer*, each value is *what I pass on*.")
chart(fl.vector_strip({"q (query)": p.q, "k (its own key)": p.keys[token], "v (its own value)": p.values[token]},
                      f"Token {token}'s q, k, v in head {head + 1}"), "q k v", key="in-qkv")
kcol, vcol = st.columns(2)
with kcol:
    chart(fl.matrix_heatmap(p.keys[:nk], tokens[:nk], "Every token's key k_j", token), "keys", key="in-keys")
with vcol:
    chart(fl.matrix_heatmap(p.values[:nk], tokens[:nk], "Every token's value v_j", token), "values", key="in-values")

st.subheader("3. Scores and weights")
st.latex(r"s_j = \frac{q \cdot k_j}{\sqrt{d_k}}, \qquad a_j = \frac{e^{s_j}}{\sum_{j'} e^{s_{j'}}}")
st.markdown(f"The query's dot product with every key, divided by √{dk} = {dk ** 0.5:.3f} so the numbers stay small "
            "enough for a soft softmax, then turned into weights that are positive and sum to 1. These weights "
            f"are row {token} of head {head + 1}'s map on the **Attention** page (layer {layer + 1}).")
chart(fl.attention_steps_figure(p.dots[:nk], p.scores[:nk], p.weights[:nk], tokens[:nk], dk), "scores and weights",
      key="in-scores")
top = sorted(range(T), key=lambda j: -float(p.weights[j]))[:3]
st.caption("Largest weights: " + ", ".join(f"{md_literal(labels[j])} {float(p.weights[j]):.3f}" for j in top)
           + f" (all {T} weights sum to {float(p.weights.sum()):.4f}).")

st.subheader("4. Weighted sum of the values, heads side by side")
st.latex(r"c^{(h)} = \sum_j a_j\, v_j \quad(\text{size } d_k), \qquad c = [\,c^{(1)}; c^{(2)}; \dots; "
         r"c^{(n_h)}\,] \quad(\text{size } H)")
st.markdown(f"Head {head + 1} returns the mix of values its weights chose; the {nh} heads' results are laid side by "
            "side (black lines: where each head's slice begins).")
chart(fl.vector_strip({f"c (head {head + 1})": p.head_context}, f"Head {head + 1}'s weighted sum of values"),
      "head context", key="in-headctx")
chart(fl.vector_strip({"c (all heads)": p.context}, "All heads, concatenated", boundaries=dk), "context",
      key="in-ctx")

st.subheader("5. Output projection, residual, LayerNorm")
st.latex(r"\mathrm{attn\_out} = W_O\, c + b_O, \qquad h_1 = \mathrm{LayerNorm}(x + \mathrm{attn\_out})")
st.markdown("W_O mixes the heads' results into one update, which is **added** to the token's own vector x (the "
            "residual connection: the layer edits x rather than replacing it), then LayerNorm rescales the sum "
            "to mean 0 and spread 1 per token, times a learned γ plus β.")
ratio = float((p.attn_out ** 2).sum() / max((p.x ** 2).sum(), 1e-30)) ** 0.5
chart(fl.vector_strip({"x": p.x, "attn_out": p.attn_out, "x + attn_out": p.resid1, "h1 = LayerNorm(…)": p.h1},
                      f"|attn_out| / |x| = {ratio:.3f}"), "attention residual", key="in-resid1")

st.subheader("6. Feed-forward block")
act = cfg.hidden_act.replace("_", r"\_")  # one of bert_core.model.config.ACTIVATIONS' names, so safe in LaTeX
st.latex(r"\mathrm{ffn\_act} = \mathrm{" + act + r"}(W_1\, h_1 + b_1)\ \ (\text{size } F),\qquad "
         r"\mathrm{ffn\_out} = W_2\, \mathrm{ffn\_act} + b_2\ \ (\text{size } H)")
st.markdown(f"Each token alone (no mixing between tokens here) goes up to F = {F} neurons, through the "
            f"activation ({md_literal(cfg.hidden_act)}), and back down to H = {H}. "
            + ("gelu, the Gaussian error linear unit x·Φ(x) (Φ: the standard normal's CDF), is a smooth ReLU: it "
               "passes large positive values, turns large negative ones to 0 and lets small negatives through "
               "(its least value is about −0.17). " if cfg.hidden_act.startswith("gelu") else "")
            + "Many neurons stay near zero for a given token, and a few large ones carry most of the activation.")
hcol, ncol = st.columns(2)
with hcol:
    chart(fl.activation_histogram(p.ffn_act, f"The {F} activations of token {token}"), "ffn activations",
          key="in-ffn-hist")
with ncol:
    chart(fl.top_neurons_figure(p.top_neurons, p.ffn_act[p.top_neurons], "The most active neurons"),
          "top neurons", key="in-ffn-top")
chart(fl.vector_strip({"ffn_out": p.ffn_out}, "What the feed-forward block adds"), "ffn out", key="in-ffn-out")

st.subheader("7. Residual, LayerNorm: the layer's output")
st.latex(r"x' = \mathrm{LayerNorm}(h_1 + \mathrm{ffn\_out})")
ratio2 = float((p.ffn_out ** 2).sum() / max((p.h1 ** 2).sum(), 1e-30)) ** 0.5
chart(fl.vector_strip({"h1": p.h1, "ffn_out": p.ffn_out, "h1 + ffn_out": p.resid2, "x' = LayerNorm(…)": p.out},
                      f"|ffn_out| / |h1| = {ratio2:.3f}"), "output residual", key="in-resid2")
st.caption(f"x' (‖x'‖ = {float((p.out ** 2).sum()) ** 0.5:.3f}) is layer {layer + 1}'s output"
           + (f", what layer {layer + 2} reads" if layer + 1 < L else "")
           + f", the same vector the **Layers** page shows for token {token} at state L{layer + 1}"
           + (" and the one the MLM head reads." if layer == L - 1 else "."))
