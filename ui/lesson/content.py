"""The Lesson's content as data: its steps (words, sentences, question, full page), the checklist, and the pure
functions that name a step's question, its answer and its link. No drawing here: views.py draws each step."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from bert_core.lesson import questions
from bert_core.lesson.naming import model_line, model_name
from ui import model_choice

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
    """One screen of the lesson, as data; its live view is views.VIEWS[key]."""

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
    formula: str | None = None
    here: str = ""  # what the slide shows of the model on screen: {model} / {names} become its name (`explain`)
    guesses: bool = False  # the slide shows the model's guesses: it names the model on screen (`model_line`)


STEPS: list[Step] = [
    Step("tokens", "Text becomes tokens",
         "BERT reads pieces from a fixed WordPiece vocabulary (about 30,000; 30,522 in the uncased release), not "
         "letters or whole words. A common word is one piece; a rarer one is cut, longest match first, into "
         "several (## marks a piece inside a word). The uncased models lower-case the text first. `[CLS]` opens "
         "every input; `[SEP]` closes each sentence.",
         "The unaffordable rent upset everyone.", None, "pieces",
         "Try a made-up word", "The flibbertigibbet zorblaxed everyone.", None,
         "tokenization", "Tokenization",
         here="The pieces are {names} tokenizer's."),
    Step("embeddings", "Three embeddings make the input",
         "Each token's input vector is the sum of three learned rows, the piece's **token** embedding, its "
         "**segment** (A or B) and its **position** (0, 1, 2, …), then LayerNorm (in the released code). The "
         "same word twice shares its token row: at the input only position and segment tell the two apart. "
         "The layers then mix in each occurrence's context, which can move the two apart or together.",
         "I sat on the bank of the river.", "Then I went to the bank to get money.", "input_cosine",
         "Put “bank” in the same sense twice", "I went to the bank to get money.",
         "Then I went back to the bank to pay.", "embeddings", "Embeddings",
         r"x_t = \mathrm{LayerNorm}(E_{tok}[id_t] + E_{seg}[s_t] + E_{pos}[t])",
         here="The cosines are {names}, for the repeated word the pair is about."),
    Step("masking", "Masked LM: choose 15%, then corrupt them",
         "To pre-train, BERT chooses 15% of the tokens at random (this app: each ordinary token with p = 15%) "
         "and takes the loss at those only. A chosen token is not always replaced by `[MASK]`: some become a "
         "**random** token, some stay **unchanged**. Below, one draw.",
         "She wrote the letter to her mother on a rainy Sunday afternoon.", None, "kept_share",
         "A longer sentence", "On a rainy Sunday afternoon she finally wrote the long letter to her old mother "
         "and posted it before the shop closed.", None, "masking", "Masking",
         r"\mathcal{L}_{MLM} = -\frac{1}{|S|}\sum_{i \in S} \log p(x_i \mid \tilde{x})"),
    Step("predictions", "Filling a [MASK]",
         "At a `[MASK]` the final vector h goes through the MLM head and a softmax over the whole vocabulary: "
         "one probability for every piece. In the released code the head is a dense layer, GELU and LayerNorm, "
         "and its output matrix is the token-embedding matrix itself (tied).",
         "She [MASK] the letter to her mother.", None, "top_guess",
         "Mask the subject", "[MASK] wrote the letter to her mother.", None,
         "predictions", "Predictions",
         # Two relations, not one: a narrow column (200% zoom, a phone) breaks the line between them.
         r"p = \mathrm{softmax}(E_{tok}\,g + b_v),\quad g = \mathrm{LN}(\mathrm{gelu}(W h + b))",
         guesses=True),
    Step("both-sides", "BERT reads both sides",
         "BERT is **bidirectional**: a `[MASK]` is guessed from the words before it *and* after it. "
         "A left-to-right model (GPT) only has the words before. Cut the sentence after the gap and see "
         "whether the guess survives.",
         "She put the [MASK] in the oven to bake.", None, "right_context",
         "Change the words after the gap", "She put the [MASK] in the garage.", None,
         "predictions", "Predictions",
         guesses=True),
    Step("attention", "Attention: who looks at whom",
         "In each layer every token builds a query, a key and a value; a head's weights (softmax of query · key) "
         "say how much of each token's value a token takes in. Each head does this with its own smaller query, "
         "key and value (BERT-base: 12 heads of 64 in 768); their outputs are joined and projected back.",
         "She wrote a long letter to her mother yesterday.", None, "attention_target",
         "A longer sentence", "After dinner the farmer sold his cows at the market yesterday.", None,
         "attention", "Attention",
         r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\big(QK^{\top} / \sqrt{d_k}\big)\,V",  # no ⊤ in a fraction: cut
         here="The map is one of {names} heads ({model_heads})."),
    Step("nsp", "Next-sentence prediction and [CLS]",
         "BERT was also pre-trained on sentence pairs: half the time B follows A, half the time B is a random "
         "sentence from the corpus. The final `[CLS]` vector (through the pooler, in the released code) feeds a "
         "two-way classifier, IsNext or NotNext: the paper's model reached 97-98% on it. Without fine-tuning, "
         "the paper notes, that vector is not a meaningful sentence representation.",
         "She opened the door of the house.", "The room inside was dark and cold.", "next_sentence",
         "An unrelated sentence B", "She opened the door of the house.",
         "Penguins cannot fly but they swim very well.", "predictions", "Predictions", guesses=True),
    Step("layers", "Layer by layer",
         "Each layer updates every token's vector twice: it adds the attention's output and normalises "
         "(LayerNorm), then adds the feed-forward network's output and normalises again. BERT puts each "
         "LayerNorm after its residual addition (post-LN). Reading the vector after each layer with the MLM "
         "head (the *logit lens*) shows how far the answer has come.",
         "She [MASK] the letter to her mother.", None, "lens_layer",
         "Another blank", "He drove the [MASK] to work.", None,
         "layers", "Layers",
         r"h' = \mathrm{LN}\big(h + \mathrm{Attn}(h)\big),\quad h_{out} = \mathrm{LN}\big(h' + "
         r"\mathrm{FFN}(h')\big)",
         guesses=True),
    Step("knockout", "Knock out one head",
         "A layer's heads work side by side; their outputs are joined, projected and added to every token's "
         "vector. Does a `[MASK]` guess need a given head? **Knock it out** (its output set to zero), run again, "
         "compare: head by head, this ranks the last layer's heads by what the guess loses.",
         "She [MASK] the letter to her mother.", None, "knockout_head",
         "Another blank", "I drank a cup of [MASK] this morning.", None,
         "heads", "Heads & patching",
         r"\mathrm{importance}(l,h) = \log p(y \mid x) - \log p\big(y \mid x;\ c^{(l)}_h = 0\big)",
         guesses=True),
    Step("anatomy", "How big is BERT?",
         "The paper's BERT-base has 12 layers, 768-wide vectors and 12 heads; BERT-large 24 layers, 1,024 wide "
         "and 16 heads. Every number is a learned parameter: the embedding tables, four attention matrices "
         "(query, key, value, output) and a two-layer feed-forward network (3,072 wide in BERT-base) per layer.",
         "She [MASK] the letter to her mother.", None, "bert_base_size",
         "Count BERT-large instead of this model", "", None, "anatomy", "Model anatomy"),  # the question names it
    Step("pretraining", "Pre-training starts from nothing",
         "Pre-training fits all those parameters to the MLM and NSP losses: the paper's corpus was BooksCorpus "
         "(800M words) and English Wikipedia (2,500M words), 1,000,000 steps of 256 sequences. A model with "
         "random weights spreads its guess over the whole vocabulary; the loss then falls as it learns.",
         "The cat sat on the mat.", None, "initial_loss",
         "Another sentence", "Children like to play in the park after school.", None,
         "training", "Training",
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
         "Charles Babbage's engine in London.", None, "finetuning", "Fine-tuning"),
    Step("bert-vs-gpt", "BERT versus GPT: one mask and one loss",
         "BERT is an **encoder**: every token attends to every other. GPT (Radford et al. 2018) is a "
         "**decoder**: a **causal mask** lets token i see only itself and the tokens before it (j ≤ i), and "
         "it is trained to predict the next token, so it can generate text left to right. BERT's loss is "
         "taken at the 15% of tokens it selects (most masked, some random, some unchanged); GPT's at every next "
         "token.",
         "The cat sat on the mat because it was warm.", None, "learning_signal",
         "A longer sentence", "After a long day the old cat sat on the warm mat by the fire and slept.", None,
         "bert-vs-gpt", "BERT vs GPT",
         r"\text{GPT: } \mathcal{L} = -\sum_{t} \log p(x_{t+1} \mid x_{\le t})"),
]


KEYS = [s.key for s in STEPS]


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


def explain(step: Step, m) -> str:
    """The step's text (the paper's BERT), then what the slide shows of the model on screen, named (a slide of the
    model's guesses names it in its view too: `lesson_model_line`)."""
    here = step.here if step.question != "next_sentence" or m.has_nsp else \
        "{model} has no NSP head: its question is about its segments."
    if not here:
        return step.explain  # the question names the model
    name = model_name(m)
    c = m.config  # the model on screen's own head size, beside the paper's in the step's text
    heads = f"{c.num_attention_heads} heads of {c.hidden_size // c.num_attention_heads} in {c.hidden_size}"
    here = here.format(model=name.long, names=name.possessive, model_heads=heads)
    return f"{step.explain}\n\n*{questions.cap(here)}*"


def lesson_model_line(m, present: bool) -> str:
    """The short line a slide of the model's guesses shows: the model on screen and the paper's BERT where they
    differ, and BERT-base's one-click offer where the app can get it (`model_choice.offer_label`) and its button is
    on screen: not in presenter mode (`present`), which hides the sidebar and has no side column."""
    return model_line(m, bert_base_offered=not present and model_choice.offer_label() is not None)


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


PAGES_WITHOUT_TEXT = ("anatomy", "training", "finetuning")  # full pages that do not read the step's sentence


def link_markdown(step: Step, text: str, pair: str | None, model_param: str | None, view: dict) -> str:
    """"[Open the full Attention page at layer 1, head 3 with this sentence ↗](/attention?...)"; `view`: what the
    page opens on besides the sentence (notebooks.page_view: computed from the model, through the step's cache)."""
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
