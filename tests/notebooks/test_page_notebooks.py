"""Each page's "Open as a notebook": the notebook the page offers runs offline with nbclient and prints the
page's own numbers.

For each page, AppTest opens it on sentences no other test uses; the View its button offers (kept in
`notebook_views`) is turned into the .ipynb bytes the button downloads, run top to bottom in one shared
kernel (its namespace reset between notebooks), and every table it prints is compared with the page's own
dataframe or, where the page draws its numbers only as a chart, with the same bert_core call made here.
"""

from __future__ import annotations

import ast
import json
import time

import pandas as pd
import pytest
from support.apptest import assert_ok, open_page
from support.nb_run import TIMES, printed_table, run

import bert_core
from bert_core.figures import attention as fa
from bert_core.inspect.inside_layers import follow_token
from bert_core.inspect.masking_view import draw_rows, masking_draw
from bert_core.inspect.objectives_view import mask_comparison
from bert_core.notebooks import build, notebook_bytes
from ui.notebook_ui import VIEWS_KEY

TEXT = "The old fisherman [MASK] his boat across the quiet bay."
PLAIN = "The old fisherman rowed his boat across the quiet bay at dawn."
PAIR = "Gulls followed him home."


def page_notebook(page: str, kernel, text: str = TEXT, pair: str | None = None, **widgets):
    """Open the page, set its widgets, run the notebook its button offers; (AppTest, View, stdout)."""
    at = open_page(page, text=text, pair=pair)
    for key, (kind, value) in widgets.items():  # key=(widget kind, value), e.g. attn_layer=("selectbox", 3)
        getattr(at, kind)(key=key).set_value(value).run()
    assert_ok(at)
    assert offers_button(at, page)
    view = at.session_state[VIEWS_KEY][page]
    assert view.model == "bundled-minilm" and view.source == "bundled"
    t = time.perf_counter()
    nb, out = run(notebook_bytes(view), kernel)
    TIMES[page] = time.perf_counter() - t
    return at, view, out


def offers_button(at, page: str) -> bool:
    """The page draws its "Open as a notebook" download button (its data is the View's notebook, made on click)."""
    return any(b.key == f"notebook-{page}" for b in at.get("download_button"))


def same(stdout: str, title: str, df: pd.DataFrame) -> None:
    """The table printed under `title` is `df` to 4 decimals (what the notebook prints)."""
    expected = df.round(4).to_string(index=False)
    assert printed_table(stdout, title) == "\n".join(ln.rstrip() for ln in expected.splitlines())


def page_frame(at, *columns: str) -> pd.DataFrame:
    """The page's dataframe with these columns."""
    return next(d.value for d in at.dataframe if all(c in d.value.columns for c in columns))


def test_tokenization(kernel):
    at, _, out = page_notebook("tokenization", kernel, text="Unaffordable rents upset the fisherman.", pair=PAIR)
    same(out, "Every token", page_frame(at, "position", "token", "id"))
    same(out, "Word splits", page_frame(at, "word", "pieces", "look-ups"))
    metrics = {m.label: m.value for m in at.metric}
    assert f"'pieces': {metrics['Word pieces']}" in out and f"'words': {metrics['Words']}" in out


def test_embeddings(kernel):
    at, _, out = page_notebook("embeddings", kernel, pair=PAIR)
    same(out, "Embedding norms", page_frame(at, "token", "|sum|"))


def test_masking(kernel, minilm):
    at, view, out = page_notebook("masking", kernel, text=PLAIN, mask_p=("slider", 0.3), mask_draw=("number_input", 4))
    s = view.settings
    assert (s["p"], s["draw"]) == (0.3, 4)
    same(out, "The draw", page_frame(at, "model reads", "label id"))
    same(out, "Masking rates", page_frame(at, "observed", "expected"))
    d = masking_draw(minilm, PLAIN, None, seed=view.seed, draw=4, mlm_probability=0.3, whole_word=False)
    page = page_frame(at, "model reads", "label id")
    assert [r["model reads"] for r in draw_rows(d, None)] == list(page["model reads"])  # the same draw


def test_attention(kernel, minilm):
    at, view, out = page_notebook("attention", kernel, attn_layer=("selectbox", 3), attn_head=("selectbox", 7))
    assert (view.settings["layer"], view.settings["head"]) == (3, 7)
    t = bert_core.analyze(minilm, TEXT, None, embeddings=False, hidden_states=False)
    att, tokens = fa.crop(t.attentions, t.tokens, fa.capped(len(t.tokens), fa.ATTENTION_TOKEN_CAP))
    labels = [f"{i} {tok}" for i, tok in enumerate(tokens)]
    same(out, "Attention weights (rows: queries, columns: keys)",
         pd.DataFrame(att[3, 7], index=labels, columns=labels).reset_index(names="query"))
    same(out, "Head statistics (layers and heads from 1)", page_frame(at, "layer", "head", "prev"))


def test_predictions(kernel, minilm):
    at, view, out = page_notebook("predictions", kernel, pred_k=("slider", 7))
    assert view.settings == {"k": 7, "word": None}
    t = bert_core.analyze(minilm, TEXT, None, top_k=7)
    (pos, cands), = t.predictions.items()
    same(out, "Top-K candidates", pd.DataFrame([{"position": pos, "rank": r + 1, "token": tok, "p": p}
                                                for r, (tok, p) in enumerate(cands)]))
    for tok, p in cands:  # the page's candidate buttons carry the same tokens and probabilities
        assert any(b.label == f"{tok} · {p:.1%}" for b in at.button), tok


def test_predictions_without_mask(kernel, minilm):
    at, view, out = page_notebook("predictions", kernel, text=PLAIN, pair=PAIR)
    shown = next(c.value for c in at.code if "[MASK]" in c.value)
    assert f"Masked: {shown}" in out
    t = bert_core.analyze(minilm, shown, PAIR, top_k=5)
    pos = next(q for q in t.mask_positions if t.sequence_ids[q] == 0)
    same(out, "Top-K candidates", pd.DataFrame([{"position": pos, "rank": r + 1, "token": tok, "p": p}
                                                for r, (tok, p) in enumerate(t.predictions[pos])]))
    p_is, _ = t.nsp
    assert f"P(IsNext) = {p_is:.4f}" in out


def test_layers(kernel, minilm):
    _, view, out = page_notebook("layers", kernel)
    s = bert_core.residual_stream(minilm, TEXT, None, lens_top_k=10, pca=False)
    pos = s.lens.mask_positions[0]
    top = s.lens.predictions[pos][-1][:view.settings["k"]]
    printed = printed_table(out, "The logit lens")
    for r, (tok, p) in enumerate(top):
        assert any(ln.split()[1:] == ["L6", str(r + 1), tok, f"{p:.4f}"] for ln in printed.splitlines()), tok


def test_inside_layer(kernel, minilm):
    _, view, out = page_notebook("inside_layer", kernel, in_layer=("selectbox", 2), in_head=("selectbox", 5))
    s = view.settings
    assert (s["layer"], s["head"]) == (2, 5)
    p = follow_token(bert_core.layer_steps(minilm, TEXT, 2, None), 5, s["token"])
    steps = printed_table(out, "Query token's scores and weights over every key")
    assert [f"{w:.4f}" for w in p.weights] == [ln.split()[-1] for ln in steps.splitlines()[1:]]


def test_heads(kernel, minilm):
    _, view, out = page_notebook("heads", kernel)
    s = view.settings
    ko = bert_core.knock_out(minilm, TEXT, None, ((s["layer"], s["head"]),))
    rows = [{"position": pos, "token": t, "p full": a, "p without": b}
            for pos in sorted(ko.guesses)[:4] for t, a, b in zip(*ko.guesses[pos])]
    same(out, "With and without the head", pd.DataFrame(rows))
    assert "target:" in out


def test_bert_vs_gpt(kernel, minilm):
    _, view, out = page_notebook("bert_vs_gpt", kernel, pair=PAIR)
    mc = mask_comparison(minilm, TEXT, PAIR)
    n = min(len(mc.tokens), view.settings["token_cap"])
    labels = [f"{i} {t}" for i, t in enumerate(mc.tokens[:n])]
    for title, att in (("BERT's weights (rows: queries)", mc.attn_bidirectional),
                       ("The same head under GPT's mask", mc.attn_causal)):
        same(out, title, pd.DataFrame(att[0, 0, :n, :n], index=labels, columns=labels).reset_index(names="query"))


def test_hostile_text_stays_a_literal():
    """A text that tries to break out of the string, the Markdown or the HTML stays data in the notebook."""
    from IPython.core.inputtransformer2 import TransformerManager

    from bert_core.notebooks import View

    evil = 'x"""\'\'\' ); import os; os.system("rm -rf /") # <script>alert(1)</script> $\\$ [MASK] {TEXT}\n#'
    v = View("predictions", evil, "hub", f"<img src=x onerror=alert(1)> {evil}", evil, evil, 0,
             {"k": 5, "word": None}, version="0.1.0", repo_url=f"https://h/{evil}")
    nb = build(v)
    for cell in nb.cells:
        if cell.cell_type == "code":
            tree = ast.parse(TransformerManager().transform_cell(cell.source))  # the text never ends a string early
            assert "os.system" not in [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
        else:
            assert "<script" not in cell.source and "<img" not in cell.source
    assert f"TEXT = {evil!r}" in "\n".join(c.source for c in nb.cells)
    json.loads(notebook_bytes(v))


def test_compare(kernel):
    at, view, out = page_notebook("compare", kernel, cmp_k=("slider", 3))
    assert view.settings == {"models": ["bundled-minilm", "bundled"], "k": 3}
    shown = [d.value for d in at.dataframe if list(d.value.columns) == ["candidate", "p"]]  # per model, per [MASK]
    printed = printed_table(out, "Guesses at each [MASK]").splitlines()[1:]
    assert [(c, f"{p:.4f}") for d in shown for c, p in zip(d["candidate"], d["p"])] == \
        [tuple(ln.split()[-2:]) for ln in printed]
    same(out, "Tokens side by side", page_frame(at, "position", "bundled-minilm"))
    same(out, "Agreement", page_frame(at, "top-1 agree"))


def test_similarity(kernel, minilm):
    lines = ["The fisherman mended his nets.", "He repaired the fishing net.", "Stocks fell sharply today."]
    at, view, out = page_notebook("similarity", kernel, text="A man fixes a net.",
                                  sim_sentences=("text_area", "\n".join(lines)))
    assert view.settings["sentences"] == lines
    e = bert_core.sentence_embedding(minilm, tuple(lines), view.settings["pooling"], True)
    same(out, "Cosines (row i, column j: sentences i and j, from 1)",
         pd.DataFrame(bert_core.cosine_matrix(e), columns=["1", "2", "3"]))
    same(out, "Nearest sentences", page_frame(at, "rank", "cosine", "sentence"))



def test_neighbours(kernel):
    at = open_page("neighbours", text="The fisherman cast his net into the sea.")
    at.selectbox(key="nb_n_i").set_value(0).run()  # the smallest corpus
    at.button(key="nb_build").click().run()
    assert_ok(at)
    assert offers_button(at, "neighbours")
    view = at.session_state[VIEWS_KEY]["neighbours"]
    assert view.settings["n_sent"] == 200
    t = time.perf_counter()
    _, out = run(notebook_bytes(view), kernel)
    TIMES["neighbours"] = time.perf_counter() - t
    same(out, "Nearest corpus words", page_frame(at, "rank", "word", "tag", "cosine"))


@pytest.mark.parametrize("kind", ["token", "qa"])
def test_a_task_head_in_the_sidebar(kernel, tmp_path, monkeypatch, kind):
    """Tagging and QA on a model with its own head (a local folder): the notebook loads it, prints the page's table."""
    from support.heads import hf_head_folder

    hf_head_folder(tmp_path / kind, "bert", kind)
    folder = str(tmp_path / kind / kind)
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    page = "tagging" if kind == "token" else "qa"
    at = open_page(page, query={"model": folder, "text": "The fisherman sold fish in Lisbon."})
    if kind == "qa":  # this tiny model's vocabulary spells the default question out letter by letter
        at.text_area(key="qa_context").set_value("The fisherman sold fish in Lisbon.")
        at.text_input(key="qa_question").set_value("Where?").run()
    assert_ok(at)
    assert offers_button(at, page)
    view = at.session_state[VIEWS_KEY][page]
    assert (view.model, view.source, view.settings["head"]) == (folder, "local", "sidebar")
    _, out = run(notebook_bytes(view), kernel)
    if kind == "token":
        same(out, "Tag probabilities", page_frame(at, "piece", "first piece of", "label"))
    else:
        same(out, "Answer spans", page_frame(at, "answer", "score", "rank"))


def test_models_trained_in_the_session_are_said_and_replaced(kernel):
    """A sidebar model or a tagger trained in the app stays there: the notebook says so and loads the bundled model."""
    from bert_core.notebooks import View

    v = View("tagging", "session", "session", "4 layers", "The cat sat.", None, 3, {"head": "session", "train": None},
             version="0.1.0")
    nb = build(v)
    said = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "trained in the app's session" in said and "fine-tuned in the app's session" in said
    _, out = run(notebook_bytes(v), kernel)
    assert out.startswith("bundled-minilm: 6 layers")
    assert "bundled-minilm has no token-classification head, so it cannot tag." in out


def test_probing(kernel):
    """The page fits at its smallest setting (100 training sentences); the notebook it offers prints the page's
    accuracies to 4 decimals, reading the page's stored run back (the app's machine) and recomputing it with the
    store off (a reader elsewhere; in the shared kernel, its store turned off for that one notebook)."""
    import nbformat

    at = open_page("probing", text="The fisherman mended his nets.", timeout=600)
    at.select_slider(key="pr_n").set_value(100).run()
    at.button(key="pr_fit").click().run()
    assert_ok(at)
    assert offers_button(at, "probing")
    view = at.session_state[VIEWS_KEY]["probing"]
    assert view.settings == {"task": "part of speech", "n_train": 100}
    page = page_frame(at, "layer", "pretrained (held-out)")
    t = time.perf_counter()
    _, out = run(notebook_bytes(view), kernel)
    TIMES["probing (stored)"] = time.perf_counter() - t
    same(out, "Probing accuracy by layer", page)

    nb = nbformat.reads(notebook_bytes(view).decode("utf-8"), as_version=4)
    env = "os.environ['BERT_EXPLORER_RESULTS_DIR']"
    nb.cells.insert(0, nbformat.v4.new_code_cell(f"import os\n_was = {env}\n{env} = 'off'"))
    nb.cells.append(nbformat.v4.new_code_cell("from bert_core.inspect.stored import results_dir\n"
                                              f"print('store:', results_dir())\n{env} = _was"))
    t = time.perf_counter()
    _, out = run(nbformat.writes(nb).encode("utf-8"), kernel, timeout=300)
    TIMES["probing (recomputed)"] = time.perf_counter() - t
    assert "store: None" in out  # the notebook ran with no store: it recomputed
    same(out, "Probing accuracy by layer", page)


@pytest.mark.parametrize("page", ["embeddings", "masking", "predictions", "layers", "heads", "bert_vs_gpt"])
def test_a_page_opens_on_the_settings_a_lesson_steps_notebook_reproduces(page):
    """ui/page_defaults.py is the one source: a page opened fresh offers exactly those settings (the Lesson's step
    notebooks reproduce a step's full page with them), on the bundled model, whose shape differs from the MiniLM's."""
    from ui import page_defaults

    at = open_page(page, query={"model": "bundled"})
    assert_ok(at)
    view = at.session_state[VIEWS_KEY][page]
    want = page_defaults.of(page, bert_core.load_model("bundled").config)
    got = {k: v for k, v in view.settings.items() if not (page == "heads" and k in ("clean", "corrupt", "target"))}
    assert got == {k: v for k, v in want.items() if k in got} and set(view.settings) == set(want)


def test_finetuning_before_and_after_ten_steps(kernel, slots):
    """Fine-tuning offers its notebook before any run (the whole default run: task, recipe, seed), and after "Run 10
    steps" one that stops where the page stands and prints the page's metrics (its whole run: benchmarks)."""
    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    assert offers_button(at, "finetuning")
    before = at.session_state[VIEWS_KEY]["finetuning"]
    assert (before.settings["task"], before.settings["base"], before.settings["steps"]) == ("topic", "bundled-minilm",
                                                                                            None)
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    fs = at.session_state["ft_session"]
    assert fs.step == 10
    view = at.session_state[VIEWS_KEY]["finetuning"]
    assert view.settings == {**before.settings, "steps": 10}
    assert view.settings["recipe"]["seed"] == view.seed
    t = time.perf_counter()
    _, out = run(notebook_bytes(view), kernel, timeout=600)
    TIMES["finetuning (10 steps)"] = time.perf_counter() - t
    m = {x.label: x.value for x in at.metric}
    assert "RECIPE is what finetune_defaults picks here: True" in out
    assert (f"Step {m['Step']}; train loss (smoothed) {m['Train loss (smoothed)']}; validation loss "
            f"{m['Validation loss']}; validation accuracy {m['Validation accuracy']}; evaluated at step "
            f"{m['Evaluated at step']}.") in out, (m, out[-1500:])
    c = bert_core.run_cost(fs.trainer.base, fs.trainer.task, fs.trainer.cfg)
    assert f"This run trains {c['trainable']:,} parameters" in out


@pytest.mark.parametrize("page", ["tagging", "qa"])
def test_tagging_and_qa_offer_their_run_before_it_and_where_it_stands(kernel, slots, page):
    """Before any run, beside its buttons, the page offers its fine-tuning run as a notebook (the built-in task's
    size, base, recipe, seed); after "Run 10 steps" one that stops there and prints the page's validation loss."""
    prefix = "tg" if page == "tagging" else "qa"
    at = open_page(page, timeout=900)
    assert_ok(at)
    assert any(b.key == f"notebook-{page}-run" for b in at.get("download_button"))
    before = at.session_state[VIEWS_KEY][f"{page}-run"]
    assert before.settings["head"] == "train" and before.settings["train"]["steps"] is None
    assert before.settings["train"]["n"] == (3_000 if page == "tagging" else 1_000)
    assert before.settings["train"]["recipe"]["seed"] == before.seed
    if page == "qa":  # every weight of MiniLM at 192 tokens (1,223 MB) is refused by the 1,000 MB budget: head only
        from ui.state import BUNDLED_LABEL

        at.selectbox(key="qa_base").set_value(BUNDLED_LABEL).run()
        at.toggle(key="qa_freeze").set_value(True).run()
        before = at.session_state[VIEWS_KEY][f"{page}-run"]
        assert before.settings["train"]["base"] == "bundled" and before.settings["train"]["recipe"]["freeze_encoder"]
    at.button(key=f"{prefix}_ten").click().run()
    assert_ok(at)
    view = at.session_state[VIEWS_KEY][f"{page}-run"]
    assert view.settings["train"] == {**before.settings["train"], "steps": 10}
    t = time.perf_counter()
    _, out = run(notebook_bytes(view), kernel, timeout=600)
    TIMES[f"{page} run (10 steps)"] = time.perf_counter() - t
    m = {x.label: x.value for x in at.metric}
    assert f"10 of {m['Step'].split(' / ')[1]} steps" in out, out[-1500:]
    assert f"validation loss {m['Validation loss']};" in out, (m, out[-1500:])
