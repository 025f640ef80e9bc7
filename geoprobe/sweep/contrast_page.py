"""The sweep page's figures and tables of paired contrasts, emergence and tracking
(geoprobe.sweep.contrasts, geoprobe.sweep.emergence), each figure drawn through
:func:`geoprobe.report.series.estimate_figure`: one line per series (and training run), its own bands."""

from __future__ import annotations

import math
from typing import Any, Sequence

from geoprobe.report.page import Figure, Section, paragraph
from geoprobe.report.series import Line, estimate_figure
from geoprobe.sweep.contrasts import ContrastTable, PairedRow

#: (metric, which layer: "last", "first" or None for a metric without layers, y-axis label)
CONTRASTS = (
    ("pc1", "last", "Δ value PC1 share, last layer"),
    ("alignment_spearman", "last", "Δ entropy alignment ρ, last layer"),
    ("attention_entropy", "last", "Δ attention entropy (bits), last layer"),
    ("key_orthogonality", "first", "Δ key |cos|, first layer"),
    ("focusing_reduction", None, "Δ focusing reduction (%), first → last layer"),
)
#: (tracking metric, y-axis label, references the axis must show)
TRACKING = (
    ("cka_to_final", "linear CKA of the values to the final checkpoint's", (0.0, 1.0)),
    ("pc1_angle_to_final", "angle of value PC1 to the final's (degrees)", (0.0, 90.0)),
    ("subspace_angle_to_final", "largest principal angle, top-k value subspace vs the final's (degrees)", (0.0, 90.0)),
    ("routing_stability", "routing stability: 1 − JS divergence of attention to the final's", (0.0, 1.0)),
)
INTERVALS = (
    "Bands: the 95 % percentile interval of the paired bootstrap over the shared prompts (darker) and the "
    "simultaneous max-|t| interval over the run's checkpoints × per-layer metrics (lighter); a change is "
    "significant when the lighter band excludes 0 (Holm-adjusted p in sweep.parquet's p_adj)."
)


def _name(r: PairedRow, runs: dict[str, set[Any]]) -> str:
    return r.series if len(runs.get(r.series, ())) < 2 else f"{r.series}, run {r.run}"


def _pick(rows: list[PairedRow], which: str | None) -> list[PairedRow]:
    """The rows of one layer per series: the last or first layer each series has (None: rows without layer)."""
    if which is None:
        return [r for r in rows if r.layer is None]
    out = []
    for series in dict.fromkeys(r.series for r in rows):
        layers = [r.layer for r in rows if r.series == series and r.layer is not None]
        if layers:
            pick = max(layers) if which == "last" else min(layers)
            out += [r for r in rows if r.series == series and r.layer == pick]
    return out


def _lines(rows: Sequence[PairedRow], runs: dict[str, set[Any]], adjusted: bool) -> list[Line]:
    lines = []
    for name in dict.fromkeys(_name(r, runs) for r in rows):
        mine = sorted((r for r in rows if _name(r, runs) == name), key=lambda r: r.step or 0)
        lines.append(
            Line(
                name=name,
                x=[(r.step or 0) + 1 for r in mine],
                estimate=[r.estimate for r in mine],
                low=[r.low for r in mine],
                high=[r.high for r in mine],
                low_adj=[r.low_adj for r in mine] if adjusted else None,
                high_adj=[r.high_adj for r in mine] if adjusted else None,
                text=[f"{r.cell} vs {r.against}; p_adj {r.p_adj}" if adjusted else r.cell for r in mine],
            )
        )
    return lines


def contrast_figures(table: ContrastTable) -> list[Figure]:
    """Change from the baseline against step (estimate, nominal and simultaneous bands), tracking against
    step, and each series' emergence steps with their intervals."""
    runs: dict[str, set[Any]] = {}
    for r in table.rows:
        runs.setdefault(r.series, set()).add(r.run)
    figs = []
    for metric, which, label in CONTRASTS:
        rows = _pick(table.contrasts("baseline", metric=metric, head=None), which)
        if rows:
            fig = estimate_figure(
                _lines(rows, runs, True),
                title=label,
                x_title="training step + 1",
                y_title=label,
                log_x=True,
                include=(0.0,),
            )
            caption = f"{label}: each checkpoint against its run's baseline (step 0). {INTERVALS}"
            figs.append(Figure(f"contrast-{metric}", caption, fig))
    for metric, label, refs in TRACKING:
        rows = _pick([r for r in table.rows if r.contrast == "" and r.metric == metric and r.head is None], "last")
        if rows:
            fig = estimate_figure(
                _lines(rows, runs, False),
                title=label,
                x_title="training step + 1",
                y_title=label,
                log_x=True,
                include=refs,
            )
            caption = (
                f"{label}, last layer, each checkpoint against the final checkpoint of its run on the same prompts "
                "(95 % percentile interval over the prompts)."
            )
            figs.append(Figure(f"tracking-{metric}", caption, fig))
    figs += _emergence_figures(table)
    return figs


def _emergence_figures(table: ContrastTable) -> list[Figure]:
    figs = []
    steps = [r.step for r in table.rows if r.step is not None]
    top = max(steps, default=0) + 1
    for n, series in enumerate(dict.fromkeys(e.series for e in table.emergence)):
        rows = [
            e for e in table.emergence if e.series == series and e.direction != 0 and not e.metric.startswith("frame_")
        ]
        if not rows:
            continue
        cats = [f"{e.metric} L{e.layer}" if e.layer is not None else e.metric for e in rows]
        lines = []
        for what, est, lo, hi in (
            ("emergence step", "emergence_step", "low", "high"),
            ("t50", "t50", "t50_low", "t50_high"),
            ("t90", "t90", "t90_low", "t90_high"),
        ):

            def plus1(v: Any, open_end: float | None = None) -> float | None:
                return (open_end if open_end is not None else None) if v is None or not math.isfinite(v) else v + 1

            lines.append(
                Line(
                    name=f"{series}: {what}",
                    x=cats,
                    estimate=[plus1(getattr(e, est)) for e in rows],
                    low=[plus1(getattr(e, lo), 1.0) for e in rows],
                    high=[plus1(getattr(e, hi), float(top)) for e in rows],
                    markers=True,
                )
            )
        fig = estimate_figure(
            lines, title=f"Emergence: {series}", x_title="metric, layer", y_title="training step + 1", log_y=True
        )
        caption = (
            f"{series}: for each metric that changed from the first to the last checkpoint, the emergence step (the "
            "first checkpoint from which its change from step 0 stays significant, simultaneous interval) and "
            "t50/t90 (where the progress fraction reaches 0.5/0.9), each with its 95 % bootstrap interval; an open "
            "end (never within the series) is drawn to the last step."
        )
        figs.append(Figure(f"emergence-{n}", caption, fig))
    return figs


def _fmt(v: float | None, lo: float | None, hi: float | None) -> str:
    """A step and its interval (open ends as ±∞); never a -0 (geoprobe.text.number)."""
    from geoprobe.text import number

    if v is None:
        return "n/a"

    def f(x: float | None, open_end: str) -> str:
        return open_end if x is None else number(x, "+,.0f")

    return f"{number(v, '+,.0f')} [{f(lo, '−∞')}, {f(hi, '+∞')}]"


def contrast_sections(table: ContrastTable) -> list[Section]:
    """Frame before precision (per series and layer), and the series that were not compared."""
    from geoprobe.report.blocks import html_table

    out = []
    frame = [e for e in table.emergence if e.metric.startswith("frame_minus_")]
    if frame:
        rows = [
            {
                "series": e.series,
                "layer": e.layer,
                "precision metric": e.metric.removeprefix("frame_minus_"),
                "emergence step: frame − precision": _fmt(e.emergence_step, e.low, e.high),
                "t90: frame − precision": _fmt(e.t90, e.t90_low, e.t90_high),
                "verdict": e.verdict,
            }
            for e in frame
        ]
        text = (
            "Frame = routing stability (each head's final-token attention against the final checkpoint's, same "
            "prompts); precision = the value PC1's angle to the final's, the values' CKA to the final's, and entropy "
            "alignment. Differences of steps with the 95 % interval of the paired bootstrap (runs, then prompts); "
            "'frame first' only where the interval lies below 0."
        )
        out.append(Section("Frame before precision", paragraph(text) + html_table(rows)))
    if table.refused:
        out.append(Section("Series not compared", "".join(paragraph(line, muted=False) for line in table.refused)))
    return out
