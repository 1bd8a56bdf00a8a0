"""No product module over 600 lines (the project's rule): a longer one is split by role, not crammed."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app.py", "bert_core", "ui", "views", "classroom", "server")
LIMIT = 600


def test_no_product_module_is_over_600_lines():
    files = [p for name in PACKAGES for p in ([ROOT / name] if name.endswith(".py") else (ROOT / name).rglob("*.py"))]
    assert len(files) > 50  # the packages were found
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > LIMIT}
    assert not long, long
