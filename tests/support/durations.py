"""Each test file's measured seconds (tests/durations.json), the file order they give, and the run that rewrites them.

Under pytest-xdist `--dist loadfile` a file runs whole on one worker, handed out in collection order: the two workers
finish together only if the long files go first (longest processing time first). The order comes from a committed
file of seconds per test file (setup + call + teardown of its tests, summed), rewritten by a run with
`--write-durations`, so it follows the suite instead of a hand-kept list.

    scripts/test --write-durations      # a full run: every file's entry measured again, files gone dropped
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from support.paths import ROOT

FILE = ROOT / "tests" / "durations.json"


def load(path: Path = FILE) -> dict[str, float]:
    """{test file's path from the repository root: seconds}; empty when there is no file yet."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    except FileNotFoundError:
        return {}


def save(seconds: dict[str, float], path: Path = FILE) -> None:
    """Write one line per file, sorted by path (a small diff when a run rewrites it), in tenths of a second."""
    rows = {k: round(v, 1) for k, v in sorted(seconds.items())}
    path.write_text(json.dumps(rows, indent=0) + "\n", encoding="utf-8")


def merged(old: dict[str, float], measured: dict[str, float], root: Path = ROOT) -> dict[str, float]:
    """`old` with every measured file's entry replaced, less the files that no longer exist."""
    return {k: v for k, v in {**old, **measured}.items() if (root / k).is_file()}


def file_rank(path: str, seconds: dict[str, float], slow_tier: bool) -> tuple[int, float]:
    """The sort key of a test file: a file with no entry yet in a browser/server tier first (it starts chromium or a
    server: likely long, and a long file is harmless early but costly last), then the measured files longest
    first, then the other unmeasured files (unit and AppTest files are short)."""
    if path in seconds:
        return 1, -seconds[path]
    return (0 if slow_tier else 2), 0.0


class Recorder:
    """A plugin summing each test file's setup + call + teardown seconds (the controller hears every worker's
    reports under pytest-xdist); at the end of the run it merges them into tests/durations.json."""

    def __init__(self, path: Path = FILE):
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid.split("::", 1)[0]] += report.duration

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        if self.seconds and not session.config.option.collectonly:
            save(merged(load(self.path), dict(self.seconds)), self.path)
