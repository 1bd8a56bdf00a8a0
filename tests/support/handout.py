"""The handout's hostile inputs and its safety check, shared by the handout's unit tests and its page tests."""

from __future__ import annotations

import html.parser
import re

SCRIPT = "</script><script>alert(1)</script><!--"
IMG = "<img src=x onerror=alert(1)>"

# What the handout may contain: its own HTML, inline SVG and MathML; nothing that runs or loads.
ALLOWED = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "strong", "em", "code", "br",
           "section", "div", "span", "ol", "ul", "li", "pre", "table", "tr", "td", "th", "figure", "footer", "svg",
           "rect", "text", "line", "polyline", "circle", "defs", "lineargradient", "stop", "math", "mrow", "mi",
           "mo", "mn", "msub", "msup", "msubsup", "mfrac", "msqrt", "mtext", "mspace", "munderover", "munder",
           "mover", "mstyle", "mpadded", "semantics", "annotation", "details", "summary", "caption", "thead",
           "tbody"}


class Tags(html.parser.HTMLParser):
    """Every start tag and attribute of a document, and the text inside any <script>."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]


def parsed(doc: str) -> Tags:
    p = Tags()
    p.feed(doc)
    p.close()
    return p


def assert_inert(doc: str) -> None:
    """No script, no event handler, no external reference, no comment: only the allowed tags."""
    low = doc.lower()
    assert "<script" not in low and "</script" not in low and "<!--" not in doc and "<img" not in low
    p = parsed(doc)
    assert p.tags <= ALLOWED, p.tags - ALLOWED
    assert not [a for a in p.attrs if a[1].startswith("on")], [a for a in p.attrs if a[1].startswith("on")]
    refs = [(t, k, v) for t, k, v in p.attrs if k in ("href", "src", "xlink:href", "action")]
    assert all(v.startswith("url(#") or v.startswith("#") for _, _, v in refs), refs
    assert re.findall(r"https?://[^\"' ]+", doc) == [] or set(re.findall(r"https?://[^\"' ]+", doc)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1998/Math/MathML"}
