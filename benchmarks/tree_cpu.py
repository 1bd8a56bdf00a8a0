"""The CPU seconds a command and every process it starts use, by kind of process.

    python benchmarks/tree_cpu.py -- python -m pytest -q -n 0 -m "" tests/browser/test_browser_lesson.py

The test suite is CPU-bound on two cores (docs/benchmarks.md), so a test file's cost is its CPU, not its wall time:
`/usr/bin/time` misses chromium, whose processes pytest never waits for. This samples /proc every 0.2 s, keeps each
descendant's last user + system time, and prints the sum by kind (chromium, Streamlit server, pytest, kernel...)
beside the wall time. A process that lives under 0.2 s is missed; its CPU is under 0.2 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a live process, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _kind(pid: int) -> str:
    """What a process is, from its command line."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "chrom" in args:
        kind = next((w for w in args.split() if w.startswith("--type=")), "--type=browser")
        return "chromium " + kind[len("--type="):]
    for word, name in (("streamlit", "streamlit server"), ("ipykernel", "jupyter kernel"), ("redis", "redis"),
                       ("haproxy", "haproxy"), ("node", "playwright driver"), ("pytest", "pytest"),
                       ("python", "python")):
        if word in args:
            return name
    return args.split(" ")[0][-30:] or "?"


def measure(cmd: list[str], every_s: float = 0.2) -> tuple[int, float, Counter]:
    """Run `cmd`; its exit status, wall seconds and CPU seconds by kind of process."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd)
    cpu: dict[int, float] = {}
    kinds: dict[int, str] = {}
    while True:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (s := _stat(int(entry))):
                parents[int(entry)] = s
        tree = {child.pid}
        grew = True
        while grew:  # the descendants of `child`, to any depth
            new = {p for p, (ppid, _) in parents.items() if ppid in tree and p not in tree}
            tree |= new
            grew = bool(new)
        for p in tree:
            if p in parents:
                cpu[p] = parents[p][1]
                if p not in kinds:
                    kinds[p] = _kind(p)
        if child.poll() is not None:
            break
        time.sleep(every_s)
    wall = time.perf_counter() - start
    by_kind: Counter = Counter()
    for p, s in cpu.items():
        by_kind[kinds[p]] += s
    return child.returncode, wall, by_kind


def main() -> int:
    """Parse `-- cmd...`, run it, print the CPU by kind."""
    args = sys.argv[1:]
    cmd = args[args.index("--") + 1:] if "--" in args else args
    if not cmd:
        print(__doc__)
        return 2
    code, wall, by_kind = measure(cmd)
    total = sum(by_kind.values())
    print(f"\ntree_cpu: exit {code}, wall {wall:.1f} s, CPU {total:.1f} s ({total / wall:.2f} cores)")
    for kind, s in by_kind.most_common():
        print(f"  {s:8.1f} s  {kind}")
    return code


if __name__ == "__main__":
    sys.exit(main())
