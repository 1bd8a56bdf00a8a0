"""Fill tests/durations.json from a pytest run's `--durations` lines: `python scripts/durations_from_log.py LOG...`.

Each "12.34s call     tests/x/test_y.py::test_z" line adds its seconds (setup, call and teardown alike) to its
file; the files measured replace their entries, the others keep theirs. A log cut by `--durations-min` misses a
file's short tests: `scripts/test --write-durations` measures every test.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support import durations  # noqa: E402

LINE = re.compile(r"^(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(tests/\S+?\.py)::")


def per_file(text: str) -> dict[str, float]:
    """{test file: summed seconds} of every durations line in `text`."""
    seconds: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        if m := LINE.match(line.strip()):
            seconds[m[2]] += float(m[1])
    return dict(seconds)


def main(argv: list[str]) -> None:
    measured: dict[str, float] = {}
    for log in argv:
        measured.update(per_file(Path(log).read_text(encoding="utf-8", errors="replace")))
    if not measured:
        raise SystemExit("no durations lines found (run pytest with --durations=N)")
    durations.save(durations.merged(durations.load(), measured))
    print(f"{len(measured)} files measured, written to {durations.FILE}")


if __name__ == "__main__":
    main(sys.argv[1:])
