"""`analyze` against transformers, quiet and under CPU contention that this script makes itself.

    python benchmarks/bench_contention.py [--reps 15] [--tokens 116] [--busy 2]

A class is contention: the server's analyses share the cores with other sessions' work. This runs
ours and HF's eager BertForMaskedLM (attentions + hidden states, as ours returns) interleaved on the
same bert-base-sized random checkpoint (as benchmarks/bench_analyze.py), in two conditions:
  quiet      nothing else started by this script (the machine's own load is printed)
  busy       `--busy` processes spinning pure Python (one per core by default), started here
and, in each, with torch's intra-op pool at the default size, at one thread, and at what the app picks
(`auto`: server/threads.py, from the tasks runnable at that moment); the whole set once
with OpenMP's default wait policy (idle pool threads spin before they sleep) and once in a child
process with OMP_WAIT_POLICY=PASSIVE (they sleep at once; it must be set before torch loads).
It also times the parts of `analyze` (tokenize, forward pass, the rest: top-k, stacking, numpy) to
see which part slows down. Ratios are ours / HF in the same run, alternating calls, median of `--reps`.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analyze import make_checkpoint  # noqa: E402

import bert_core  # noqa: E402
from server.threads import fit_torch_threads  # noqa: E402


def spin(stop) -> None:
    """A CPU hog: pure Python, no threads, until `stop` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def interleaved(fns: dict, reps: int) -> dict[str, float]:
    """Median seconds per function, calling them in turn (A, B, A, B...) after one warm-up each."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def parts(ours, text: str) -> dict:
    """The pieces of `analyze`, each timed on its own: tokenize, forward pass, the rest."""
    enc = ours.tokenizer.encode(text, None, max_length=ours.max_length)
    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)

    def forward():
        with torch.inference_mode():
            ours.model(ids, types, trace=True)

    return {
        "tokenize": lambda: ours.tokenizer.encode(text, None, max_length=ours.max_length),
        "forward": forward,
        "analyze_encoding": lambda: bert_core.analyze_encoding(ours, enc, text),
    }


def measure(ours, hf, text: str, reps: int) -> dict[str, float]:
    ids = torch.from_numpy(bert_core.analyze(ours, text).input_ids)[None]
    types = torch.zeros_like(ids)

    def hf_call():
        with torch.inference_mode():
            hf(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True)

    return interleaved({"ours": lambda: bert_core.analyze(ours, text), "hf": hf_call, **parts(ours, text)}, reps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tokens", type=int, default=116)
    ap.add_argument("--busy", type=int, default=os.cpu_count(), help="spinning processes in the busy condition")
    ap.add_argument("--threads", default=f"{torch.get_num_threads()},1,auto",
                    help="torch intra-op sizes to try; auto: what the app picks (server/threads.py)")
    ap.add_argument("--child", action="store_true", help="one wait policy only (the environment's)")
    args = ap.parse_args()
    if not args.child:
        policy = os.environ.get("OMP_WAIT_POLICY", "default")
        print(f"== OMP_WAIT_POLICY={policy}", flush=True)
        subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], check=True)
        print("== OMP_WAIT_POLICY=PASSIVE", flush=True)
        subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], check=True,
                       env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
        return
    from transformers import BertForMaskedLM

    torch.set_grad_enabled(False)
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        ours = bert_core.load_model(d)
        hf = BertForMaskedLM.from_pretrained(d, attn_implementation="eager").eval()
    T = args.tokens
    words = [f"w{i % 1000}" for i in range(T - 3)]
    text = " ".join(words[: T // 2] + ["[MASK]"] + words[T // 2:])
    assert len(bert_core.analyze(ours, text).tokens) == T
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, bert-base-sized, {T} tokens, median of {args.reps}; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    print(f"{'condition':<10} {'threads':>7} {'ours ms':>8} {'HF ms':>8} {'ours/HF':>8} "
          f"{'tokenize':>9} {'forward':>8} {'rest':>6}")
    ctx = mp.get_context("spawn")
    for condition in ("quiet", "busy"):
        stop = ctx.Event()
        hogs = [ctx.Process(target=spin, args=(stop,), daemon=True) for _ in range(args.busy if condition == "busy"
                                                                                    else 0)]
        for h in hogs:
            h.start()
        try:
            time.sleep(1.0 if hogs else 0)
            for choice in args.threads.split(","):
                if choice == "auto":  # the app's rule, read at this moment (as each script run does)
                    n = fit_torch_threads()
                    label = f"auto={n}"
                else:
                    n = int(choice)
                    torch.set_num_threads(n)
                    label = str(n)
                r = measure(ours, hf, text, args.reps)
                rest = r["analyze_encoding"] - r["forward"]
                print(f"{condition:<10} {label:>7} {r['ours'] * 1e3:>8.1f} {r['hf'] * 1e3:>8.1f} "
                      f"{r['ours'] / r['hf']:>8.2f} {r['tokenize'] * 1e3:>9.2f} {r['forward'] * 1e3:>8.1f} "
                      f"{rest * 1e3:>6.1f}", flush=True)
        finally:
            stop.set()
            for h in hogs:
                h.join()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
