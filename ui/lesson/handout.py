"""The Lesson's "Download the handout": a session's visited steps, their questions and charts, as one HTML file.

The Lesson's renderers call `keep_charts` and `remember_split` once a step's run, after the step's view (a following
student's pushed run too), and `button` in the side column; live_class/results.py calls `button` in the teacher's
results, at the end of a class. The file is written by handout_doc.py from plain data; this module gathers that
data: each visited step's sentence from the session, its question through `ask` (the same computation and
cache the step uses), the student's guess, the charts the step last drew, and for a teacher the class's split read
from the class store.
"""

from __future__ import annotations

import dataclasses
import datetime

import streamlit as st

import bert_core
import classroom
from bert_core.lesson import naming as lesson_naming
from ui.lesson import handout_doc, handout_record
from ui.lesson.content import STEPS, answer_label, explain, question_token
from ui.lesson.state import QUESTION_ERROR, pair_key, text_key
from ui.lesson.views import ask
from ui.state import BUNDLED_LABELS, require_current

CHARTS = "lesson_charts"  # session key: {step key: chart records} of what each step drew when last shown
SEEN_SPLITS = "class_splits_seen"  # session key: {(class code, qid): (step, Split)} revealed splits a student saw
MAX_SEEN_SPLITS = 64  # a class publishes at most classroom.MAX_QUESTIONS questions; the oldest go first past this
MAX_CHART_BYTES = 2**20  # all of a session's kept charts (each record is at most handout_record.MAX_RECORD_BYTES)


def keep_charts(k: int) -> None:
    """The charts step k drew in this run replace those it drew before (a new sentence draws new charts)."""
    drawn = st.session_state.pop(handout_record.DRAWN, {})
    charts = st.session_state.setdefault(CHARTS, {})
    charts[STEPS[k - 1].key] = tuple(r for (step, _), r in drawn.items() if step == k and r is not None)
    # Bounded in bytes: past the budget, the other steps' largest charts go first.
    while sum(r["bytes"] for rs in charts.values() for r in rs) > MAX_CHART_BYTES:
        other = [(r["bytes"], key) for key, rs in charts.items() for r in rs if key != STEPS[k - 1].key]
        if not other:
            break
        _, key = max(other)
        charts[key] = tuple(sorted(charts[key], key=lambda r: r["bytes"])[:-1])


def remember_split(live) -> None:
    """A student's page after a reveal: keep the class's split of that question and the student's vote, for the
    handout (the class's results table is the teacher's; a student sees each split only once it is revealed)."""
    v = live.view if live is not None and not live.teacher else None
    if v is None or not v.revealed or v.question is None or v.tally is None or v.answer is None:
        return
    seen = st.session_state.setdefault(SEEN_SPLITS, {})
    seen.pop((live.code, v.question.qid), None)  # re-inserted last: the order is the order of reveals
    seen[(live.code, v.question.qid)] = (v.step, handout_doc.Split(v.question.prompt, v.question.choices, v.answer,
                                                                   tuple(v.tally), v.my_vote))
    while len(seen) > MAX_SEEN_SPLITS:
        seen.pop(next(iter(seen)))


def button(live, key: str) -> None:
    """"Prepare the handout", then its download button (for this run: the file is not kept in the session)."""
    if not st.button("Prepare the handout", key=key, width="stretch",
                     help="One HTML file of the steps you visited: each step's text, your sentence, the question, "
                          "each answer (the model's, the tokenizer's or the paper's) and your guess"
                          + (", the class's split" if _teaching(live) or st.session_state.get(SEEN_SPLITS) else "")
                          + ", and the charts. It opens in any browser, with no network."):
        return
    doc = handout_html(require_current(), live)
    st.download_button("Download the handout (HTML)", doc.encode("utf-8"), file_name="bert-lesson-handout.html",
                       mime="text/html", key=f"{key}_file", type="primary", on_click="ignore", width="stretch")


def _teaching(live) -> bool:
    return live is not None and live.teacher


def _splits(live) -> dict[int, list[handout_doc.Split]]:
    """The class's split of each revealed question, by step number: from the class store for the teacher, as the
    student saw them revealed for a student (kept after the class ends or the student leaves it)."""
    if not _teaching(live):
        out: dict[int, list[handout_doc.Split]] = {}
        for step, split in st.session_state.get(SEEN_SPLITS, {}).values():
            out.setdefault(step, []).append(split)
        return out
    try:
        rows = classroom.open_store().results(live.code, live.secret)
    except classroom.ClassError as e:
        st.warning(f"The class's split is not in the handout: {e}")
        return {}
    out: dict[int, list[handout_doc.Split]] = {}
    for r in rows:
        out.setdefault(r.step, []).append(handout_doc.Split(r.prompt, r.choices, r.answer, r.tally))
    return out


def model_name(cur) -> str:
    """The model's key, and for a bundled one what it is in a few words (the model line says the rest)."""
    if cur.model_key.startswith("session:"):
        return "a model trained in this session on the Training page"
    return cur.model_key if cur.model_key not in BUNDLED_LABELS else \
        f"{cur.model_key} ({lesson_naming.model_name(cur.model).short})"


def handout_html(cur, live) -> str:
    """The handout of this session: every visited step (and every step the class voted on), in order."""
    visited = st.session_state.get("lesson_visited", set())
    splits = _splits(live)
    wanted = [(i, s) for i, s in enumerate(STEPS, 1) if s.key in visited or i in splits]
    charts = st.session_state.get(CHARTS, {})
    guesses = st.session_state.get("lesson_guesses", {})
    pages = []
    bar = st.progress(0.0, text="Writing the handout…")
    kept_error = st.session_state.get(QUESTION_ERROR)
    for n, (i, s) in enumerate(wanted):
        bar.progress(n / max(len(wanted), 1), text=f"Writing the handout: step {i}, {s.title}")
        text = st.session_state.get(text_key(i), s.text)
        pair = st.session_state.get(pair_key(i), s.pair) if s.pair is not None else None
        hush = st.empty()  # ask's own message ("needs another sentence") is for the step's page, not here
        with hush.container():
            q = ask(cur, s, text, pair)
        hush.empty()
        note = st.session_state.get(QUESTION_ERROR) or ""
        page = handout_doc.StepPage(i, s.title, explain(s, cur.model), s.formula, text, pair,
                                    note=f"This step's question needs another sentence: {note}." if note else "",
                                    charts=charts.get(s.key, ()), splits=tuple(splits.get(i, ())))
        if q is not None:
            token = question_token(cur.model_key, i, text, pair, q)  # the page's own question token
            page = dataclasses.replace(page, prompt=q.prompt, choices=tuple(q.choices), answer=q.answer,
                                       reveal=q.reveal, guess=guesses.get(token), answer_label=answer_label(q))
        pages.append(page)
    st.session_state[QUESTION_ERROR] = kept_error
    bar.empty()
    c = cur.model.config
    return handout_doc.build(handout_doc.Handout(
        model_name=model_name(cur), layers=c.num_hidden_layers, width=c.hidden_size, heads=c.num_attention_heads,
        parameters=sum(p.numel() for p in cur.model.model.parameters()),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), version=bert_core.__version__,
        total_steps=len(STEPS), steps=tuple(pages), class_code=_class_code(live),
        model_line=lesson_naming.model_line(cur.model)))


def _class_code(live) -> str | None:
    """The class the handout's splits come from: the teacher's, or the last one whose split this student saw."""
    if _teaching(live):
        return live.code
    seen = st.session_state.get(SEEN_SPLITS, {})
    return next(reversed(seen))[0] if seen else None
