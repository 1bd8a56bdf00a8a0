"""What every page shares: the model and input chosen (`Current`), the shared models, cached analysis, URL state.

The sidebar (ui/sidebar.py) draws the choice from this state; pages call `require_current()` to get it, then draw. No
tensor math here either: this module picks and caches, `bert_core` computes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import streamlit as st

import bert_core
from bert_core.model.layers import fuse_qkv_storage
from ui.cache import RESULTS, ModelCache, budget_bytes, module_bytes

# The two models that ship with the app, in plain words (bert_core.BUNDLED_MODELS).
MINILM_LABEL = "MiniLM, offline: a small pretrained BERT (6 layers × 384)"
BUNDLED_LABEL = "tiny, offline: trained from scratch by this project"
BUNDLED_LABELS = {bert_core.MINILM_NAME: MINILM_LABEL, bert_core.BUNDLED_NAME: BUNDLED_LABEL}
SESSION_LABEL = "my trained model (this session)"
OTHER_LABEL = "other hub id…"
DEFAULT_TEXT = "She [MASK] the letter to her mother."
DEFAULT_PAIR = "It was very happy."

# Public servers can turn off free hub ids (only the suggested ones stay) and local folders.
ALLOW_FREE_HUB = os.environ.get("BERT_EXPLORER_ALLOW_FREE_HUB", "1") == "1"
ALLOW_HUB = os.environ.get("BERT_EXPLORER_ALLOW_HUB", "1") == "1"


MODEL_SETTING = "BERT_EXPLORER_MODEL"
OLD_MODEL_SETTING = "BERT_EXPLORER_DEFAULT_MODEL"  # its earlier name, still read


def configured_model() -> str:
    """The deployment's default model: BERT_EXPLORER_MODEL from the environment, else from Streamlit's secrets
    (.streamlit/secrets.toml, Community Cloud's "Secrets"), else BERT_EXPLORER_DEFAULT_MODEL; unset, the bundled
    MiniLM (offline, instant)."""
    for value in (os.environ.get(MODEL_SETTING), _secret(MODEL_SETTING), os.environ.get(OLD_MODEL_SETTING)):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return bert_core.DEFAULT_BUNDLED


def _secret(key: str):
    """A top-level Streamlit secret, or None: no secrets file is no error (a laptop has none)."""
    try:
        return st.secrets.get(key) if st.secrets.load_if_toml_exists() else None
    except Exception:  # an unreadable secrets file: Streamlit reports it itself; the setting is then unset
        return None


# The model a fresh visitor sees: "bundled-minilm" (offline), "bundled" (the tiny offline one), a hub
# id such as bert-base-uncased (a Cloud deploy with network), or a local folder on the server.
DEFAULT_MODEL = configured_model()


def local_roots() -> list[str]:
    """Folders whose models the app may load by path: the server's list, plus a default model's folder."""
    roots = [p for p in os.environ.get("BERT_EXPLORER_LOCAL_ROOTS", "").split(os.pathsep) if p]
    if DEFAULT_MODEL not in bert_core.BUNDLED_MODELS and os.path.isdir(DEFAULT_MODEL):
        roots.append(DEFAULT_MODEL)
    return roots


def label_of(name: str) -> str:
    """The model selector's label for a model name."""
    return BUNDLED_LABELS.get(name, name)


def name_of(label: str) -> str:
    """The model name behind a selector label (the inverse of `label_of`)."""
    return next((n for n, lab in BUNDLED_LABELS.items() if lab == label), label)


@dataclass
class Current:
    """The model and input every page works on."""

    model: bert_core.LoadedModel
    model_key: str  # what identifies the model in caches ("bundled-minilm", "bundled", a hub id, "session:<n>")
    text: str
    text_pair: str | None
    seed: int


# bert-base (418 MB of fp32 weights) beside both bundled models and the sentence MiniLM (~230 MB), in a 2.7 GB
# Community Cloud container with the 400 MB results cache; a further bert-base-sized model drops the least used.
DEFAULT_MODELS_MB = 1024
MODELS = ModelCache(budget_bytes("BERT_EXPLORER_MODELS_MB", DEFAULT_MODELS_MB), lambda m: module_bytes(m.model))


def shared_model(name: str) -> bert_core.LoadedModel:
    """One read-only model per process and name, shared by every session (never trained)."""
    return MODELS.get(name, lambda: _read_only_model(name))


def _read_only_model(name: str) -> bert_core.LoadedModel:
    m = bert_core.load_model(name, allow_hub=ALLOW_HUB, local_roots=local_roots())
    for p in m.model.parameters():
        p.requires_grad_(False)  # read-only: nothing may train or mutate the shared copy
    fuse_qkv_storage(m.model)  # Q, K, V in one block: no second fused copy (85 MB on bert-base)
    return m


def model_cached(cur: Current, fn, *args, **kwargs):
    """`fn(cur.model, *args, **kwargs)`, cached process-wide in the byte-bounded cache (ui/cache.py).

    The key is the function, the model's key and the arguments (which must be hashable). A model a
    session is still training is never cached: its answers change from step to step.
    """
    if cur.model_key.startswith("session:"):
        return fn(cur.model, *args, **kwargs)
    # A `progress` callback only reports how far the computation is: it is not part of what is computed.
    key = (fn.__module__, fn.__qualname__, cur.model_key, args,
           tuple(sorted((k, v) for k, v in kwargs.items() if k != "progress")))
    return RESULTS.get_or_compute(key, lambda: fn(cur.model, *args, **kwargs))


def analysis(cur: Current, top_k: int = 5, text: str | None = None, **keep: bool) -> bert_core.Trace | None:
    """`bert_core.analyze` of the current input (cached per model and text); None after an error message.

    `keep` (embeddings=, hidden_states=, attentions=) goes to `analyze`: a page that sets one False
    gets None there and caches that much less (attention maps are 85% of a trace).
    """
    text = cur.text if text is None else text
    try:
        return model_cached(cur, bert_core.analyze, text, cur.text_pair, top_k=top_k, **keep)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
        return None


def init_from_url() -> None:
    """Seed the widgets' session state from the URL once per session, so shared links work."""
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    q = st.query_params
    st.session_state.setdefault("text", q.get("text", DEFAULT_TEXT)[: bert_core.MAX_TEXT_CHARS])
    pair = q.get("pair")
    st.session_state.setdefault("use_pair", bool(pair))
    st.session_state.setdefault("pair", (pair or DEFAULT_PAIR)[: bert_core.MAX_TEXT_CHARS])
    st.session_state.setdefault("seed", _int(q.get("seed"), 0, 0, 2**31 - 1))
    model = q.get("model", DEFAULT_MODEL)
    if model in (*bert_core.BUNDLED_MODELS, DEFAULT_MODEL, *bert_core.SUGGESTED_HUB_IDS):
        st.session_state.setdefault("model_choice", label_of(model))
    elif ALLOW_FREE_HUB and model:
        st.session_state.setdefault("model_choice", OTHER_LABEL)
        st.session_state.setdefault("other_model", model[:200])
    for key in ("layer", "head", "k"):
        if key in q:
            st.session_state.setdefault(f"url_{key}", _int(q.get(key), 0, 0, 1000))


def url_int(key: str, default: int, lo: int, hi: int) -> int:
    """A view setting (layer, head, k) from the shared link, clamped to what this model has."""
    v = st.session_state.get(f"url_{key}", default)
    return min(max(int(v), lo), hi)


def url_index(key: str, n: int) -> int:
    """A layer or head from the shared link, where users count 1..n, as the 0-based index Python uses."""
    return url_int(key, 1, 1, n) - 1


def set_url(**values) -> None:
    """Write view settings into the URL (values None are removed)."""
    for k, v in values.items():
        if v is None:
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)
        if k in ("layer", "head", "k") and v is not None:
            st.session_state[f"url_{k}"] = v  # so the setting survives a page switch too


def _int(v, default: int, lo: int, hi: int) -> int:
    try:
        return min(max(int(str(v)), lo), hi)
    except (TypeError, ValueError):
        return default


# Session keys the sidebar (ui/sidebar.py) reads and writes, set from elsewhere too.
PENDING_MODEL = "_model_pending"  # a model a button chose, for the sidebar's Model box on the next run
FELL_BACK = "model_fell_back"  # the model asked for when it could not be loaded and another is shown


def page_text(cur: Current, own: str) -> str:
    """The text a page works on: the sidebar's when the user typed one, else the page's own example.

    The sidebar's default sentence has a [MASK], which suits Predictions but not every page: Masking would
    draw it as a special token, Tagging cut it into "[ MASK ]" and tag it. A page whose task needs another
    sentence opens on its own (and says so); any text the user typed wins.
    """
    if cur.text != DEFAULT_TEXT:
        return cur.text
    st.caption(f"This page opens on its own example, “{own}”: type your own text in the sidebar to use it here.")
    return own


def require_current() -> Current:
    """The sidebar's choice for this rerun; stops the page quietly when no model could load."""
    cur = st.session_state.get("current")
    if cur is None:
        st.stop()
    return cur
