"""A chart in words and as a table, read from the figure's own arrays (WCAG 1.1.1, 1.3.1): the short text alternative
a screen reader says for the chart (what it shows and its extremes), and the numbers behind it, row by row.

Read from the figure, not rebuilt beside it, so the words and the table cannot drift from what is drawn."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

MAX_ALT = 600  # characters: a text alternative is a summary; the table holds every number
MAX_SERIES = 6  # series described one by one; the rest are counted
LIST_ALL = 6  # bars or points named one by one up to this many


def strip_html(text) -> str:
    """A plotly label as plain text: its HTML (<br>, <b>, <sup>) dropped, whitespace collapsed."""
    if text is None:
        return ""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", str(text)))).strip()


def number(v) -> str:
    """A value as a person reads it: 3 significant digits, integers whole."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(int(v))
    try:
        f = float(v)
    except (TypeError, ValueError):
        return strip_html(v)
    if not np.isfinite(f):
        return "no value"
    return str(int(f)) if f.is_integer() and abs(f) < 1e6 else f"{f:.3g}"


def _axis(fig: go.Figure, tr, letter: str):
    ref = getattr(tr, f"{letter}axis", None) or letter
    return fig.layout[f"{letter}axis{ref[1:]}"]


def _axis_title(fig: go.Figure, tr, letter: str) -> str:
    ax = _axis(fig, tr, letter)
    return strip_html(ax.title.text) if ax is not None and ax.title is not None else ""


def _tick_names(fig: go.Figure, tr, letter: str, a, n: int) -> list[str] | None:
    """The axis's own tick texts for the trace's `a` (or positions 0..n-1, a map's default) where the axis names
    each of them (tokens drawn at 0, 1, 2 ...), else None."""
    ax = _axis(fig, tr, letter)
    if ax is None or ax.tickvals is None or ax.ticktext is None or len(ax.tickvals) != len(ax.ticktext):
        return None
    named = {_float(v): strip_html(t) for v, t in zip(ax.tickvals, ax.ticktext)}
    at = _floats(a) if a is not None and len(a) == n else np.arange(n, dtype=float)
    return [named[v] for v in at] if at.ndim == 1 and all(v in named for v in at) else None


def _ticks(fig: go.Figure, tr, letter: str, a, n: int) -> list[str]:
    """The labels a reader sees along an axis for the trace's `a`: the axis's tick texts, else the values."""
    return _tick_names(fig, tr, letter, a, n) or _labels(a, n)


def _floats(a) -> np.ndarray:
    """Values as floats, a missing one (None) as NaN; numpy's own conversion when there is none (every rerun
    describes every chart: a Python loop over a 12-head grid of 128 x 128 maps took ~0.1 s)."""
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        return np.array([_float(v) for v in np.asarray(a, dtype=object).ravel()]).reshape(np.shape(a))


def _float(v) -> float:
    """One value as a float: NaN for a missing or non-numeric one (a category like "layer 1")."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.nan


def _labels(a, n: int) -> list[str]:
    """Tick labels as text (numbers to 3 digits); positions 1..n where the trace has none."""
    if a is None or len(a) != n:
        return [str(i + 1) for i in range(n)]
    return [strip_html(v) if isinstance(v, str) else number(v) for v in a]


def _numeric(a) -> bool:
    return bool(np.isfinite(_floats(a)).any())


def _series(tr, i: int) -> str:
    return strip_html(tr.name) or ("" if i < 0 else f"series {i + 1}")


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
    xs, ys = _ticks(fig, tr, "x", tr.x, nx), _ticks(fig, tr, "y", tr.y, ny)
    xt, yt = _axis_title(fig, tr, "x"), _axis_title(fig, tr, "y")
    rows = f"{ny} row{'s' if ny != 1 else ''}" + (f" ({yt})" if yt else "")
    cols = f"{nx} column{'s' if nx != 1 else ''}" + (f" ({xt})" if xt else "")
    shape = f"a map of {rows} by {cols}"
    ok = z[np.isfinite(z)]
    if ok.min() == ok.max():
        return f"{shape}; every cell {number(ok[0])}"
    if ny == nx > 2 and xs == ys and np.allclose(np.nan_to_num(z), np.nan_to_num(z.T)):
        # a similarity map: its diagonal (a thing with itself) says nothing; the extremes are off it
        off = np.where(np.eye(nx, dtype=bool), np.nan, z)
        hi = np.unravel_index(int(np.nanargmax(off)), z.shape)
        lo = np.unravel_index(int(np.nanargmin(off)), z.shape)
        return (f"{shape}, symmetric; off the diagonal, highest {number(z[hi])} between {ys[hi[0]]} and "
                f"{xs[hi[1]]}; lowest {number(z[lo])} between {ys[lo[0]]} and {xs[lo[1]]}")
    hi = np.unravel_index(int(np.nanargmax(z)), z.shape)
    lo = np.unravel_index(int(np.nanargmin(z)), z.shape)
    return (f"{shape}; highest {number(z[hi])} at row {ys[hi[0]]}, column {xs[hi[1]]}; "
            f"lowest {number(z[lo])} at row {ys[lo[0]]}, column {xs[lo[1]]}")


def _bar(fig, tr, name: str) -> str:
    horizontal = tr.orientation == "h"
    vals, labs = (tr.x, tr.y) if horizontal else (tr.y, tr.x)
    if vals is None:
        return _said(name, "no bars")
    v = _floats(vals)
    what = _axis_title(fig, tr, "x" if horizontal else "y")
    bars = f"{len(v)} bar{'s' if len(v) != 1 else ''}" + (f" of {what}" if what else "")
    lead = ", ".join(w for w in (name, bars) if w)
    labels = _ticks(fig, tr, "y" if horizontal else "x", labs, len(v))
    if horizontal and len(v) <= LIST_ALL:  # a ranking, drawn bottom up: said from the top (the largest) down
        order = np.argsort(-np.nan_to_num(v, nan=-np.inf), kind="stable")
        labels, v = [labels[k] for k in order], v[order]
    return f"{lead}: {_extremes(labels, v)}"


def _scatter(fig, tr, name: str) -> str:
    if tr.y is None:
        return _said(name, "no points")
    y = _floats(tr.y)
    n = len(y)
    xs = _ticks(fig, tr, "x", tr.x, n)
    if not np.isfinite(y).any():  # points on two category axes (a marked cell): say where they are
        at = [f"{a}, {b}" for a, b in zip(xs, _labels(tr.y, n))]
        return _said(name, f"{n} point{'s' if n != 1 else ''} at " + "; ".join(at[:LIST_ALL])
                     + ("…" if n > LIST_ALL else ""))
    if "lines" in (tr.mode or "lines") and n > 1:
        first, last = int(np.argmax(np.isfinite(y))), n - 1 - int(np.argmax(np.isfinite(y[::-1])))
        hi = int(np.nanargmax(y))
        xt = _axis_title(fig, tr, "x") or f"{n} points,"
        return _said(name, f"a line over {xt} {xs[0]} to {xs[-1]}, from {number(y[first])} to "
                           f"{number(y[last])}, highest {number(y[hi])} at {xs[hi]}")
    text = tr.text if tr.text is not None and not isinstance(tr.text, str) and len(tr.text) == n else None
    labels = _labels(text, n) if text is not None else xs
    if tr.x is not None and _numeric(tr.x) and _floats(tr.x).ndim == 1 and text is not None:
        return _said(name, f"{n} points" + (f" ({', '.join(labels[:LIST_ALL])}…)" if n > LIST_ALL
                                            else f" ({', '.join(labels)})"))
    return _said(name, f"{n} points: {_extremes(labels, y)}")


def _histogram(fig, tr, name: str) -> str:
    raw = tr.x if tr.x is not None else tr.y
    v = _floats(raw) if raw is not None else np.array([])
    v = v[np.isfinite(v)]
    if not len(v):
        return _said(name, "no values")
    return _said(name, f"a histogram of {len(v)} values from {number(v.min())} to {number(v.max())}, "
                                 f"median {number(np.median(v))}")


def trace_text(fig: go.Figure, tr, i: int, name: str | None = None) -> str:
    """One series of the chart in words; `name` (default: the trace's own, or "series i + 1" when there are several,
    i >= 0) leads it."""
    name = name or _series(tr, i)
    kind = tr.type
    if kind == "heatmap":
        return _said(name if strip_html(tr.name) or i >= 0 else "", _heatmap(fig, tr))
    if kind == "bar":
        return _bar(fig, tr, name)
    if kind in ("scatter", "scattergl"):
        return _scatter(fig, tr, name)
    if kind == "histogram":
        return _histogram(fig, tr, name)
    return _said(name, f"a {kind} chart")


def shown(fig: go.Figure) -> list:
    """The traces drawn (a trace switched off, visible=False, is not)."""
    return [tr for tr in fig.data if tr.visible is not False]


def _panel_names(fig: go.Figure, traces: list) -> list[str]:
    """Unnamed traces, one per panel of a make_subplots figure, take their panel's title: those titles are the
    layout's annotations, in panel order."""
    titles = [strip_html(a.text) for a in fig.layout.annotations or () if a.text]
    if len(titles) == len(traces) > 1 and not any(strip_html(tr.name) for tr in traces):
        return titles
    return [strip_html(tr.name) for tr in traces]


def alt_text(fig: go.Figure, point: str | None = None, name: str | None = None, table: bool = True) -> str:
    """The chart's text alternative: its title (`name` for a figure with none), `point` (its main point, said by the
    page when it knows it), then each series: a map's highest and lowest cell (off the diagonal of a symmetric one),
    bars' values or extremes, a line's start, end and peak. `table`: a Data table follows the chart, and the text
    says so; without one it promises none (its own words carry the numbers: a few bars are each named)."""
    title = (strip_html(fig.layout.title.text) if fig.layout.title is not None else "") or strip_html(name)
    traces = shown(fig)
    parts = [f"Chart: {title}" if title else "Chart"]
    if point:
        parts.append(point)
    names = _panel_names(fig, traces)
    parts += [trace_text(fig, tr, i if len(traces) > 1 else -1, nm)
              for i, (tr, nm) in enumerate(zip(traces[:MAX_SERIES], names))]
    if len(traces) > MAX_SERIES:
        parts.append(f"and {len(traces) - MAX_SERIES} more series")
    text = ". ".join(p[:1].upper() + p[1:].rstrip(".") for p in parts if p) \
        + (". Its numbers are in the Data table below it." if table else ".")
    if len(text) > MAX_ALT:  # the table below holds the rest
        cut = text[:MAX_ALT - 45].rsplit("; ", 1)[0].rsplit(". ", 1)[0]
        text = cut + ("… (every number is in the Data table below it)." if table else "…")
    return text


def _unique(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} ({seen[n]})")
    return out


def data_points(fig: go.Figure) -> int:
    """How many numbers the chart draws (a map's cells, a series' points): the size of its table, before building it."""
    n = 0
    for tr in shown(fig):
        a = tr.z if tr.type == "heatmap" else tr.y if tr.y is not None else tr.x
        n += int(np.size(a)) if a is not None else 0
    return n


def _sig(a) -> np.ndarray:
    """Numbers to 4 significant digits (a probability of 3e-5 stays 3e-05, not 0), NaN where there is none."""
    a = _floats(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.floor(np.log10(np.abs(a)))
    f = 10.0 ** (3 - np.where(np.isfinite(mag), mag, 0))
    return np.round(a * f) / f


def _column(a, n: int):
    """A table column: numbers to 4 significant digits, or text where the values are not all numbers."""
    if a is None:
        return np.arange(n)
    v = _floats(a)
    if np.isfinite(v).sum() == sum(x is not None for x in a) and not any(isinstance(x, str) for x in a):
        return _sig(v)
    return [strip_html(x) if x is not None else "" for x in a]


def figure_table(fig: go.Figure) -> dict[str, list | np.ndarray]:
    """The numbers behind the chart, column by column. One map: a row per map row, a column per map column (as
    drawn). Otherwise a row per point (a map's cell): its series, x, y, and the point's label or the cell's value.
    Built with numpy: a 12-head grid of 128 x 128 maps is 196,608 rows."""
    traces = shown(fig)
    if len(traces) == 1 and traces[0].type == "heatmap" and _floats(traces[0].z).ndim == 2:
        tr = traces[0]
        z = _sig(tr.z)
        ny, nx = z.shape
        names = _unique([_axis_title(fig, tr, "y") or "row"] + _ticks(fig, tr, "x", tr.x, nx))
        return {names[0]: _ticks(fig, tr, "y", tr.y, ny), **{c: z[:, k] for k, c in enumerate(names[1:])}}
    x_name = next((t for t in (_axis_title(fig, tr, "x") for tr in traces) if t), "x")
    y_name = next((t for t in (_axis_title(fig, tr, "y") for tr in traces) if t), "y")
    parts: list[dict] = []
    for i, (tr, panel) in enumerate(zip(traces, _panel_names(fig, traces))):
        name = panel or _series(tr, i)
        if tr.type == "heatmap":
            z = _sig(tr.z)
            if z.ndim != 2:
                continue
            ny, nx = z.shape
            xs, ys = _ticks(fig, tr, "x", tr.x, nx), _ticks(fig, tr, "y", tr.y, ny)
            parts.append({"series": np.full(z.size, name, dtype=object), "x": np.tile(np.asarray(xs, dtype=object), ny),
                          "y": np.repeat(np.asarray(ys, dtype=object), nx), "value": z.ravel()})
            continue
        if tr.type == "histogram":
            raw = tr.x if tr.x is not None else tr.y
            v = _sig(raw) if raw is not None else np.array([])
            parts.append({"series": np.full(len(v), name, dtype=object), "x": v})
            continue
        xs, ys = tr.x, tr.y
        n = len(ys) if ys is not None else len(xs) if xs is not None else 0
        text = tr.text if tr.text is not None and not isinstance(tr.text, str) and len(tr.text) == n else None
        part = {"series": np.full(n, name, dtype=object),
                "x": _tick_names(fig, tr, "x", xs, n) or _column(xs, n),
                "y": _tick_names(fig, tr, "y", ys, n) or _column(ys, n)}
        if text is not None:
            part["label"] = [strip_html(t) for t in text]
        parts.append(part)
    # The column that names a point first (a table's row header): a horizontal bar chart's categories are its y.
    across = all(tr.type == "bar" and tr.orientation == "h" for tr in traces)
    order = ("series", "y", "x", "label", "value") if across else ("series", "x", "y", "label", "value")
    keys = [k for k in order if any(k in p for p in parts)]
    if len({str(p["series"][0]) for p in parts if len(p["series"])}) <= 1:
        keys.remove("series")  # one series: its name is the chart's
    names = _unique([{"x": x_name, "y": y_name, "label": "shown on the chart"}.get(k, k) for k in keys])
    out = {}
    for k, name in zip(keys, names):
        cols = [p[k] if k in p else np.full(len(p["series"]), "" if k in ("label", "y", "x") else np.nan, dtype=object)
                for p in parts]
        if all(k in p and np.asarray(p[k]).dtype.kind in "fiu" for p in parts):
            out[name] = np.concatenate([np.asarray(c, dtype=float) for c in cols])
        else:
            out[name] = _one_kind(np.concatenate([np.asarray(c, dtype=object) for c in cols]) if cols else np.array([]))
    return out


def _one_kind(col: np.ndarray) -> np.ndarray:
    """A column of one kind, as a table (Arrow) needs: numbers with blanks as floats (NaN), else text.

    Series differ: a histogram has no y, a bar chart's x are words while a line's are numbers."""
    filled = [v for v in col if not (isinstance(v, str) and v == "")]
    if filled and all(isinstance(v, (int, float, np.integer, np.floating)) for v in filled):
        return np.array([np.nan if isinstance(v, str) else float(v) for v in col], dtype=float)
    if any(isinstance(v, str) for v in filled) and not all(isinstance(v, str) for v in filled):
        return np.array([v if isinstance(v, str) else f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)
                         for v in col], dtype=object)
    return col
