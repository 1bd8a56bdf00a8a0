"""The pictures in README.md and docs/: scripts/screenshots.py knows how to retake each one, every one is shown, and
no test writes outside tests/output."""

import re
import sys

from support.apptest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import screenshots  # noqa: E402


def test_every_picture_shown_has_a_test_that_takes_it():
    shown = set(re.findall(r"docs/screenshots/([a-z_]+)\.png", (ROOT / "README.md").read_text()))
    for guide in (ROOT / "docs").glob("*.md"):
        shown |= set(re.findall(r"\(screenshots/([a-z_]+)\.png\)", guide.read_text()))
    on_disk = {p.stem for p in (ROOT / "docs" / "screenshots").glob("*.png")}
    assert shown == on_disk, shown ^ on_disk  # every picture shown exists, every one taken is shown
    assert set(screenshots.SHOTS) == on_disk, set(screenshots.SHOTS) ^ on_disk
    for test, _ in screenshots.SHOTS.values():
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), path
        assert f"def {name.split('[')[0]}(" in (ROOT / path).read_text(), test


READERS = ("test_screenshots.py", "test_docs.py", "test_bundled.py", "test_limits.py")  # they read docs/, write nothing


def test_no_test_names_the_docs_folder():
    """Tests write under tests/output only: none of them builds a path into docs/ (scripts/screenshots.py does)."""
    offenders = [p.relative_to(ROOT) for p in (ROOT / "tests").rglob("*.py")
                 if "output" not in p.parts and p.name not in READERS
                 and re.search(r"""["']docs["']|docs/screenshots""", p.read_text())]
    assert not offenders, offenders
