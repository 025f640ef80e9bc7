"""One figure recipe for "an estimate by layer or step, with its interval and its null": :func:`estimate_figure`
(one panel) and :func:`estimate_panels` (several side by side: PC1 and PR, MAE and KL, ...).

Its rules, which every figure drawn through it keeps:

* **a band never joins two series**: each :class:`Line` draws its own interval band (or error bars), from its
  own points only, and a band is broken where a point has no interval; points that are no trajectory (one per
  model, one per prompt set: ``markers``) get error bars, and their null is drawn per point, never as a line
  across them;
* **the legend names the series** (:attr:`Line.name`; give it the model and whatever else tells the series
  apart), and a series' band, simultaneous band, null (a line or a band) and marked points share its colour and
  legend group; a series drawn in several panels keeps one colour and one legend entry;
* **the legend says where the interval is** (:attr:`Line.ci`, e.g. "95 % CI"): "NAME (95 % CI)" when every
  point has its interval, "NAME (95 % CI where computed)" when only some do (a scan's CIs at its final layer
  only), NAME alone when none does; an interval at a point whose neighbours have none is an error bar (a band
  of one point has no width);
* **the axis shows the scale of the question**: the y range spans the estimates, their intervals, the nulls
  (lines and bands) and the ``include`` values and :class:`Reference` lines (0 for a difference or a fraction, a
  Gaussian E|cos|, 1 for a similarity), so a difference of 1e-4 on a quantity of 0.1 is drawn as the flat line it
  is, not as a trend.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    import plotly.graph_objects

#: plotly's default colour cycle (a series' line, bands and null share one)
COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52")


#: a null band's fill and dashed edge opacity along a trajectory (issue 39: at 0.08 and 0.5 it did not read)
NULL_FILL, NULL_EDGE = 0.2, 0.85

#: the line styles of a panel's references, in order (two references in one panel stay apart)
REFERENCE_DASHES = ("dot", "dashdot", "longdash")


@dataclass(frozen=True)
class Line:
    """One series: ``name`` (its legend entry), its points' ``x`` and ``estimate``, the nominal interval
    (``low``/``high``; None for a point without one), optionally a wider second band (``low_adj``/``high_adj``:
    a simultaneous interval, or a spread such as heads' 10-90 %), its null or reference per point (``null``,
    dashed) and the null's interval (``null_low``/``null_high``, shaded), and hover ``text``.

    ``interval_name``/``wide_name``: what the two bands are (their trace names). ``marks``: points singled out
    (significant, identifiable), drawn filled over the open markers of the others, as ``marks_name``.
    ``markers``: points with error bars (values that are no trajectory, e.g. one per model), not a line
    with a band. ``dots``: False draws a long curve without a marker at each point. ``dash``: the estimate's
    line style (e.g. "dash" for a bound drawn among the series it bounds). ``null_name``: what its null is, where
    it differs from the figure's (one panel's null is North's error, the other's a permutation quantile).
    ``ci``: what the interval is, named in the legend entry as far as the points have it (:func:`legend_name`)."""

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
    null_low: Sequence[float | None] | None = None
    null_high: Sequence[float | None] | None = None
    interval_name: str = "interval"
    wide_name: str = "simultaneous interval"
    marks: Sequence[bool] | None = None
    marks_name: str = "marked"
    dots: bool = True
    dash: str | None = None
    null_name: str | None = None
    ci: str | None = None


def legend_name(line: Line) -> str:
    """``line``'s legend entry: its name, with :attr:`Line.ci` said as far as its points have an interval
    ("PC1 (95 % CI)", "PC1 (95 % CI where computed)", or "PC1" when no point has one)."""
    if not line.ci or line.low is None or line.high is None:
        return line.name
    shown = [i for i, e in enumerate(line.estimate) if _ok(e)]
    have = [i for i in shown if _ok(line.low[i], line.high[i])]
    if not have:
        return line.name
    return f"{line.name} ({line.ci})" if len(have) == len(shown) else f"{line.name} ({line.ci} where computed)"


@dataclass(frozen=True)
class Reference:
    """A constant the question is read against (a threshold, a Gaussian expectation, a floor): a grey horizontal
    line (dotted; a panel's second dash-dotted, its third long-dashed) named ``name`` in the legend, inside the
    y range."""

    name: str
    y: float


@dataclass(frozen=True)
class Panel:
    """One panel of :func:`estimate_panels`: its ``lines``, y axis title, subplot ``title``, the values its y
    axis must show (``include``), its :class:`Reference` lines, and a log y axis."""

    lines: Sequence[Line]
    y_title: str
    title: str = ""
    include: Sequence[float] = ()
    references: Sequence[Reference] = ()
    log_y: bool = False


def _ok(*vals: Any) -> bool:
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in vals)


def _runs(n: int, *seqs: Sequence[Any]) -> list[list[int]]:
    """Runs of consecutive indices below ``n`` where every one of ``seqs`` has a finite value."""
    runs: list[list[int]] = [[]]
    for i in range(n):
        if _ok(*(s[i] for s in seqs)):
            runs[-1].append(i)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


def _segments(line: Line, low: Sequence[Any], high: Sequence[Any]) -> list[list[int]]:
    """Runs of consecutive points that have an interval (a band is drawn over each run)."""
    return _runs(len(line.x), line.estimate, low, high)


def y_range(lines: Sequence[Line], include: Sequence[float] = (), pad: float = 0.05) -> tuple[float, float] | None:
    """[min, max] of every estimate, interval end and null (line or band) of ``lines`` and of ``include``,
    padded by ``pad`` of the span (None when there is nothing to show)."""
    vals = [float(v) for v in include if _ok(v)]
    for ln in lines:
        for seq in (ln.estimate, ln.low, ln.high, ln.low_adj, ln.high_adj, ln.null, ln.null_low, ln.null_high):
            vals += [float(v) for v in (seq or ()) if _ok(v)]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    span = hi - lo or max(abs(hi), 1.0)
    return lo - pad * span, hi + pad * span


def _rgba(colour: str, alpha: float) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


class _Drawing:
    """Traces added to one figure: each series' colour (by name, first seen first) and the legend entries
    already shown (a name is listed once however many panels draw it)."""

    def __init__(self, fig: Any, null_name: str) -> None:
        self.fig, self.null_name = fig, null_name
        self.colours: dict[str, str] = {}
        self.shown: set[str] = set()

    def add(self, trace: Any, row: int | None, col: int | None, legend: bool = True) -> None:
        if legend and trace.name not in self.shown:
            self.shown.add(trace.name)
        else:
            trace.showlegend = False
        self.fig.add_trace(trace, row=row, col=col)

    def band(self, line: Line, low: Sequence[Any], high: Sequence[Any], alpha: float, what: str, rc: Any) -> None:
        import plotly.graph_objects as go

        colour = self.colours[line.name]
        for seg in _segments(line, low, high):
            xs = [line.x[i] for i in seg]
            trace = go.Scatter(
                x=xs + xs[::-1],
                y=[high[i] for i in seg] + [low[i] for i in seg][::-1],
                fill="toself",
                mode="lines",
                fillcolor=_rgba(colour, alpha),
                line=dict(width=0),
                legendgroup=legend_name(line),
                hoverinfo="skip",
                name=f"{legend_name(line)}: {what}",
            )
            self.add(trace, *rc, legend=False)

    def null_band(self, line: Line, rc: Any) -> None:
        """The null's interval: shaded with a dashed edge along a trajectory (dense enough to read behind the
        series' own interval band); at markers, and at a point of a trajectory whose neighbours have no null,
        a pale bar at each point, broken between points (None), so that nothing joins two of them."""
        import plotly.graph_objects as go

        assert line.null_low is not None and line.null_high is not None
        colour, name = self.colours[line.name], self.null_label(line)
        lo, hi = line.null_low, line.null_high
        legend = line.null is None  # a null drawn as a line and a band is one legend entry
        runs = _runs(len(line.x), lo, hi)
        pts = [i for run in runs for i in run if line.markers or len(run) == 1]
        if pts:
            trace = go.Scatter(
                x=[v for i in pts for v in (line.x[i], line.x[i], None)],
                y=[v for i in pts for v in (lo[i], hi[i], None)],
                mode="lines",
                line=dict(color=_rgba(colour, 0.25), width=12),
                legendgroup=legend_name(line),
                offsetgroup=line.name if line.markers else None,
                hoverinfo="skip",
                name=name,
            )
            self.add(trace, *rc, legend=legend)
            legend = False
        for seg in [] if line.markers else runs:  # (a run of one point is also its bar above: a fill has no width)
            xs = [line.x[i] for i in seg]
            trace = go.Scatter(
                x=xs + xs[::-1],
                y=[hi[i] for i in seg] + [lo[i] for i in seg][::-1],
                fill="toself",
                mode="lines",
                fillcolor=_rgba(colour, NULL_FILL),
                line=dict(color=_rgba(colour, NULL_EDGE), width=1.5, dash="dash"),
                legendgroup=legend_name(line),
                hoverinfo="skip",
                name=name,
            )
            self.add(trace, *rc, legend=legend)

    def null_label(self, line: Line) -> str:
        return f"{legend_name(line)}: {line.null_name or self.null_name}"

    def line(self, line: Line, row: int | None = None, col: int | None = None) -> None:
        import plotly.graph_objects as go

        colour = self.colours.setdefault(line.name, COLOURS[len(self.colours) % len(COLOURS)])
        rc = (row, col)
        if line.null_low is not None and line.null_high is not None:
            self.null_band(line, rc)
        if not line.markers:
            if line.low_adj is not None and line.high_adj is not None:
                self.band(line, line.low_adj, line.high_adj, 0.10, line.wide_name, rc)
            if line.low is not None and line.high is not None:
                self.band(line, line.low, line.high, 0.25, line.interval_name, rc)
        err = None
        if line.low is not None and line.high is not None:
            # markers: every point's interval as an error bar; a line: a point whose neighbours have none
            bars = {i for run in _segments(line, line.low, line.high) for i in run if line.markers or len(run) == 1}
            up = [h - e if i in bars else None for i, (e, h) in enumerate(zip(line.estimate, line.high))]
            down = [e - lo if i in bars else None for i, (e, lo) in enumerate(zip(line.estimate, line.low))]
            err = dict(type="data", symmetric=False, array=up, arrayminus=down, color=colour) if bars else None
        open_ = line.marks is not None
        mode = "markers" if line.markers else ("lines+markers" if line.dots else "lines")
        self.add(
            go.Scatter(
                x=list(line.x),
                y=[e if _ok(e) else None for e in line.estimate],
                mode=mode,
                name=legend_name(line),
                legendgroup=legend_name(line),
                offsetgroup=line.name if line.markers else None,
                line=dict(color=colour, dash=line.dash),
                marker=dict(color=colour, symbol="circle-open" if open_ else "circle", size=8 if open_ else 6),
                error_y=err,
                text=None if line.text is None else list(line.text),
            ),
            *rc,
        )
        if line.null is not None and any(_ok(v) for v in line.null):
            null = go.Scatter(
                x=list(line.x),
                y=[v if _ok(v) else None for v in line.null],
                mode="markers" if line.markers else "lines",
                name=self.null_label(line),
                legendgroup=legend_name(line),
                offsetgroup=line.name if line.markers else None,
                line=dict(color=colour, dash="dash", width=1),
                marker=dict(color=colour, symbol="line-ew-open", size=16, line=dict(color=colour, width=2)),
            )
            self.add(null, *rc)
        if line.marks is not None:
            keep = [i for i, m in enumerate(line.marks) if m and _ok(line.estimate[i])]
            marked = go.Scatter(
                x=[line.x[i] for i in keep],
                y=[line.estimate[i] for i in keep],
                mode="markers",
                name=f"{legend_name(line)}: {line.marks_name}",
                legendgroup=legend_name(line),
                marker=dict(color=colour, symbol="circle", size=9),
            )
            self.add(marked, *rc)

    def references(self, panel: Panel, row: int | None = None, col: int | None = None) -> None:
        import plotly.graph_objects as go

        xs = list(dict.fromkeys(x for ln in panel.lines for x in ln.x if x is not None))
        if xs and all(isinstance(x, numbers.Real) for x in xs):
            xs = [min(xs), max(xs)]
        for n, ref in enumerate(panel.references):
            trace = go.Scatter(
                x=xs,
                y=[ref.y] * len(xs),
                mode="lines",
                name=ref.name,
                legendgroup=ref.name,
                hoverinfo="name+y",
                line=dict(color="grey", dash=REFERENCE_DASHES[n % len(REFERENCE_DASHES)], width=1),
            )
            self.add(trace, row, col)

    def axes(self, panel: Panel, row: int | None = None, col: int | None = None) -> None:
        rng = y_range(panel.lines, [*panel.include, *(r.y for r in panel.references)])
        if panel.log_y:
            self.fig.update_yaxes(type="log", row=row, col=col)
        elif rng is not None:
            self.fig.update_yaxes(range=list(rng), row=row, col=col)

    def group(self) -> None:
        """Markers at shared categories stand side by side (each series its own offset), not on each other."""
        seen: dict[tuple[Any, Any, Any], set[str]] = {}
        for t in self.fig.data:
            if t.offsetgroup is not None:
                for x in t.x or ():
                    if isinstance(x, str):
                        seen.setdefault((t.xaxis, t.yaxis, x), set()).add(t.offsetgroup)
        if any(len(groups) > 1 for groups in seen.values()):
            self.fig.update_layout(scattermode="group", scattergap=0.4)


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
    references: Sequence[Reference] = (),
) -> "plotly.graph_objects.Figure":
    """An estimate by layer or step (or by category) for each of ``lines`` with its interval(s) and null,
    under the module's rules; ``include``: values the y axis must show; ``references``: constant lines drawn
    (a threshold, a Gaussian expectation); ``null_name``: what the lines' nulls are."""
    import plotly.graph_objects as go

    fig = go.Figure()
    draw = _Drawing(fig, null_name)
    panel = Panel(lines, y_title, include=include, references=references, log_y=log_y)
    for line in lines:
        draw.line(line)
    draw.references(panel)
    draw.group()
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white")
    if log_x:
        fig.update_xaxes(type="log")
    draw.axes(panel)
    return fig


def estimate_panels(
    panels: Sequence[Panel],
    *,
    title: str,
    x_title: str,
    log_x: bool = False,
    null_name: str = "null",
    cols: int | None = None,
    height: int | None = None,
) -> "plotly.graph_objects.Figure":
    """:func:`estimate_figure`'s recipe in several panels (``cols`` to a row, default all in one row), each its
    own y axis and range; a series named in several panels keeps one colour and one legend entry."""
    from plotly.subplots import make_subplots

    cols = cols or len(panels)
    rows = -(-len(panels) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[p.title for p in panels])
    draw = _Drawing(fig, null_name)
    for n, panel in enumerate(panels):
        row, col = n // cols + 1, n % cols + 1
        for line in panel.lines:
            draw.line(line, row, col)
        draw.references(panel, row, col)
        draw.axes(panel, row, col)
        fig.update_yaxes(title_text=panel.y_title, row=row, col=col)
    draw.group()
    fig.update_xaxes(title_text=x_title)
    if log_x:
        fig.update_xaxes(type="log")
    fig.update_layout(title=title, template="plotly_white", height=height)
    return fig
