"""README's pictures: scripts/screenshots.py knows how to retake each one, and no test writes outside tests/output."""

import re
import sys

from apptest_util import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import screenshots  # noqa: E402


def test_every_readme_picture_has_a_test_that_takes_it():
    readme = set(re.findall(r"docs/screenshots/([a-z_]+)\.png", (ROOT / "README.md").read_text()))
    on_disk = {p.stem for p in (ROOT / "docs" / "screenshots").glob("*.png")}
    assert readme <= on_disk, readme - on_disk
    assert set(screenshots.SHOTS) == on_disk, set(screenshots.SHOTS) ^ on_disk
    for test, _ in screenshots.SHOTS.values():
        path, _, name = test.partition("::")
        assert (ROOT / path).is_file(), path
        assert f"def {name.split('[')[0]}(" in (ROOT / path).read_text(), test


def test_no_test_names_the_docs_folder():
    """Tests write under tests/output only: none of them builds a path into docs/ (scripts/screenshots.py does)."""
    offenders = [p.relative_to(ROOT) for p in (ROOT / "tests").rglob("*.py")
                 if "output" not in p.parts and p.name != "test_screenshots.py"
                 and re.search(r"""["']docs["']|docs/screenshots""", p.read_text())]
    assert not offenders, offenders
