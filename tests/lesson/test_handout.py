"""The Lesson's handout as a pure function: plain data in, one HTML file out (ui/lesson/handout_doc.py,
handout_svg.py, handout_record.py).

Escaping (hostile sentences, questions, choices, chart labels and model names appear only as text), the 5 MB
budget with every step visited, and every visited step's title and computed answer in the file."""

from __future__ import annotations

import html
import re
import tomllib

import numpy as np
import pytest
from support.apptest import ROOT
from support.handout import IMG, SCRIPT, assert_inert
from support.hostile import HOSTILE as PAGE_HOSTILE

import bert_core
from bert_core.figures.attention import head_heatmap
from bert_core.figures.heads import importance_figure, without_head_figure
from bert_core.figures.layers import answer_trajectory, same_word_figure
from bert_core.figures.predictions import candidates_figure, nsp_figure
from bert_core.figures.training import loss_figure
from ui.lesson import content as lesson
from ui.lesson import handout_doc, handout_record, handout_svg, views
from ui.lesson.handout_doc import Handout, Split, StepPage

HOSTILE = (SCRIPT, IMG, '"><svg onload=alert(1)>', "&lt;b&gt;already an entity&lt;/b&gt;")


def handout(steps, **kw) -> Handout:
    return Handout(**{"model_name": "bundled", "layers": 4, "width": 256, "heads": 4, "parameters": 1_234_567,
                      "date": "2026-11-26 09:00 UTC", "version": bert_core.__version__,
                      "total_steps": len(lesson.STEPS), "steps": tuple(steps), **kw})


def hostile_charts() -> tuple[dict, ...]:
    toks = ["[CLS]", *HOSTILE, "[SEP]"]
    figs = [candidates_figure([(t, 0.2) for t in HOSTILE], f"Top 4 {SCRIPT}"),
            head_heatmap(np.full((len(toks), len(toks)), 1 / len(toks)), toks, IMG),
            same_word_figure([type("W", (), {"word": IMG, "cos": np.linspace(1, 0.5, 5)})()], SCRIPT)]
    return tuple(handout_record.record(f) for f in figs)


def test_every_user_text_is_escaped():
    step = lesson.STEPS[0]
    pages = [StepPage(i, lesson.STEPS[i - 1].title, lesson.STEPS[i - 1].explain, lesson.STEPS[i - 1].formula,
                      text=h, pair=IMG, prompt=f"Which of {h}?", choices=HOSTILE, answer=1, reveal=f"{h} {IMG}",
                      guess=0, charts=hostile_charts(),
                      splits=(Split(f"The class on {h}", HOSTILE, 2, (3, 0, 1, 1)),))
             for i, h in enumerate(HOSTILE, 1)]
    pages.append(StepPage(9, step.title, step.explain, None, SCRIPT, None, note=f"needs another sentence: {IMG}"))
    doc = handout_doc.build(handout(pages, model_name=SCRIPT, class_code=IMG))
    assert_inert(doc)
    for h in HOSTILE:
        assert html.escape(h) in doc  # shown, as text
    # In the charts too: each label once as a tick or bar label, escaped.
    for svg in re.findall(r"<svg.*?</svg>", doc, flags=re.S):
        assert "<script" not in svg and "onerror=alert(1)>" not in svg and "onload=" not in svg.replace(
            html.escape('"><svg onload=alert(1)>'), "")
    assert html.escape(IMG) in re.findall(r"<svg.*?</svg>", doc, flags=re.S)[1]


def test_plotly_label_markup_is_shown_as_the_user_typed_it():
    """Figure builders escape user text for plotly (which reads labels as HTML): the SVG shows the text itself."""
    rec = handout_record.record(candidates_figure([("<b>bold</b>", 0.5), ("a&b", 0.2)], "Top"))
    svg = handout_svg.svg(rec, "t")
    assert html.escape("<b>bold</b>") in svg and "a&amp;b" in svg and "<b>" not in svg
    assert ">50.0%<" in svg and ">20.0%<" in svg  # the bars' own labels


def test_each_lesson_chart_kind_draws_its_labels_and_numbers():
    m = bert_core.load_model("bundled")
    t = bert_core.analyze(m, "The cat sat on the [MASK].", "It was warm.", top_k=5)
    pos = t.mask_positions[0]
    cand = handout_svg.svg(handout_record.record(candidates_figure(t.predictions[pos], "Top 5")), "a")
    for tok, p in t.predictions[pos]:
        assert f">{html.escape(tok)}<" in cand and f">{p:.1%}<" in cand
    assert cand.count("<rect") == 2 + 5  # background, plot area, one bar each
    nsp = handout_svg.svg(handout_record.record(nsp_figure(*t.nsp)), "b")
    assert f">{t.nsp[0]:.1%}<" in nsp and ">IsNext<" in nsp and ">NotNext<" in nsp
    heat = handout_svg.svg(handout_record.record(head_heatmap(t.attentions[0, 0], t.tokens, "Layer 1, head 1")), "c")
    assert heat.count("<title>") == len(t.tokens) ** 2  # a cell per (query, key), its weight in its tooltip
    w = float(f"{t.attentions[0, 0][1, 2]:.4g}")
    assert f": {w:.3f}</title>" in heat
    lens = handout_svg.svg(handout_record.record(answer_trajectory(np.array([9, 3, 1]), np.array([.01, .2, .6]),
                                                                  "sat", "lens")), "d")
    assert lens.count("<polyline") == 2 and ">rank (1 = top)<" in lens  # both lines, the second axis


def test_a_handout_chart_is_named_by_its_text_alternative_and_has_its_numbers_as_a_table():
    """WCAG 1.1.1 in the file too: each chart's SVG is named by the app's text alternative of that chart (not its
    title alone), and its numbers follow it as a table with column headers, escaped."""
    from bert_core.figures.describe import alt_text, figure_table

    fig = candidates_figure([("<b>cat</b>", 0.5), ("dog", 0.25)], "Top 2")
    rec = handout_record.record(fig, views._described)  # as the Lesson keeps it (views.lesson_chart)
    doc = handout_doc.build(handout([StepPage(4, "t", "e", None, "s", None, charts=(rec,))]))
    assert_inert(doc)
    (fig_html,) = re.findall(r'<figure class="chart">(.*?)</figure>', doc, flags=re.S)
    label = re.search(r'<svg[^>]* aria-label="([^"]*)"', fig_html).group(1)
    assert html.unescape(label) == alt_text(fig) and alt_text(fig) != "Top 2"
    table = re.search(r"<table>.*?</table>", fig_html, flags=re.S).group(0)
    cols = list(figure_table(fig))
    assert re.findall(r'<th scope="col">(.*?)</th>', table) == cols
    cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", table)]
    assert len(cells) == 2 * len(cols) and "<b>cat</b>" in cells and "0.5" in cells and "0.25" in cells


def test_a_chart_over_its_byte_budget_is_not_kept():
    big = head_heatmap(np.random.default_rng(0).random((200, 200)), [f"t{i}" for i in range(200)], "big")
    assert handout_record.record(big) is None
    session = {"lesson_step": 3}
    handout_record.keep(session, big, "k")
    assert session[handout_record.DRAWN] == {(3, "k"): None}


def computed(m, i: int):
    s = lesson.STEPS[i - 1]
    fn, args, kwargs = lesson.question_call(s, s.text, s.pair, 0)
    return fn(m, *args, **kwargs)


def test_every_visited_step_and_its_computed_answer_are_in_the_file():
    m = bert_core.load_model("bundled")
    visited = [1, 2, 4, 6, 13]
    pages = []
    for i in visited:
        s, q = lesson.STEPS[i - 1], computed(m, i)
        pages.append(StepPage(i, s.title, s.explain, s.formula, s.text, s.pair, prompt=q.prompt,
                              choices=tuple(q.choices), answer=q.answer, reveal=q.reveal, guess=0,
                              answer_label=lesson.answer_label(q)))
    doc = handout_doc.build(handout(pages))
    assert_inert(doc)
    sections = re.findall(r'<section class="step" id="step-(\d+)">(.*?)</section>', doc, flags=re.S)
    assert [int(n) for n, _ in sections] == visited
    for (_, body), i in zip(sections, visited):
        s, q = lesson.STEPS[i - 1], computed(m, i)
        assert f"Step {i} of {len(lesson.STEPS)}: {html.escape(s.title)}</h2>" in body
        answer = re.search(r'<li class="answer">(.*?) <span class="mark model">', body).group(1)
        assert answer == html.escape(q.choices[q.answer])
        # Each answer names its source: the model, the tokenizer, the paper, the masking rule.
        label = lesson.answer_label(q, capital=True)
        assert f"{html.escape(label)}:</strong> {html.escape(q.choices[q.answer])}." in body
        assert (html.escape("The model's answer") in body) == (q.answered_by == "the model")
        assert html.escape(q.reveal) in body
        assert ("<math" in body) == bool(s.formula)
    for s in lesson.STEPS:
        if lesson.STEPS.index(s) + 1 not in visited:
            assert f": {html.escape(s.title)}</h2>" not in doc
    assert "4 layers × 256 wide, 4 heads, 1,234,567 parameters" in doc and "2026-11-26 09:00 UTC" in doc
    assert f"BERT Explorer {bert_core.__version__}" in doc


def test_all_13_steps_fit_in_5_mb_and_what_is_left_out_is_said():
    """Every step at the longest sentence and its largest charts: charts go (largest first) before the 5 MB."""
    rng = np.random.default_rng(0)
    toks = [f"tok{i}" for i in range(80)]
    heavy = handout_record.record(head_heatmap(rng.random((80, 80)), toks, "80 tokens"))
    assert heavy is not None
    long = ("word " * (bert_core.MAX_TEXT_CHARS // 5))[: bert_core.MAX_TEXT_CHARS]
    pages = [StepPage(i, s.title, s.explain, s.formula, long, long if s.pair is not None else None,
                      prompt="Which?", choices=("a", "b"), answer=0, reveal=long, charts=(heavy, heavy))
             for i, s in enumerate(lesson.STEPS, 1)]
    doc = handout_doc.build(handout(pages))
    assert_inert(doc)
    size = len(doc.encode("utf-8"))
    assert size <= handout_doc.MAX_BYTES == 5 * 2**20, size
    left_out = int(re.search(r"(\d+) chart\(s\) left out", doc).group(1))
    assert doc.count("<svg") == 26 - left_out and 0 < left_out < 26
    assert len(re.findall(r'<section class="step"', doc)) == 13


def test_the_apps_version_is_the_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert bert_core.__version__ == project["version"]


@pytest.mark.parametrize("tex", [s.formula for s in lesson.STEPS if s.formula])
def test_every_formula_is_mathml(tex):
    out = handout_doc._formula(tex)
    assert out.startswith('<div class="formula"><math') and "<script" not in out


@pytest.mark.parametrize("name", sorted(PAGE_HOSTILE))
def test_the_hostile_page_texts_reach_the_file_only_as_text(name):
    text = PAGE_HOSTILE[name]
    m = bert_core.load_model("bundled")
    try:
        t = bert_core.analyze(m, text, None, top_k=5)
        charts = tuple(r for r in [handout_record.record(head_heatmap(t.attentions[0, 0], t.tokens, text))] if r)
    except bert_core.BertCoreError:
        charts = ()
    s = lesson.STEPS[1]
    doc = handout_doc.build(handout([StepPage(2, s.title, s.explain, s.formula, text, text, prompt=text,
                                              choices=(text, "b"), answer=0, reveal=text, guess=1, charts=charts)]))
    assert_inert(doc)
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", doc)
    shown = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "\ufffd", text)
    assert f'<span class="user">{html.escape(shown)}</span>' in doc


def rects(svg: str) -> list[dict]:
    return [dict(re.findall(r'([\w-]+)="([^"]*)"', r)) for r in re.findall(r"<rect [^>]*>", svg)]


def test_grouped_bars_side_by_side_a_frame_and_a_line_above_the_data():
    bars = handout_svg.svg(handout_record.record(without_head_figure(["a", "b"], [0.3, 0.2], [0.1, 0.25], "without")),
                           "g")
    drawn = [r for r in rects(bars) if r.get("fill") in ("#1f77b4", "#d62728")]
    assert len(drawn) == 4
    spans = sorted((float(r["x"]), float(r["x"]) + float(r["width"])) for r in drawn)
    assert all(a1 <= b0 + 0.2 for (_, a1), (b0, _) in zip(spans, spans[1:]))  # side by side, not on top
    frame = handout_svg.svg(handout_record.record(importance_figure(np.array([[0.1, -0.2, 0.3]]), (0, 2), "sat")), "f")
    assert [r for r in rects(frame) if r.get("fill") == "none" and r.get("stroke") == "black"]
    loss = loss_figure({"step": np.arange(0, 50, 10), "loss": np.linspace(9, 5, 5)})
    loss.add_hline(y=10.33, line_dash="dot", annotation_text="ln V")
    svg = handout_svg.svg(handout_record.record(loss), "l")
    area = next(r for r in rects(svg) if r.get("fill-opacity") == "0.35")  # the plot area
    line = dict(re.findall(r'([\w-]+)="([^"]*)"', re.search(r"<line [^>]*stroke-dasharray[^>]*>", svg).group(0)))
    assert float(area["y"]) <= float(line["y1"]) <= float(area["y"]) + float(area["height"])  # inside, as plotly


def test_the_charts_a_session_keeps_are_bounded_in_bytes(monkeypatch):
    """Each step keeps what it drew when last shown; past MAX_CHART_BYTES the other steps' largest charts go."""
    from types import SimpleNamespace

    from ui.lesson import handout

    session: dict = {}
    monkeypatch.setattr(handout, "st", SimpleNamespace(session_state=session))
    fig = head_heatmap(np.random.default_rng(0).random((100, 100)), [f"t{i}" for i in range(100)], "100 tokens")
    for k in range(1, len(lesson.STEPS) + 1):
        session["lesson_step"] = k
        for j in range(3):
            handout_record.keep(session, fig, f"chart {j}")
        handout.keep_charts(k)
        assert handout_record.DRAWN not in session  # this run's charts went to their step
    kept = session[handout.CHARTS]
    one = kept[lesson.STEPS[-1].key][0]["bytes"]
    assert 3 * 13 * one > handout.MAX_CHART_BYTES  # more was drawn than may be kept
    assert sum(r["bytes"] for rs in kept.values() for r in rs) <= handout.MAX_CHART_BYTES
    assert len(kept[lesson.STEPS[-1].key]) == 3  # the step on screen keeps all it drew
    session["lesson_step"] = 1
    handout.keep_charts(1)  # step 1 shown again, drawing nothing this time (its answer hidden)
    assert kept[lesson.STEPS[0].key] == ()


def test_a_students_split_marks_their_vote_and_the_models_answer():
    s = lesson.STEPS[0]
    splits = (Split(f"Which {SCRIPT}?", ("one", IMG, "three"), 0, (4, 1, 0), mine=1),  # voted for another
              Split("Again?", ("yes", "no"), 1, (2, 3), mine=1),  # voted for the model's answer
              Split("Teacher's copy?", ("yes", "no"), 0, (5, 0)))  # no vote of the reader's
    doc = handout_doc.build(handout([StepPage(1, s.title, s.explain, s.formula, s.text, s.pair, splits=splits)],
                                    class_code="ABC123"))
    assert_inert(doc)
    tables = re.findall(r'<div class="split">(.*?)</div>', doc, flags=re.S)
    assert len(tables) == 3
    assert f"(5 answered): Which {html.escape(SCRIPT)}?" in tables[0]
    for table, sp in zip(tables, splits):
        rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(\d+)</td>.*?<td class=\"num\">(\d+)%</td></tr>",
                          table)
        assert [int(n) for _, n, _ in rows] == list(sp.tally)
        assert [int(p) for _, _, p in rows] == [round(100 * n / sum(sp.tally)) for n in sp.tally]
        assert [i for i, (c, _, _) in enumerate(rows) if "your vote" in c] == ([] if sp.mine is None else [sp.mine])
        assert [i for i, (c, _, _) in enumerate(rows) if "the answer" in c] == [sp.answer]
        assert all(c.startswith(html.escape(ch)) for (c, _, _), ch in zip(rows, sp.choices))
    assert "live class ABC123" in doc
