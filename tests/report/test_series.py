"""geoprobe.report.series.estimate_figure keeps its rules (a band never joins two series, the legend names each
series, the y axis shows the references), and the sweep page, drawn through it, no longer does what a reviewer
found (issue 37): a band filled between different models along the parameter axis, a legend without the model,
a key-|cos| axis of 0.10515–0.1053 that showed a 1e-4 difference as a trend. Also what the other pages ported to it
need (issue 37 item 8): a null drawn as a band, references, marked points, a series' own null name, markers' nulls
drawn per point, and panels that keep one colour and one legend entry per series."""

from __future__ import annotations

import pytest

from geoprobe.report.series import Line, Panel, Reference, estimate_figure, estimate_panels, y_range


def _fills(fig):
    return [t for t in fig.data if t.fill == "toself"]


def test_each_band_is_its_own_series_and_breaks_where_an_interval_is_missing():
    a = Line("model=a", [1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], [0.0, 0.1, None, 0.3], [0.2, 0.3, None, 0.5])
    b = Line("model=b", [10, 20], [0.5, 0.6], [0.4, 0.5], [0.6, 0.7], low_adj=[0.3, 0.4], high_adj=[0.7, 0.8])
    fig = estimate_figure([a, b], title="t", x_title="x", y_title="y", include=(0.0,))
    bands = _fills(fig)
    assert len(bands) == 2 + 2  # a: two runs (the missing interval breaks it); b: nominal and simultaneous
    for band in bands:
        own = a if band.legendgroup == "model=a" else b
        assert set(band.x) <= set(own.x) and band.name.startswith(own.name)
    a_bands = [set(t.x) for t in bands if t.legendgroup == "model=a"]
    assert {1, 2} in a_bands and {4} in a_bands
    names = [t.name for t in fig.data if t.mode == "lines+markers"]
    assert names == ["model=a", "model=b"]


def test_the_axis_spans_the_data_the_intervals_the_nulls_and_the_references():
    flat = Line("m", [0, 1, 2], [0.10515, 0.10520, 0.10530], null=[0.0707, 0.0707, 0.0707])
    lo, hi = y_range([flat], include=(0.0,))
    assert lo < 0 < 0.1053 < hi and hi - lo == pytest.approx(0.1053 * 1.1, rel=1e-9)
    fig = estimate_figure([flat], title="t", x_title="x", y_title="|cos|", include=(0.0,))
    assert tuple(fig.layout.yaxis.range) == pytest.approx((lo, hi))
    nulls = [t for t in fig.data if t.name == "m: null"]
    assert len(nulls) == 1 and nulls[0].line.dash == "dash"
    assert y_range([Line("e", [0], [None])]) is None


def test_markers_draw_error_bars_not_bands():
    pts = Line("m", ["a", "b"], [1.0, 2.0], [0.5, 1.5], [1.5, 3.0], markers=True)
    fig = estimate_figure([pts], title="t", x_title="x", y_title="y")
    assert not _fills(fig)
    bars = fig.data[0].error_y
    assert list(bars.array) == [0.5, 1.0] and list(bars.arrayminus) == [0.5, 0.5]


def _page():
    """A sweep page of two models (2 and 9 M parameters) at steps 0, 64, 512, key |cos| 0.10515-0.1053."""
    from geoprobe.sweep.manifest import CellRecord, SweepManifest
    from geoprobe.sweep.report import SweepPage

    cells, rows = [], []
    for model, params in (("model-a", 2_000_000), ("model-b", 9_000_000)):
        for i, step in enumerate((0, 64, 512)):
            cid = f"{model}-{step}"
            cells.append(
                CellRecord(
                    cid, {"model": model, "revision": f"step{step}"}, "done", training_step=step, n_params=params
                )
            )
            head = {
                "cell": cid,
                "model": model,
                "series": model,
                "run": None,
                "training_step": step,
                "n_params": params,
            }
            for metric, est, lo, hi in (
                ("pc1", 0.1 + 0.02 * i, 0.08 + 0.02 * i, 0.12 + 0.02 * i),
                ("key_orthogonality", 0.10515 + 0.00005 * i, None, None),
            ):
                rows.append(
                    {**head, "metric": metric, "layer": 0, "estimate": est, "low": lo, "high": hi, "null": None}
                )
    manifest = SweepManifest("scan", "s.toml", "d", tuple(cells), coordinates=("model", "revision"))
    return SweepPage(manifest, tuple(rows))


def test_the_sweep_page_joins_no_models_names_them_and_scales_key_cos_from_zero():
    figs = {f.anchor: f.fig for f in _page().figures()}
    size = figs["pc1-by-size"]
    assert not _fills(size)  # one point per model with its error bars: no band between models
    assert {t.name for t in size.data} == {"series=model-a", "series=model-b"}
    step = figs["pc1-by-step"]
    assert {t.name for t in step.data if t.mode == "lines+markers"} == {"series=model-a", "series=model-b"}
    for band in _fills(step):  # each model's band over its own steps only
        assert band.legendgroup in ("series=model-a", "series=model-b") and len(set(band.x)) == 3
    lo, hi = figs["key_orthogonality-by-step"].layout.yaxis.range
    assert lo <= 0 and hi >= 0.1053


def test_one_model_is_still_named():
    from dataclasses import replace

    page = _page()
    page = replace(page, rows=tuple(r for r in page.rows if r["model"] == "model-a"))
    step = {f.anchor: f.fig for f in page.figures()}["pc1-by-step"]
    assert [t.name for t in step.data if t.mode == "lines+markers"] == ["series=model-a"]


def test_a_null_band_is_its_series_own_and_inside_the_axis():
    a = Line("a", [0, 1, 2], [0.5, 0.6, 0.7], null_low=[0.0, None, -0.2], null_high=[0.1, 0.1, 0.1])
    b = Line("b", [0, 1], [0.2, 0.3], null=[0.15, 0.15], null_low=[0.1, 0.1], null_high=[0.2, 0.2])
    fig = estimate_figure([a, b], title="t", x_title="x", y_title="y", null_name="matched null")
    bands = [t for t in _fills(fig) if "matched null" in t.name]
    assert [(t.legendgroup, sorted(set(t.x))) for t in bands] == [("a", [0]), ("a", [2]), ("b", [0, 1])]
    assert fig.layout.yaxis.range[0] < -0.2  # the null's low end is on the axis
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert shown == ["a: matched null", "a", "b", "b: matched null"]  # b's null line and band: one entry


def test_markers_draw_their_null_per_point_never_across_categories():
    pts = Line("m", ["p", "q"], [1.0, 2.0], [0.5, 1.5], [1.5, 2.5], null=[0.2, 0.3], markers=True)
    pts = Line(**{**pts.__dict__, "null_low": [0.0, 0.1], "null_high": [0.4, 0.5]})
    other = Line("n", ["p", "q"], [1.1, 2.1], markers=True)
    fig = estimate_figure([pts, other], title="t", x_title="x", y_title="y")
    assert not _fills(fig) and {t.mode for t in fig.data} == {"markers", "lines"}
    null = next(t for t in fig.data if t.name == "m: null" and t.mode == "markers")
    assert list(null.y) == [0.2, 0.3]
    bars = next(t for t in fig.data if t.mode == "lines")  # one vertical bar per point, broken by None
    assert list(bars.x) == ["p", "p", None, "q", "q", None] and list(bars.y) == [0.0, 0.4, None, 0.1, 0.5, None]
    assert fig.layout.scattermode == "group"  # two series at the same categories stand side by side
    alone = estimate_figure([Line("k", ["p"], [1.0], markers=True)], title="t", x_title="x", y_title="y")
    assert alone.layout.scattermode is None


def test_references_marks_and_styles():
    import numpy as np

    line = Line(
        "ρ",
        [1, 2, 3],
        list(np.array([0.1, 0.5, 0.9], dtype=np.float32)),  # numpy scalars are numbers too
        marks=[False, True, True],
        marks_name="significant",
        dots=False,
        dash="dash",
        null=[0.05] * 3,
        null_name="its own null",
    )
    fig = estimate_figure(
        [line], title="t", x_title="x", y_title="y", null_name="figure's null", references=[Reference("floor", -1.0)]
    )
    traces = {t.name: t for t in fig.data}
    main = traces["ρ"]
    assert main.mode == "lines" and main.line.dash == "dash" and main.marker.symbol == "circle-open"
    assert list(traces["ρ: significant"].x) == [2, 3] and traces["ρ: significant"].legendgroup == "ρ"
    assert "ρ: its own null" in traces and "ρ: figure's null" not in traces
    floor = traces["floor"]
    assert list(floor.x) == [1, 3] and set(floor.y) == {-1.0} and floor.line.dash == "dot"
    lo, hi = fig.layout.yaxis.range
    assert lo < -1.0 and hi > 0.89


def test_panels_keep_one_colour_and_one_legend_entry_per_series():
    def pair(shift):
        return [
            Line("a", [0, 1], [shift, shift + 1], [shift - 1, shift], [shift + 1, shift + 2]),
            Line("b", [0, 1], [5, 6]),
        ]

    fig = estimate_panels(
        [Panel(pair(0.0), "first", "one", include=(0.0,)), Panel(pair(100.0), "second", "two", log_y=True)],
        title="t",
        x_title="x",
        log_x=True,
    )
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [(t.name, t.xaxis) for t in lines] == [("a", "x"), ("b", "x"), ("a", "x2"), ("b", "x2")]
    assert lines[0].line.color == lines[2].line.color != lines[1].line.color == lines[3].line.color
    assert [t.name for t in fig.data if t.showlegend is not False] == ["a", "b"]
    assert fig.layout.yaxis.range[0] < -1 and fig.layout.yaxis.title.text == "first"
    assert fig.layout.yaxis2.type == "log" and fig.layout.yaxis2.range is None
    assert fig.layout.xaxis.type == fig.layout.xaxis2.type == "log"
    assert [a.text for a in fig.layout.annotations] == ["one", "two"]
    grid = estimate_panels([Panel(pair(0.0), "y")] * 5, title="t", x_title="x", cols=3)
    assert {t.xaxis for t in grid.data} == {"x", "x2", "x3", "x4", "x5"} and grid.layout.yaxis4.domain[1] < 0.5
