"""BERT vs GPT: the same layers under two masks and three objectives, and one live run of each side by side."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures import objectives as fo
from bert_core.figures.attention import crop, token_labels
from bert_core.inspect.objectives_view import loss_targets, mask_comparison, visibility
from bert_core.model.tokenization import USER_MASK
from bert_core.objectives.catalog import OBJECTIVE_LOSSES, OBJECTIVE_NAMES, OBJECTIVE_NOTES
from bert_core.runs.objective_runs import COMPARE_STEPS, MAX_COMPARE_STEPS, ObjectiveComparison
from bert_core.runs.settings import CORPUS_CHOICES, QUICK_PRESET
from bert_core.train.linear_probe import PROBE_TRAIN, PROBE_VALID, probe_set
from bert_core.train.toy import ANIMALS, FARM_CLOZE, FARM_PROMPTS
from ui import callbacks, page_defaults
from ui.notebook_ui import notebook_button
from ui.runs import shared
from ui.state import model_cached, require_current, set_url, url_index
from ui.widgets import chart, model_line, table

LOSS_EXAMPLE = "She wrote the letter to her mother."  # section 3's sentence when the sidebar's has a typed [MASK]

TOKEN_CAP = page_defaults.BVG_TOKEN_CAP  # the maps draw at most this many tokens (the first ones)
PRESET_CHOICES = (QUICK_PRESET, "tiny (2 layers, 64 wide)", "small (4 layers, 128 wide)")
FARM, WORDNET = CORPUS_CHOICES["farm"], CORPUS_CHOICES["wordnet"]
CORPORA = {FARM.label: FARM, WORDNET.label: WORDNET}  # the first is the default
FARM_STEPS = 300  # per model on the farm corpus: BERT gets every fill-in probe right by then (bench_quick_training)
# What a corpus brings when picked: model size, steps per model, and whether ELECTRA trains too (it takes as
# long as the other two together, so the one-minute farm comparison leaves it to a tick).
CORPUS_DEFAULTS = {FARM.label: (QUICK_PRESET, FARM_STEPS, False),
                   WORDNET.label: ("tiny (2 layers, 64 wide)", COMPARE_STEPS, True)}

cur = require_current()
st.header("BERT vs GPT (and ELECTRA)")
model_line(cur.model)
st.markdown(
    "BERT is an encoder that reads a sentence **in both directions** and learns by filling in masked words; GPT "
    "is a decoder that reads **left to right** and learns by predicting the next word; ELECTRA keeps BERT's "
    "encoder but learns by spotting **replaced** words. Under the hood the difference is one attention mask and "
    "one loss: this page shows both on your text, then trains one small model with each objective, side by side."
)

# --- 1. the masks ----------------------------------------------------------------------------------
st.subheader("1. Two attention masks")
st.latex(r"A = \mathrm{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\qquad "
         r"M_{ij} = \begin{cases} 0 & \text{BERT: every } j \\ 0 \text{ if } j \le i,\ -\infty \text{ if } j > i"
         r" & \text{GPT (causal)} \end{cases}")
st.caption("Row i is query token i, column j the key it may read. A −∞ entry gets softmax weight exactly 0, so in "
           "GPT token i never reads a later token; the weight it would have given them goes to the earlier ones.")
mc = None
if not cur.text.strip():
    st.warning("The sidebar text is empty: type a sentence there to see the masks and the maps on it.")
else:
    try:
        mc = model_cached(cur, mask_comparison, cur.text, cur.text_pair)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
if mc is not None:
    for note in mc.notes:
        st.info(note)
    n = min(len(mc.tokens), TOKEN_CAP)
    if n < len(mc.tokens):
        st.caption(f"Your text has {len(mc.tokens)} tokens; the maps show the first {n}.")
    tokens = mc.tokens[:n]
    chart(fo.mask_pair_figure(mc.bidirectional[:n, :n], mc.causal[:n, :n], tokens,
                              ("BERT: every token sees every token", "GPT: token i sees tokens 0…i")),
          "bert vs gpt masks", key="bvg-masks")
    n_layers, n_heads = mc.attn_bidirectional.shape[:2]  # (L, nh, T, T)
    for k, hi in (("bvg_layer", n_layers), ("bvg_head", n_heads)):
        # First visit: the link's ?layer=&head= (1-based; the Lesson's last step links the head it showed).
        st.session_state.setdefault(k, url_index(k.removeprefix("bvg_"), hi))
        if st.session_state[k] >= hi:  # a smaller model than before
            st.session_state[k] = 0
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Layer", list(range(n_layers)), key="bvg_layer",
                         format_func=callbacks.one_based,
                         help="Layers 1–L as everywhere in the app (here, inside the model: no embeddings row).")
    head = c2.selectbox("Head", list(range(n_heads)), key="bvg_head",
                        format_func=callbacks.one_based)
    set_url(layer=layer + 1, head=head + 1)
    notebook_button(cur, "bert_vs_gpt", layer=layer, head=head, token_cap=TOKEN_CAP)
    bi, _ = crop(mc.attn_bidirectional, mc.tokens, n)
    ca, _ = crop(mc.attn_causal, mc.tokens, n)
    chart(fo.mask_pair_figure(bi[layer, head], ca[layer, head], tokens,
                              (f"{cur.model.name} as BERT reads it", "the same weights under GPT's mask")),
          "bert vs gpt attention", key="bvg-attn")
    st.caption(
        f"The same weights ({cur.model.name}, layer {layer + 1}, head {head + 1}) run twice: once with BERT's "
        "mask, once with GPT's. Under the causal mask the upper triangle is exactly 0 and each row is "
        "renormalised over the tokens up to it, so the first token can only attend to itself. (A model trained "
        "causally learns its own patterns; this shows what the mask alone does.)"
    )

# --- 2. what each prediction sees ---------------------------------------------------------------------
st.subheader("2. Which positions each prediction can see")
if mc is not None:
    n = min(len(mc.tokens), TOKEN_CAP)
    masks = [i for i, t in enumerate(mc.tokens[:n]) if t == cur.model.tokenizer.mask_token]
    if st.session_state.get("bvg_pos_for") != mc.tokens or st.session_state.get("bvg_pos", 0) >= n:
        st.session_state["bvg_pos"] = masks[0] if masks else min(2, n - 1)  # new text: its first [MASK]
    st.session_state["bvg_pos_for"] = mc.tokens
    pos = st.selectbox("Token to predict", list(range(n)), key="bvg_pos",
                       format_func=callbacks.labels(token_labels(mc.tokens[:n])))
    chart(fo.visibility_figure(visibility(n, pos), mc.tokens[:n]), "what each prediction sees", key="bvg-vis")
    st.caption(
        "Orange: the token being predicted; blue: what the model may read to predict it; grey: hidden. BERT "
        "replaces it by [MASK] and reads both sides; GPT guesses it at the position before, from the left only "
        "(it never sees a [MASK], and never the future); ELECTRA's discriminator reads everything, the token "
        "itself included, and only says whether it is the original."
    )

# --- 3. what each loss is computed on -----------------------------------------------------------------
st.subheader("3. What each objective's loss is computed on")
for obj in OBJECTIVE_LOSSES:
    st.latex(OBJECTIVE_LOSSES[obj])
if mc is not None:
    lt_text = cur.text
    if USER_MASK in cur.text:  # a typed [MASK] would be drawn as a word to recover and be GPT's next "word"
        lt_text = LOSS_EXAMPLE
        st.caption(f"Your text has a typed {USER_MASK}, which no objective reads as a word of the sentence, so "
                   f"this section uses “{LOSS_EXAMPLE}”")
    try:
        lt = loss_targets(cur.model, lt_text, seed=cur.seed)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
    else:
        n = min(len(lt.tokens), TOKEN_CAP)
        texts = {"mlm": [f"{a}→{b}" if a != b else b for a, b in zip(lt.mlm_input, lt.tokens)],
                 "clm": ["→" + t if t else "" for t in lt.clm_target], "rtd": ["real?"] * len(lt.tokens)}
        rows = {"mlm": lt.mlm[:n], "clm": [t is not None for t in lt.clm_target[:n]], "rtd": lt.rtd[:n]}
        rows = {k: pd.Series(v).to_numpy(dtype=bool) for k, v in rows.items()}
        chart(fo.loss_positions_figure(rows, {k: v[:n] for k, v in texts.items()}, lt.tokens[:n]),
              "where each loss is computed", key="bvg-loss-pos")
        share = lt.shares()
        st.caption(
            f"Filled cells carry a loss term, with its target. BERT (one seeded draw, the sidebar's seed): "
            f"{share['mlm']:.0%} of the tokens here (15% on average; '[MASK]→x' is what it reads → what it must "
            f"say). GPT: every position but the last ({share['clm']:.0%}), each predicting the next token. ELECTRA: "
            f"every token ({share['rtd']:.0%}) is labelled original or replaced, which is why it learns from more "
            "of each sentence."
        )
for obj, note in OBJECTIVE_NOTES.items():
    st.markdown(f"- **{OBJECTIVE_NAMES[obj]}**: {note}")

# --- 4. one run of each -------------------------------------------------------------------------------
st.subheader("4. Train one of each, side by side")
st.markdown(
    "Models of the same size, from the same random seed, on the same corpus, for the same number of steps: one "
    "with each objective. On the farm corpus (the default) a minute is enough to see the difference: its "
    "fill-in probes include blanks that only the words to their **right** decide (“the [MASK] barks at tom .”), "
    "which BERT learns to fill and GPT, reading left to right, cannot. The runs share this server's training "
    "slots and memory with everybody's Training runs, so they may wait for a slot."
)


# What a corpus brings when picked: its model size, steps and whether ELECTRA trains too (plain values, so the
# callback holds no page namespace: ui/callbacks.py).
CORPUS_SETTINGS = {k: dict(zip(("bvg_preset", "bvg_steps", "bvg_electra"), v)) for k, v in CORPUS_DEFAULTS.items()}


for k, v in zip(("bvg_preset", "bvg_steps", "bvg_electra"), CORPUS_DEFAULTS[FARM.label]):
    st.session_state.setdefault(k, v)
comp: ObjectiveComparison | None = st.session_state.get("bvg_runs")
locked = comp is not None
kind = st.radio("Corpus", list(CORPORA), key="bvg_corpus", horizontal=True, disabled=locked,
                on_change=callbacks.put_for_choice, args=("bvg_corpus", CORPUS_SETTINGS))
choice = CORPORA[kind]
if choice is FARM:
    st.caption(
        "Generated sentences about five animals, their sounds, food and homes (“the cow eats grass .”): a "
        "110-piece vocabulary and five regular sentence patterns, so a tiny model learns them in a minute. Real "
        "BERT and GPT need days on billions of words; the WordNet corpus shows how little a minute does there."
    )
c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
preset = c1.selectbox("Model size", PRESET_CHOICES, key="bvg_preset", disabled=locked)
steps = c2.number_input("Steps per model", 10, MAX_COMPARE_STEPS, step=10, key="bvg_steps", disabled=locked)
electra = c3.checkbox("Also ELECTRA", key="bvg_electra", disabled=locked,
                      help="A third run with ELECTRA's objective: about as long as the other two together.")
c4.metric("Seed (sidebar)", cur.seed if comp is None else comp.seed)
b1, b2 = st.columns(2)
label = "Train the models" if comp is None else ("Continue training" if not comp.done else "Trained")
train_clicked = b1.button(label, key="bvg_train", type="primary", width="stretch",
                          disabled=comp is not None and comp.done)
if b2.button("Reset", key="bvg_reset", width="stretch", disabled=comp is None):
    comp.reset()
    st.session_state.pop("bvg_runs", None)
    st.rerun()

if train_clicked:
    if comp is None:
        try:
            with st.spinner("Building the models…"):
                comp = ObjectiveComparison.build(
                    choice.tokenizer(), choice.lines(), preset, int(steps), cur.seed, choice.name,
                    base=choice.settings() if choice is FARM else None, cloze=choice is FARM,
                    objectives=("mlm", "clm", "rtd") if electra else ("mlm", "clm"), **shared())
        except bert_core.BertCoreError as e:
            st.error(f"Cannot start: {e}")
        else:
            st.session_state["bvg_runs"] = comp
    if comp is not None:
        bar = st.progress(comp.progress(), text="Training…")
        while not comp.done:
            who = comp.advance()
            if who is None:
                st.info("All training slots on this server are in use right now. Press **Continue training** in a "
                        "little while: the runs keep what they have learnt.")
                break
            bar.progress(comp.progress(), text=f"Training {OBJECTIVE_NAMES.get(who, who)}…")
        bar.empty()
        if comp.done:
            st.rerun()  # redraw the settings locked and the button as "Trained"

if comp is None:
    st.info("Press **Train the models** (about a minute for BERT and GPT on the farm corpus, a few minutes on "
            "WordNet or the small size).")
    st.stop()

st.markdown("**Loss curves** (each objective's own loss: their units differ, so each has its own panel)")
chart(fo.objective_losses_figure(comp.curves()), "three objectives loss", key="bvg-losses")
st.caption("BERT's and GPT's curves are cross-entropies over the vocabulary (start near ln V). ELECTRA's total is "
           "the generator's MLM loss plus 50 × the discriminator's binary cross-entropy (dotted).")
table(pd.DataFrame(comp.summary_rows()), "three runs", key="csv-bvg-runs", hide_index=True)
st.caption("Tokens seen: the real tokens of the batches each run read. The seed gives the three encoders the same "
           "first weights and the same first batch; after that each objective draws its batches, maskings and "
           "samples from its own random stream, so they read different (equally sized) batches. Training seconds: "
           "time inside training steps (GPT's is longest: it scores the whole vocabulary at every position).")

if comp.cloze:
    st.markdown("**Fill-in probes: what each model guesses for a blank, per token seen**")
    fig = fo.sample_efficiency_figure(comp.probe_curves(), 1 / len(ANIMALS))
    fig.update_yaxes(title_text="fill-in probes right")
    chart(fig, "fill-in probes", key="bvg-probe")
    st.caption(
        f"At step 0 and after every quarter of each run, each model fills the blank of {len(FARM_CLOZE)} fixed "
        "sentences (dropout off): BERT with its MLM head reading both sides, GPT with its next-token guess from the "
        "words left of the blank, ELECTRA with its generator. Half the blanks are decided by the words on their "
        "left, half only by the words on their right; the dashed line is one animal in five, a blind guess."
    )
    table(pd.DataFrame(comp.cloze_rows()), "fill-in probes", key="csv-bvg-cloze", hide_index=True)
    st.caption("Each model's top guess and its probability (✓ = the answer). Where the right side decides "
               "(“the [MASK] barks …”), GPT has only “the” to go on and can do no better than guess an animal; "
               "BERT reads “barks” after the blank. Where the left side decides, both can learn it.")
else:
    st.markdown("**Sample efficiency: what the encoder learnt per token seen**")
    p = probe_set()
    chart(fo.sample_efficiency_figure(comp.probe_curves(), 1 / len(p.labels)), "sample efficiency",
          key="bvg-probe")
    st.caption(
        f"At step 0 and after every quarter of each run, the encoder is frozen and a linear classifier (ridge "
        f"regression: least squares with an L2 penalty, on the mean of its last hidden states) learns which of "
        f"{len(p.labels)} topics a WordNet definition is about "
        f"from {PROBE_TRAIN} fixed examples; the accuracy is on {PROBE_VALID} other fixed examples. Measured here, "
        "now: ELECTRA's claim is that RTD learns more per token than MLM because every token carries a loss. On "
        "runs this short the differences can be within the noise of one seed; compare the curves, not single points."
    )

if not comp.done:
    st.info("The runs are not finished: press **Continue training**.")
    st.stop()

st.markdown("**What each model can do now**")
farm = comp.cloze  # the farm corpus: examples in its words
names = ["Fill a mask (BERT)", "Continue a sentence (GPT)"] + (["Spot a replaced word (ELECTRA)"]
                                                               if "rtd" in comp.sessions else [])
t1, t2, *t3 = st.tabs(names)
with t1:
    fill = st.text_input("A sentence with [MASK]", FARM_CLOZE[0].sentence if farm else "the cat sat on the [MASK] .",
                         key="bvg_fill", max_chars=300)
    try:
        tr = bert_core.analyze(comp.model("mlm"), fill, embeddings=False, hidden_states=False, attentions=False)
        left = bert_core.analyze(comp.model("clm"), fill, embeddings=False, hidden_states=False,
                                 attentions=False).predictions  # a causal model: each [MASK] from its left
    except bert_core.BertCoreError as e:
        st.warning(str(e))
    else:
        if not tr.predictions:
            st.info("Type [MASK] where a word should be guessed.")
        rows = [{"[MASK] at": f"{p_} {tr.tokens[p_]}",
                 "BERT (both sides)": ", ".join(f"{t} {q:.2f}" for t, q in top[:5]),
                 "GPT (left only)": ", ".join(f"{t} {q:.2f}" for t, q in left.get(p_, [])[:5])}
                for p_, top in sorted(tr.predictions.items())]
        if rows:
            table(pd.DataFrame(rows), "fill a mask", key="csv-bvg-fill", hide_index=True)
        st.caption("BERT fills each [MASK] reading the words on both sides; GPT can only use the words to its left "
                   "(its guess for the slot is its next-token prediction just before it).")
with t2:
    prompt = st.text_input("A beginning", FARM_PROMPTS[0] if farm else "the cat", key="bvg_prompt", max_chars=300)
    try:
        g = bert_core.generate(comp.model("clm"), prompt, max_new_tokens=15)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
    else:
        st.code(f"{prompt} … {g.text}", language=None, wrap_lines=True)
        table(pd.DataFrame([{"step": k + 1, "token": t, "probability": round(q, 3)} for k, (t, q) in
                            enumerate(g.steps)]), "greedy continuation", key="csv-bvg-gen", hide_index=True)
        st.caption("Greedy decoding: at each step GPT appends its most probable next token and reads again. BERT "
                   "cannot do this: nothing in its training asked for the word after the last one.")
for tab in t3:  # ELECTRA's tab, when it was trained
    with tab:
        spot = st.text_input("A sentence, with one word swapped for an odd one",
                             "the dog meows ." if farm else "the cat sat on the milk .", key="bvg_spot", max_chars=300)
        try:
            r = bert_core.replaced_token_probs(comp.model("rtd"), spot)
        except bert_core.BertCoreError as e:
            st.warning(str(e))
        else:
            chart(fo.replaced_figure(r.tokens, r.probs), "replaced token probabilities", key="bvg-rtd")
            st.caption("P(replaced) = σ(discriminator logit) for every token; above 0.5 (red) the discriminator "
                       "thinks the token is not the original. It was trained on the generator's swaps, so a small "
                       "model catches the swaps that break the sentence most.")
