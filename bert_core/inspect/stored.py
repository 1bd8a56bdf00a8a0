"""Results too slow to recompute on every open, kept on disk under the model's fingerprint.

A neighbours index (a forward pass over 500 sentences) and a probing run (two passes and 3 x (L+1) fits) take
a minute or more on two cores. Stored here, the app's page and a notebook run on the same machine read the same
arrays back instead of computing them again: the numbers are the same because they are the same bytes.

The key is what the result depends on: the model's weights, config and tokenizer (`fingerprint`), the
function's arguments and bert_core's source code (`code_hash`: any code change is a new key). A model trained in
a session (`LoadedModel.source == "session"`) is never stored: its weights change.
Files are `.npz` of plain arrays (no pickle), written atomically; the folder is bounded in bytes, the least
recently read files go first.

    BERT_EXPLORER_RESULTS_DIR   the folder (default: $XDG_CACHE_HOME or ~/.cache, then bert-explorer/results);
                                "off" stores nothing
    BERT_EXPLORER_RESULTS_MB    the folder's budget (default 512)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ..model.loaded import LoadedModel

OFF = "off"
DEFAULT_MB = 512
_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # nn.Module -> its fingerprint
_SAMPLE = "The quick brown fox jumped over 12 lazy dogs; naïve café-goers wondered why. Straße, 東京, [MASK]!"


def results_dir() -> Path | None:
    """Where results are stored, or None when storing is off."""
    d = os.environ.get("BERT_EXPLORER_RESULTS_DIR", "").strip()
    if d.lower() == OFF:
        return None
    if d:
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "bert-explorer" / "results"


def budget_bytes() -> int:
    try:
        return int(float(os.environ.get("BERT_EXPLORER_RESULTS_MB", DEFAULT_MB)) * 2**20)
    except ValueError:
        return DEFAULT_MB * 2**20


@torch.no_grad()
def fingerprint(m: LoadedModel) -> str | None:
    """A hash of what `m` computes with: every weight, the config and the tokenizer; None for a session's model."""
    if m.source == "session":
        return None
    got = _FINGERPRINTS.get(m.model)
    if got is not None:
        return got
    h = hashlib.blake2b(digest_size=20)
    h.update(json.dumps(m.config.to_dict(), sort_keys=True, default=str).encode())
    for name, t in sorted(m.model.state_dict().items()):
        h.update(name.encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(np.ascontiguousarray(t.detach().cpu().numpy()).view(np.uint8))  # no copy of the weights
    tok = m.tokenizer
    h.update(repr((type(tok).__name__, tok.encode(_SAMPLE).input_ids, tok.vocab_size)).encode())
    fp = h.hexdigest()
    _FINGERPRINTS[m.model] = fp
    return fp


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """A hash of bert_core's source (every .py file): changed code makes new keys, whatever it changed."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=12)
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def key_of(kind: str, m: LoadedModel, args) -> str | None:
    """The file name of a result of `kind` for `m` and `args` (JSON-able), or None when it is not to be stored."""
    fp = fingerprint(m)
    if fp is None:
        return None
    what = json.dumps([kind, fp, code_hash(), args], sort_keys=True, default=str)
    return f"{kind}-{hashlib.blake2b(what.encode(), digest_size=16).hexdigest()}.npz"


def load(name: str | None) -> dict[str, np.ndarray] | None:
    """The arrays stored under `name`, or None (not there, unreadable, or storing is off)."""
    d = results_dir()
    if d is None or name is None:
        return None
    path = d / name
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
        os.utime(path)  # recently read: kept longest
        return out
    except (OSError, ValueError, KeyError, EOFError):
        return None


def save(name: str | None, arrays: dict[str, np.ndarray]) -> None:
    """Store `arrays` under `name` (atomically), then drop the least recently read files past the budget.

    A folder that cannot be written is not an error: the result was computed, it is just not kept."""
    d = results_dir()
    if d is None or name is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        if os.path.getsize(tmp) > budget_bytes():
            os.unlink(tmp)
            return
        os.replace(tmp, d / name)
        _trim(d)
    except OSError:
        return


def _trim(d: Path) -> None:
    files = []
    for p in d.glob("*.npz"):
        try:
            st = p.stat()
        except OSError:
            continue
        files.append((st.st_mtime, st.st_size, p))
    total = sum(s for _, s, _ in files)
    for _, size, p in sorted(files, key=lambda f: f[0]):
        if total <= budget_bytes():
            break
        try:
            p.unlink()
            total -= size
        except OSError:
            pass


def stored(kind: str, m: LoadedModel, args, compute: Callable[[], dict[str, np.ndarray]]
           ) -> tuple[dict[str, np.ndarray], bool]:
    """(arrays, read from disk?): the stored result of `kind` for `m` and `args`, or `compute()` stored now."""
    name = key_of(kind, m, args)
    got = load(name)
    if got is not None:
        return got, True
    arrays = compute()
    save(name, arrays)
    return arrays, False
