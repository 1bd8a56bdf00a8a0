"""Self-contained, offline HTML for bertviz's head view and model view.

bertviz's own ``head_view()`` / ``model_view()`` load require.js, d3 and jQuery from a CDN,
so with no network they show nothing. This module builds the same page without any network
access:

* bertviz's real ``head_view.js`` / ``model_view.js`` are read from the installed bertviz
  package, with the same params JSON its Python functions build (sentence pairs give the
  "All" / A->A / B->B / A->B / B->A filter, exactly as bertviz does).
* d3 5.7.0, jQuery 3.7.1 and require.js 2.3.8 are inlined from ``static/vendor/``; see
  the README.md there.

How the modules are wired up: d3 and jQuery are inlined *before* require.js, so their UMD
wrappers find no AMD ``define`` and set the globals ``window.d3`` and ``window.jQuery``.
Then require.js is inlined, and then a small script registers two named modules,
``define("d3", [], () => d3)`` and ``define("jquery", [], () => jQuery)``. bertviz's
``requirejs(["jquery", "d3"], ...)`` therefore finds both modules already defined and never
builds a URL. bertviz's ``require.config({paths: ...})`` block, which holds the CDN URLs,
is removed. A Content-Security-Policy ``<meta>`` (``default-src 'none'``) also blocks any
request if one were attempted.

Tokens are user text. They only reach the page inside the params JSON, where ``<``, ``>``,
``&``, U+2028 and U+2029 are written as ``\\uXXXX`` escapes, so no token can end the
``<script>``. bertviz's JS draws tokens with d3 ``.text()`` (head view and model view);
layer numbers go through jQuery ``.text()``; nothing uses ``.html()``. The filter
``<option>`` labels are fixed strings, and they are HTML-escaped anyway.

No streamlit import: pass the string to ``st.components.v1.html(html, height=..., scrolling=True)``.
"""

from __future__ import annotations

import functools
import hashlib
import html
import importlib.metadata
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BertCoreError

__all__ = ["head_view_html", "model_view_html", "head_view_height", "model_view_height"]

_VENDOR_DIR = Path(__file__).resolve().parent / "static" / "vendor"
# Order matters: d3 and jQuery must run before require.js defines `define` (see module docstring).
_VENDOR_FILES = ("d3.min.js", "jquery.min.js", "require.js")

# bertviz's CDN config, removed before the JS is inlined. Matched strictly so a changed bertviz
# fails loudly here instead of quietly loading from a CDN.
_REQUIRE_CONFIG_RE = re.compile(r"require\.config\(\{\s*paths:\s*\{[^{}]*\}\s*\}\);")
_PARAMS_MARKER = "const params = PYTHON_PARAMS;"
_COMMENT_LINE_RE = re.compile(r"^\s*(//|/\*|\*)")
_URL_SCHEME_RE = re.compile(r"https?://")

_AMD_SHIM = """
define("d3", [], function () { return window.d3; });
define("jquery", [], function () { return window.jQuery; });
"""

_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


# --------------------------------------------------------------------------- asset loading


def _defang_comment_urls(js: str) -> str:
    """Remove the ``http(s)://`` scheme from URLs on comment lines (licence banners, notes).

    The comment text stays, so the attribution is kept, but the page holds no fetchable URLs.
    Only whole comment lines (``//``, ``/*``, `` *``) are touched, never code.
    """
    return "\n".join(
        _URL_SCHEME_RE.sub("", line) if _COMMENT_LINE_RE.match(line) else line for line in js.split("\n")
    )


def _check_inlinable(name: str, js: str) -> str:
    lowered = js.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise RuntimeError(f"{name} contains '</script' or '<!--' and cannot be inlined in a <script>")
    return js


@functools.cache
def _vendor_js() -> str:
    parts = []
    for name in _VENDOR_FILES:
        path = _VENDOR_DIR / name
        if not path.is_file():
            raise RuntimeError(f"vendored JavaScript missing: {path}")
        js = _defang_comment_urls(path.read_text(encoding="utf-8"))
        if name == "require.js":
            # A doc link that appears only in require.js error messages, never fetched.
            js = js.replace("https://requirejs.org/docs/errors.html#", "requirejs.org/docs/errors.html#")
        js = _check_inlinable(name, js)
        parts.append(f"<script>/* {name} (see static/vendor/README.md) */\n{js}\n</script>")
    return "\n".join(parts)


def _bertviz_dir() -> Path:
    # find_spec does not import bertviz (whose __init__ imports IPython and torch).
    spec = importlib.util.find_spec("bertviz")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("bertviz is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def _bertviz_js(name: str) -> str:
    """bertviz's ``<name>`` with the CDN ``require.config`` removed and ``PYTHON_PARAMS`` kept."""
    js = (_bertviz_dir() / name).read_text(encoding="utf-8")
    js, n_config = _REQUIRE_CONFIG_RE.subn("/* CDN paths removed: d3 and jquery are defined inline */", js)
    if n_config != 1 or js.count(_PARAMS_MARKER) != 1:
        raise RuntimeError(f"bertviz {name} does not have the layout this renderer expects")
    return _check_inlinable(name, _defang_comment_urls(js))


@functools.lru_cache(maxsize=1)
def _bertviz_version() -> str:
    """The installed bertviz's version (read once, because a package metadata lookup reads files on every call)."""
    try:
        return importlib.metadata.version("bertviz")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - vendored copy
        return "unknown"


# --------------------------------------------------------------------------- params


def _safe_json(obj: Any) -> str:
    """JSON that is safe to put in an inline ``<script>``: no ``<``, ``>``, ``&``, U+2028/9."""
    text = json.dumps(obj, allow_nan=False, separators=(",", ":"))  # ensure_ascii also escapes U+2028/9
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _format_special_chars(tokens: list[str]) -> list[str]:
    # Same as bertviz.util.format_special_chars.
    return [t.replace("Ġ", " ").replace("▁", " ").replace("</w>", "") for t in tokens]


def _validate(attention: Any, tokens: Any, sentence_b_start: int | None) -> tuple[np.ndarray, list[str]]:
    try:
        att = np.asarray(attention, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise BertCoreError(f"attention is not a numeric array: {exc}") from exc
    if att.ndim != 4:
        raise BertCoreError(f"attention must have shape (layers, heads, tokens, tokens), got {att.shape}")
    n_layers, n_heads, n_left, n_right = att.shape
    if n_layers < 1 or n_heads < 1 or n_left < 1:
        raise BertCoreError(f"attention must have at least one layer, head and token, got {att.shape}")
    if n_left != n_right:
        raise BertCoreError(f"attention must be square over tokens, got {att.shape}")
    try:
        tokens = None if isinstance(tokens, str) else list(tokens)
    except TypeError:
        tokens = None
    if tokens is None or not all(isinstance(t, str) for t in tokens):
        raise BertCoreError("tokens must be a list of strings")
    if len(tokens) != n_left:
        raise BertCoreError(f"attention covers {n_left} tokens but {len(tokens)} tokens were given")
    if not np.isfinite(att).all():
        raise BertCoreError("attention contains NaN or infinite values")
    if sentence_b_start is not None:
        if isinstance(sentence_b_start, bool) or not isinstance(sentence_b_start, (int, np.integer)):
            raise BertCoreError("sentence_b_start must be an int")
        if not 0 < sentence_b_start < n_left:
            raise BertCoreError(
                f"sentence_b_start must be between 1 and {n_left - 1} (both sentences non-empty), "
                f"got {sentence_b_start}"
            )
    return att, tokens


def _check_indices(name: str, values: Any, size: int) -> list[int] | None:
    if values is None:
        return None
    values = [int(v) for v in values]
    if not values:
        raise BertCoreError(f"{name} must not be empty (pass None for all)")
    bad = [v for v in values if not 0 <= v < size]
    if bad:
        raise BertCoreError(f"{name} out of range 0..{size - 1}: {bad}")
    return values


def _attn_data(
    att: np.ndarray,
    tokens: list[str],
    sentence_b_start: int | None,
    prettify_tokens: bool,
    decimals: int | None,
) -> list[dict[str, Any]]:
    """bertviz's ``attn_data`` list, built the way its head_view()/model_view() build it."""
    if decimals is not None:
        att = np.round(att, decimals)

    def entry(name: str | None, a: np.ndarray, left: list[str], right: list[str]) -> dict[str, Any]:
        if prettify_tokens:
            left, right = _format_special_chars(left), _format_special_chars(right)
        return {"name": name, "attn": a.tolist(), "left_text": left, "right_text": right}

    if sentence_b_start is None:
        return [entry(None, att, tokens, tokens)]
    a, b = slice(0, sentence_b_start), slice(sentence_b_start, len(tokens))
    return [
        entry("All", att, tokens, tokens),
        entry("Sentence A -> Sentence A", att[:, :, a, a], tokens[a], tokens[a]),
        entry("Sentence B -> Sentence B", att[:, :, b, b], tokens[b], tokens[b]),
        entry("Sentence A -> Sentence B", att[:, :, a, b], tokens[a], tokens[b]),
        entry("Sentence B -> Sentence A", att[:, :, b, a], tokens[b], tokens[a]),
    ]


def _vis_id(kind: str, params_json: str) -> str:
    # Deterministic (bertviz uses a random uuid): the same input gives the same HTML, so
    # Streamlit does not rebuild the iframe, and lose the chosen layer, on every rerun.
    return f"bertviz-{kind}-" + hashlib.sha256(params_json.encode()).hexdigest()[:16]


def _select_html(attn_data: list[dict[str, Any]]) -> str:
    if len(attn_data) <= 1:
        return ""
    options = "\n".join(
        f'<option value="{i}">{html.escape(str(d["name"]))}</option>' for i, d in enumerate(attn_data)
    )
    return f'<label>Attention: <select id="filter">{options}</select></label>'


def _document(title: str, vis_id: str, controls: str, js_name: str, params: dict[str, Any]) -> str:
    js = _bertviz_js(js_name).replace(_PARAMS_MARKER, f"const params = {_safe_json(params)};", 1)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{html.escape(title)}</title>
<style>body {{ margin: 8px; background: #fff; color: #000; }}</style>
</head>
<body>
<!-- bertviz {html.escape(_bertviz_version())} {js_name}, rendered offline by bert_core.bertviz_html -->
<div id="{vis_id}" style="font-family:'Helvetica Neue', Helvetica, Arial, sans-serif;">
<span style="user-select:none">
{controls}
</span>
<div id="vis"></div>
</div>
{_vendor_js()}
<script>{_AMD_SHIM}</script>
<script>
{js}
</script>
</body>
</html>
"""


# --------------------------------------------------------------------------- public API


def head_view_html(
    attention: Any,
    tokens: list[str],
    sentence_b_start: int | None = None,
    layer: int | None = None,
    heads: list[int] | None = None,
    *,
    include_layers: list[int] | None = None,
    prettify_tokens: bool = True,
    decimals: int | None = 4,
) -> str:
    """A standalone HTML document with bertviz's head view.

    ``attention``: array-like of shape (layers, heads, T, T), rows summing to 1 (a numpy array,
    or a CPU tensor). ``tokens``: the T token strings. ``sentence_b_start``: index of the first
    token of sentence B, which adds bertviz's sentence-pair filter. ``layer``: initially selected
    layer (an original layer index, default: the first shown). ``heads``: initially selected
    heads (default all). ``include_layers``: layers to show (default all). ``decimals``: round
    weights to this many decimals to keep the page small (None keeps full precision; stroke
    opacity cannot show the difference at 4).
    Raises ``BertCoreError`` (a ``ValueError``) for shapes or indices that do not match.
    """
    att, tokens = _validate(attention, tokens, sentence_b_start)
    n_layers, n_heads = att.shape[:2]
    include_layers = _check_indices("include_layers", include_layers, n_layers) or list(range(n_layers))
    heads = _check_indices("heads", heads, n_heads)
    if layer is not None and layer not in include_layers:
        raise BertCoreError(f"Layer {layer} is not in include_layers: {include_layers}")
    attn_data = _attn_data(att[include_layers], tokens, sentence_b_start, prettify_tokens, decimals)
    params: dict[str, Any] = {
        "attention": attn_data,
        "default_filter": "0",
        "root_div_id": "",
        "layer": layer,
        "heads": heads,
        "include_layers": include_layers,
    }
    vis_id = _vis_id("head", _safe_json(params))
    params["root_div_id"] = vis_id
    # Each select inside its label: its accessible name (WCAG 4.1.2; axe's select-name rule found none)
    controls = f'<label>Layer: <select id="layer"></select></label>\n{_select_html(attn_data)}'
    return _document("bertviz head view", vis_id, controls, "head_view.js", params)


def model_view_html(
    attention: Any,
    tokens: list[str],
    sentence_b_start: int | None = None,
    *,
    display_mode: str = "dark",
    include_layers: list[int] | None = None,
    include_heads: list[int] | None = None,
    prettify_tokens: bool = True,
    decimals: int | None = 4,
) -> str:
    """A standalone HTML document with bertviz's model view (one thumbnail per layer and head).

    Arguments as for ``head_view_html``; ``display_mode`` is bertviz's "dark" (its default) or
    "light" thumbnail background; ``include_heads`` selects heads to show (default all).
    Click a thumbnail to open the detail view.
    """
    if display_mode not in ("dark", "light"):
        raise BertCoreError(f"display_mode must be 'dark' or 'light', got {display_mode!r}")
    att, tokens = _validate(attention, tokens, sentence_b_start)
    n_layers, n_heads = att.shape[:2]
    include_layers = _check_indices("include_layers", include_layers, n_layers) or list(range(n_layers))
    include_heads = _check_indices("include_heads", include_heads, n_heads) or list(range(n_heads))
    att = att[include_layers][:, include_heads]
    attn_data = _attn_data(att, tokens, sentence_b_start, prettify_tokens, decimals)
    params: dict[str, Any] = {
        "attention": attn_data,
        "default_filter": "0",
        "display_mode": display_mode,
        "root_div_id": "",
        "include_layers": include_layers,
        "include_heads": include_heads,
        # bertviz passes the model's head count here, not len(include_heads).
        "total_heads": n_heads,
    }
    vis_id = _vis_id("model", _safe_json(params))
    params["root_div_id"] = vis_id
    return _document("bertviz model view", vis_id, _select_html(attn_data), "model_view.js", params)


def head_view_height(num_tokens: int) -> int:
    """A good iframe height in px for ``head_view_html`` with this many tokens."""
    # head_view.js: svg height = tokens * BOXHEIGHT(22.5) + TEXT_TOP(30); plus the controls row.
    return int(num_tokens * 22.5 + 30 + 60)


def model_view_height(num_layers: int, num_heads: int, num_tokens: int) -> int:
    """A good iframe height in px for ``model_view_html`` (``num_heads`` = the model's head count)."""
    # model_view.js: thumbnail height = T * 7 * (12 / total_heads) + 10; axis 38; the detail view
    # is T * 18 + 55 high. Plus the controls row.
    thumb = num_tokens * 7 * (12 / num_heads) + 10
    return int(max(num_layers * thumb + 38, num_tokens * 18 + 55) + 60)
