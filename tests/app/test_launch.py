"""The app never imports transformers (nor bertviz's package, which imports torch and IPython) at run time.

transformers is a test and benchmark dependency: importing it costs seconds at launch and memory
for nothing. Every page runs in a fresh interpreter where importing it raises, so an import anywhere
(a page, ui/, bert_core, a library they call) shows up as an exception on the page.
"""

from __future__ import annotations

import subprocess
import sys

from support.apptest import ROOT

PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "training"]

CHILD = r"""
import sys

sys.modules["transformers"] = None  # `import transformers` now raises ImportError, wherever it happens
sys.path.insert(0, "tests")
from support.apptest import open_page

for page in sys.argv[1:]:
    at = open_page(page, timeout=300)
    assert not at.exception, (page, [e.value for e in at.exception])
# bertviz is only looked up (importlib.util.find_spec: its version, its files), never imported.
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("transformers", "bertviz") and sys.modules[m])
assert not loaded, loaded
print("ok", len(sys.argv) - 1)
"""


def test_no_page_imports_transformers():
    r = subprocess.run([sys.executable, "-c", CHILD, *PAGES], cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(ROOT / "tests" / "output")})
    assert r.returncode == 0 and r.stdout.strip().endswith(f"ok {len(PAGES)}"), r.stdout[-2000:] + r.stderr[-4000:]
