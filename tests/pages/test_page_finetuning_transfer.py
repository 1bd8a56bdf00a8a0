"""The Fine-tuning page's transfer-learning parts, through AppTest: the recipe it starts on is finetune_defaults and
gives a notebook's numbers; the untrained copy beside it; the sample-efficiency figure; bad input."""

from __future__ import annotations

import gc
import re
from dataclasses import replace

import pytest
from support.apptest import assert_ok, open_page

import bert_core
from bert_core.finetune.finetuning import FineTuner, finetune_defaults
from bert_core.finetune.tasks import task_from_csv
from bert_core.runs.status import IDLE, PAUSED

pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test

WORDS = {"cooking": ["soup", "bread", "oven", "pasta", "onion", "cake"],
         "sport": ["goal", "match", "team", "race", "ball", "coach"]}
CSV = "text,label\n" + "".join(f"the {w} was good today number {i},{lab}\n"
                               for lab, ws in WORDS.items() for i, w in enumerate(ws * 2))


def _open_with_csv(csv: str = CSV):
    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    at.radio(key="ft_task").set_value("Paste CSV").run()
    at.text_area(key="ft_csv").set_value(csv).run()
    assert_ok(at)
    return at


def test_the_notebooks_recipe_its_untrained_copy_and_the_sample_efficiency_figure_charged_to_the_ledger():
    """One run on the sidebar's MiniLM serves the page's three claims in turn: (1) it is exactly the recipe a notebook
    gets (finetune_defaults, the same numbers after ten steps); (2) the untrained copy trains beside it with the same
    settings, in one table with bag of words; (3) the sample-efficiency figure's untrained copy is charged like a run:
    with no room left it is refused with the ledger's message (not built, nothing held afterwards), with room it is
    computed and its charge given back."""
    at = _open_with_csv()
    m = bert_core.load_model()  # the sidebar's model: the bundled MiniLM
    task = task_from_csv(CSV, name="your data", seed=0)
    recipe = finetune_defaults(m, task)
    assert recipe.pooling == "mean" and recipe.freeze_word_embeddings  # what MiniLM was trained for; its big matrix
    assert at.selectbox(key="ft_base").value == f"the sidebar's model: {m.name}"
    assert at.radio(key="ft_pooling").value == recipe.pooling
    assert at.number_input(key="ft_epochs").value == recipe.epochs
    assert at.selectbox(key="ft_batch").value == recipe.batch_size
    assert any("These are the settings `finetune_defaults` picks" in md.value for md in at.markdown)
    assert any(re.search(r"needs about \*\*\d+ MB\*\*", md.value) and "s a step" in md.value for md in at.markdown)
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    page = at.session_state["ft_session"].trainer
    assert page.cfg == recipe and page.step_count == 10
    nb = FineTuner(m, task, finetune_defaults(m, task))
    nb.run(steps=10)
    assert nb.evaluate().loss == pytest.approx(page.evaluate().loss, abs=1e-6)
    assert nb.evaluate().accuracy == page.evaluate().accuracy
    del nb

    at.button(key="ft_baseline_btn").click().run()
    assert_ok(at)
    at.button(key="ft0_ten").click().run()
    assert_ok(at)
    fs, fs0 = at.session_state["ft_session"], at.session_state["ft_scratch"]
    assert fs0.state == PAUSED and fs0.step == 10 and fs0.trainer.cfg == fs.trainer.cfg
    assert fs0.trainer.base.name.endswith("(untrained, seed 0)")
    table = [d.value for d in at.dataframe if "learner" in d.value.columns][0]
    assert len(table) == 3 and "bag of words (no BERT)" in set(table["learner"])
    assert all(isinstance(v, str) for v in table["step"]), table  # one type a column: Arrow's conversion failed on "-"
    assert any("points** ahead of the same network trained from scratch" in md.value for md in at.markdown)

    from server.ledger import MEMORY as ledger  # the process's ledger: the page's runs charge it

    gc.collect()  # earlier tests' sessions give their bytes back (the ledger would collect them to make room)
    budget = ledger.max_bytes
    try:
        ledger.max_bytes = ledger.used() + 1_000  # room for nothing more
        at.button(key="ft_sample_btn").click().run()
        assert_ok(at)
        assert any(e.value.startswith("Cannot compute:") and "memory for users' models" in e.value for e in at.error), \
            [e.value for e in at.error]
        assert not [d for d in at.dataframe if "examples per class" in d.value.columns]
    finally:
        ledger.max_bytes = budget
    held = ledger.used()
    at.button(key="ft_sample_btn").click().run()
    assert_ok(at)
    shown = [d.value for d in at.dataframe if "examples per class" in d.value.columns][0]
    assert list(shown["examples per class"]) == ["2", "4", "8", "all"]  # 10 a class: 16 and 32 would be "all"
    assert set(shown.columns) == {"examples per class", "pretrained", "from scratch", "bag of words"}
    assert ledger.used() == held  # the copy's charge is given back once the figure is drawn
    at.button(key="ft_reset").click().run()  # a new run forgets the comparison
    assert fs.state == IDLE and fs0.state == IDLE


BAD_INPUTS = {  # name: (CSV, what the message says); the bypassed text area's case last (it sets the state itself)
    "one class": ("text,label\n" + "".join(f"the cat number {i},animal\n" for i in range(20)), "two classes"),
    "one example per class": ("text,label\n" + "".join(f"thing {i},class{i}\n" for i in range(20)), "single example"),
    "10 MB": ("text,label\n" + "".join(f"example {i},{'ab'[i % 2]}\n" for i in range(700_000)),
              "larger than|more than 5,000 rows"),
}


def test_bad_input_gets_a_clear_message():
    """Each bad CSV in turn in one session (the page keeps nothing from a refused CSV: each is parsed anew)."""
    at = open_page("finetuning", timeout=900)
    at.radio(key="ft_task").set_value("Paste CSV").run()
    for name, (csv, message) in BAD_INPUTS.items():
        if len(csv) > 1_000_000:  # a text area stops at its limit: a bypassed one must still be refused
            at.session_state["ft_csv"] = csv
        else:
            at.text_area(key="ft_csv").set_value(csv)
        at.run()
        assert_ok(at)
        assert any(re.search(message, e.value) for e in at.error), (name, [e.value for e in at.error])
        at.button(key="ft_start").click().run()
        assert_ok(at)
        assert at.session_state["ft_session"].state == IDLE, name


def test_labels_only_in_validation_are_refused_by_the_loop():
    from bert_core.finetune.tasks import ClassificationTask

    m = bert_core.load_model("bundled")
    task = ClassificationTask("t", ("a", "b", "c"), ("x y", "y z", "z x", "x x"), (0, 1, 0, 1), ("y y", "x z"),
                              (2, 0))
    with pytest.raises(bert_core.BertCoreError, match="'c' has validation examples but no training example"):
        FineTuner(m, task, replace(finetune_defaults(m, task), epochs=1))


TINY_BASE = "tiny, offline: trained from scratch by this project"  # ui.state.BUNDLED_LABEL: seconds, not minutes
ONE_EACH = "text,label\n" + "".join(f"a short note about {w} number {i},{c}\n" for c, w in
                                    zip(("food", "sport", "trees", "cars", "songs"),
                                        ("soup", "goal", "oak", "wheel", "tune")) for i in range(2))


def test_one_training_example_a_class_still_compares_and_draws():
    """Two rows a class (the least a CSV may have): one to train on, one to check. The run, its untrained copy, bag
    of words and the sample-efficiency figure all work; the figure has the one size there is ("all")."""
    at = _open_with_csv(ONE_EACH)
    at.selectbox(key="ft_base").set_value(TINY_BASE).run()
    at.button(key="ft_ten").click().run()
    at.button(key="ft_baseline_btn").click().run()
    at.button(key="ft0_ten").click().run()
    assert_ok(at)
    fs = at.session_state["ft_session"]
    assert len(fs.trainer.train_rows) == 5 and len(fs.trainer.valid_rows) == 5
    table = [d.value for d in at.dataframe if "learner" in d.value.columns][0]
    assert len(table) == 3
    at.button(key="ft_sample_btn").click().run()
    assert_ok(at)
    shown = [d.value for d in at.dataframe if "examples per class" in d.value.columns][0]
    assert list(shown["examples per class"]) == ["all"]  # "2 per class" would be a lie: each class has one
    assert any("With every training example" in c.value for c in at.caption)


def test_a_run_too_big_for_the_servers_budget_is_said_plainly_and_the_recipe_fits():
    """On a server whose budget for a user's runs is smaller than MiniLM's recipe (as bert-base's is on a 1,000 MB
    server), the recipe trains the head only and says why; training every weight is announced as refused before
    Start, and refused with the same plain message at Start."""
    from server.ledger import MEMORY

    budget = MEMORY.max_bytes
    try:
        MEMORY.max_bytes = 100_000_000  # under MiniLM's all-but-word-embeddings run (~180 MB), over its head
        at = _open_with_csv()
        assert at.toggle(key="ft_freeze").value is True
        assert any("more than this server's 100 MB" in i.value and "the recipe trains the head only instead" in i.value
                   for i in at.info), [i.value for i in at.info]
        at.toggle(key="ft_freeze").set_value(False).run()
        assert any("Start will be refused" in w.value for w in at.warning), [w.value for w in at.warning]
        at.button(key="ft_start").click().run()
        assert_ok(at)
        assert any(e.value.startswith("Cannot start:") and "100 MB" in e.value for e in at.error), \
            [e.value for e in at.error]
        assert at.session_state["ft_session"].state == IDLE
    finally:
        MEMORY.max_bytes = budget
