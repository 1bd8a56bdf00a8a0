"""A chart in words and as a table, read from the figure's own arrays (WCAG 1.1.1, 1.3.1): the short text alternative
a screen reader says for the chart (what it shows and its extremes), and the numbers behind it, row by row.

Read from the figure, not rebuilt beside it, so the words and the table cannot drift from what is drawn."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

MAX_ALT = 600  # characters: a text alternative is a summary; the table holds every number
MAX_SERIES = 6  # series described one by one; the rest are counted
LIST_ALL = 6  # bars or points named one by one up to this many


def plain(text) -> str:
    """A plotly label as plain text: its HTML (<br>, <b>, <sup>) dropped, whitespace collapsed."""
    if text is None:
        return ""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", str(text))).strip()


def number(v) -> str:
    """A value as a person reads it: 3 significant digits, integers whole."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    try:
        f = float(v)
    except (TypeError, ValueError):
        return plain(v)
    if not np.isfinite(f):
        return "no value"
    return str(int(f)) if f.is_integer() and abs(f) < 1e6 else f"{f:.3g}"


def _axis_title(fig: go.Figure, tr, letter: str) -> str:
    ref = getattr(tr, f"{letter}axis", None) or letter
    ax = fig.layout[f"{letter}axis{ref[1:]}"]
    return plain(ax.title.text) if ax is not None and ax.title is not None else ""


def _floats(a) -> np.ndarray:
    """Values as floats, a missing one (None) as NaN; numpy's own conversion when there is none (every rerun
    describes every chart: a Python loop over a 12-head grid of 128 x 128 maps took ~0.1 s)."""
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        return np.array([np.nan if v is None else v for v in np.asarray(a, dtype=object).ravel()], dtype=float)\
            .reshape(np.shape(a))


def _labels(a, n: int) -> list[str]:
    """Tick labels as text (numbers to 3 digits); positions 1..n where the trace has none."""
    if a is None or len(a) != n:
        return [str(i + 1) for i in range(n)]
    return [plain(v) if isinstance(v, str) else number(v) for v in a]


def _numeric(a) -> bool:
    try:
        _floats(a)
        return True
    except (TypeError, ValueError):
        return False


def _series(tr, i: int) -> str:
    return plain(tr.name) or ("" if i < 0 else f"series {i + 1}")


def _said(name: str, text: str) -> str:
    return f"{name}: {text}" if name else text


def _extremes(labels: Sequence[str], values: np.ndarray) -> str:
    ok = np.isfinite(values)
    if not ok.any():
        return "no values"
    if len(values) <= LIST_ALL:
        return ", ".join(f"{lab}: {number(v)}" for lab, v in zip(labels, values) if np.isfinite(v))
    hi, lo = int(np.nanargmax(values)), int(np.nanargmin(values))
    return f"highest {labels[hi]} ({number(values[hi])}), lowest {labels[lo]} ({number(values[lo])})"


def _heatmap(fig, tr) -> str:
    z = _floats(tr.z)
    if z.ndim != 2 or not np.isfinite(z).any():
        return "an empty map"
    ny, nx = z.shape
    xs, ys = _labels(tr.x, nx), _labels(tr.y, ny)
    xt, yt = _axis_title(fig, tr, "x"), _axis_title(fig, tr, "y")
    hi = np.unravel_index(int(np.nanargmax(z)), z.shape)
    lo = np.unravel_index(int(np.nanargmin(z)), z.shape)
    rows = f"{ny} rows" + (f" ({yt})" if yt else "")
    cols = f"{nx} columns" + (f" ({xt})" if xt else "")
    return (f"a map of {rows} by {cols}; highest {number(z[hi])} at row {ys[hi[0]]}, column {xs[hi[1]]}; "
            f"lowest {number(z[lo])} at row {ys[lo[0]]}, column {xs[lo[1]]}")


def _bar(fig, tr, i: int) -> str:
    horizontal = tr.orientation == "h"
    vals, labs = (tr.x, tr.y) if horizontal else (tr.y, tr.x)
    if vals is None:
        return _said(_series(tr, i), "no bars")
    v = _floats(vals)
    what = _axis_title(fig, tr, "x" if horizontal else "y")
    bars = f"{len(v)} bar{'s' if len(v) != 1 else ''}" + (f" of {what}" if what else "")
    lead = ", ".join(w for w in (_series(tr, i), bars) if w)
    return f"{lead}: {_extremes(_labels(labs, len(v)), v)}"


def _scatter(fig, tr, i: int) -> str:
    if tr.y is None:
        return _said(_series(tr, i), "no points")
    y = _floats(tr.y)
    n = len(y)
    xs = _labels(tr.x, n)
    name = _series(tr, i)
    if not np.isfinite(y).any():
        return _said(name, "no values")
    if "lines" in (tr.mode or "lines") and n > 1:
        first, last = int(np.argmax(np.isfinite(y))), n - 1 - int(np.argmax(np.isfinite(y[::-1])))
        hi = int(np.nanargmax(y))
        xt = _axis_title(fig, tr, "x") or "x"
        return _said(name, f"a line over {xt} {xs[0]} to {xs[-1]}, from {number(y[first])} to "
                           f"{number(y[last])}, highest {number(y[hi])} at {xs[hi]}")
    text = tr.text if tr.text is not None and not isinstance(tr.text, str) and len(tr.text) == n else None
    labels = _labels(text, n) if text is not None else xs
    if tr.x is not None and _numeric(tr.x) and _floats(tr.x).ndim == 1 and text is not None:
        return _said(name, f"{n} points" + (f" ({', '.join(labels[:LIST_ALL])}…)" if n > LIST_ALL
                                            else f" ({', '.join(labels)})"))
    return _said(name, f"{n} points: {_extremes(labels, y)}")


def _histogram(fig, tr, i: int) -> str:
    raw = tr.x if tr.x is not None else tr.y
    v = _floats(raw) if raw is not None else np.array([])
    v = v[np.isfinite(v)]
    if not len(v):
        return _said(_series(tr, i), "no values")
    return _said(_series(tr, i), f"a histogram of {len(v)} values from {number(v.min())} to {number(v.max())}, "
                                 f"median {number(np.median(v))}")


def trace_text(fig: go.Figure, tr, i: int) -> str:
    """One series of the chart in words."""
    kind = tr.type
    if kind == "heatmap":
        return _said(plain(tr.name), _heatmap(fig, tr))
    if kind == "bar":
        return _bar(fig, tr, i)
    if kind in ("scatter", "scattergl"):
        return _scatter(fig, tr, i)
    if kind == "histogram":
        return _histogram(fig, tr, i)
    return _said(_series(tr, i), f"a {kind} chart")


def shown(fig: go.Figure) -> list:
    """The traces drawn (a trace switched off, visible=False, is not)."""
    return [tr for tr in fig.data if tr.visible is not False]


def alt_text(fig: go.Figure, point: str | None = None) -> str:
    """The chart's text alternative: its title, `point` (its main point, said by the page when it knows it), then
    each series: a map's highest and lowest cell, bars' values or extremes, a line's start, end and peak."""
    title = plain(fig.layout.title.text) if fig.layout.title is not None else ""
    traces = shown(fig)
    parts = [f"Chart: {title}" if title else "Chart"]
    if point:
        parts.append(point)
    parts += [trace_text(fig, tr, i if len(traces) > 1 else -1) for i, tr in enumerate(traces[:MAX_SERIES])]
    if len(traces) > MAX_SERIES:
        parts.append(f"and {len(traces) - MAX_SERIES} more series")
    text = ". ".join(p[:1].upper() + p[1:].rstrip(".") for p in parts if p) \
        + ". Its numbers are in the Data table below it."
    if len(text) > MAX_ALT:  # the table below holds the rest
        cut = text[:MAX_ALT - 45].rsplit("; ", 1)[0].rsplit(". ", 1)[0]
        text = cut + "… (every number is in the Data table below it)."
    return text


def _unique(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def _cell(v):
    """A table's value: a number to 4 significant digits, else its plain text."""
    if isinstance(v, (str, bool, np.bool_)):
        return plain(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return plain(v)
    return float(f"{f:.4g}") if np.isfinite(f) else None


def figure_table(fig: go.Figure) -> tuple[list[str], list[list]]:
    """The numbers behind the chart as (column names, rows). One map: a row per map row, a column per map column (as
    drawn). Otherwise a row per point: its series, x, y (and the point's label, or a map cell's value)."""
    traces = shown(fig)
    if len(traces) == 1 and traces[0].type == "heatmap":
        tr = traces[0]
        z = _floats(tr.z)
        if z.ndim == 2:
            ny, nx = z.shape
            yt = _axis_title(fig, tr, "y") or "row"
            cols = _unique([yt] + _labels(tr.x, nx))
            return cols, [[lab, *(_cell(v) for v in row)] for lab, row in zip(_labels(tr.y, ny), z)]
    x_name = next((t for t in (_axis_title(fig, tr, "x") for tr in traces) if t), "x")
    y_name = next((t for t in (_axis_title(fig, tr, "y") for tr in traces) if t), "y")
    rows: list[list] = []
    labelled = heat = False
    for i, tr in enumerate(traces):
        name = _series(tr, i)
        if tr.type == "heatmap":
            z = _floats(tr.z)
            if z.ndim != 2:
                continue
            ny, nx = z.shape
            xs, ys = _labels(tr.x, nx), _labels(tr.y, ny)
            heat = True
            rows += [[name, xs[c], ys[r], "", _cell(z[r, c])] for r in range(ny) for c in range(nx)]
            continue
        if tr.type == "histogram":
            raw = tr.x if tr.x is not None else tr.y
            rows += [[name, _cell(v), "", "", None] for v in (raw if raw is not None else ())]
            continue
        xs, ys = tr.x, tr.y
        n = len(ys) if ys is not None else len(xs) if xs is not None else 0
        xs = list(xs) if xs is not None else list(range(n))
        ys = list(ys) if ys is not None else list(range(n))
        text = tr.text if tr.text is not None and not isinstance(tr.text, str) and len(tr.text) == n else None
        labelled = labelled or text is not None
        rows += [[name, _cell(xs[k]), _cell(ys[k]), plain(text[k]) if text is not None else "", None]
                 for k in range(n)]
    keep = [True, True, True, labelled, heat]
    cols = _unique([c for c, k in zip(["series", x_name, y_name, "label", "value"], keep) if k])
    if len({r[0] for r in rows}) <= 1 and rows:  # one series: its name is the chart's
        keep[0] = False
        cols = cols[1:]
    return cols, [[v for v, k in zip(r, keep) if k] for r in rows]
