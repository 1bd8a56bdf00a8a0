"""What a run holds, in bytes: the tensors of its models and optimizers, and how the pages and notebooks print it.

No streamlit here. A run charges these bytes to the ledger it was given (`sharing.Ledger`); the app's is the
process-wide budget in server/ledger.py, a notebook's counts them with no budget.
"""

from __future__ import annotations

import torch

MB = 1_000_000


def tensor_bytes(*objs) -> int:
    """Bytes of tensors, counted once per storage: modules (parameters, their gradients, buffers), optimizers
    (their state), tensors and lists of tensors."""
    seen: set[int] = set()
    total = 0

    def add(t) -> None:
        nonlocal total
        if torch.is_tensor(t) and t.untyped_storage().data_ptr() not in seen:
            seen.add(t.untyped_storage().data_ptr())
            total += t.untyped_storage().nbytes()

    for o in objs:
        if isinstance(o, torch.nn.Module):
            for p in o.parameters():
                add(p)
                add(p.grad)
            for b in o.buffers():
                add(b)
        elif isinstance(o, torch.optim.Optimizer):
            for s in o.state.values():
                for v in s.values():
                    add(v)
        elif torch.is_tensor(o):
            add(o)
            add(o.grad)
        else:
            for t in o:
                add(t)
                add(t.grad)
    return total


def format_mb(n: int) -> str:
    """Bytes as whole megabytes. Example: 76_100_000 -> '76 MB'."""
    return f"{n / MB:,.0f} MB"


__all__ = ["MB", "format_mb", "tensor_bytes"]
