"""The offline bertviz renderer in a real (offline) chromium: head view and model view draw, their controls work,
hostile tokens show as text, inside a Streamlit-style sandboxed srcdoc iframe too. (The renderer's HTML itself:
tests/inspect/test_bertviz_html.py.)"""

from __future__ import annotations

import html

import pytest
from support.bertviz_input import B_START, HOSTILE, TOKENS, H, L, T, random_attention
from support.paths import OUT as OUTPUT_DIR

from bert_core.inspect.bertviz_html import head_view_html, model_view_html


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
