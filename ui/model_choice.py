"""The real BERT-base where it can be had: offered in one click, downloaded with a progress bar, then on disk.

The download goes into the Hugging Face cache (ui/hub_download.py): the next visitor gets it at once. Whether the
hub can be reached is asked once per process, with a short timeout; where it cannot and the model is not on disk,
nothing is offered.
"""

from __future__ import annotations

import threading

import streamlit as st

import bert_core
from ui import hub_download, state

BERT_BASE = "bert-base-uncased"
# No parameter count in the offer: the Lesson asks for BERT-base's, with this button beside the question.
OFFER_LABEL = "Use BERT-base (440 MB download)"
CACHED_LABEL = "Use BERT-base (already downloaded)"
REACH_TIMEOUT = 3.0  # seconds: the hub answers in well under a second where it is reachable at all

_reach: dict[str, bool] = {}
_reach_lock = threading.Lock()


def hub_reachable() -> bool:
    """Whether this process can reach the Hugging Face hub: asked once, with a short timeout, then remembered."""
    with _reach_lock:
        if "hub" not in _reach:
            _reach["hub"] = _ask_hub()
        return _reach["hub"]


def _ask_hub() -> bool:
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        return False
    try:
        HfApi().model_info(BERT_BASE, timeout=REACH_TIMEOUT)
        return True
    except Exception:  # no DNS, refused, timed out, a proxy's error page: all mean "not from here"
        return False


def offer_label() -> str | None:
    """The button's label, or None where BERT-base cannot be had (hub off here, or unreachable and not on disk)."""
    if not state.ALLOW_HUB:
        return None
    if bert_core.cached_hub_snapshot(BERT_BASE) is not None:
        return CACHED_LABEL
    return OFFER_LABEL if hub_reachable() else None


def bert_base_offer(where, key: str = "lesson", showing: str | None = None) -> None:
    """The one-click switch to BERT-base in `where` (st.sidebar, a column, st), unless it is what is on screen.

    `showing` is the model on screen (default: this session's current model).
    """
    if showing is None:
        cur = st.session_state.get("current")
        showing = cur.model_key if cur is not None else state.DEFAULT_MODEL
    if showing == BERT_BASE:
        return
    label = offer_label()
    if label is None:
        return
    if where.button(label, key=f"bert_base_offer_{key}", icon=":material/download:",
                    help="Google's bert-base-uncased from the Hugging Face hub (12 layers, 768 wide, 12 heads, "
                         "safetensors), the model of the BERT paper. Downloaded once to this "
                         "server's disk; the bundled models stay in the Model box."):
        try:
            hub_download.fetch_with_bar(BERT_BASE, where)
        except bert_core.BertCoreError as e:
            where.error(f"Could not get {BERT_BASE}: {e}")
            return
        st.session_state[state.PENDING_MODEL] = BERT_BASE  # the sidebar's Model box shows it from the next run
        st.rerun()
