"""Heads & patching: knock heads out (importance, predictions without a head, pruning) and patch activations."""

import functools

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures import heads as fh
from ui import callbacks, heads_ui, page_defaults
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import model_cached, require_current, set_url, url_int
from ui.widgets import chart, model_line, table

CLEAN, CORRUPT, TARGET = "The king said that [MASK] was tired.", "The queen said that [MASK] was tired.", "he"


def progress_bar(what: str):
    """An empty slot and a `progress(fraction)` that fills a bar in it (cleared by the caller)."""
    slot = st.empty()
    return slot, lambda f: slot.progress(min(max(float(f), 0.0), 1.0), text=what)


cur = require_current()
m = cur.model
L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
opening = page_defaults.of("heads", m.config)  # the last layer's first head
st.header("Heads & patching")
model_line(cur.model)
st.markdown("Which parts of the network does the guess at a [MASK] depend on? Two experiments answer by changing "
            "the network and running it again: **knock a head out**, or **patch in a vector** from another sentence.")
st.caption(f"Layers are numbered 1–{L} (layer 0 = the embeddings' output); heads 1–{nh}.")

# ------------------------------------------------------------------------------------------ knock out
st.subheader("Knock out a head")
st.markdown("Each head of a layer writes its context vector c_h = softmax(q k^T / √d_k) V; the heads' vectors are "
            "concatenated and projected by W_O. Knocking head h out sets its c_h to zero before W_O, and everything "
            "after (later layers, the guess) is recomputed:")
st.latex(r"\mathrm{importance}(l, h) = \frac{1}{|M|}\sum_{i \in M}\Big[\log p(y_i \mid x)"
         r" - \log p\big(y_i \mid x;\ c^{(l)}_h = 0\big)\Big]")
st.caption("M: the [MASK] positions; y_i: the full model's top guess there; log is the natural log, so importance "
           "is in nats. Why it matters: attention maps show "
           "where a head looks, not whether the answer needs it; knocking it out measures that directly "
           "(Michel et al. 2019 removed up to about 40% of a fine-tuned BERT's heads with little loss, and found "
           "many single layers that need only one of their heads).")

ko, problem = None, None
if not m.has_mlm:
    problem = ("This model has no masked-language-model head, so there is no guess to knock out: pick a model with "
               "one in the sidebar (both bundled models have one). Patching below needs one too.")
else:
    # The chosen head's knock-out is the page's one pass per text edit; the first visit starts at the link's
    # ?layer=&head= (1-based: the Lesson's knock-out step links the head it knocked out), else the last layer.
    st.session_state.setdefault(heads_ui.LAYER_KEY, url_int("layer", opening["layer"] + 1, 1, L) - 1)
    st.session_state.setdefault(heads_ui.HEAD_KEY, url_int("head", opening["head"] + 1, 1, nh) - 1)
    if st.session_state[heads_ui.LAYER_KEY] >= L or st.session_state[heads_ui.HEAD_KEY] >= nh:  # a smaller model
        heads_ui.pick_head(min(st.session_state[heads_ui.LAYER_KEY], L - 1),
                           min(st.session_state[heads_ui.HEAD_KEY], nh - 1))
    try:
        ko = model_cached(cur, bert_core.knock_out, cur.text, cur.text_pair,
                          ((st.session_state[heads_ui.LAYER_KEY], st.session_state[heads_ui.HEAD_KEY]),))
    except bert_core.BertCoreError as e:
        if "has no [MASK]" in str(e):
            problem = ("Put [MASK] in the sidebar's sentence (e.g. “She [MASK] the letter to her mother.”): the "
                       "experiment measures what the guess there loses.")
        else:
            st.warning(str(e))
if problem:
    st.info(problem)
can_knock = ko is not None

if can_knock:
    rank = st.toggle(f"Rank all {L * nh} heads (each knocked out alone, then the pruning curve)", key="heads_rank",
                     help=f"{2 * L * nh + 2} variants of your sentence, run as a few batched passes; a second or more "
                          "on a large model. Stays on for your next sentences.")
    pc = None
    for note in ko.notes:
        st.info(note)
    if rank:
        slot, progress = progress_bar(f"Knocking out each of the {L * nh} heads, then the least important ones…")
        try:
            pc = model_cached(cur, bert_core.pruning_curve, cur.text, cur.text_pair, progress=progress)
        except bert_core.BertCoreError as e:
            st.warning(str(e))
        slot.empty()
    if pc is not None:
        imp = pc.importance  # (L, nh)
        top = pc.top_tokens[0] if len(pc.top_tokens) == 1 else None
        best = divmod(int(imp.argmax()), nh)
        fig = fh.importance_figure(imp, (st.session_state[heads_ui.LAYER_KEY], st.session_state[heads_ui.HEAD_KEY]),
                                   top)
        chart(fig, "head importance", key="heads-importance", on_select=functools.partial(
            heads_ui.pick_clicked_head, "heads-importance", L, nh), selection_mode="points")
        c1, c2 = st.columns([3, 1], vertical_alignment="center")
        c1.caption(f"Click a cell to knock that head out below. Red: the guess leans on the head; blue: it is surer "
                   f"without it. The most important head is layer {best[0] + 1}, head {best[1] + 1} "
                   f"({imp[best]:.3f} nats).")
        c2.button("Knock out the most important", key="heads_best", on_click=heads_ui.pick_head, args=best,
                  width="stretch")
    s1, s2 = st.columns(2)
    layer = s1.selectbox("Layer", list(range(L)), key=heads_ui.LAYER_KEY,
                         format_func=callbacks.labels(f"layer {i + 1}" for i in range(L)))
    head = s2.selectbox("Head", list(range(nh)), key=heads_ui.HEAD_KEY,
                        format_func=callbacks.labels(f"head {i + 1}" for i in range(nh)))
    set_url(layer=layer + 1, head=head + 1)  # a shared link opens this head
    if (layer, head) not in ko.heads:  # changed by a click or the selectboxes after the pass above
        ko = model_cached(cur, bert_core.knock_out, cur.text, cur.text_pair, ((layer, head),))
    label = f"without layer {layer + 1}, head {head + 1}"
    for pos in sorted(ko.guesses)[:4]:
        tokens, p_full, p_without = ko.guesses[pos]
        if len(ko.guesses) > 1:
            st.markdown(f"**[MASK] at position {pos}**")
        chart(fh.without_head_figure(tokens, p_full, p_without, label),
              f"{label}, the [MASK] at position {pos}",
              key=f"heads-without-{pos}")
        same = ko.top_full[pos] == ko.top_without[pos]
        st.caption(f"The full model's guess {md_literal(ko.top_full[pos])} "
                   + ("stays the top guess" if same else f"gives way to {md_literal(ko.top_without[pos])}")
                   + f" {label}: its probability goes from {p_full[0]:.3f} to {p_without[0]:.3f}.")
    if len(ko.guesses) > 4:
        st.caption(f"… and {len(ko.guesses) - 4} more [MASK]s (the importance above averages over all of them).")

    if pc is not None:
        st.subheader("Pruning: how many heads can go?")
        st.latex(r"p_k = \frac{1}{|M|}\sum_{i \in M} p\big(y_i \mid x;\ \text{the } k \text{ least important heads}"
                 r" = 0\big), \quad k = 0, \dots, " + str(L * nh))
        st.caption("Remove heads from the least important up, all at once, and read the probability of the full "
                   "model's guess. Why it matters: if the curve stays flat for a long way, most heads are not needed "
                   "for this guess (the importance of each head alone does not add up exactly: heads can stand in "
                   "for each other).")
        chart(fh.pruning_figure(pc.removed, pc.prob, pc.kept_top, " / ".join(pc.top_tokens)), "pruning curve",
              key="heads-pruning")
        with st.expander("The numbers (CSV)"):
            rows = [{"layer": a + 1, "head": b + 1, "importance (nats)": float(pc.importance[a, b]),
                     "removal order": k + 1} for k, (a, b) in enumerate(pc.order)]
            table(pd.DataFrame(rows).sort_values(["layer", "head"]), "head importance", key="heads-imp-csv",
                  hide_index=True)
            table(pd.DataFrame({"heads removed": pc.removed, "p(guess)": pc.prob, "guess still top-1": pc.kept_top}),
                  "pruning curve", key="heads-prune-csv", hide_index=True)

# ------------------------------------------------------------------------------------------ patching
st.subheader("Patch activations: where does the answer live?")
st.markdown("Run a **corrupt** sentence, but replace one hidden vector (layer l, token t) with the one the **clean** "
            "sentence had there, and read the probability of the target word at the [MASK]:")
st.latex(r"\mathrm{grid}[l, t] = p\big(\text{target} \mid \text{corrupt};\ h_l[t] := h^{\text{clean}}_l[t]\big),"
         r"\quad l = 0 \text{ (embeddings)}, 1, \dots, " + str(L))
st.caption("Why it matters (causal tracing, Vig et al. 2020, Meng et al. 2022): a bright cell is a single vector "
           "that carries the difference between the two sentences; reading down the rows shows when it moves from "
           "the changed word to the [MASK]. Both sentences need the same number of tokens and one [MASK].")
p1, p2, p3 = st.columns([5, 5, 2])
clean = p1.text_input("Clean sentence", CLEAN, key="heads_clean", max_chars=500)
corrupt = p2.text_input("Corrupt sentence", CORRUPT, key="heads_corrupt", max_chars=500)
target = p3.text_input("Target word", TARGET, key="heads_target", max_chars=50)
notebook_button(cur, "heads", layer=st.session_state.get(heads_ui.LAYER_KEY, opening["layer"]),
                head=st.session_state.get(heads_ui.HEAD_KEY, opening["head"]), clean=clean, corrupt=corrupt,
                target=target)
r = None
slot, progress = progress_bar(f"Patching every token of each of the {L + 1} hidden states…")
try:
    r = model_cached(cur, bert_core.patch_activations, clean, corrupt, target, progress=progress)
except bert_core.BertCoreError as e:
    st.warning(str(e))
slot.empty()
if r is not None:
    for note in r.notes:
        st.info(note)
    st.markdown(f"p({md_literal(r.target)}) at the [MASK]: **{r.clean_prob:.3f}** in the clean run, "
                f"**{r.corrupt_prob:.3f}** in the corrupt run. Each cell: the corrupt run with one clean vector.")
    chart(fh.patching_figure(r.grid, r.tokens, r.target, r.mask_position), "activation patching",
          key="heads-patching")
    best = divmod(int(r.grid.argmax()), r.grid.shape[1])
    where = "the embeddings" if best[0] == 0 else f"layer {best[0]}"
    tok = r.tokens[best[1]] if r.tokens[best[1]] == r.clean_tokens[best[1]] else \
        f"{r.tokens[best[1]]} (clean: {r.clean_tokens[best[1]]})"
    st.caption(f"The strongest cell: {where} at token {best[1]} {md_literal(tok)} "
               f"(p = {r.grid[best]:.3f}). The bottom row patches the last layer: only the [MASK] column can "
               "change the guess there, and it gives the clean run's answer back.")
    with st.expander("The numbers (CSV)"):
        df = pd.DataFrame(r.grid, columns=[f"{i} {t}" for i, t in enumerate(r.tokens)])
        df.insert(0, "hidden state", ["embeddings"] + [f"layer {i}" for i in range(1, L + 1)])
        table(df, "activation patching", key="heads-patch-csv", hide_index=True)
