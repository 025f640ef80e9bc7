"""The positional pages' figures of an estimate against length (stability over T, the wind tunnel's error over
K) are drawn by geoprobe.report.series (issue 37 item 8): each series with its own band in its legend group, the
y axis spanning every estimate and interval, and the lines marking the training and critical lengths kept."""

from __future__ import annotations

import math

import pytest

from geoprobe.analysis.stats import Estimate
from geoprobe.positional.report import stability_figure, tunnel_figure
from geoprobe.positional.result import TunnelLengthCurve
from geoprobe.positional.stability import LengthPoint, Stability
from geoprobe.windtunnel.evaluate import TunnelMetrics


def _band(trace):
    return list(trace.y)


def _spans(fig, axis):
    lo, hi = fig.layout["yaxis" + axis[1:]].range
    ys = [v for t in fig.data if (t.yaxis or "y") == axis for v in t.y if v is not None]
    return lo <= min(ys) and max(ys) <= hi


@pytest.fixture
def stability():
    """Two layers; PC1 at layer 5 falls from 0.6 to 0.2 with length (critical at T = 32), |ρ| has no CI at 128."""
    pts = []
    for i, T in enumerate((16, 32, 64, 128)):
        pc1 = Estimate(0.6 - 0.13 * i, 0.55 - 0.13 * i, 0.65 - 0.13 * i)
        rho = Estimate(0.5, 0.4, 0.6) if T < 128 else Estimate(0.5, math.nan, math.nan)
        pts.append(LengthPoint(T, 20, (pc1, pc1), (rho, rho), (0.5 * math.log2(T), 0.8 * math.log2(T))))
    return Stability(layers=(2, 5), points=tuple(pts))


def test_stability_figure_is_drawn_by_the_helper(stability):
    fig = stability_figure(stability)
    traces = {t.name: t for t in fig.data}
    pc1 = traces["value PC1 ratio, layer 5 (95 % CI)"]
    assert list(pc1.x) == [16, 32, 64, 128] and list(pc1.y) == pytest.approx([0.6, 0.47, 0.34, 0.21])
    band = traces["value PC1 ratio, layer 5 (95 % CI): interval"]
    assert band.fill == "toself" and band.legendgroup == pc1.name
    assert _band(band) == pytest.approx([0.65, 0.52, 0.39, 0.26, 0.16, 0.29, 0.42, 0.55])
    # |ρ| has no interval at T = 128: its legend says so (issue 39)
    rho = [t for t in fig.data if t.name == "|ρ(PC1, entropy)|, layer 5 (95 % CI where computed): interval"]
    assert len(rho) == 1 and set(rho[0].x) == {16, 32, 64}  # the band breaks where a length has no interval
    assert list(traces["layer 2"].y) == pytest.approx([0.5] * 4) and traces["layer 2"].xaxis == "x3"
    assert all(_spans(fig, a) for a in ("y", "y2", "y3"))
    assert fig.layout.yaxis.range[0] < 0 and fig.layout.yaxis3.range[1] > 1  # fractions: 0 (and 1) on the axis
    assert fig.layout.xaxis.type == "log"
    assert [s.x0 for s in fig.layout.shapes] == [stability.critical("pc1", 5)] == [32]


def test_tunnel_figure_is_drawn_by_the_helper():
    def m(K, mae):
        e = Estimate(mae, mae - 0.01, mae + 0.01)
        kl = Estimate(2 * mae, 2 * mae - 0.02, 2 * mae + 0.02)
        return TunnelMetrics("model", K, 50, e, e, kl, (1.0,) * K, (1.0,) * K, (0.0,) * K, 0.9)

    curve = TunnelLengthCurve("run", {"name": "bijection"}, 8, (m(8, 0.05), m(16, 0.06), m(32, 0.3)))
    fig = tunnel_figure(curve)
    traces = {(t.name, t.xaxis): t for t in fig.data}
    mae = traces[("entropy MAE per sample (bits) (95 % CI)", "x")]
    assert list(mae.x) == [8, 16, 32] and list(mae.y) == pytest.approx([0.05, 0.06, 0.3])
    kl = traces[("KL(Bayes ‖ model) (bits) (95 % CI): interval", "x2")]
    assert kl.legendgroup == "KL(Bayes ‖ model) (bits) (95 % CI)" and max(kl.y) == pytest.approx(0.62)
    assert _spans(fig, "y") and _spans(fig, "y2") and fig.layout.yaxis.range[0] < 0
    lines = sorted((s.x0, s.line.dash) for s in fig.layout.shapes)
    assert lines == [(8, "dot"), (8, "dot"), (32, "dash"), (32, "dash")]  # trained at K = 8, critical 32
