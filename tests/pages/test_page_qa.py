"""The Question answering page, driven through AppTest: no QA head, live fine-tuning, spans, bad and long input."""

from __future__ import annotations

import pytest
from support.apptest import assert_ok, open_page

from bert_core.finetune.qa import builtin_qa_task, heuristic_baseline
from bert_core.runs.status import FINISHED, IDLE, PAUSED
from ui.state import BUNDLED_LABEL

pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test


def session(at):
    return at.session_state["qa_session"]


@pytest.fixture
def small_task(monkeypatch):
    """The built-in task cut to 100 training and 20 validation questions, for speed."""
    import dataclasses

    import bert_core.finetune.qa as qa

    full = qa.builtin_qa_task()
    small = dataclasses.replace(full, train=full.train[:100], valid=full.valid[:20])
    monkeypatch.setattr(qa, "builtin_qa_task", lambda: small)
    return small


def open_qa(train: bool = False):
    """The page; with train=True after 10 steps of a head-only run on the tiny bundled model (5 steps read the
    questions, the rest fit the head)."""
    at = open_page("qa", timeout=900)
    assert_ok(at)
    if train:
        at.selectbox(key="qa_base").set_value(BUNDLED_LABEL).run()
        at.toggle(key="qa_freeze").set_value(True).run()
        at.button(key="qa_ten").click().run()
        assert_ok(at)
    return at


def test_the_page_starts_on_the_sidebars_model_training_every_weight_and_says_it_has_no_qa_head():
    at = open_qa()
    assert any("has no question-answering head" in i.value and "qa_outputs" in i.value for i in at.info)
    assert any("maximises" in m.value for m in at.markdown) and at.latex  # how a span is chosen
    assert at.text_area(key="qa_context").value == builtin_qa_task().valid[0].context
    assert at.selectbox(key="qa_base").value.startswith("the sidebar's model")
    assert at.toggle(key="qa_freeze").value is False
    assert at.select_slider(key="qa_n").value == 1_000
    assert at.select_slider(key="qa_lr").value == 3e-4 and at.number_input(key="qa_epochs").value == 1  # qa_lr
    assert any("All weights" in c.value for c in at.caption)
    # The word-embedding share is said of the encoder (no pretraining heads), and Anatomy's total beside it.
    import bert_core

    m = bert_core.load_model("bundled-minilm")
    words, encoder = (m.model.bert.embeddings.word_embeddings.weight.numel(),
                      sum(p.numel() for p in m.model.bert.parameters()))
    said = (f"MiniLM: {words / 1e6:.1f}M of its encoder's {encoder / 1e6:.1f}M weights; Model anatomy's "
            f"{m.model.num_parameters() / 1e6:.1f}M also counts the pretraining heads")
    assert any(said in c.value for c in at.caption), said
    caps = " ".join(c.value for c in at.caption)  # SQuAD and F1 glossed where the page first names them
    assert "SQuAD (the Stanford Question Answering Dataset" in caps and "60% F1, SQuAD's word-overlap score" in caps


def test_all_weights_run_then_from_scratch_and_sample_efficiency(small_task):
    """All weights (the page's default, on the tiny model for speed), the same network on fresh weights with the
    heuristic beside both, then the sample-efficiency figure from head-only fits."""
    at = open_qa()
    at.selectbox(key="qa_base").set_value(BUNDLED_LABEL).run()
    at.button(key="qa_start").click().run()
    for _ in range(40):
        if session(at).state == FINISHED:
            break
        at.run()
    qs = session(at)
    assert qs.state == FINISHED and not qs.trainer.cfg.freeze_encoder and qs.trainer.cfg.epochs == 1
    at.button(key="qa_scratch_start").click().run()
    scratch = at.session_state["qa_scratch"]
    for _ in range(40):
        if scratch.state == FINISHED:
            break
        at.run()
    assert_ok(at)
    assert scratch.state == FINISHED and scratch.settings == qs.settings and scratch.trainer.base.source == "session"
    table = [d.value for d in at.dataframe if "validation F1" in d.value.columns][0]
    assert len(table) == 3
    assert abs(table["validation F1"].iloc[2] - heuristic_baseline(small_task)["f1"]) < 1e-9
    assert any("pretraining is worth" in m.value for m in at.markdown)
    at.button(key="qa_se_start").click().run()
    for _ in range(60):
        if at.session_state["qa_se_job"].done:
            break
        at.run()
    at.run()
    assert_ok(at)
    job = at.session_state["qa_se_job"]
    assert job.done and [len(v[0]) for v in job.results.values()] == [5, 5, 5]  # 8 16 32 64 100
    assert [k for k in at.get("plotly_chart") if k.key == "qa-sample-efficiency"]


def test_ten_steps_then_spans_metrics_download_empty_and_long_input(small_task):
    """One 10-step reader serves: its spans, probabilities, metrics and download; an empty passage or question is
    said (no traceback); a long passage is read in windows and its HTML escaped; Reset forgets the run."""
    at = open_qa(train=True)
    qs = session(at)
    assert qs.state in (PAUSED, FINISHED) and 6 <= qs.step <= 10 and len(qs.trainer.task.train) == 100
    assert at.radio(key="qa_reader").value == "your fine-tuned reader (this session)"
    spans = [d.value for d in at.dataframe if "score" in d.value.columns]
    assert spans and len(spans[0]) == 3 and list(spans[0]["score"]) == sorted(spans[0]["score"], reverse=True)
    context = small_task.valid[0].context
    row = spans[0].iloc[0]
    assert context[row["start (character)"]:row["end (character)"]] == row["answer"]
    assert len(at.get("plotly_chart")) == 3  # start/end probabilities, curves, vs from scratch
    base = heuristic_baseline(small_task)
    assert any(f"{100 * base['exact_match']:.1f}%" in m.value and "exact match" in m.value for m in at.markdown)
    assert [b for b in at.get("download_button") if b.key == "qa_download"]

    for passage, question in (("", "which word?"), ("the cat sat.", "   ")):  # the message: "empty"
        at.text_area(key="qa_context").set_value(passage)
        at.text_input(key="qa_question").set_value(question).run()
        assert_ok(at)
        assert any("empty" in w.value for w in at.warning), (passage, question, [w.value for w in at.warning])

    at.text_area(key="qa_context").set_value("<script>alert(1)</script> the cat sat on the mat. " * 60)
    at.text_input(key="qa_question").set_value("<b>which</b> animal sat?").run()
    assert_ok(at)
    assert any("overlapping windows" in i.value for i in at.info), [i.value for i in at.info]
    for md in at.markdown:
        assert "<script>" not in md.value and "<b>which" not in md.value

    at.button(key="qa_reset").click().run()
    assert session(at).state == IDLE


def test_a_qa_model_in_the_sidebar_answers(tmp_path, monkeypatch):
    from support.heads import hf_head_folder

    hf_head_folder(tmp_path / "qa", "bert", "qa")
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(tmp_path))
    at = open_page("qa", query={"model": str(tmp_path / "qa" / "qa")})
    assert_ok(at)
    assert at.radio(key="qa_reader").value.startswith("the sidebar's model")
    # the built-in example's question is longer than this tiny model's 64 positions allow: it says so
    assert any("shorten it" in w.value for w in at.warning), [w.value for w in at.warning]
    at.text_area(key="qa_context").set_value("the cat sat on the mat.")
    at.text_input(key="qa_question").set_value("who sat ?").run()
    assert_ok(at)
    assert [d for d in at.dataframe if "score" in d.value.columns]
