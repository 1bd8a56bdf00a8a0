"""The Tagging page, driven through AppTest: no tagging head, a CoNLL task, steps, tags, the figures, bad files."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

from bert_core.runs.status import FINISHED, IDLE, PAUSED, RUNNING
from ui.state import BUNDLED_LABEL

CONLL = "\n\n".join(f"the\tDET\n{w}\tNOUN\nsat\tVERB\n.\t." for w in ("cat", "dog", "mat", "store") * 6) + "\n"
HTML_CONLL = CONLL.replace("\tNOUN", "\t<b>N</b><script>alert(1)</script>")

pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test


def session(at):
    return at.session_state["tg_session"]


def open_tagging(conll: str | None = CONLL, text: str | None = "the cat sat on the mat.", all_weights: bool = False):
    """The page on the sidebar's default model; a pasted CoNLL task; head only (the default) or all weights."""
    at = open_page("tagging", text=text, timeout=900)
    assert_ok(at)
    if conll is not None:
        at.radio(key="tg_task").set_value("Paste CoNLL").run()
        at.text_area(key="tg_conll").set_value(conll)
        if all_weights:
            at.selectbox(key="tg_base").set_value(BUNDLED_LABEL).run()
            at.toggle(key="tg_freeze").set_value(False).run()
            at.select_slider(key="tg_lr").set_value(3e-3)
            at.selectbox(key="tg_batch").set_value(8)
            at.number_input(key="tg_epochs").set_value(5)
        at.run()
    assert_ok(at)
    return at


def test_the_page_starts_on_the_sidebars_model_head_only_fit_exactly():
    at = open_tagging(conll=None)
    assert at.selectbox(key="tg_base").value.startswith("the sidebar's model")
    assert at.toggle(key="tg_freeze").value is True
    assert at.select_slider(key="tg_n").value == 3_000
    assert any("fit exactly" in c.value for c in at.caption)


def test_a_model_without_a_tagging_head_says_so_and_offers_one():
    at = open_tagging(conll=None)
    assert any("has no token-classification head" in i.value and "fine-tune" in i.value for i in at.info)
    assert any("Tagging" in h.value for h in at.header)
    assert any("first piece" in m.value for m in at.markdown)  # what token classification is
    assert any("What the tagger learns from" in s.value for s in at.subheader)  # the built-in task's examples
    assert any("NOUN" in m.value for m in at.markdown)


def test_conll_task_ten_steps_tags_the_sidebar_text_with_figures_and_download():
    at = open_tagging()
    at.button(key="tg_ten").click().run()
    assert_ok(at)
    ts = session(at)
    assert ts.state in (PAUSED, FINISHED) and 3 <= ts.step <= 10 and ts.trainer.cfg.freeze_encoder
    assert ts.trainer.task.labels == (".", "DET", "NOUN", "VERB")
    assert len(at.get("plotly_chart")) == 4  # curves, accuracy per label, confusion matrix, vs from scratch
    assert any("the baseline" in m.value and "most frequent" in m.value for m in at.markdown)
    assert at.radio(key="tg_tagger").value == "your fine-tuned tagger (this session)"
    coloured = [m.value for m in at.markdown if "inline-block" in m.value and ">cat<" in m.value]
    assert coloured, "the sidebar's words, coloured by label"
    probs = [d.value for d in at.dataframe if "first piece of" in d.value.columns]
    assert probs and list(probs[0]["piece"])[:3] == ["[CLS]", "the", "cat"]  # the per-token probability table
    assert (probs[0][[".", "DET", "NOUN", "VERB"]].sum(axis=1) - 1).abs().max() < 1e-5
    assert [b for b in at.get("download_button") if b.key == "tg_download"]
    at.button(key="tg_reset").click().run()
    assert session(at).state == IDLE and session(at).trainer is None


def test_start_runs_on_the_timer_until_finished(slots):
    at = open_tagging(all_weights=True)
    at.button(key="tg_start").click().run()
    assert_ok(at)
    assert session(at).state in (RUNNING, FINISHED)
    for _ in range(30):  # AppTest does not fire run_every timers: each run is one tick
        if session(at).state == FINISHED:
            break
        at.run()
    assert_ok(at)
    assert session(at).state == FINISHED and session(at).step == 15  # 19 training sentences / 8: 3 steps x 5 epochs
    assert slots.position(session(at).id) is None
    assert any("Finished" in s.value for s in at.success)


def test_labels_with_html_are_escaped_everywhere():
    at = open_tagging(HTML_CONLL, text="the cat sat.")
    at.button(key="tg_ten").click().run()
    assert_ok(at)
    assert "<b>N</b><script>alert(1)</script>" in session(at).trainer.task.labels
    for md in at.markdown:
        assert "<script>" not in md.value and "<b>N" not in md.value


@pytest.mark.parametrize("conll, message", [
    ("", "empty"),
    ("the\tDET\ncat\n\n" * 12, "no label"),
    ("the\tDT\tDET\ncat\tNOUN\n\n" * 12, "columns"),
    ("the\tDET\n\n" * 12, "two labels"),
    ("the\tDET\ncat\tNOUN\n", "at least 10"),
])
def test_bad_conll_gives_a_clear_message(conll, message):
    at = open_tagging(conll)
    at.button(key="tg_ten").click().run()
    assert_ok(at)
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert session(at).state == IDLE


def test_upload_without_a_file_says_so():
    at = open_tagging(conll=None)
    at.radio(key="tg_task").set_value("Upload a CoNLL file").run()
    at.button(key="tg_ten").click().run()
    assert_ok(at)
    assert any("choose a CoNLL file" in e.value for e in at.error)


def test_empty_and_long_sidebar_text_with_a_tagger():
    at = open_tagging()
    at.button(key="tg_ten").click().run()
    at.sidebar.text_area(key="text").set_value("").run()
    assert_ok(at)
    assert any("empty" in w.value for w in at.warning)
    at.sidebar.text_area(key="text").set_value("the cat sat on the mat . " * 80).run()
    assert_ok(at)
    assert any("Words past the cut have no label" in i.value for i in at.info)


def test_a_tagger_in_the_sidebar_tags_the_text(tmp_path, monkeypatch):
    from support.heads import hf_head_folder

    hf_head_folder(tmp_path / "token", "bert", "token")
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    at = open_page("tagging", query={"model": str(tmp_path / "token" / "token"), "text": "The cat sat."})
    assert_ok(at)
    assert at.radio(key="tg_tagger").value.startswith("the sidebar's model")
    assert not any("has no token-classification head" in i.value for i in at.info)
    assert [m.value for m in at.markdown if "inline-block" in m.value and ">cat<" in m.value]


def test_builtin_pos_task_ten_steps_shows_the_baseline_beside_it():
    at = open_tagging(conll=None)
    at.selectbox(key="tg_base").set_value(BUNDLED_LABEL).run()
    at.select_slider(key="tg_n").set_value(1_000).run()
    at.button(key="tg_ten").click().run()
    assert_ok(at)
    ts = session(at)
    assert ts.step == 10 and len(ts.trainer.task.train_words) == 1_000 and len(ts.trainer.task.labels) == 12
    assert any("the baseline" in m.value and "NOUN" in m.value for m in at.markdown)
    per_tag = [d.value for d in at.dataframe if "baseline" in d.value.columns]
    assert per_tag and list(per_tag[0]["label"]) == list(ts.trainer.task.labels)


def test_head_only_run_then_from_scratch_and_sample_efficiency():
    """The run to the end (head fit exactly), the same network on fresh weights beside it and the baseline in one
    figure and one table with a sentence on the gap, then the sample-efficiency figure computed live."""
    at = open_tagging()
    at.button(key="tg_start").click().run()
    for _ in range(60):  # AppTest does not fire run_every timers: each run is one tick
        if session(at).state == FINISHED:
            break
        at.run()
    assert_ok(at)
    ts = session(at)
    assert ts.state == FINISHED and ts.trainer.fit is not None and ts.trainer.fit.converged
    assert ts.trainer.evals[-1].accuracy > 0.9  # "the/cat/sat/." : each word has one tag
    at.button(key="tg_scratch_start").click().run()
    scratch = at.session_state["tg_scratch"]
    for _ in range(60):
        if scratch.state == FINISHED:
            break
        at.run()
    assert_ok(at)
    assert scratch.state == FINISHED and scratch.trainer.base.source == "session"
    assert scratch.trainer.task is ts.trainer.task and scratch.settings == ts.settings
    table = [d.value for d in at.dataframe if "validation accuracy" in d.value.columns][0]
    assert len(table) == 3 and "baseline" in table["model"].iloc[2]
    assert any("pretraining is worth" in m.value and "points" in m.value for m in at.markdown)
    at.button(key="tg_se_start").click().run()
    for _ in range(60):
        if at.session_state["tg_se_job"].done:
            break
        at.run()
    at.run()
    assert_ok(at)
    job = at.session_state["tg_se_job"]
    assert job.done and len(job.results) == 3  # pretrained, fresh weights, baseline
    sizes = job.results[next(iter(job.results))][0]
    assert sizes == [8, 16, len(ts.trainer.train_rows)]
    assert any("log scale" in c.value.lower() for c in at.caption)


@pytest.mark.parametrize("content, message", [
    (b"the\tDET\ncat\tNOUN\n\n" * 600_000, "more than the limit"),  # about 10 MB
    (b"the\tDET\ncat\n\n" * 12, "no label"),  # malformed CoNLL (one label, one sentence: pasted, above)
], ids=["10MB", "malformed"])
def test_bad_uploads_give_a_clear_message(content, message):
    at = open_tagging(conll=None)
    at.radio(key="tg_task").set_value("Upload a CoNLL file").run()
    at.file_uploader(key="tg_upload").set_value(("data.conll", content, "text/plain")).run()
    at.button(key="tg_start").click().run()
    assert_ok(at)
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert session(at).state == IDLE


def test_the_task_description_names_the_particles_the_data_has():
    """The PRT gloss on the page names the five commonest PRT words of the data (to, all, there, up, out), not a
    made-up 's."""
    from collections import Counter

    from bert_core.finetune.tagging import builtin_pos_task

    task = builtin_pos_task()
    prt = task.labels.index("PRT")
    counts = Counter(w.lower() for ws, ts in zip(task.train_words, task.train_tags) for w, t in zip(ws, ts)
                     if t == prt)
    top = [w for w, _ in counts.most_common(5)]
    assert {"to", "up", "out", "there", "all"} == set(top) and "'s" not in counts
    gloss = task.description.split("PRT (", 1)[1].split(") . (punctuation)", 1)[0]
    words = set(gloss.replace(",", " ").replace(";", " ").split())
    assert set(top) <= words, (top, gloss)  # every one of the five commonest PRT words is named
    assert {"half", "such", "it's", "oh"} <= words and all(w in counts for w in ("half", "such", "it's", "oh"))
