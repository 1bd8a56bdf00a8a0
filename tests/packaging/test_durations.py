"""The test files' order under pytest-xdist: longest first by tests/durations.json, kept up to date by a run."""

from __future__ import annotations

import json
from types import SimpleNamespace

from support import durations
from support.paths import ROOT


def test_files_go_longest_first_unmeasured_slow_tier_before_them_and_unmeasured_others_after():
    seconds = {"tests/a.py": 5.0, "tests/b.py": 90.0, "tests/c.py": 30.0}
    files = {"tests/a.py": False, "tests/b.py": True, "tests/c.py": False, "tests/new_browser.py": True,
             "tests/new_unit.py": False}
    order = sorted(files, key=lambda f: durations.file_rank(f, seconds, files[f]))
    assert order == ["tests/new_browser.py", "tests/b.py", "tests/c.py", "tests/a.py", "tests/new_unit.py"]


def test_the_committed_durations_name_only_test_files_that_exist():
    seconds = durations.load()
    assert seconds, "tests/durations.json is empty: the files run in collection order"
    assert all((ROOT / f).is_file() and f.startswith("tests/") and f.endswith(".py") for f in seconds), seconds
    assert all(v >= 0 for v in seconds.values())


def test_the_collected_order_follows_the_durations(request):
    """This session's items: every measured file's tests together, the files in falling measured time."""
    seconds = durations.load()
    files = list(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in request.session.items))
    measured = [f for f in files if f in seconds]
    assert [seconds[f] for f in measured] == sorted((seconds[f] for f in measured), reverse=True)


def test_pytest_xdist_keeps_our_order(pytestconfig):
    # pytest-xdist's default (--loadscope-reorder) hands out files by their number of tests, not in our order.
    assert getattr(pytestconfig.option, "loadscopereorder", False) is False


def test_a_run_sums_each_files_setup_call_and_teardown_and_merges_them(tmp_path):
    path = tmp_path / "durations.json"
    durations.save({"tests/conftest.py": 1.0, "tests/gone_test_file.py": 7.0}, path)
    rec = durations.Recorder(path)
    for nodeid, s in (("tests/packaging/test_durations.py::t1", 0.25), ("tests/packaging/test_durations.py::t1", 2.0),
                      ("tests/packaging/test_durations.py::t2", 0.5)):
        rec.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=s))
    rec.pytest_sessionfinish(SimpleNamespace(config=SimpleNamespace(option=SimpleNamespace(collectonly=False))), 0)
    # The measured file is replaced, an unmeasured file that exists is kept, a file that is gone is dropped.
    assert json.loads(path.read_text()) == {"tests/conftest.py": 1.0, "tests/packaging/test_durations.py": 2.8}
