"""The Lesson's handout: one self-contained HTML file a student takes home, built from plain data.

What went in: each visited step's title, explanation, formula, sentence (and sentence B), its question with
the choices, the model's answer (computed by the app, passed in here), the student's guess, and after a live
class the class's split. Charts come as static SVG (handout_svg.py): the file opens with no network and
has no script at all. Pure: no streamlit, no model; handout.py gathers the data from a session.

Every text that may come from a user (sentences, questions, choices, chart labels) goes through html.escape.
The explanations and formulas are the app's own: the Markdown is rendered with raw HTML off, the formula
turned into MathML (which chromium and firefox draw natively) or shown as its LaTeX source.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt

from ui.lesson import handout_svg

MAX_BYTES = 5 * 2**20  # the handout's budget: charts are left out (with a note) past it
_MD = MarkdownIt("commonmark", {"html": False})  # our own explanations; raw HTML would be shown, never run


@dataclass(frozen=True)
class Split:
    """How a class voted on one question (its own prompt and choices, as the class saw them)."""

    prompt: str
    choices: tuple[str, ...]
    answer: int  # the model's answer, as revealed to the class
    tally: tuple[int, ...]
    mine: int | None = None  # the reading student's own vote (None: the teacher's handout, or no vote)


@dataclass(frozen=True)
class StepPage:
    """One visited step, as plain data."""

    number: int  # 1-based
    title: str
    explain: str  # Markdown, the app's own words
    formula: str | None  # LaTeX
    text: str
    pair: str | None
    prompt: str | None = None  # None: the step asked nothing for this sentence (`note` says why)
    choices: tuple[str, ...] = ()
    answer: int | None = None
    reveal: str = ""  # the model's numbers behind the answer
    answer_label: str = "the model's answer"  # its source: the model, the tokenizer, the paper (content.answer_label)
    guess: int | None = None  # the student's guess, if they made one on this sentence
    note: str = ""
    charts: tuple[dict, ...] = ()  # handout_svg records of what the step drew
    splits: tuple[Split, ...] = ()


@dataclass(frozen=True)
class Handout:
    model_name: str
    layers: int
    width: int
    heads: int
    parameters: int
    date: str  # when it was made, e.g. "2026-11-26 09:12 UTC"
    version: str  # the app's version
    total_steps: int
    steps: tuple[StepPage, ...] = field(default_factory=tuple)
    class_code: str | None = None  # set after a live class
    model_line: str = ""  # what the model is, against the paper's BERT (bert_core.lesson.naming.model_line)


def _e(s) -> str:
    """User text as HTML text: escaped, control characters shown as \ufffd (what a browser would make of them)."""
    return html.escape(handout_svg.CONTROL.sub("\ufffd", "" if s is None else str(s)), quote=True)


def _formula(tex: str) -> str:
    try:
        math = latex_to_mathml(tex, display="block")
    except Exception:  # a formula latex2mathml cannot read is shown as its source rather than lost
        math = ""
    if not math.startswith("<math") or "<script" in math.lower():
        return f'<pre class="formula">{_e(tex)}</pre>'
    return f'<div class="formula">{math}</div>'


def _question(s: StepPage) -> str:
    if s.prompt is None:
        return f'<p class="note">{_e(s.note or "No question for this sentence.")}</p>'
    items = []
    for i, c in enumerate(s.choices):
        marks = []
        if i == s.answer:
            marks.append(f'<span class="mark model">{_e(s.answer_label)}</span>')
        if i == s.guess:
            marks.append('<span class="mark guess">your guess</span>')
        cls = ' class="answer"' if i == s.answer else ""
        items.append(f"<li{cls}>{_e(c)} {' '.join(marks)}</li>")
    out = [f'<p class="q"><strong>Question.</strong> {_e(s.prompt)}</p>', f"<ol>{''.join(items)}</ol>"]
    if s.answer is not None and 0 <= s.answer < len(s.choices):
        verdict = ""
        if s.guess is not None:
            verdict = " Your guess was the same." if s.guess == s.answer else " Your guess was another one."
        label = s.answer_label[:1].upper() + s.answer_label[1:]
        out.append(f'<p><strong>{_e(label)}:</strong> {_e(s.choices[s.answer])}.{_e(verdict)}</p>')
    if s.guess is None:
        out.append('<p class="note">No guess of yours on this sentence.</p>')
    if s.reveal:
        out.append(f'<p class="reveal">{_e(s.reveal)}</p>')
    return "".join(out)


def _split(sp: Split) -> str:
    total = sum(sp.tally)
    rows = []
    for i, (c, n) in enumerate(zip(sp.choices, sp.tally)):
        share = n / total if total else 0.0
        model = ' <span class="mark model">the answer</span>' if i == sp.answer else ""
        if i == sp.mine:
            model += ' <span class="mark guess">your vote</span>'
        color = "#2e7d32" if i == sp.answer else "#757575"  # each >= 3:1 on white
        rows.append(f"<tr><td>{_e(c)}{model}</td><td class=\"num\">{n}</td>"
                    f'<td class="bar"><span style="width:{share * 100:.1f}%;background:{color}"></span></td>'
                    f'<td class="num">{share:.0%}</td></tr>')
    return (f'<div class="split"><p><strong>The class\'s guesses</strong> ({total} answered): {_e(sp.prompt)}</p>'
            f"<table><tr><th>choice</th><th>votes</th><th></th><th>share</th></tr>{''.join(rows)}</table></div>")


def _step(s: StepPage, total_steps: int, charts: list[str]) -> str:
    parts = [f'<section class="step" id="step-{s.number}"><h2>Step {s.number} of {total_steps}: {_e(s.title)}</h2>',
             f'<div class="explain">{_MD.render(s.explain)}</div>']
    if s.formula:
        parts.append(_formula(s.formula))
    parts.append(f'<p class="sentence"><strong>Sentence:</strong> <span class="user">{_e(s.text)}</span></p>')
    if s.pair is not None:
        parts.append(f'<p class="sentence"><strong>Sentence B:</strong> <span class="user">{_e(s.pair)}</span></p>')
    parts.append(_question(s))
    parts += [_split(sp) for sp in s.splits]
    parts += [f'<figure class="chart">{c}</figure>' for c in charts]
    parts.append("</section>")
    return "".join(parts)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#1b2733;max-width:820px;margin:2rem auto;
padding:0 1rem;line-height:1.5}
header{border-bottom:2px solid #2e86c1;margin-bottom:1.5rem}h1{margin-bottom:.2rem}
.meta{color:#44546a;font-size:.95rem}.step{border-bottom:1px solid #d0d7de;padding:1rem 0 1.5rem}
.formula{overflow-x:auto;overflow-y:hidden;margin:.6rem 0;padding:.2rem 0}math{font-size:1.15rem}
pre.formula{background:#f4f6f8;padding:.4rem}
.user{background:#f4f6f8;padding:0 .25rem;white-space:pre-wrap;word-break:break-word}
li.answer{font-weight:600}.mark{font-size:.8rem;border-radius:3px;padding:0 .3rem;margin-left:.3rem}
.mark.model{background:#2e7d32;color:#fff}.mark.guess{background:#2874a6;color:#fff}
.note{color:#5b6b7b;font-style:italic}.reveal{background:#f4f9f4;border-left:3px solid #2e7d32;padding:.3rem .6rem}
.split table{border-collapse:collapse;width:100%}.split td,.split th{padding:.15rem .4rem;text-align:left}
.split .num{text-align:right;width:4rem}.split .bar{width:40%}.split .bar span{display:block;height:.9rem}
figure.chart{margin:1rem 0;overflow-x:auto}figure.chart svg{max-width:100%;height:auto}
details.data table{border-collapse:collapse;font-size:.9rem}details.data td,details.data th{border:1px solid #d0d7de;
padding:.1rem .4rem;text-align:left}details.data caption{text-align:left;font-style:italic}
footer{color:#5b6b7b;font-size:.85rem;margin-top:2rem}
@media print{.step{break-inside:avoid-page}}
"""


def build(h: Handout) -> str:
    """The handout as one HTML document: no script, no external reference, at most MAX_BYTES (UTF-8)."""
    size = f"{h.layers} layers × {h.width} wide, {h.heads} heads, {h.parameters:,} parameters"
    head = (f"<header><h1>BERT Explorer: the Lesson</h1><p class=\"meta\">Model: <strong>{_e(h.model_name)}"
            f"</strong> ({_e(size)}).{' ' + _e(h.model_line) if h.model_line else ''}"
            f"<br>Made {_e(h.date)} with BERT Explorer {_e(h.version)}. "
            f"{len(h.steps)} of {h.total_steps} steps visited"
            + (f"; live class {_e(h.class_code)}" if h.class_code else "")
            + ".<br>Every answer below was computed on the sentence shown and names its source: the model's answer "
              "is what the model computed, which is not always the truth; the tokenizer's, the paper's or the "
              "masking rule's answer is a fact of that source.</p></header>")
    svgs = [[handout_svg.figure_html(rec, f"{s.number}-{i}") for i, rec in enumerate(s.charts) if rec] for s in h.steps]
    dropped = 0
    while True:
        body = "".join(_step(s, h.total_steps, c) for s, c in zip(h.steps, svgs))
        note = (f"<p class=\"note\">{dropped} chart(s) left out to keep this file under "
                f"{MAX_BYTES // 2**20} MB.</p>") if dropped else ""
        doc = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
               "img-src data:\">"
               f"<title>BERT Explorer: the Lesson ({_e(h.model_name)})</title><style>{CSS}</style></head>"
               f"<body>{head}{note}{body}<footer>BERT Explorer {_e(h.version)}: one file, no script; it needs no "
               "network to open.</footer></body></html>")
        if len(doc.encode("utf-8")) <= MAX_BYTES:
            return doc
        sizes = [(len(c), i, j) for i, cs in enumerate(svgs) for j, c in enumerate(cs) if c]
        if not sizes:
            raise ValueError("the handout's text alone is over its size budget")
        _, i, j = max(sizes)
        svgs[i][j] = ""
        svgs[i] = [c for c in svgs[i] if c]
        dropped += 1
