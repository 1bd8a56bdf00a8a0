"""The Fine-tuning page, driven through AppTest: a CSV task, steps, the figures, a sentence, the download, bad CSVs."""

from __future__ import annotations

import re

import pytest
from support.apptest import assert_ok, open_page

from bert_core.runs.status import FINISHED, IDLE, PAUSED, RUNNING

CSV = "text,label\n" + "".join(
    f"{w} number {i},{lab}\n" for i in range(12) for w, lab in (("a small cat", "animal"), ("a red apple", "food")))
HTML_CSV = CSV.replace(",food", ",<b>food</b><script>alert(1)</script>")


pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test


def session(at):
    return at.session_state["ft_session"]


def open_finetuning(csv: str | None = CSV):
    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    if csv is not None:
        at.radio(key="ft_task").set_value("Paste CSV").run()
        at.text_area(key="ft_csv").set_value(csv)
        at.toggle(key="ft_freeze").set_value(True)
        at.radio(key="ft_pooling").set_value("cls")  # transformers' layout: the download is offered
        at.select_slider(key="ft_lr").set_value(1e-3)
        at.selectbox(key="ft_batch").set_value(8)
        at.number_input(key="ft_epochs").set_value(5)
        at.run()
    assert_ok(at)
    return at


def test_csv_task_ten_steps_figures_sentence_download_and_a_try_box_that_survives_the_hostile_list():
    from support.hostile import HOSTILE

    at = open_finetuning()
    assert any("press **Start**" in i.value for i in at.info)
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    fs = session(at)
    assert fs.state == PAUSED and fs.step == 10  # 20 training rows / batch 8 = 3 steps an epoch, 5 epochs: 15
    assert fs.trainer.cfg.freeze_encoder and fs.trainer.task.labels == ("animal", "food")
    charts = at.get("plotly_chart")
    assert len(charts) == 4  # curves, confusion matrix, PCA before/after, pretrained vs untrained
    assert not any("NEW pooler" in c.value for c in at.caption)  # the bundled model has its pretrained pooler
    at.text_input(key="ft_try").set_value("a small cat").run()
    assert_ok(at)
    assert len(at.get("plotly_chart")) == 5
    assert [b for b in at.get("download_button") if b.key == "ft_download"]
    for name, text in HOSTILE.items():
        at.text_input(key="ft_try").set_value(text[:2000]).run()
        assert not at.exception, (name, [e.value for e in at.exception])
        for md in [*at.markdown, *at.caption, *at.warning]:
            assert "<script>" not in md.value and "<img" not in md.value, name
    at.button(key="ft_baseline_btn").click().run()
    assert_ok(at)
    assert any("Bag-of-words logistic regression" in m.value for m in at.markdown)
    at.button(key="ft_reset").click().run()
    assert session(at).state == IDLE and session(at).trainer is None


def test_start_runs_on_the_timer_until_finished(slots):
    at = open_finetuning()
    at.button(key="ft_start").click().run()
    assert_ok(at)
    assert session(at).state in (RUNNING, FINISHED)
    for _ in range(30):  # AppTest does not fire run_every timers: each run is one tick
        if session(at).state == FINISHED:
            break
        at.run()
    assert_ok(at)
    assert session(at).state == FINISHED and session(at).step == 15
    assert slots.position(session(at).id) is None
    assert any("Finished" in s.value for s in at.success)


BAD_CSVS = {  # name: (CSV, what the message says); the bypassed text area's case last (it sets the state itself)
    "empty": ("", "empty"),
    "blank lines": ("\n\n\n", "empty"),
    "one class": ("text,label\n" + "the cat,animal\n" * 30, "two classes"),
    "numbers": ("".join(f"{i},{i % 2}\n" for i in range(30)), "only numbers"),
    "no label": ("a cat\n" * 30, "no label"),
    "100k rows": ("".join(f"example {i},{i % 2}\n" for i in range(100_000)), "larger than|more than 5,000 rows"),
}


def test_bad_csv_gets_a_message_not_a_traceback():
    """Each bad CSV in turn in one session (the page keeps nothing from a refused CSV: each is parsed anew)."""
    at = open_finetuning(csv=None)
    at.radio(key="ft_task").set_value("Paste CSV").run()
    for name, (csv, message) in BAD_CSVS.items():
        if len(csv) > 1_000_000:  # more than the text area takes: the page's CSV check must still hold
            at.session_state["ft_csv"] = csv
        else:
            at.text_area(key="ft_csv").set_value(csv)
        at.run()
        at.button(key="ft_ten").click().run()
        assert_ok(at)
        assert session(at).state == IDLE, name
        assert any(re.search(message, e.value) for e in at.error), (name, [e.value for e in at.error])


def test_a_label_with_html_never_reaches_the_page_unescaped():
    at = open_finetuning(csv=HTML_CSV)
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    assert any(lab.startswith("<b>food</b>") for lab in session(at).trainer.task.labels)
    at.text_input(key="ft_try").set_value("<img src=x onerror=alert(1)>").run()
    assert_ok(at)
    for md in [*at.markdown, *at.caption]:
        assert "<script>" not in md.value and "<img" not in md.value
    for chart in at.get("plotly_chart"):
        assert "<script>" not in chart.proto.spec and "<b>food" not in chart.proto.spec


def test_default_learning_rate_follows_the_base_model_until_the_user_picks_one_then_the_builtin_task_trains():
    """The bundled MiniLM (H=384): 1e-4; head only: 1e-3; a pick is kept through freeze switches and other pages.
    Then ten head-only steps on the built-in task (all of its validation set evaluated) with the picked rate."""
    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    lr = lambda: at.select_slider(key="ft_lr").value  # noqa: E731
    assert lr() == 1e-4
    # The intro's default run: 1 epoch of 188 steps of 16 texts on the built-in task, as the widgets hold it.
    import math

    from bert_core.finetune.tasks import builtin_tasks

    n = len(builtin_tasks()[at.radio(key="ft_task").value].train_texts)
    epochs, batch = at.number_input(key="ft_epochs").value, at.selectbox(key="ft_batch").value
    assert (epochs, batch) == (1, 16) and math.ceil(n / batch) == 188, (epochs, batch, n)
    assert any("is 1 epoch (188 steps of 16 texts)" in m.value and "2 to 4 *epochs*" in m.value for m in at.markdown)
    assert any("Suggested learning rate for this base: **0.0001**" in c.value for c in at.caption)
    at.toggle(key="ft_freeze").set_value(True).run()
    assert lr() == 1e-3
    at.toggle(key="ft_freeze").set_value(False).run()
    assert lr() == 1e-4
    at.select_slider(key="ft_lr").set_value(5e-5).run()
    assert_ok(at)
    assert lr() == 5e-5 and any("your pick differs" in c.value for c in at.caption)
    at.toggle(key="ft_freeze").set_value(True).run()
    assert lr() == 5e-5
    at.switch_page("views/masking.py").run()
    at.switch_page("views/finetuning.py").run()
    assert_ok(at)
    assert lr() == 5e-5
    at.selectbox(key="ft_batch").set_value(8).run()
    assert at.radio(key="ft_task").value == "topic"
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    t = session(at).trainer
    assert t.cfg.lr == 5e-5 and t.cfg.freeze_encoder and t.cfg.batch_size == 8
    assert t.task.name == "topic" and len(t.valid_rows) == 300 and session(at).step == 10


def test_a_bert_base_sized_model_gets_the_classic_small_rate(tmp_path, monkeypatch):
    """A 768-wide base (one layer, random, saved by transformers) from the sidebar: 3e-5; the tiny bundled: 3e-4."""
    from support.checkpoints import write_tiny_checkpoint

    import ui.state

    write_tiny_checkpoint(tmp_path, "pretraining", hidden_size=768, num_hidden_layers=1, num_attention_heads=12,
                          intermediate_size=64)
    monkeypatch.setattr(ui.state, "DEFAULT_MODEL", str(tmp_path))
    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    assert at.selectbox(key="ft_base").value.startswith("the sidebar's model")  # the page starts on it
    assert at.select_slider(key="ft_lr").value == 3e-5
    at.selectbox(key="ft_base").set_value(ui.state.BUNDLED_LABEL).run()
    assert_ok(at)
    assert at.select_slider(key="ft_lr").value == 3e-4


def test_a_roberta_base_from_the_sidebar_fine_tunes_with_its_own_head(tmp_path, monkeypatch):
    """RoBERTa has no pooler: the page says the head has a new layer, trains, classifies, offers the download."""
    from support.family import write_family_checkpoint

    import ui.state

    write_family_checkpoint(tmp_path, "roberta", "mlm")
    monkeypatch.setattr(ui.state, "DEFAULT_MODEL", str(tmp_path))
    at = open_finetuning()
    assert at.selectbox(key="ft_base").value.startswith("the sidebar's model")
    at.select_slider(key="ft_lr").set_value(1e-3).run()
    at.button(key="ft_ten").click().run()
    assert_ok(at)
    t = session(at).trainer
    assert type(t.model).__name__ == "RobertaForSequenceClassification" and session(at).step == 10
    assert any("classifier.dense" in c.value for c in at.caption)
    at.text_input(key="ft_try").set_value("a small cat").run()
    assert_ok(at)
    assert len(at.get("plotly_chart")) == 5


def test_a_first_visit_shows_the_built_in_tasks_examples():
    from bert_core.finetune.tasks import builtin_tasks, task_examples

    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    choice = at.radio(key="ft_task").value
    task = builtin_tasks()[choice]
    shown = at.dataframe[0].value
    assert list(shown["class"]) == [r["class"] for r in task_examples(task)]
    assert list(shown["text"]) == [r["text"] for r in task_examples(task)]
    assert set(shown["class"]) == set(task.labels) and len(shown) == 2 * len(task.labels)
    # Each shown example really is a training text of its class.
    pairs = set(zip(task.train_texts, task.train_labels))
    assert all((t, task.labels.index(c)) in pairs for c, t in zip(shown["class"], shown["text"]))
