"""The dose–response figure (geoprobe.intervene.report) is drawn by geoprobe.report.series (issue 37 item 8):
per set of edited layers, the entropy axis with its CI band and the random axes as its null (mean, ± sd band),
one legend entry per series across the six panels, each axis spanning estimates, intervals and nulls."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from geoprobe.intervene.report import SHOWN, dose_response_figure
from geoprobe.intervene.result import InterventionResult

STORED = Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "intervene.json"


@pytest.fixture(scope="module")
def result():
    return InterventionResult.load(STORED)


def test_dose_response_is_drawn_by_the_helper(result):
    fig = dose_response_figure(result)
    layers = list(dict.fromkeys(r.layers for r in result.rows))
    names = [f"layers {','.join(map(str, x))}" for x in layers]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == names * len(SHOWN)
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        n for name in names for n in (name, f"{name}: random axes (mean ± sd)")
    ]  # listed once, though drawn in every panel
    for j, metric in enumerate(SHOWN):
        axis = "y" if j == 0 else f"y{j + 1}"
        mine = [t for t in fig.data if (t.yaxis or "y") == axis]
        for name, layer_set in zip(names, layers):
            true = sorted(
                (r for r in result.rows if r.layers == layer_set and r.axis == "entropy"), key=lambda r: r.strength
            )
            line = next(t for t in mine if t.name == name)
            assert list(line.x) == [r.strength for r in true]
            np.testing.assert_allclose(np.asarray(line.y, dtype=float), [r.metrics[metric].value for r in true])
            null = next(  # the mean line (its ± sd band is drawn with lines too, filled)
                t
                for t in mine
                if t.name == f"{name}: random axes (mean ± sd)" and t.mode == "lines" and t.fill != "toself"
            )
            s = true[-1].strength
            controls = [
                r.metrics[metric].value
                for r in result.rows
                if r.layers == layer_set and r.strength == s and r.axis != "entropy"
            ]
            assert null.y[-1] == pytest.approx(np.nanmean(controls)) and null.legendgroup == name
        lo, hi = fig.layout["yaxis" + axis[1:]].range
        ys = [v for t in mine for v in t.y if v is not None and np.isfinite(v)]
        assert lo <= min(ys) and max(ys) <= hi
