"""What every page shares: the sidebar inputs, the shared model, cached analysis, URL state.

Pages call `require_current()` to get the model and input the user chose, then draw. No tensor math
here either: this module picks and caches, `bert_core` computes.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import streamlit as st

import bert_core
from bert_core.model.layers import fuse_qkv_storage
from ui import hub_download
from ui.cache import RESULTS, ModelCache, budget_bytes, module_bytes

log = logging.getLogger("bert_explorer.models")

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


def _label(name: str) -> str:
    """The model selector's label for a model name."""
    return BUNDLED_LABELS.get(name, name)


def name_of(label: str) -> str:
    """The model name behind a selector label (the inverse of `_label`)."""
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


def _init_from_url() -> None:
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
        st.session_state.setdefault("model_choice", _label(model))
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


def _model_options() -> list[str]:
    opts = [MINILM_LABEL, BUNDLED_LABEL, *(bert_core.SUGGESTED_HUB_IDS if ALLOW_HUB else ())]
    if _label(DEFAULT_MODEL) not in opts:  # the server's default is always offered, first
        opts.insert(0, _label(DEFAULT_MODEL))
    if st.session_state.get("session_model") is not None:
        opts.append(SESSION_LABEL)
    if ALLOW_HUB and ALLOW_FREE_HUB:
        opts.append(OTHER_LABEL)
    return opts


PENDING_MODEL = "_model_pending"  # a model a button chose, for the sidebar's box on the next run


def _load_with_progress(name: str) -> bert_core.LoadedModel:
    """Load a shared model, showing progress only when it is not loaded (a hub download can take minutes: a bar)."""
    if name in MODELS:
        return shared_model(name)
    box = st.empty()  # the box goes once the model is there: it would sit over slide 1 of the Lesson
    if hub_download.needs_download(name, ALLOW_HUB):
        hub_download.fetch_with_bar(name, box)
    with box.status(f"Loading {name}…", expanded=False):
        m = shared_model(name)
    box.empty()
    return m


def sidebar_ui(lesson_page: bool = False) -> Current | None:
    """The shared sidebar: model, text, optional second sentence, seed. Returns the current choice.

    On the Lesson (`lesson_page`) each step has its own sentence, so the Text boxes are not shown there: two
    sentence boxes, one of which did nothing, confused students. What was typed in them is kept for the other pages.
    """
    _init_from_url()
    sb = st.sidebar
    opts = _model_options()
    if PENDING_MODEL in st.session_state:  # a button (ui/model_choice.py) or the class's teacher chose it
        pending = st.session_state.pop(PENDING_MODEL)
        if _label(pending) not in opts and OTHER_LABEL in opts:  # a hub id of no option: the hub id box holds it
            st.session_state.update({"model_choice": OTHER_LABEL, "other_model": pending[:200]})
        else:
            st.session_state["model_choice"] = _label(pending)
    if st.session_state.get("model_choice") not in opts:
        st.session_state["model_choice"] = _label(DEFAULT_MODEL)
    choice = sb.selectbox("Model", opts, key="model_choice",
                          help="Two models ship with the app and work offline: MiniLM (6 layers, 384 wide, "
                               "bert-base-uncased's 30,522-piece vocabulary: half the layers of a MiniLM distilled "
                               "from a BERT-base-sized teacher, trained on a billion sentence pairs for sentence "
                               "similarity; its encoder trained further and its MLM and NSP heads trained anew by this "
                               "project on Brown + WordNet) and a "
                               "tiny BERT (4 layers, 256 wide, 12,000 pieces) this project trained from scratch on "
                               "WordNet and the Brown corpus, as the Training page does. Hub models download on "
                               "first use.")
    if choice == OTHER_LABEL:
        name = sb.text_input("Hub id (BERT, RoBERTa, DistilBERT or ALBERT; safetensors)", key="other_model",
                             placeholder="e.g. google-bert/bert-base-multilingual-cased").strip()
    elif choice == SESSION_LABEL:
        name = "session"
    else:
        name = name_of(choice)
    if lesson_page:
        for key in ("text", "use_pair", "pair"):  # a widget not drawn in a run loses its value: keep these
            st.session_state[key] = st.session_state[key]
        sb.caption("Each step of the Lesson has its own sentence, on the step itself. The Text box is on the "
                   "other pages.")
        pair = st.session_state["pair"] if st.session_state["use_pair"] else None
    else:
        sb.text_area("Text", key="text", height=100, max_chars=bert_core.MAX_TEXT_CHARS,
                     help="Use [MASK] where the model should guess a word.")
        use_pair = sb.checkbox("Add a second sentence (B)", key="use_pair")
        pair = (sb.text_area("Sentence B", key="pair", height=70, max_chars=bert_core.MAX_TEXT_CHARS)
                if use_pair else None)
    sb.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                    help="Drives the masking draws and training; same seed, same draw.")

    model, key = _resolve_model(name)
    if model is None:
        return None
    for note in model.notes:
        sb.caption(note)
    set_url(text=st.session_state["text"][:2000], pair=pair[:2000] if pair else None,
            model=None if key == DEFAULT_MODEL else ("session" if key.startswith("session:") else key),
            seed=st.session_state["seed"] or None)
    return Current(model, key, st.session_state["text"], pair, int(st.session_state["seed"]))


FELL_BACK = "model_fell_back"  # the model asked for when it could not be loaded and another is shown


def _resolve_model(name: str) -> tuple[bert_core.LoadedModel | None, str]:
    """The chosen model; on a failed load, a message and the last model that worked."""
    if name == "session":
        # A snapshot the Training page stored with "Use this model" (eval mode, this session only).
        return st.session_state["session_model"], f"session:{st.session_state.get('session_model_version', 0)}"
    if not name:
        st.sidebar.info("Type a hub id, e.g. bert-base-multilingual-cased.")
        name = st.session_state.get("last_good_model", DEFAULT_MODEL)
    try:
        m = _load_with_progress(name)
        st.session_state["last_good_model"] = name
        st.session_state.pop(FELL_BACK, None)
        return m, name
    except bert_core.BertCoreError as e:
        log.warning("could not load %r: %s", name[:80], e)  # the server's log says why a page fell back
        st.sidebar.error(f"Could not load {name[:80]}: {e}")
        # The last model that worked, else the site's default, else the offline default (MiniLM, not the tiny one)
        fallback = next(f for f in (st.session_state.get("last_good_model"), DEFAULT_MODEL, bert_core.DEFAULT_BUNDLED)
                        if f and f != name)
        try:
            st.sidebar.caption(f"Still showing: {fallback}")
            m = shared_model(fallback)
            # Presenter mode hides the sidebar: its corner says it too (a long path by its end, where its name is)
            st.session_state[FELL_BACK] = name if len(name) <= 80 else "…" + name[-79:]
            return m, fallback
        except bert_core.BertCoreError as e2:
            st.error(f"No model could be loaded: {e2}")
            return None, ""


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
