"""The denoise page's figures of an estimate with its interval (geoprobe.denoise.report) are drawn by
geoprobe.report.series (issue 37 item 8): the MSE per method as points with error bars on a log axis, and the
MSE against context length or dimension as one series per method with its own band, the oracle dashed."""

from __future__ import annotations

from pathlib import Path

import pytest

from geoprobe.denoise.report import lengths_figure, scores_figure, transfer_figure
from geoprobe.denoise.result import DenoiseResult

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "denoise.json"


@pytest.fixture(scope="module")
def result():
    return DenoiseResult.load(STORED)


def test_scores_are_points_with_error_bars(result):
    fig = scores_figure(result)
    (mse,) = fig.data
    assert mse.mode == "markers" and mse.legendgroup == mse.name and not [t for t in fig.data if t.fill]
    assert list(mse.x) == [s.method for s in result.scores]
    assert list(mse.y) == pytest.approx([s.mse.value for s in result.scores])
    assert list(mse.error_y.array) == pytest.approx([s.mse.high - s.mse.value for s in result.scores])
    assert fig.layout.yaxis.type == "log" and result.name in fig.layout.title.text


@pytest.mark.parametrize("draw, blocks", [(lengths_figure, "lengths"), (transfer_figure, "transfer")])
def test_sweeps_are_one_series_per_method_with_its_own_band(result, draw, blocks):
    fig = draw(result)
    blocks = getattr(result, blocks)
    methods = [s.method for s in blocks[0].scores]
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert list(lines) == methods and lines["oracle"].line.dash == "dash"
    for method in methods:
        ests = [b.get(method).mse for b in blocks]
        assert list(lines[method].y) == pytest.approx([e.value for e in ests])
        (band,) = [t for t in fig.data if t.name == f"{method}: interval"]
        assert band.legendgroup == method and set(band.x) == {b.key for b in blocks}
        assert list(band.y) == pytest.approx([e.high for e in ests] + [e.low for e in ests][::-1])
    lo, hi = fig.layout.yaxis.range
    assert lo < 0 and hi >= max(b.get(m).mse.high for b in blocks for m in methods)
