"""Notebook builders for the pages that read a corpus or a task head: Sentence similarity, Neighbours, Probing,
Tagging and Question answering (the text-only pages' builders are in pages.py, which lists them all in `PAGES`)."""

from __future__ import annotations

from .cells import View, code, indent, md, show_table

STORED = ("On the machine that runs the app, the page keeps what it computed on disk under the model's fingerprint "
          "(`bert_core.inspect.stored`: `~/.cache/bert-explorer/results`, or `BERT_EXPLORER_RESULTS_DIR`); the next "
          "cell then reads the very same arrays back in a second. Anywhere else it computes them: {cost}. "
          "`store=False` always recomputes (the numbers are the same).")


def similarity(v: View):
    imports = ("from bert_core.figures.similarity import cosine_heatmap\n"
               "from bert_core.inspect.sentences import cosine_matrix, nearest\n"
               "from bert_core.model.loading import SENTENCE_MODEL_NAME\n"
               "from bert_core.finetune.tasks import search_sentences")
    return imports, [
        md("## 3. Sentence vectors and their cosines",
           "The last layer's token vectors h₁…h_T are pooled into one vector e per sentence; two sentences are as "
           "similar as the cosine of their vectors:",
           "",
           r"$$e_{\text{mean}} = \frac{1}{T}\sum_{t=1}^{T} h_t \qquad "
           r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}$$",
           "",
           "A BERT pre-trained only with masked words was never asked to make e mean anything; Sentence-BERT "
           "(Reimers & Gurevych, 2019) fine-tunes the encoder so that it does (all-MiniLM-L6-v2 is such a model)."),
        code("""
sim_model = bert_core.load_model(SENTENCE_MODEL_NAME) if SENTENCE_MODEL else model
e = bert_core.sentence_embedding(sim_model, tuple(SENTENCES), POOLING, True)  # (N, H), unit length
cos = cosine_matrix(e)  # (N, N)
cosine_heatmap(cos, SENTENCES, f"cos between {POOLING}-pooled vectors ({sim_model.name})").show()
""" + show_table("pd.DataFrame(cos, columns=[str(i + 1) for i in range(len(SENTENCES))])",
                 "Cosines (row i, column j: sentences i and j, from 1)")),
        md("## 4. Search", "The text is the query; the corpus is the built-in WordNet example sentences."),
        code("""
corpus = tuple(search_sentences())
corpus_e = bert_core.sentence_embedding(sim_model, corpus, POOLING, True)
q = bert_core.sentence_embedding(sim_model, (TEXT.strip()[:2000],), POOLING, True)[0]
hits = nearest(q, corpus_e, list(corpus), k=5)
""" + show_table("pd.DataFrame([{'rank': i + 1, 'cosine': round(h.cosine, 4), 'sentence': h.text} "
                 "for i, h in enumerate(hits)])", "Nearest sentences")),
    ]


def neighbours(v: View):
    imports = ("from bert_core.figures.probing import layer_names, tag_histogram_figure\n"
               "from bert_core.inspect.neighbours import build_index, nearest_words, neighbour_rows, query_words\n"
               "from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task")
    return imports, [
        md("## 3. The corpus words nearest a word of the text",
           "Every word of a corpus of held-out Brown sentences is read once, in its own sentence, and its vector kept "
           "at every layer (a word's vector is its first piece's hidden state); the text's word is compared with all "
           "of them by cosine (exBERT's search, Hoover et al. 2020):",
           "",
           r"$$\cos(q, w) = \frac{h^{l}_q \cdot h^{l}_w}{\lVert h^{l}_q\rVert\,\lVert h^{l}_w\rVert}$$",
           "",
           STORED.format(cost="one forward pass over the corpus, a minute or more on two cores")),
        code("""
pos = builtin_pos_task()
index = build_index(model, pos.valid_words[:N_SENT], pos.valid_tags[:N_SENT], UNIVERSAL_TAGS)  # one pass
q = query_words(model, TEXT)
res = nearest_words(index, q.vectors[LAYER, WORD], LAYER, K)
names = layer_names(cfg.num_hidden_layers + 1)
rows = neighbour_rows(index, res)
print("Word:", q.words[WORD], "at layer", names[LAYER])
tag_histogram_figure(index.tag_names, res.tag_counts, f"Parts of speech of the {K} neighbours "
                     f"(layer {names[LAYER]})").show()
""" + show_table("pd.DataFrame(rows)", "Nearest corpus words")),
    ]


def probing(v: View):
    imports = ("from bert_core.figures.probing import accuracy_by_layer_figure, layer_names\n"
               "from bert_core.probe.probing import ROWS, probe_layers")
    return imports, [
        md("## 3. A linear probe at every layer",
           "Freeze the model, take every word's vector at one layer, and train a linear probe (multinomial "
           "logistic regression) to read the word's part of speech or sense, on sentences it never saw (Tenney et "
           "al. 2019). Two floors: the same architecture with random weights, and a control task where every word "
           "type gets a random tag (Hewitt & Liang 2019).",
           "",
           r"$$p(y = c \mid h^{l}_w) = \operatorname{softmax}(W h^{l}_w + b)_c$$",
           "",
           STORED.format(cost="one pass of the model and of its random twin, then L + 1 fits for each row, "
                              "under a minute on two cores for the bundled MiniLM at 300 sentences")),
        code("""
r = probe_layers(model, TASK, N_TRAIN, SEED)
names = layer_names(cfg.num_hidden_layers + 1)
accuracy_by_layer_figure({k: r.accuracy[k] for k in ROWS if k in r.accuracy}, r.majority,
                         f"{TASK}: held-out accuracy of a linear probe at each layer ({model.name})", {}).show()
df = pd.DataFrame({"layer": names})
for k in ROWS:
    if k in r.accuracy:
        df[f"{k} (held-out)"] = r.accuracy[k]
        df[f"{k} (training)"] = r.train_accuracy[k]
if r.selectivity is not None:
    df["selectivity"] = r.selectivity
df["majority label"] = r.majority
""" + show_table("df", "Probing accuracy by layer")),
    ]


def head_model(what: str, zip_name: str, head: str, has: str, train: dict | None = None) -> list:
    """Cells that pick the model with a task head: the sidebar's own, the one fine-tuned in the app's session, or
    (head "train") a new head trained here as the page's run trains it."""
    if head == "train":
        return train_head(what, train)
    if head != "session":
        return [code(f"{what} = model  # the page's {what}: the sidebar's model, which has the head")]
    return [
        md(f"**The page's {what} was fine-tuned in the app's session.** Its weights stay in the app unless you "
           f"download them: the page's download button gives `{zip_name}`, a checkpoint folder. Unzip it next to this "
           f"notebook and put its folder in `HEAD_MODEL`. Until then the cells use `MODEL`, which has no {has} "
           "head, and say so instead of answering."),
        code(f"""
HEAD_MODEL = None  # e.g. "{zip_name.removesuffix('.zip')}": the unzipped folder
{what} = bert_core.load_model(HEAD_MODEL) if HEAD_MODEL else model
"""),
    ]


def train_head(what: str, train: dict) -> list:
    """The Tagging or QA page's fine-tuning run (its built-in task's first N examples, base, recipe and seed), then
    `what` = the trained model."""
    tagger = what == "tagger"
    task = ("first_sentences(builtin_pos_task(), TRAIN['n'])" if tagger else
            "first_examples(builtin_qa_task(), TRAIN['n'])")
    imports = ("from bert_core.finetune.tagging import builtin_pos_task, first_sentences" if tagger else
               "from bert_core.finetune.qa import builtin_qa_task, first_examples")
    metric = ("f\"validation accuracy (words) {100 * last.accuracy:.1f} %\"" if tagger else
              "f\"validation exact match {100 * last.accuracy:.1f} %, token F1 {100 * last.f1:.1f} %\"")
    return [
        md(f"### The page's run: a new {what}",
           f"The page's {what} is trained in the app; here the same run trains it again: the built-in task's first "
           "`TRAIN['n']` training examples, the base model `TRAIN['base']`, the recipe `TRAIN['recipe']` "
           "(`token_finetune_defaults` unless changed on the page) and its seed"
           + (f", stopped at step {train['steps']}, where the page stood" if train.get("steps") else "")
           + ". A frozen encoder's head is fit exactly (L-BFGS on the cached vectors): a minute or two on two "
             "cores with MiniLM."),
        code(f"""
import time

from bert_core.finetune.finetuning import FineTuneConfig
{imports}
from bert_core.runs.finetune_run import tuner_class

task = {task}
cfg = FineTuneConfig(**TRAIN["recipe"])
base = model if TRAIN["base"] == MODEL else bert_core.load_model(TRAIN["base"])
tuner = tuner_class(task, cfg)(base, task, cfg)
t0 = time.perf_counter()
while not tuner.done and (TRAIN["steps"] is None or tuner.step_count < TRAIN["steps"]):
    tuner.step()
if tuner.done and tuner.evals[-1].step != tuner.step_count:  # the page's last evaluation, when the run ends
    tuner.evals.append(tuner.evaluate())
last = tuner.evals[-1]
print(f"{{tuner.step_count:,}} of {{tuner.max_steps:,}} steps in {{time.perf_counter() - t0:.0f}} s; "
      f"validation loss {{last.loss:.3f}}; " + {metric} + f" at step {{last.step:,}}.")
{what} = tuner.as_loaded()
"""),
    ]


def tagging(v: View):
    imports = ("from IPython.display import HTML, display\n\n"
               "from bert_core.figures.tagging import legend_html, tagged_html\n"
               "from bert_core.inspect.token_tasks import tag_words\n"
               "from bert_core.model.token_heads import BertForTokenClassification")
    return imports, [
        md("## 3. One label per word",
           "A linear layer reads each token's final hidden state h_t and gives it a label; a word is labelled on "
           "its **first piece** (the other pieces are ignored by the loss, as in BERT's paper):",
           "",
           r"$$p(y_t = c \mid x) = \operatorname{softmax}(W_c\,h_t + b_c)_c$$"),
        *head_model("tagger", "bert-explorer-tagger.zip", v.settings["head"], "token-classification",
                    v.settings["train"]),
        code("""
if not isinstance(tagger.model, BertForTokenClassification):
    print(f"{tagger.name} has no token-classification head, so it cannot tag.")
else:
    r = tag_words(tagger, TEXT)  # (an empty or unreadable text raises BertCoreError, saying why)
    display(HTML(tagged_html(TEXT, r.words, r.labels, r.tokens.label_names) + legend_html(r.tokens.label_names)))
    words = {t: r.words[w][0] for t, w in enumerate(r.first) if w is not None}
    probs = pd.DataFrame(r.tokens.probs, columns=r.tokens.label_names)
    probs.insert(0, "piece", r.tokens.tokens)
    probs.insert(1, "first piece of", [words.get(t, "") for t in range(len(r.tokens.tokens))])
    probs.insert(2, "label", r.tokens.labels)
""" + indent(show_table("probs", "Tag probabilities"))),
    ]


def qa(v: View):
    imports = ("from IPython.display import HTML, display\n\n"
               "from bert_core.figures.qa import highlighted_passage_html, span_probabilities_figure\n"
               "from bert_core.inspect.token_tasks import answer, passage_probabilities\n"
               "from bert_core.model.token_heads import BertForQuestionAnswering")
    return imports, [
        md("## 3. Where in the passage is the answer?",
           "Question and passage are read as one pair, `[CLS] question [SEP] passage [SEP]`; a new layer gives every "
           "token a *start* and an *end* score, a softmax over the tokens turns each into a distribution, and the "
           "answer is the passage span s…e that maximises",
           "",
           r"$$\text{score}(s, e) = \operatorname{softmax}(W_{start} h)_s \cdot \operatorname{softmax}(W_{end} h)_e,"
           r"\quad s \le e,\ e - s + 1 \le L_{max}$$",
           "",
           "Here `TEXT` is the passage."),
        *head_model("reader", "bert-explorer-qa.zip", v.settings["head"], "question-answering",
                    v.settings["train"]),
        code("""
try:
    r = answer(reader, QUESTION, TEXT, top_k=TOP_K, max_answer_tokens=MAX_TOKENS)
except bert_core.BertCoreError as e:  # the page says the same
    print("Cannot answer:", e)
    r = None
if not isinstance(reader.model, BertForQuestionAnswering):
    print(f"{reader.name} has no question-answering head, so it cannot answer.")
elif r is not None:
    for note in r.notes:
        print(note)
    display(HTML(highlighted_passage_html(TEXT, [(a, b) for _, a, b, _ in r.spans])))
    spans = pd.DataFrame(r.spans, columns=["answer", "start (character)", "end (character)", "score"]).assign(
        rank=range(1, len(r.spans) + 1))
""" + indent(show_table("spans", "Answer spans")) + """
    tokens, ps, pe, best = passage_probabilities(r, MAX_TOKENS)
    span_probabilities_figure(tokens, ps, pe, best).show()
"""),
    ]


def finetuning(v: View):
    imports = ("import time\n"
               "from dataclasses import replace\n\n"
               "import numpy as np\n\n"
               "from bert_core.figures.finetuning import confusion_figure, curves_figure\n"
               "from bert_core.finetune.tasks import task_from_csv\n"
               "from bert_core.runs.memory import format_mb\n"
               "from bert_core.runs.settings import ema\n"
               "from bert_core.runs.status import format_seconds")
    s = v.settings
    cells = [
        md("## 3. The task and the recipe",
           "A new classifier reads one vector per text (the pooled [CLS], or the mean of the last layer's token "
           "vectors) and is trained, with the encoder unless frozen, on labelled examples:",
           "",
           r"$$p(c \mid x) = \operatorname{softmax}(W_c\,v(x) + b_c)_c,\qquad "
           r"\mathcal{L} = -\frac{1}{B}\sum_{i=1}^{B} \log p(y_i \mid x_i)$$",
           "",
           "`RECIPE` is the page's settings (`bert_core.finetune_defaults` picks them for the model and the task "
           "unless you changed them there); `SEED` orders the batches and draws the new head and the dropout, so "
           "the run below is the page's, step for step."),
    ]
    if s["base"] == "session":
        cells.append(md("**The page fine-tuned a model trained in the app's session.** Its weights stay in the app: "
                        "the cells start from `MODEL` instead, so the numbers are that model's."))
    if s["task"] is None:
        cells.append(md("**The page's task was your own CSV.** Put the file's name in `CSV_FILE` below (its fifth "
                        "held out for validation is drawn with `SEED`, as on the page)."))
    cells += [
        code("""
CSV_FILE = None  # the page's task was a CSV when TASK is None: its file name here
if TASK is not None:
    task = bert_core.builtin_tasks()[TASK]
elif CSV_FILE is not None:
    with open(CSV_FILE, encoding="utf-8") as f:
        task = task_from_csv(f.read(), name="your data", seed=SEED)
else:
    raise SystemExit("Put the CSV's file name in CSV_FILE (the page's task was your own data).")
base = model if BASE in (MODEL, "session") else bert_core.load_model(BASE)
cfg = bert_core.FineTuneConfig(**RECIPE)
print(f"Task: {task.name}, {len(task.train_texts):,} training and {len(task.valid_texts):,} validation texts, "
      f"{len(task.labels)} classes. Base model: {base.name}.")
picked = replace(bert_core.finetune_defaults(base, task), seed=SEED)
print("RECIPE is what finetune_defaults picks here:", cfg == picked)
c = bert_core.run_cost(base, task, cfg)
print(f"This run trains {c['trainable']:,} parameters and needs about {format_mb(c['bytes'])}; about "
      f"{c['seconds_per_step']:.2f} s a step x {c['steps']:,} steps = {format_seconds(c['seconds'])} "
      "(estimated for one core of a 2-core server).")
"""),
        md("## 4. The run",
           "Training from step 0 (the untrained head) to the end of the recipe's epochs"
           + (f", or to step {s['steps']}, where the page stood" if s["steps"] else "")
           + "; the validation set is evaluated on the page's schedule. On two cores the page's default run takes "
             "a few minutes."),
        code("""
tuner = bert_core.FineTuner(base, task, cfg)
t0 = time.perf_counter()
tuner.run(steps=STEPS)
if tuner.done and tuner.evals[-1].step != tuner.step_count:  # the page's last evaluation, when the run ends
    tuner.evals.append(tuner.evaluate())
print(f"{tuner.step_count:,} of {tuner.max_steps:,} steps in {time.perf_counter() - t0:.0f} s ({tuner.what()}).")
last = tuner.evals[-1]
train_loss = ema([m.loss for m in tuner.history], 0.9)
print(f"Step {tuner.step_count:,} / {tuner.max_steps:,}; train loss (smoothed) "
      f"{'-' if not tuner.history else format(train_loss[-1], '.3f')}; validation loss {last.loss:.3f}; "
      f"validation accuracy {100 * last.accuracy:.1f} %; evaluated at step {last.step:,}.")
evals = pd.DataFrame({"step": [e.step for e in tuner.evals], "validation loss": [e.loss for e in tuner.evals],
                      "validation accuracy": [e.accuracy for e in tuner.evals]})
""" + show_table("evals", "Validation at each evaluation") + """
curves_figure({"step": np.array([m.step for m in tuner.history], dtype=int), "train_loss": train_loss,
               "train_accuracy": ema([m.accuracy for m in tuner.history], 0.9), "eval_step": evals["step"].to_numpy(),
               "valid_loss": evals["validation loss"].to_numpy(),
               "valid_accuracy": evals["validation accuracy"].to_numpy()}).show()
confusion_figure(last.confusion, list(task.labels)).show()
"""),
    ]
    return imports, cells
