"""One notebook builder per page, beside the settings that page reads (`PAGES`).

A builder returns (imports, cells): the imports join the setup cell, the cells recompute the page's view with
the functions the page itself calls, draw its figures with bert_core.figures and print its numbers.
Settings are named in the notebook in capitals (LAYER, HEAD, K…); layers and heads are 0-based there,
as in Python, where the page counts from 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .cells import FALLBACK_MODEL as FALLBACK
from .cells import View, code, md, setting_lines, show_table
from .task_pages import finetuning, neighbours, probing, qa, similarity, tagging


@dataclass(frozen=True)
class PageSpec:
    """A page's notebook: its title, the settings it reads ({name: what it is}) and its builder."""

    title: str
    settings: dict[str, str]
    build: Callable[[View], tuple[str, list]]

    def check(self, settings: dict) -> None:
        """The page passed exactly the settings this spec names (so page and notebook cannot drift apart)."""
        if set(settings) != set(self.settings):
            raise ValueError(f"{self.title}: settings {sorted(settings)} != {sorted(self.settings)}")


def tokenization(v: View):
    imports = "from bert_core.figures.tokens import pieces_per_word_figure\nfrom bert_core.inspect import input_tables"
    return imports, [
        md("## 3. Tokens",
           "BERT never sees letters or whole words: it sees **WordPiece tokens** from a fixed vocabulary. The text is "
           "normalised and split into words at spaces and punctuation; each word is cut greedily, longest match "
           "first, into pieces the vocabulary knows (a piece inside a word carries `##`). `[CLS]` starts the input "
           "and `[SEP]` closes each sentence. (RoBERTa and ALBERT use byte-level BPE and SentencePiece instead.)"),
        code("""
tok = model.tokenizer
trace = bert_core.analyze(model, TEXT, PAIR, embeddings=False, hidden_states=False, attentions=False)
if trace.truncation is not None:
    print(trace.truncation.message)
counts = input_tables.token_counts(trace, tok.all_special_ids, tok.unk_token_id)
print({**counts, "max tokens": model.max_length})
tokens = pd.DataFrame(input_tables.token_rows(trace, tok.all_special_ids, tok.unk_token_id))
tokens = tokens.astype({"word index": "Int64"})
""" + show_table("tokens", "Every token")),
        md("## 4. How each word was split", "Each word, the pieces it became, and (WordPiece) how many look-ups "
           "the greedy longest-match-first search made."),
        code("""
sentences = [("A", trace.text)] + ([("B", trace.text_pair)] if trace.text_pair is not None else [])
splits, rows = [], []
for name, sentence in sentences:
    s = input_tables.split_words(tok, sentence)
    splits += s
    rows += input_tables.word_split_rows(s, tok.unk_token, set(tok.specials.values()), sentence=name)
words = pd.DataFrame(rows)
if tok.scheme != "wordpiece":
    words = words.drop(columns=["look-ups"], errors="ignore")
""" + show_table("words", "Word splits") + """
pieces_per_word_figure(input_tables.pieces_per_word(splits)).show()
"""),
    ]


def embeddings(v: View):
    imports = ("from bert_core.figures.embeddings import embedding_heatmap, norms_figure, position_similarity_figure\n"
               "from bert_core.inspect import input_tables")
    return imports, [
        md("## 3. The input vectors",
           "Each token t becomes one vector of size H: three rows of three learned tables added (which token, which "
           "sentence, which position), then LayerNorm:",
           "",
           r"$$x_t = \mathrm{LayerNorm}\big(E_{tok}[\mathrm{id}_t] + E_{seg}[s_t] + E_{pos}[t]\big)$$",
           "",
           "(DistilBERT has no segment table; ALBERT's tables are E wide and a learned matrix lifts them to H.)"),
        code("""
trace = bert_core.analyze(model, TEXT, PAIR, hidden_states=False, attentions=False)
labels = input_tables.token_labels(trace.tokens)
two_segments = cfg.type_vocab_size >= 2 and model.tokenizer.segments
segments = trace.token_type_ids if PAIR is not None and two_segments else None
parts = input_tables.embedding_parts(trace.embeddings)
for part, values in parts.items():  # (T, H) each
    embedding_heatmap(values, labels, N_DIMS, input_tables.EMBEDDING_TITLES[part], segments).show()
"""),
        md("## 4. How long is each vector?", "The L2 norm of each token's vector at each of the steps, with each "
           "row's mean and standard deviation before and after LayerNorm."),
        code("""
norms_figure(input_tables.token_norms(trace.embeddings), labels, input_tables.EMBEDDING_TITLES, segments).show()
""" + show_table("pd.DataFrame(input_tables.norm_rows(trace))", "Embedding norms")),
        md("## 5. What the position embeddings learned", "cos(E_pos[i], E_pos[j]) for the first N_POS positions."),
        code("position_similarity_figure(bert_core.position_similarity(model, N_POS)).show()"),
    ]


def masking(v: View):
    imports = ("from IPython.display import HTML, display\n\n"
               "from bert_core.figures.masking import chips_html, legend_html, position_figure, rates_figure\n"
               "from bert_core.inspect.masking_view import draw_loss, draw_rows, masking_draw, masking_stats, "
               "stats_rows")
    return imports, [
        md("## 3. One draw",
           "Each ordinary token is **selected** with probability p (BERT: 15%). A selected token becomes "
           "**[MASK]** 80% of the time, a **random token** 10% and stays **unchanged** 10%; the model must recover "
           "the original at every selected position. The draw comes from `torch.Generator().manual_seed(…)` of the "
           "seed and the draw number: the same pair gives the same draw.",
           "",
           r"$$\text{loss} = -\frac{1}{|S|}\sum_{i \in S} \log p(x_i \mid \tilde{x})$$"),
        code("""
view = masking_draw(model, TEXT, PAIR, seed=SEED, draw=DRAW, mlm_probability=P, whole_word=WHOLE_WORD)
display(HTML(chips_html(view.inp.tokens, view.corrupted_tokens, view.kinds) + legend_html()))
p_orig, loss = draw_loss(model, view)
rows = pd.DataFrame(draw_rows(view, p_orig if model.has_mlm else None))
if not WHOLE_WORD:
    rows = rows.drop(columns=["word id"])
""" + show_table("rows", "The draw") + """
print("MLM loss on this draw:", None if loss is None else round(loss, 4), f"({view.n_selected} selected)")
"""),
        md("## 4. Many draws", "Over N draws the share of selected tokens approaches p and the [MASK] / random / "
           "kept split 80 / 10 / 10, within the ±3σ bars."),
        code("""
stats = masking_stats(model, TEXT, PAIR, seed=SEED, n_draws=N_DRAWS, mlm_probability=P, whole_word=WHOLE_WORD)
print(stats.counts)
if stats.counts["eligible"]:
    rates_figure(stats.names, stats.observed, stats.expected, stats.sigma, stats.n_draws).show()
    position_figure(stats.tokens, stats.position_rate, stats.special, stats.mlm_probability,
                    stats.position_sigma, stats.n_draws).show()
""" + show_table("pd.DataFrame(stats_rows(stats))", "Masking rates")),
    ]


def attention(v: View):
    imports = "from bert_core.figures import attention as fa"
    return imports, [
        md("## 3. One head's weights",
           "Each head projects every token to a query q, a key k and a value v (size d_k = H / heads) and mixes "
           "the values with the weights",
           "",
           r"$$A = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right)$$",
           "",
           "Row i is how query token i spreads its attention over the keys j: every row sums to 1."),
        code("""
trace = bert_core.analyze(model, TEXT, PAIR, embeddings=False, hidden_states=False)
n = fa.capped(len(trace.tokens), fa.ATTENTION_TOKEN_CAP)  # the page crops long inputs to their first n tokens
att, tokens = fa.crop(trace.attentions, trace.tokens, n)  # (L, heads, n, n)
zmax = 1.0 if FIXED else None
if AVERAGE:
    fa.head_average_figure(att[LAYER], tokens, LAYER, zmax=zmax).show()
    weights = att[LAYER].mean(axis=0)  # (n, n)
else:
    fa.head_heatmap(att[LAYER, HEAD], tokens, f"Layer {LAYER + 1}, head {HEAD + 1}", zmax=zmax).show()
    weights = att[LAYER, HEAD]  # (n, n)
fa.layer_grid(att[LAYER], tokens, LAYER, zmax=zmax).show()
labels = [f"{i} {t}" for i, t in enumerate(tokens)]
""" + show_table("pd.DataFrame(weights, index=labels, columns=labels).reset_index(names='query')",
                 "Attention weights (rows: queries, columns: keys)")),
        md("## 4. Which heads do what", "Each head's map summed up: the mean weight on the previous token, on "
           "[SEP], the entropy of its rows, and more. Rollout (Abnar & Zuidema, 2020) follows attention through the "
           "layers: $R_l = \\mathrm{rownorm}(\\tfrac12\\overline{A}_l + \\tfrac12 I)\\,R_{l-1}$."),
        code("""
fa.special_share_figure(fa.special_share(trace.attentions, trace.special_tokens_mask)).show()
stats = bert_core.head_stats(trace)
fa.head_stats_figure(stats, "prev").show()
stats_table = pd.DataFrame(stats).round(4).assign(layer=lambda d: d["layer"] + 1, head=lambda d: d["head"] + 1)
""" + show_table("stats_table", "Head statistics (layers and heads from 1)") + """
rollout = bert_core.attention_rollout(trace.attentions)  # (L, T, T)
fa.head_heatmap(rollout[-1, :n, :n], tokens, f"Rollout after layer {len(rollout)}", zmax=None).show()
"""),
    ]


def predictions(v: View):
    imports = ("from bert_core.figures.predictions import candidates_figure, nsp_figure\n"
               "from bert_core.inspect.masking_view import default_word, mask_context, mask_word, rank_of, words_of")
    return imports, [
        md("## 3. The guesses at every [MASK]",
           "At a [MASK] position the final hidden state h becomes a probability for every piece of the vocabulary:",
           "",
           r"$$p = \mathrm{softmax}\big(W_e\,\mathrm{LN}(\mathrm{gelu}(W h + b)) + b_v\big)$$",
           "",
           "W_e is the word-embedding matrix (tied to the input side). The bars show the K most likely. Without a "
           "[MASK] in the text, the page hides one word (WORD, counted from 0) and BERT guesses it from both sides."),
        code("""
trace = bert_core.analyze(model, TEXT, PAIR, top_k=K, embeddings=False, hidden_states=False, attentions=False)
text, hidden = TEXT, None
if model.has_mlm and not trace.predictions:  # no [MASK]: hide one word, as the page does
    words = words_of(trace, 0)
    w = words[default_word(words) if WORD is None else WORD]
    text = mask_word(TEXT, w.span, model.tokenizer.mask_token)
    print("Masked:", text)
    trace = bert_core.analyze(model, text, PAIR, top_k=K, embeddings=False, hidden_states=False, attentions=False)
    hidden = w
rows = []
for pos, cands in trace.predictions.items():
    if hidden is not None and trace.sequence_ids[pos] != 0:
        continue
    target = rank_of(cands, hidden.pieces)[0] if hidden is not None else None
    candidates_figure(cands, f"Position {pos}: {mask_context(trace.tokens, pos)}", highlight=target).show()
    rows += [{"position": pos, "rank": r + 1, "token": t, "p": p} for r, (t, p) in enumerate(cands)]
    if hidden is not None:
        break
""" + show_table("pd.DataFrame(rows)", "Top-K candidates") + """
if PAIR is not None and model.has_nsp:
    p_is, p_not = trace.nsp
    nsp_figure(p_is, p_not).show()
    print(f"NSP: P(IsNext) = {p_is:.4f}, P(NotNext) = {p_not:.4f}")
"""),
    ]


def layers(v: View):
    imports = "from bert_core.figures import layers as fl"
    return imports, [
        md("## 3. The residual stream",
           "Every layer *adds* to each token's vector and renormalises: first what attention gathered, then what "
           "the feed-forward block computes:",
           "",
           r"$$h_1 = \mathrm{LayerNorm}\big(x + \mathrm{Attention}(x)\big), \qquad "
           r"x' = \mathrm{LayerNorm}\big(h_1 + \mathrm{FFN}(h_1)\big)$$"),
        code("""
stream = bert_core.residual_stream(model, TEXT, PAIR, lens_top_k=10, pca=False)
tokens, L = stream.tokens, cfg.num_hidden_layers
n = min(len(tokens), fl.STREAM_TOKEN_CAP)
states = fl.state_labels(L + 1)
fl.layer_token_heatmap(stream.norms[:, :n], tokens[:n], states, "‖h‖ per token and state", "‖h‖").show()
n_pair = min(len(tokens), fl.PAIR_TOKEN_CAP)
fl.similarity_heatmap(stream.token_similarity[STATE, :n_pair, :n_pair], tokens[:n_pair],
                      f"Token similarity at state {states[STATE]}").show()
""" + show_table("pd.DataFrame(stream.norms[:, :n], index=states, columns=[f'{i} {t}' for i, t in "
                 "enumerate(tokens[:n])]).reset_index(names='state')", "‖h‖ per state and token")),
        md("## 4. The logit lens", "The MLM head applied to every state of a [MASK], not only the last (it was "
           "trained on the last layer only, so early reads are imperfect)."),
        code("""
lens = stream.lens
rows = []
for pos in (lens.mask_positions if model.has_mlm else []):
    top = [cands[:K] for cands in lens.predictions[pos]]  # (L+1) x K
    fl.lens_figure(top, f"[MASK] at position {pos}: top {K} per state", lens.final_token[pos]).show()
    rows += [{"position": pos, "state": states[s], "rank": r + 1, "token": t, "p": p}
             for s, cands in enumerate(top) for r, (t, p) in enumerate(cands)]
""" + show_table("pd.DataFrame(rows)", "The logit lens")),
    ]


def inside_layer(v: View):
    imports = "from bert_core.figures import layers as fl\nfrom bert_core.inspect.inside_layers import follow_token"
    return imports, [
        md("## 3. One token through one layer",
           "The query token's input x, its query, key and value, the head's scores and weights, the context, "
           "then the residual sums, LayerNorm and the feed-forward block:",
           "",
           r"$$q = W_Q x + b_Q,\quad a = \mathrm{softmax}\!\left(\frac{q K^\top}{\sqrt{d_k}}\right),\quad "
           r"c = a V,\quad h_1 = \mathrm{LayerNorm}(x + W_O c + b_O)$$"),
        code("""
s = bert_core.layer_steps(model, TEXT, LAYER, PAIR)
p = follow_token(s, HEAD, TOKEN)
tokens = s.tokens
dk = cfg.hidden_size // cfg.num_attention_heads
nk = min(len(tokens), fl.KEY_CAP)
fl.vector_strip({"x": p.x}, f"x  (‖x‖ = {float((p.x ** 2).sum()) ** 0.5:.3f})").show()
fl.attention_steps_figure(p.dots[:nk], p.scores[:nk], p.weights[:nk], tokens[:nk], dk).show()
fl.vector_strip({"h1": p.h1, "ffn_out": p.ffn_out, "h1 + ffn_out": p.resid2, "x' = LayerNorm(…)": p.out},
                "The second residual step").show()
steps = pd.DataFrame({"key": [f"{j} {t}" for j, t in enumerate(tokens)], "q·k": p.dots, "score": p.scores,
                      "weight": p.weights})
""" + show_table("steps", "Query token's scores and weights over every key")),
    ]


def heads(v: View):
    imports = "from bert_core.figures import heads as fh"
    cells = [
        md("## 3. Knock out a head",
           "Knocking head h of layer l out sets its context vector to zero before W_O; everything after is "
           "recomputed. What the [MASK]'s top guess loses:",
           "",
           r"$$\mathrm{importance}(l, h) = \frac{1}{|M|}\sum_{i \in M}\Big[\log p(y_i \mid x) - "
           r"\log p\big(y_i \mid x;\ c^{(l)}_h = 0\big)\Big]$$"),
        code("""
rows = []
try:
    ko = bert_core.knock_out(model, TEXT, PAIR, ((LAYER, HEAD),))
except bert_core.BertCoreError as e:  # e.g. no [MASK] in the text: the page says the same
    print(e)
    ko = None
for pos in (sorted(ko.guesses)[:4] if ko is not None else []):
    tokens, p_full, p_without = ko.guesses[pos]
    fh.without_head_figure(tokens, p_full, p_without, f"without layer {LAYER + 1}, head {HEAD + 1}").show()
    rows += [{"position": pos, "token": t, "p full": a, "p without": b} for t, a, b in zip(tokens, p_full, p_without)]
""" + show_table("pd.DataFrame(rows)", "With and without the head")),
    ]
    if v.settings.get("clean") is None:  # a Lesson step's notebook: the knock-out only
        return imports, cells
    return imports, [
        *cells,
        md("## 4. Activation patching", "Run the clean sentence, the corrupt one, and the corrupt one with one "
           "layer's vector at one position taken from the clean run: where does the target word's probability "
           "come back?",
           "",
           r"$$\mathrm{grid}[l, t] = p\big(\text{target} \mid \text{corrupt};\ h_l[t] := h^{\text{clean}}_l[t]\big)$$"),
        code("""
try:
    r = bert_core.patch_activations(model, CLEAN, CORRUPT, TARGET)
except bert_core.BertCoreError as e:  # the page says the same
    print(e)
else:
    fh.patching_figure(r.grid, r.tokens, r.target, r.mask_position).show()
    print("target:", r.target)
"""),
    ]


def bert_vs_gpt(v: View):
    imports = ("from bert_core.figures import objectives as fo\nfrom bert_core.figures.attention import crop\n"
               "from bert_core.inspect.objectives_view import mask_comparison")
    return imports, [
        md("## 3. One mask, two models",
           "BERT lets every token attend to every token; GPT's causal mask hides the later ones:",
           "",
           r"$$A = \mathrm{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big),\quad M_{ij} = 0 \text{ (BERT)},\quad "
           r"M_{ij} = -\infty \text{ if } j > i \text{ (GPT)}$$",
           "",
           "The same weights run twice, once under each mask."),
        code("""
mc = mask_comparison(model, TEXT, PAIR)
for note in mc.notes:
    print(note)
n = min(len(mc.tokens), TOKEN_CAP)
tokens = mc.tokens[:n]
fo.mask_pair_figure(mc.bidirectional[:n, :n], mc.causal[:n, :n], tokens,
                    ("BERT: every token sees every token", "GPT: token i sees tokens 0…i")).show()
bi, _ = crop(mc.attn_bidirectional, mc.tokens, n)  # (L, heads, n, n)
ca, _ = crop(mc.attn_causal, mc.tokens, n)
fo.mask_pair_figure(bi[LAYER, HEAD], ca[LAYER, HEAD], tokens,
                    (f"{model.name} as BERT reads it", "the same weights under GPT's mask")).show()
labels = [f"{i} {t}" for i, t in enumerate(tokens)]
""" + show_table("pd.DataFrame(bi[LAYER, HEAD], index=labels, columns=labels).reset_index(names='query')",
                 "BERT's weights (rows: queries)") + "\n"
             + show_table("pd.DataFrame(ca[LAYER, HEAD], index=labels, columns=labels).reset_index(names='query')",
                          "The same head under GPT's mask")),
    ]


def compare(v: View):
    imports = "from bert_core.inspect.compare import agreement_rows, run_model, summary_rows, token_table"
    return imports, [
        md("## 3. The same text through several models",
           "Each model reads the text through its **own** tokenizer (WordPiece `##`, byte-level BPE `Ġ`, "
           "SentencePiece `▁`), and each typed [MASK] becomes its own mask token. Top-k overlap = |A ∩ B| / |A ∪ B| "
           "of two models' top-k word sets. (A model trained in the app's session stays there: `\"session\"` "
           f"below loads the bundled `{FALLBACK}` in its place.)"),
        code(f"""
models = [bert_core.load_model({FALLBACK!r} if name == "session" else name) for name in MODELS]
runs = [run_model(m, TEXT, top_k=K) for m in models]
names = [r.name for r in runs]
for i, r in enumerate(runs):  # two models may share a display name: number them, as the page does
    if names.count(r.name) > 1:
        runs[i] = type(r)(**{{**r.__dict__, "name": f"{{r.name}} #{{i + 1}}"}})
print(pd.DataFrame(summary_rows(runs)).to_string(index=False))  # its times are this machine's
print()
""" + show_table("pd.DataFrame(token_table(runs))", "Tokens side by side") + """
n_masks = min((len(r.predictions) for r in runs if r.has_mlm), default=0)
rows = [{"model": r.name, "mask": j + 1, "candidate": t, "p": p}
        for r in runs if r.has_mlm for j in range(n_masks) for t, p in r.predictions[j]]
""" + show_table("pd.DataFrame(rows)", "Guesses at each [MASK]") + """
if n_masks:
""" + "    " + show_table("pd.DataFrame(agreement_rows(runs))", "Agreement").replace("\n", "\n    ")),
    ]


def lesson(v: View):
    """A Lesson step: its words and formula, its question computed by bert_core.lesson, then the full page's view."""
    s, prose = v.settings, v.prose
    module, name = s["question"].rsplit(".", 1)
    cells = [
        md(f"## 3. Step {s['step']}: {prose['title']}", "", prose["explain"],
           *(["", f"$${prose['formula']}$$"] if prose.get("formula") else [])),
        md("### The step's question", "Guess first, then run the cell: the answer is computed from the model."),
        code(f"""
from {module} import {name}

q = {name}(model, *QUESTION_ARGS, **QUESTION_KWARGS)
print(q.prompt)
for i, choice in enumerate(q.choices):
    print(f"  {{i + 1}}. {{choice}}")
"""),
        code("""
print("The model's answer:", q.choices[q.answer])
print(q.reveal)
"""),
    ]
    page = s["page"]
    if page in PAGES and page not in ("lesson", "finetuning"):  # Fine-tuning's notebook is a run, not this sentence
        spec = PAGES[page]
        spec.check(s["page_settings"])
        imports, body = spec.build(v)
        cells.append(md(f"## 4. The full {spec.title} page on this step's sentence",
                        "The same computation as the app's page, with its default settings for this model."))
        cells.append(code(imports + "\n\n" + setting_lines(s["page_settings"], spec.settings)))
        # The page's own sections (3., 4., ...) follow the step's 3 and 4: numbered on from 5.
        cells += [_renumbered(c, 2) for c in body]
    return "", cells


def _renumbered(cell, by: int):
    """A Markdown cell whose "## N." heading becomes "## N+by."; any other cell as it is."""
    if cell.cell_type == "markdown":
        cell.source = re.sub(r"^## (\d+)\.", lambda m: f"## {int(m.group(1)) + by}.", cell.source)
    return cell


PAGES: dict[str, PageSpec] = {
    "tokenization": PageSpec("Tokenization", {}, tokenization),
    "embeddings": PageSpec("Embeddings", {"n_dims": "hidden dimensions shown (the first N)",
                                          "n_pos": "positions in the position-similarity map"}, embeddings),
    "masking": PageSpec("Masking", {"p": "mask probability (BERT: 0.15)", "whole_word": "whole-word masking",
                                    "draw": "draw number", "n_draws": "draws for the rates"}, masking),
    "attention": PageSpec("Attention", {"layer": "layer, from 0 (the page's layer LAYER + 1)",
                                        "head": "head, from 0 (the page's head HEAD + 1)",
                                        "average": "average over the layer's heads",
                                        "fixed": "colour scale fixed to 0..1"}, attention),
    "predictions": PageSpec("Predictions", {"k": "candidates per [MASK]",
                                            "word": "the word hidden when the text has no [MASK] (None: the page's "
                                                    "default)"}, predictions),
    "layers": PageSpec("Layers", {"state": "hidden state of the token-similarity map (0: embeddings)",
                                  "k": "logit-lens candidates per state"}, layers),
    "inside_layer": PageSpec("Inside a layer", {"layer": "layer, from 0", "head": "head, from 0",
                                                "token": "position of the query token"}, inside_layer),
    "heads": PageSpec("Heads & patching", {"layer": "knocked-out head's layer, from 0",
                                           "head": "knocked-out head, from 0", "clean": "patching: clean sentence",
                                           "corrupt": "patching: corrupt sentence", "target": "patching: target word"},
                      heads),
    "bert_vs_gpt": PageSpec("BERT vs GPT", {"layer": "layer, from 0", "head": "head, from 0",
                                            "token_cap": "tokens shown"}, bert_vs_gpt),
    "compare": PageSpec("Compare", {"models": "the models compared (\"session\": one trained in the app)",
                                    "k": "candidates per [MASK]"}, compare),
    "similarity": PageSpec("Sentence similarity", {"sentence_model": "all-MiniLM-L6-v2 instead of MODEL",
                                                   "pooling": "mean, cls, pooler or max",
                                                   "sentences": "the sentences compared"}, similarity),
    "neighbours": PageSpec("Neighbours", {"n_sent": "corpus sentences read", "word": "the text's word (from 0)",
                                          "layer": "layer (0: the embeddings' output)", "k": "neighbours shown"},
                           neighbours),
    "probing": PageSpec("Probing", {"task": "part of speech or word sense", "n_train": "training sentences"},
                        probing),
    "finetuning": PageSpec("Fine-tuning", {"task": "the built-in WordNet task (None: the page's CSV)",
                                           "base": "the model fine-tuned (MODEL, \"bundled\", or \"session\")",
                                           "recipe": "the run's FineTuneConfig, field by field",
                                           "steps": "stop after this many steps (None: the whole run)"}, finetuning),
    "tagging": PageSpec("Tagging", {"head": "whose tagger: \"sidebar\" (the model's own head), \"session\" or "
                                            "\"train\" (the page's run, trained here)",
                                    "train": "the page's run: its task's size, base, recipe and steps"},
                        tagging),
    "qa": PageSpec("Question answering", {"question": "the question (TEXT is the passage)",
                                          "top_k": "spans shown", "max_tokens": "longest answer (tokens)",
                                          "head": "whose reader: \"sidebar\", \"session\" or \"train\"",
                                          "train": "the page's run: its task's size, base, recipe and steps"}, qa),
    "lesson": PageSpec("Lesson", {"step": "the Lesson's step (from 1)",
                                  "question": "the function that computes the step's question",
                                  "question_args": "its inputs after the model", "question_kwargs": "and by name",
                                  "page": "the full page of this step",
                                  "page_settings": "that page's settings (below)"}, lesson),
}

# What each page shows that its notebook does not recompute (said in the notebook's last cell).
LEFT_OUT = {
    "tokenization": "the highlighted text and the look-ups of one word (`input_tables.step_rows`)",
    "embeddings": "the sentence A / B table (`input_tables.segment_rows`)",
    "attention": ("bertviz's head and model views (`bert_core.inspect.bertviz_html`), the heads finder and the "
                  "rollout of one query row"),
    "predictions": ("salience (`bert_core.salience`), the three filling strategies (`bert_core.fill_masks`) "
                    "and the pseudo-log-likelihood (`bert_core.pseudo_log_likelihood`)"),
    "layers": ("the change and update-size maps, the same word in two contexts (`bert_core.same_word`), the "
               "PCA paths and the [CLS] / pooler vectors"),
    "inside_layer": ("the query, key and value strips, the context vectors and the feed-forward block's charts "
                     "(their numbers are all in `p`, the `follow_token` result)"),
    "heads": ("the ranking of every head and the pruning curve (`bert_core.head_importance`, "
              "`bert_core.pruning_curve`)"),
    "bert_vs_gpt": ("which positions each prediction sees, the loss positions, and the three objectives "
                    "trained live"),
    "similarity": "the AUC of each pooling on the WordNet pairs",
    "neighbours": "the PCA of one word's vectors across the corpus",
    "finetuning": ("the bag-of-words baseline (`bert_core.bow_baseline`), the same network untrained "
                   "(`bert_core.untrained_copy`), the PCA of the pooled vectors and the sample-efficiency figure"),
    "tagging": "fine-tuning a tagger (the page's live run) and its curves",
    "qa": "fine-tuning a reader (the page's live run) and its curves",
}
