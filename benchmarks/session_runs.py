"""A class's paused training runs and "Use this model" copies, with and without the session byte budget.

    python benchmarks/session_runs.py                  # 30 users, medium preset, default budget vs none
    python benchmarks/session_runs.py --runs 30 --preset "small (4 layers, 128 wide)"

Each simulated user sets up a run on the built-in corpus (as the Training page does), trains a few
steps, pauses, and stores a copy ("Use this model"); nobody resets. Each budget runs in a fresh Python
process so the resident set sizes compare: the process's RSS after each user, its peak (VmHWM), what
the ledger charges, and how many users had to wait for memory (or were refused: a copy that does not
fit). Without a budget (the peer) RSS grows with every user; with one it stops where the budget says.
In-process (no Streamlit server): the server's own memory (model, caches, Streamlit) comes on top, see
`benchmarks/memory.py` and `benchmarks/load.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(field)


def one_class(runs: int, preset: str, steps: int, budget_mb: float) -> dict:
    """In this process: `runs` users each set up, train `steps` steps, pause and keep a copy."""
    sys.path.insert(0, str(ROOT))
    from bert_core.errors import BertCoreError
    from bert_core.runs.memory import MB
    from bert_core.runs.settings import TrainSettings, builtin_lines, bundled_tokenizer
    from bert_core.runs.status import WAITING
    from bert_core.runs.training_run import TrainingSession
    from server.ledger import SessionMemory
    from server.slots import SlotManager

    tok, lines = bundled_tokenizer(), builtin_lines()
    mem = SessionMemory(int(budget_mb * MB))
    slots = SlotManager(capacity=runs)
    start = rss_mb()
    users, refused, rows = [], 0, []
    for i in range(runs):
        s = TrainingSession(slots, memory=mem)
        try:
            s.setup(tok, lines, TrainSettings(preset=preset, batch_size=32, seq_len=64))
            if s.state == WAITING:  # no room: the run waits in line for memory, nothing built
                refused += 1
                users.append((s, None))
                rows.append({"user": i + 1, "rss_mb": round(rss_mb()), "charged_mb": round(mem.used() / MB)})
                continue
            s.run_steps(steps)
            users.append((s, s.snapshot()))
        except BertCoreError:
            refused += 1
            users.append((s, None))
        rows.append({"user": i + 1, "rss_mb": round(rss_mb()), "charged_mb": round(mem.used() / MB)})
    return {"budget_mb": budget_mb, "start_rss_mb": round(start), "end_rss_mb": round(rss_mb()),
            "peak_rss_mb": round(rss_mb("VmHWM")), "charged_mb": round(mem.used() / MB), "refused": refused,
            "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--preset", default="medium (4 layers, 256 wide)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--budget-mb", type=float, default=None, help="default: BERT_EXPLORER_SESSION_MB or its default")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_class(args.runs, args.preset, args.steps, args.budget_mb)))
        return
    sys.path.insert(0, str(ROOT))
    from bert_core.runs.memory import MB
    from server.ledger import budget_bytes

    budget = args.budget_mb if args.budget_mb is not None else budget_bytes() / MB
    results = []
    for b in (budget, 1e9):  # ours, then the peer: no budget at all
        out = subprocess.run([sys.executable, __file__, "--child", "--runs", str(args.runs), "--preset", args.preset,
                              "--steps", str(args.steps), "--budget-mb", str(b)],
                             capture_output=True, text=True, check=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.runs} users, {args.preset}, {args.steps} steps each, a copy each; RSS of one Python process (MB)")
    print(f"{'user':>5} | {'RSS, budget ' + format(budget, 'g') + ' MB':>22} | {'charged':>8} | {'RSS, no budget':>15}")
    for a, b in zip(results[0]["rows"], results[1]["rows"]):
        print(f"{a['user']:>5} | {a['rss_mb']:>22,} | {a['charged_mb']:>8,} | {b['rss_mb']:>15,}")
    for name, r in zip(("budget " + format(budget, "g") + " MB", "no budget"), results):
        print(f"{name}: start {r['start_rss_mb']:,} MB, end {r['end_rss_mb']:,} MB, peak {r['peak_rss_mb']:,} MB, "
              f"growth {r['peak_rss_mb'] - r['start_rss_mb']:,} MB, charged {r['charged_mb']:,} MB, "
              f"waiting or refused {r['refused']} of {args.runs}")
    ours, peer = results
    print(f"growth ratio (budget / none): "
          f"{(ours['peak_rss_mb'] - ours['start_rss_mb']) / max(1, peer['peak_rss_mb'] - peer['start_rss_mb']):.2f}")


if __name__ == "__main__":
    main()
