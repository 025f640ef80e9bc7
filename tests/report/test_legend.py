"""Figures say what they draw (issue 39 case 8): a legend names the interval only as far as the points have one
("95 % CI where computed" when a scan computes CIs at its final layer only), an interval at a lone point is an
error bar (a band of one point has no width), and a null band is dense enough to read."""

from __future__ import annotations

import math

import pytest

from geoprobe.report.series import NULL_EDGE, NULL_FILL, Line, estimate_figure, legend_name

NAN = math.nan


def _line(low, high, **kw):
    return Line("PC1", [0, 1, 2], [0.2, 0.3, 0.4], low, high, ci="95 % CI", **kw)


@pytest.mark.parametrize(
    ("low", "high", "name"),
    [
        ([0.1, 0.2, 0.3], [0.3, 0.4, 0.5], "PC1 (95 % CI)"),
        ([NAN, NAN, 0.3], [NAN, NAN, 0.5], "PC1 (95 % CI where computed)"),
        ([None, 0.2, None], [None, 0.4, None], "PC1 (95 % CI where computed)"),
        ([NAN, NAN, NAN], [NAN, NAN, NAN], "PC1"),
    ],
)
def test_the_legend_names_the_interval_as_far_as_the_points_have_it(low, high, name):
    line = _line(low, high)
    assert legend_name(line) == name
    fig = estimate_figure([line], title="t", x_title="layer", y_title="y")
    est = next(t for t in fig.data if t.mode == "lines+markers")
    assert est.name == name and est.legendgroup == name
    assert all(t.legendgroup == name for t in fig.data)


def test_a_line_without_ci_keeps_its_name():
    assert legend_name(Line("m", [0, 1], [0.1, 0.2], [0.0, 0.1], [0.2, 0.3])) == "m"


def test_a_lone_interval_is_an_error_bar():
    fig = estimate_figure([_line([NAN, NAN, 0.3], [NAN, NAN, 0.55])], title="t", x_title="layer", y_title="y")
    est = next(t for t in fig.data if t.mode == "lines+markers")
    assert list(est.error_y.array) == [None, None, pytest.approx(0.15)]
    assert list(est.error_y.arrayminus) == [None, None, pytest.approx(0.1)]
    full = estimate_figure([_line([0.1, 0.2, 0.3], [0.3, 0.4, 0.5])], title="t", x_title="layer", y_title="y")
    assert next(t for t in full.data if t.mode == "lines+markers").error_y.array is None  # a band, not bars


def test_a_null_band_reads():
    line = _line(None, None, null_low=[0.0, 0.05, 0.1], null_high=[0.1, 0.15, 0.2])
    fig = estimate_figure([line], title="t", x_title="layer", y_title="y", null_name="Gaussian null")
    band = next(t for t in fig.data if t.fill == "toself")
    alpha = float(band.fillcolor.rsplit(",", 1)[1].rstrip(")"))
    edge = float(band.line.color.rsplit(",", 1)[1].rstrip(")"))
    assert alpha == NULL_FILL >= 0.15 and edge == NULL_EDGE >= 0.8 and band.line.dash == "dash"
    assert band.mode == "lines"  # no markers at the band's corners
    lone = _line(None, None, null_low=[NAN, 0.05, NAN], null_high=[NAN, 0.15, NAN])
    fig = estimate_figure([lone], title="t", x_title="layer", y_title="y", null_name="Gaussian null")
    bar = next(t for t in fig.data if t.name == "PC1: Gaussian null" and t.fill != "toself")
    assert list(bar.x) == [1, 1, None] and list(bar.y) == [0.05, 0.15, None]  # drawn as a bar at its point
