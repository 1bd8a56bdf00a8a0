"""Refresh every screenshot in README: `python scripts/screenshots.py [name ...]`.

The one way docs/screenshots/ changes. Tests write only under tests/output/; this script runs the browser
tests that take the README's pictures (offline, Debian's chromium, the bundled model: see tests/browser/),
then copies each picture from tests/output/ to docs/screenshots/<name>.png. With names, only those.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "output"
DOCS = ROOT / "docs" / "screenshots"

# README name -> (the test that takes it, the file it writes in tests/output)
SHOTS = {
    "lesson_present": ("tests/browser/test_browser_lesson_readable.py::"
                       "test_every_presenter_step_is_readable_from_the_back_row[own]", "lesson_readable_own_6.png"),
    **{name: (f"tests/browser/test_browser_a11y.py::test_page_renders_offline_and_is_accessible[{name}]",
              f"page_{name}.png")
       for name in ("tokenization", "embeddings", "masking", "attention", "predictions", "anatomy")},
    "training_live": ("tests/browser/test_browser.py::test_live_training_in_the_browser", "page_training_live.png"),
    "bertviz_head": ("tests/browser/test_browser_bertviz.py::test_head_view_renders_offline", "bertviz_head.png"),
    "layers": ("tests/browser/test_browser_layers.py::test_layer_pages_render_offline[layers-layers-4]",
               "layers.png"),
    "inside_layer": ("tests/browser/test_browser_layers.py::"
                     "test_layer_pages_render_offline[inside-layer-inside_layer-10]", "inside_layer.png"),
    "attention_rollout": ("tests/browser/test_browser_reliance.py::test_attention_rollout_and_head_statistics",
                          "attention_rollout.png"),
    "predictions_salience": ("tests/browser/test_browser_reliance.py::test_predictions_salience_fill_and_pll",
                             "predictions_salience.png"),
    "bert_vs_gpt": ("tests/browser/test_browser_bert_vs_gpt.py::"
                    "test_bert_vs_gpt_trains_three_models_and_shows_what_each_can_do", "page_bert_vs_gpt_trained.png"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="name", help=f"which pictures (default: all): {', '.join(SHOTS)}")
    names = ap.parse_args(argv).names or list(SHOTS)
    unknown = [n for n in names if n not in SHOTS]
    if unknown:
        ap.error(f"unknown picture {', '.join(unknown)}; pick from {', '.join(SHOTS)}")
    tests = sorted({SHOTS[n][0] for n in names})
    for n in names:
        (OUT / SHOTS[n][1]).unlink(missing_ok=True)  # a stale picture must not be copied
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "", *tests], cwd=ROOT)
    if r.returncode:
        print("scripts/screenshots.py: a browser test failed; docs/screenshots/ left as it was", file=sys.stderr)
        return r.returncode
    DOCS.mkdir(parents=True, exist_ok=True)
    for n in names:
        shutil.copy(OUT / SHOTS[n][1], DOCS / f"{n}.png")
        print(f"docs/screenshots/{n}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
