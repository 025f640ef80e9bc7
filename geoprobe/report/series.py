"""One figure recipe for "an estimate by layer or step, with its interval and its null": :func:`estimate_figure`.

Its rules, which every figure drawn through it keeps:

* **a band never joins two series**: each :class:`Line` draws its own interval band (or error bars), from its
  own points only, and a band is broken where a point has no interval;
* **the legend names the series** (:attr:`Line.name`; give it the model and whatever else tells the series
  apart), and a series' band, simultaneous band and null share its colour and legend group;
* **the axis shows the scale of the question**: the y range spans the estimates, their intervals, the nulls
  and the ``include`` references (0 for a difference or a fraction, a Gaussian E|cos|, 1 for a similarity),
  so a difference of 1e-4 on a quantity of 0.1 is drawn as the flat line it is, not as a trend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import plotly.graph_objects

#: plotly's default colour cycle (a series' line, bands and null share one)
COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52")


@dataclass(frozen=True)
class Line:
    """One series: ``name`` (its legend entry), its points' ``x`` and ``estimate``, the nominal interval
    (``low``/``high``; None for a point without one), optionally a wider simultaneous interval
    (``low_adj``/``high_adj``), its null or reference per point (``null``) and hover ``text``.
    ``markers``: points with error bars (values that are no trajectory, e.g. one per model), not a line
    with a band."""

    name: str
    x: Sequence[Any]
    estimate: Sequence[float | None]
    low: Sequence[float | None] | None = None
    high: Sequence[float | None] | None = None
    low_adj: Sequence[float | None] | None = None
    high_adj: Sequence[float | None] | None = None
    null: Sequence[float | None] | None = None
    text: Sequence[str] | None = None
    markers: bool = False


def _ok(*vals: Any) -> bool:
    return all(v is not None and isinstance(v, (int, float)) and math.isfinite(v) for v in vals)


def _segments(line: Line, low: Sequence[Any], high: Sequence[Any]) -> list[list[int]]:
    """Runs of consecutive points that have an interval (a band is drawn over each run)."""
    runs: list[list[int]] = [[]]
    for i in range(len(line.x)):
        if _ok(line.estimate[i], low[i], high[i]):
            runs[-1].append(i)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


def y_range(lines: Sequence[Line], include: Sequence[float] = (), pad: float = 0.05) -> tuple[float, float] | None:
    """[min, max] of every estimate, interval end and null of ``lines`` and of ``include``, padded by ``pad``
    of the span (None when there is nothing to show)."""
    vals = [float(v) for v in include if _ok(v)]
    for ln in lines:
        for seq in (ln.estimate, ln.low, ln.high, ln.low_adj, ln.high_adj, ln.null):
            vals += [float(v) for v in (seq or ()) if _ok(v)]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    span = hi - lo or max(abs(hi), 1.0)
    return lo - pad * span, hi + pad * span


def _rgba(colour: str, alpha: float) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _band(fig: Any, line: Line, low: Sequence[Any], high: Sequence[Any], colour: str, alpha: float, what: str) -> None:
    import plotly.graph_objects as go

    for seg in _segments(line, low, high):
        xs = [line.x[i] for i in seg]
        fig.add_trace(
            go.Scatter(
                x=xs + xs[::-1],
                y=[high[i] for i in seg] + [low[i] for i in seg][::-1],
                fill="toself",
                fillcolor=_rgba(colour, alpha),
                line=dict(width=0),
                legendgroup=line.name,
                showlegend=False,
                hoverinfo="skip",
                name=f"{line.name}: {what}",
            )
        )


def estimate_figure(
    lines: Sequence[Line],
    *,
    title: str,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    include: Sequence[float] = (),
    null_name: str = "null",
) -> "plotly.graph_objects.Figure":
    """An estimate by layer or step (or by category) for each of ``lines`` with its interval(s) and null,
    under the module's rules; ``include``: values the y axis must show (references, 0)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for n, line in enumerate(lines):
        colour = COLOURS[n % len(COLOURS)]
        if not line.markers:
            if line.low_adj is not None and line.high_adj is not None:
                _band(fig, line, line.low_adj, line.high_adj, colour, 0.10, "simultaneous interval")
            if line.low is not None and line.high is not None:
                _band(fig, line, line.low, line.high, colour, 0.25, "interval")
        err = None
        if line.markers and line.low is not None and line.high is not None:
            up = [h - e if _ok(e, h) else None for e, h in zip(line.estimate, line.high)]
            down = [e - lo if _ok(e, lo) else None for e, lo in zip(line.estimate, line.low)]
            err = dict(type="data", symmetric=False, array=up, arrayminus=down, color=colour)
        fig.add_trace(
            go.Scatter(
                x=list(line.x),
                y=[e if _ok(e) else None for e in line.estimate],
                mode="markers" if line.markers else "lines+markers",
                name=line.name,
                legendgroup=line.name,
                line=dict(color=colour),
                marker=dict(color=colour),
                error_y=err,
                text=None if line.text is None else list(line.text),
            )
        )
        if line.null is not None and any(_ok(v) for v in line.null):
            fig.add_trace(
                go.Scatter(
                    x=list(line.x),
                    y=[v if _ok(v) else None for v in line.null],
                    mode="lines",
                    name=f"{line.name}: {null_name}",
                    legendgroup=line.name,
                    line=dict(color=colour, dash="dash", width=1),
                )
            )
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white")
    if log_x:
        fig.update_xaxes(type="log")
    rng = y_range(lines, include)
    if log_y:
        fig.update_yaxes(type="log")
    elif rng is not None:
        fig.update_yaxes(range=list(rng))
    return fig
