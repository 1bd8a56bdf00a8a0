"""The real app in a real browser: `streamlit run` on loopback, Debian's chromium via Playwright: a CSV download,
a shared link, hostile text and uploads, live training and fine-tuning.

Every request that does not go to our own server is aborted, so these tests also prove the app works with no network
at all. Every page's render with no network (bertviz included), its colour contrast and README's pictures of the
pages: test_browser_a11y.py, one visit per page. Screenshots land in tests/output/.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest
from support.browser import OUT, assert_nothing_injected
from support.wait import until

pytestmark = pytest.mark.browser


def test_table_downloads_its_csv(watch):
    """A table's CSV button (written on click, not on every rerun) downloads that table."""
    page = watch.open("/tokenization")
    with page.expect_download(timeout=30_000) as d:
        page.get_by_role("button", name="Download tokens (CSV)").click()
    assert d.value.suggested_filename == "tokens.csv"
    lines = Path(d.value.path()).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("position,token,id,segment")
    # The default text "She [MASK] the letter to her mother." is 10 tokens with [CLS] and [SEP].
    assert [line.split(",")[1] for line in lines[1:]] == ["[CLS]", "she", "[MASK]", "the", "letter", "to", "her",
                                                          "mother", ".", "[SEP]"]
    watch.assert_clean()


PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)><b id="inj">bold</b>'


def assert_payload_inert(watch, page) -> None:
    """No error and no dialog, and nothing the payload's HTML would make, in the page or any of its frames."""
    watch.assert_clean()
    for f in page.frames:
        assert f.locator("#inj").count() == 0 and f.locator("img[src='x']").count() == 0, f.url


def test_shared_url_reproduces_the_view(watch):
    """A link's text, layer, head and seed reopen Attention on that view, and stay in the address. The link's text is
    the payload (HTML and a script) before a sentence: the text box holds it literally, and it runs nowhere, in the
    page or in bertviz's frames, which draw its tokens (the other pages showing it: the test below)."""
    text = PAYLOAD + " The dog [MASK] over the fence."
    q = urllib.parse.urlencode({"text": text, "layer": "1", "head": "2", "seed": "7"})
    page = watch.open(f"/attention?{q}")
    watch.assert_clean()
    box = page.locator('[data-testid="stSidebar"] textarea').first
    until(lambda: box.input_value() == text, 60, "the sidebar's text box to hold the link's text")  # filled late
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert "Layer" in body or "layer" in body
    # The view's settings stayed in the URL, so copying the address reopens this view.
    current = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert current.get("layer") == ["1"] and current.get("head") == ["2"] and current.get("seed") == ["7"]
    assert_payload_inert(watch, page)


def test_script_in_text_and_url_runs_nowhere(watch):
    """The payload in the link's text runs nowhere on the Lesson (the root) and the other pages that show the text
    (Attention, with its frames: test_shared_url_reproduces_the_view)."""
    page = watch.open("/?" + urllib.parse.urlencode({"text": PAYLOAD + " [MASK]"}))
    assert_payload_inert(watch, page)
    for name in ("predictions", "masking", "embeddings"):
        page.goto(f"{watch.base}/{name}?" + urllib.parse.urlencode({"text": PAYLOAD + " [MASK]"}))
        watch.settle()
        assert_payload_inert(watch, page)
    assert not watch.dialogs


def test_live_training_in_the_browser(watch):
    """Start trains while the page is open: the step counter advances and the loss is drawn."""
    page = watch.open("/training")
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=90_000)

    def steps_shown() -> int:
        """The Step metric's count (0 while none is shown)."""
        metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
        step = [m for m in metrics if m.lower().startswith("step")]
        return int(step[0].split()[-1].replace(",", "").split("/")[0]) if step else 0

    until(lambda: steps_shown() > 0, 180, "the live page to show a training step", every=0.5)  # live ticks
    page.get_by_role("button", name="Pause").click()
    watch.settle()
    watch.assert_clean()
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    assert steps_shown() > 0, metrics
    page.screenshot(path=str(OUT / "page_training_live.png"), full_page=True)


NAME_PAYLOAD = '"><img src=x onerror=alert(1)><script>alert(2)</script>.txt'
BODY_PAYLOAD = (
    "The cat sat on the mat <script>alert(3)</script> and looked at the door.\n"
    "The dog slept on the rug <img src=x onerror=alert(4)> near the warm fire.\n"
    "A bird sang in the tree while the children played in the garden.\n"
)
def upload_corpus(watch, name: str, data: bytes):
    """Open Training, choose the upload corpus and upload one in-memory file; returns the page."""
    page = watch.open("/training")
    page.get_by_text("Upload a .txt file", exact=True).click()
    watch.settle()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "text/plain", "buffer": data}])
    page.wait_for_selector('[data-testid="stFileChipName"]', timeout=30_000)
    watch.settle()
    return page


def test_upload_name_and_content_inject_nothing(watch):
    """An uploaded file whose name and lines are HTML/script shows as plain text, runs nothing, and trains."""
    page = upload_corpus(watch, NAME_PAYLOAD, BODY_PAYLOAD.encode())
    chip = page.locator('[data-testid="stFileChipName"]')
    # The widget shortens long names on screen but keeps the whole name in the title: both must be literal text.
    assert chip.get_attribute("title") == NAME_PAYLOAD
    assert chip.inner_text().startswith('"><img')
    # Checked now, while the uploader shows the name: once a run exists the page hides the uploader.
    assert_nothing_injected(page)
    page.get_by_role("button", name="Run 10 steps").click()
    watch.settle()
    assert_nothing_injected(page)  # the content has now been read, split into lines and trained on
    watch.assert_clean()  # no dialog (alert), no exception, no console error
    # The run's metrics can appear a rerun after the script first settles (the page's timer): wait for them.
    step_metric = page.locator('[data-testid="stMetric"]').filter(has_text="Step")
    step_metric.first.wait_for(timeout=180_000)
    metrics = page.locator('[data-testid="stMetric"]').all_inner_texts()
    step = [m for m in metrics if m.lower().startswith("step")]
    assert step and step[0].split()[-3] == "10", metrics  # "Step\n10 / 500": the upload was trained on


def test_non_utf8_upload_gives_a_clear_message(watch):
    """A file that is not UTF-8 (with markup in its name) is refused in plain words, without a traceback."""
    page = upload_corpus(watch, "bad<b>.txt", b"caf\xe9 au lait\n" * 5)
    chip = page.locator('[data-testid="stFileChipName"]')
    assert chip.get_attribute("title") == "bad<b>.txt" and chip.inner_text() == "bad<b>.txt"
    page.get_by_role("button", name="Run 10 steps").click()
    watch.settle()
    watch.assert_clean()
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="Cannot start")
    assert alert.count() == 1 and "not UTF-8" in alert.inner_text(), alert.all_inner_texts()
    assert page.locator("b", has_text=".txt").count() == 0  # the name's <b> stayed text everywhere
    assert "Traceback" not in page.locator('[data-testid="stMain"]').inner_text()
    assert page.locator('[data-testid="stMetric"]').count() == 0  # nothing was set up


FT_CSV = "text,label\n" + "".join(
    f"{w} number {i},{lab}\n" for i in range(12)
    for w, lab in (("a small cat", "animal"), ("a red apple", '<img src=x onerror=alert(5)>food')))


def test_live_finetuning_in_the_browser(watch):
    """Paste a CSV (one label is HTML), train the head live, see curves, confusion, PCA and a sentence."""
    page = watch.open("/finetuning")
    page.get_by_text("Paste CSV", exact=True).click()
    watch.settle()
    page.get_by_label("CSV: one example a line").fill(FT_CSV)
    page.keyboard.press("Control+Enter")
    watch.settle()
    page.get_by_text("Freeze the encoder (train the head only)").click()
    watch.settle()
    page.get_by_role("button", name="Start").click()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
    until(lambda: "finished" in page.locator('[data-testid="stMain"]').inner_text(), 300, "the run to finish",
          every=1)
    watch.settle()
    watch.assert_clean()
    assert_nothing_injected(page)
    assert page.locator(".js-plotly-plot").count() >= 3  # curves, confusion matrix, PCA before/after
    page.get_by_label("A sentence to classify").fill("a small cat")
    page.keyboard.press("Enter")
    watch.settle()
    assert page.locator(".js-plotly-plot").count() >= 4
    assert_nothing_injected(page)
    watch.assert_clean()
    page.screenshot(path=str(OUT / "page_finetuning_live.png"), full_page=True)
