"""A Lesson chart as a small record of what was drawn: its numbers, labels and colours, as `handout_svg` draws them
for the handout.

A record is made on every rerun for every chart a step draws (`keep`), so it copies only what `svg` reads and
keeps numbers as numbers; one over MAX_RECORD_BYTES is dropped. Pure: plotly figures or plain dicts in, dicts out;
no streamlit (`keep` is given the session's state).
"""

from __future__ import annotations

import base64
import math

import numpy as np

DRAWN = "lesson_drawn"  # session key: {(step number, chart key): record} of the charts drawn in this run
MAX_RECORD_BYTES = 50_000  # a chart's numbers and labels; one past it (a map of ~110+ tokens, 1.5 MB SVG) is dropped
# The app draws every chart in Streamlit's theme, whose palette replaces the figure template's: a trace with no
# colour of its own is drawn in these (Streamlit's light theme), as it was on the page.
DEFAULT_COLORS = ("#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a",
                  "#6d3fc0", "#d5dae5")

_TRACE_KEYS = ("type", "x", "y", "z", "text", "texttemplate", "orientation", "mode", "name", "zmin", "zmax",
               "colorscale", "reversescale", "yaxis", "showlegend", "connectgaps", "showscale")
_AXIS_KEYS = ("type", "range", "autorange", "tickformat", "tickvals", "ticktext", "side", "rangemode", "overlaying",
              "scaleanchor")


def _array(v):
    """A plotly array (plotly's base64 typed array {"dtype", "bdata", "shape"}, or numpy's) as a numpy copy; a list
    stays a list. Kept as numbers, not text: a record is made on every rerun, and only `svg` formats them."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return a.reshape([int(s) for s in str(v["shape"]).split(",")]) if "shape" in v else a
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def _size(v) -> int:
    """About how many bytes a record holds: its arrays' bytes, its strings' characters."""
    if isinstance(v, np.ndarray):
        return v.nbytes
    if isinstance(v, str):
        return len(v)
    if isinstance(v, dict):
        return sum(_size(k) + _size(x) for k, x in v.items())
    if isinstance(v, list | tuple):
        return sum(_size(x) for x in v) + 2 * len(v)
    return 8


def listed(v):
    """An array as nested lists of plain numbers, NaN as None (for drawing)."""
    if isinstance(v, np.ndarray | np.generic):
        v = v.tolist()
    if isinstance(v, float):
        return None if not math.isfinite(v) else v
    if isinstance(v, list | tuple):
        return [listed(x) for x in v]
    return v


def record(fig, describe=None) -> dict | None:
    """What `svg` needs of a plotly figure (or its dict), compact; None when that is over MAX_RECORD_BYTES. With
    `describe` (as in `keep`), also the chart's text alternative and table (handout_svg's `figure_html`)."""
    # to_plotly_json: the figure's own dicts, read and not changed (to_dict deep-copies them: twice as slow)
    d = fig.to_plotly_json() if hasattr(fig, "to_plotly_json") else fig
    lay = d.get("layout", {})
    out_traces = []
    for tr in d.get("data", []):
        t = {k: _array(tr[k]) for k in _TRACE_KEYS if k in tr}
        t.setdefault("type", "scatter")
        marker, line = tr.get("marker") or {}, tr.get("line") or {}
        if "color" in marker:
            t["color"] = _array(marker["color"])
        if marker.get("opacity") == 0:  # an invisible layer of points (a heatmap's click targets)
            t["hidden_markers"] = True
        if "color" in line:
            t["line_color"] = line["color"]
        if "dash" in line:
            t["dash"] = line["dash"]
        if "width" in line:
            t["line_width"] = line["width"]
        if isinstance(t.get("colorscale"), str):  # a named scale ("Blues"): its stops, so `svg` needs no plotly
            import plotly.colors

            t["colorscale"] = [[float(p), c] for p, c in plotly.colors.get_colorscale(t["colorscale"])]
        out_traces.append(t)
    rec = {
        "title": _title(lay.get("title")),
        "height": lay.get("height") or 400,
        "colors": list(lay.get("colorway") or DEFAULT_COLORS),
        "showlegend": lay.get("showlegend"),
        "barmode": lay.get("barmode"),
        "shapes": [dict(s) for s in lay.get("shapes", [])],
        "annotations": [dict(a) for a in lay.get("annotations", [])],
        "data": out_traces,
    }
    for name in ("xaxis", "yaxis", "yaxis2"):
        ax = lay.get(name)
        if ax is not None:
            rec[name] = {k: listed(_array(ax[k])) for k in _AXIS_KEYS if k in ax} | {"title": _title(ax.get("title"))}
    rec["bytes"] = _size(rec)
    if rec["bytes"] > MAX_RECORD_BYTES:
        return None
    if describe is not None:  # the chart's words and numbers, as the app gives them (WCAG 1.1.1, 1.3.1)
        alt, table = describe(fig)
        rec["alt"] = alt
        rec["table"] = {str(k): listed(_array(np.asarray(v))) for k, v in table.items()}
        rec["bytes"] = _size(rec)
    return rec


def keep(session, fig, key: str, describe=None) -> None:
    """Note `fig` as drawn by the Lesson's current step in this run (`session`: st.session_state); `describe`:
    fig -> (its text alternative, its table as {column: values}), read only for a chart that is kept."""
    session.setdefault(DRAWN, {})[(session.get("lesson_step"), key)] = record(fig, describe)


def _title(t) -> str:
    if isinstance(t, dict):
        t = t.get("text")
    return t if isinstance(t, str) else ""
