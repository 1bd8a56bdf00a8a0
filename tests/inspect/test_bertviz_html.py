"""Offline bertviz renderer: params parity with bertviz, escaping, and a real (offline) browser render."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from support.appserver import CHROMIUM, CHROMIUM_ARGS

from bert_core.inspect.bertviz_html import head_view_html, model_view_html

OUTPUT_DIR = Path(__file__).resolve().parents[1] / "output"

HOSTILE = "</script><img src=x onerror=alert(1)>"
# The only URLs left in the page: XML namespace names in d3 / require.js. They are identifiers
# passed to createElementNS, never fetched.
XML_NAMESPACES = {
    "http://www.w3.org/1999/xhtml",
    "http://www.w3.org/1999/xlink",
    "http://www.w3.org/2000/svg",
    "http://www.w3.org/2000/xmlns/",
    "http://www.w3.org/XML/1998/namespace",
}

L, H, T, B_START = 2, 3, 6, 3
TOKENS = ["[CLS]", "the", HOSTILE, "[SEP]", "Ġdog\u2028<!--", "[SEP]"]


def random_attention(layers=L, heads=H, t=T, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, t, t)) ** 4  # peaky, like real attention
    return a / a.sum(-1, keepdims=True)


N_SCRIPTS = 5  # d3, jQuery, require.js, the AMD shim, bertviz's view


def start_tags(doc: str) -> list[str]:
    """Start tags as an HTML parser sees them (script content is opaque, as in a browser)."""
    tags = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append(tag)
            assert not any(name.startswith("on") for name, _ in attrs), (tag, attrs)

    Collector(convert_charrefs=True).feed(doc)
    return tags


def embedded_params(doc: str) -> dict:
    """The params object the page passes to bertviz's JS."""
    start = doc.index("const params = ") + len("const params = ")
    return json.JSONDecoder().raw_decode(doc, start)[0]


# --------------------------------------------------------------------------- unit tests


@pytest.mark.parametrize("pair", [None, B_START])
@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_no_network_urls(render, pair):
    doc = render(random_attention(), TOKENS, sentence_b_start=pair)
    assert doc.startswith("<!DOCTYPE html>")
    assert "cdnjs" not in doc.lower() and "require.config({" not in doc
    assert "sourceMappingURL" not in doc
    markup = re.sub(r"<script>.*?</script>", "", doc, flags=re.DOTALL)  # the HTML outside scripts
    assert markup.count("<") > 10 and "<div" in markup
    assert not re.search(r"""(src|href|action|srcset)\s*=|url\(|@import""", markup, re.IGNORECASE)
    urls = set(re.findall(r"""https?://[^\s"'<>)]*""", doc))
    assert urls <= XML_NAMESPACES, urls - XML_NAMESPACES
    assert "Content-Security-Policy" in doc and "default-src 'none'" in doc


@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_hostile_token_is_escaped(render):
    doc = render(random_attention(), TOKENS, sentence_b_start=B_START)
    assert HOSTILE not in doc
    assert "<img" not in doc.lower()
    assert "\u2028" not in doc and "<!--dog" not in doc
    # Parsed as HTML, the page holds only our elements: 5 scripts, no <img>, no event handlers.
    tags = start_tags(doc)
    assert tags.count("script") == N_SCRIPTS == doc.count("</script")
    assert "img" not in tags and "iframe" not in tags
    # ...and the token still reaches bertviz's JS unchanged (after bertviz's Ġ prettifying).
    left = embedded_params(doc)["attention"][0]["left_text"]
    assert left[2] == HOSTILE and left[4] == " dog\u2028<!--"


def test_head_params_match_bertviz():
    torch = pytest.importorskip("torch")
    from bertviz import head_view

    att = random_attention()
    torch_att = [torch.tensor(layer[None], dtype=torch.float64) for layer in att]
    for kwargs in ({}, {"sentence_b_start": B_START, "layer": 1, "heads": [0, 2]}):
        ours = embedded_params(head_view_html(att, TOKENS, decimals=None, **kwargs))
        theirs = embedded_params(head_view(torch_att, TOKENS, html_action="return", **kwargs).data)
        assert ours.pop("root_div_id").startswith("bertviz-") and theirs.pop("root_div_id")
        assert ours == theirs


def test_model_params_match_bertviz():
    torch = pytest.importorskip("torch")
    from bertviz import model_view

    att = random_attention()
    torch_att = [torch.tensor(layer[None], dtype=torch.float64) for layer in att]
    for kwargs in ({}, {"sentence_b_start": B_START, "include_heads": [1, 2], "display_mode": "light"}):
        ours = embedded_params(model_view_html(att, TOKENS, decimals=None, **kwargs))
        theirs = embedded_params(model_view(torch_att, TOKENS, html_action="return", **kwargs).data)
        ours.pop("root_div_id"), theirs.pop("root_div_id")
        assert ours == theirs


def test_sentence_pair_split():
    att = random_attention()
    data = embedded_params(head_view_html(att, TOKENS, sentence_b_start=B_START))["attention"]
    assert [d["name"] for d in data] == [
        "All",
        "Sentence A -> Sentence A",
        "Sentence B -> Sentence B",
        "Sentence A -> Sentence B",
        "Sentence B -> Sentence A",
    ]
    ab = np.array(data[3]["attn"])
    assert ab.shape == (L, H, B_START, T - B_START)
    np.testing.assert_allclose(ab, att[:, :, :B_START, B_START:], atol=5e-5)  # rounded to 4 decimals


def test_deterministic_output():
    att = random_attention()
    assert head_view_html(att, TOKENS) == head_view_html(att, TOKENS)
    assert head_view_html(att, TOKENS) != head_view_html(random_attention(seed=1), TOKENS)


@pytest.mark.parametrize("render", [head_view_html, model_view_html])
@pytest.mark.parametrize(
    "attention, tokens, kwargs",
    [
        (random_attention(), TOKENS[:-1], {}),  # one token short
        (random_attention(), TOKENS + ["x"], {}),  # one token too many
        (random_attention()[0], TOKENS, {}),  # 3-D
        (random_attention()[..., :-1], TOKENS, {}),  # not square
        (np.zeros((0, H, T, T)), TOKENS, {}),  # no layers
        (np.full((L, H, T, T), np.nan), TOKENS, {}),
        (random_attention(), "a b c d e f", {}),  # a string, not a list
        (random_attention(), [1, 2, 3, 4, 5, 6], {}),
        (random_attention(), TOKENS, {"sentence_b_start": 0}),
        (random_attention(), TOKENS, {"sentence_b_start": T}),
        (random_attention(), TOKENS, {"include_layers": [L]}),
    ],
)
def test_bad_input_raises_value_error(render, attention, tokens, kwargs):
    with pytest.raises(ValueError):
        render(attention, tokens, **kwargs)


def test_bad_head_view_selection_raises():
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, layer=L)
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, heads=[H])
    with pytest.raises(ValueError):
        head_view_html(random_attention(), TOKENS, heads=[])
    with pytest.raises(ValueError):
        model_view_html(random_attention(), TOKENS, display_mode="neon")


# --------------------------------------------------------------------------- browser tests


@pytest.fixture(scope="module")
def browser():
    # No skip: a missing Chromium must fail the run.
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} not found (apt-get install chromium)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A page with all network blocked that records errors, console errors, dialogs and requests."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1100, "height": 700})
        self.requests, self.errors, self.console_errors, self.dialogs = [], [], [], []

        def block(route):
            self.requests.append(route.request.url)
            route.abort()

        self.context.route("**/*", block)
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))

        def on_dialog(d):
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", on_dialog)

    def check_clean(self, frame):
        assert frame.locator("img").count() == 0
        assert self.page.locator("img").count() == 0
        assert not self.errors, self.errors
        assert not self.console_errors, self.console_errors
        assert not self.dialogs, self.dialogs
        assert not self.requests, self.requests

    def close(self):
        self.context.close()


@pytest.fixture()
def bpage(browser):
    p = Page(browser)
    yield p
    p.close()


def svg_texts(frame):
    return frame.locator("#vis svg text").all_text_contents()


def stroke_colors(frame):
    return set(frame.eval_on_selector_all("#vis svg line", "els => els.map(e => e.getAttribute('stroke'))"))


@pytest.mark.browser
def test_head_view_renders_offline(bpage):
    att = random_attention()
    bpage.page.set_content(head_view_html(att, TOKENS, sentence_b_start=B_START))
    page = bpage.page
    page.wait_for_selector("#vis svg line", state="attached", timeout=10_000)

    assert page.locator("#vis svg line").count() == H * T * T
    assert page.locator("#vis svg rect").count() > 0
    assert len(stroke_colors(page)) == H  # one colour per head
    assert HOSTILE in svg_texts(page)  # drawn as text, not markup
    assert page.locator("#layer option").count() == L
    assert page.locator("#filter option").count() == 5
    page.screenshot(path=str(OUTPUT_DIR / "bertviz_head.png"), full_page=True)

    # bertviz's controls still work: sentence filter, layer switch and token hover.
    page.select_option("#filter", "3")  # Sentence A -> Sentence B
    assert page.locator("#vis svg line").count() == H * B_START * (T - B_START)
    page.select_option("#filter", "0")
    page.select_option("#layer", "1")
    assert page.locator("#vis svg line").count() == H * T * T
    page.locator("#vis svg #left text").nth(1).hover()
    assert page.locator("#vis svg line[visibility='visible']").count() == H * T
    bpage.check_clean(page)


@pytest.mark.browser
def test_model_view_renders_offline(bpage):
    att = random_attention()
    page = bpage.page
    page.set_content(model_view_html(att, TOKENS, display_mode="light"))
    page.wait_for_selector("#vis svg line", state="attached", timeout=10_000)

    assert page.locator("#vis svg line").count() == L * H * T * T
    assert len(stroke_colors(page)) == L  # bertviz colours thumbnails by layer
    # Open the detail view of layer 1, head 2 (click regions are the last rect in each group).
    page.locator("#vis svg > g").nth(L * H - 1).locator("rect").last.click()
    page.wait_for_selector("#vis svg .detail", state="attached", timeout=5_000)
    assert "Layer 1, Head 2" in svg_texts(page)
    assert HOSTILE in svg_texts(page)
    assert page.locator("#vis svg line").count() == L * H * T * T + T * T
    page.screenshot(path=str(OUTPUT_DIR / "bertviz_model.png"), full_page=True)
    bpage.check_clean(page)


@pytest.mark.browser
@pytest.mark.parametrize("render", [head_view_html, model_view_html])
def test_renders_in_streamlit_style_srcdoc_iframe(bpage, render):
    # st.components.v1.html puts the document in a sandboxed iframe's srcdoc.
    doc = render(random_attention(), TOKENS, sentence_b_start=B_START)
    sandbox = (
        "allow-forms allow-modals allow-popups allow-popups-to-escape-sandbox "
        "allow-same-origin allow-scripts allow-downloads"
    )
    bpage.page.set_content(
        f'<iframe id="c" sandbox="{sandbox}" width="1000" height="600" srcdoc="{html.escape(doc)}"></iframe>'
    )
    frame = bpage.page.frame_locator("#c")
    frame.locator("#vis svg line").first.wait_for(state="attached", timeout=10_000)
    assert frame.locator("#vis svg line").count() > 0
    if render is model_view_html:  # tokens only show in the detail view: open one
        frame.locator("#vis svg > g").first.locator("rect").last.click()
        frame.locator("#vis svg .detail").first.wait_for(state="attached", timeout=5_000)
    assert HOSTILE in frame.locator("#vis svg text").all_text_contents()
    bpage.check_clean(frame)


@pytest.fixture(scope="module", autouse=True)
def _output_dir():
    OUTPUT_DIR.mkdir(exist_ok=True)
