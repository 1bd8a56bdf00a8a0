"""Hub models into the Hugging Face download cache, with a progress bar while the bytes arrive.

The cache (HF_HOME) outlives the process: the next visitor, and the next start of the server, load a model
from the disk at once, with the hub up or down (bert_core.cached_hub_snapshot).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import bert_core

# One download per process at a time; the sessions that wait show the progress of the one that runs.
_download_lock = threading.Lock()
_progress: dict[str, tuple[str, float]] = {}


def needs_download(name: str, allow_hub: bool) -> bool:
    """True for a hub id this server may load that is not (completely) in the download cache yet."""
    if not allow_hub or not name or name in bert_core.BUNDLED_MODELS or name.startswith("session"):
        return False
    if name == "sentence-minilm" or not bert_core.is_hub_id(name) or os.path.isdir(name):  # installed; local
        return False
    return bert_core.cached_hub_snapshot(name) is None


def fetch_with_bar(name: str, where) -> None:
    """Bring hub model `name` into the download cache, a progress bar in `where` while the bytes arrive.

    Raises BertCoreError when it cannot be had. The download runs in a worker thread (snapshot_download
    reports from its own threads, where Streamlit cannot draw); this run draws the bar from what it reports.
    """
    bar = where.progress(0.0, text=f"Waiting to download {name}…")
    try:
        while not _download_lock.acquire(timeout=0.25):  # another session is downloading: show its progress
            msg, frac = _progress.get(name, (f"Another visitor is downloading a model; {name} comes next…", 0.0))
            bar.progress(frac, text=msg)
        try:
            if bert_core.cached_hub_snapshot(name) is not None:  # the one before us fetched it
                return

            def report(msg: str, frac: float) -> None:
                _progress[name] = (msg, frac)

            report(f"Looking up {name} on the Hugging Face hub…", 0.0)
            with ThreadPoolExecutor(1, thread_name_prefix="hub-download") as ex:
                job = ex.submit(bert_core.download_model, name, progress=report)
                while True:
                    try:
                        job.result(timeout=0.25)
                        break
                    except TimeoutError:
                        msg, frac = _progress[name]
                        bar.progress(min(max(frac, 0.0), 1.0), text=msg)
        finally:
            _progress.pop(name, None)
            _download_lock.release()
    finally:
        bar.empty()
