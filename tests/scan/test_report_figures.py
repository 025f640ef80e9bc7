"""The scan page's figures (geoprobe.scan.report.figures) carry the numbers of the records they draw:
each figure's traces against the record's fields, on planted, seeded inputs. The figures of an estimate by layer
are drawn by geoprobe.report.series (issue 37 item 8): each series' bands and null sit in its legend group, and
the y axis spans every estimate, interval, null and reference (``from_the_helper``)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import scipy.stats

from geoprobe.analysis.alignment import entropy_alignment
from geoprobe.analysis.focusing import attention_focusing
from geoprobe.analysis.manifold import value_manifold
from geoprobe.analysis.orthogonality import key_orthogonality
from geoprobe.scan import ScanConfig, analyse
from geoprobe.scan.report.figures import (
    alignment_figure,
    entropy_scatter,
    focusing_figure,
    manifold_figure,
    manifold_scatter,
    orthogonality_figure,
    scorecard_figure,
)

from ._synthetic import synthetic_capture


@pytest.fixture(scope="module")
def manifold():
    """Layer 0: pure noise; layers 3 and 7: a planted factor that entropy follows (layer 7 with the
    factor negated in the data, so its PC1 must be re-oriented)."""
    n, d = 40, 60
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((n, d))
    g = np.random.default_rng(2)
    t = g.standard_normal(n)
    x = 1.5 * np.outer(t, g.uniform(0.5, 1.5, d) * g.choice([-1, 1], d)) + g.standard_normal((n, d))
    entropy = 2.0 + t + 0.1 * rng.standard_normal(n)
    return value_manifold(
        np.stack([noise, x, -x]),
        (0, 3, 7),
        entropy,
        model="toy",
        scatter_layers=(3,),
        random_state=0,
        n_resamples=40,
        null_draws=60,
    )


@pytest.fixture(scope="module")
def alignment():
    """Layer 2: entropy along +PC1; layer 5: along -PC1; layer 9: unrelated."""
    rng = np.random.default_rng(0)
    t = rng.standard_normal(120)
    h = np.log2(1 + np.exp(t)) + 0.05 * rng.standard_normal(120)
    coords = np.stack([t, -t, np.random.default_rng(1).standard_normal(120)])
    return entropy_alignment(coords, h, (2, 5, 9), model="toy", random_state=0, n_resamples=200, n_permutations=200)


@pytest.fixture
def planted_entropies():
    """L=5 layers, n=40 prompts, H=6 heads; head entropies fall from ~4 to ~1 bit."""
    rng = np.random.default_rng(0)
    e = np.linspace(4.0, 1.0, 5)[:, None, None] + rng.uniform(-0.5, 0.5, size=(5, 40, 6))
    return e, rng.integers(20, 60, size=40)


@pytest.fixture(scope="module")
def ko():
    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 3, 48, 8)) + 0.3 * rng.standard_normal((4, 3, 48, 1))  # shared direction
    init = rng.standard_normal((4, 3, 48, 8))
    keys = rng.standard_normal((4, 10, 3, 8))
    return key_orthogonality(
        w, [0, 3, 7, 11], 48, model="planted <b>&", init_w_k=init, init_label="twin seed=0", keys=keys
    )


@pytest.fixture(scope="module")
def scan_result():
    cap, init = synthetic_capture(structured=True)
    cfg = ScanConfig(n_resamples=100, pca_resamples=20, null_draws=20, n_permutations=100)
    return analyse(cap, cfg, init_w_k=init)


def from_the_helper(fig, series):
    """``fig`` was drawn by geoprobe.report.series: each of ``series`` is one lines+markers trace named and
    grouped by itself, every band (fill) and null belongs to one of them, and each y axis spans every value
    drawn on it (the helper's range; plotly's autorange would leave ``range`` unset)."""
    assert isinstance(fig, go.Figure)
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert set(lines) == set(series) and all(t.legendgroup == t.name for t in lines.values())
    for t in fig.data:
        if t.fill == "toself" or t.name.split(": ")[0] in series:
            assert t.legendgroup in series and t.name.startswith(t.legendgroup)
    for axis in {t.yaxis or "y" for t in fig.data}:
        lo, hi = fig.layout["yaxis" + axis[1:]].range
        ys = [v for t in fig.data if (t.yaxis or "y") == axis for v in t.y if v is not None]
        assert lo <= min(ys) and max(ys) <= hi
    return {t.name: t for t in fig.data}


def test_manifold_figure_traces_carry_the_profile_numbers(manifold):
    fig = manifold_figure(manifold)
    series = ("PC1 (95 % CI)", "PC1+PC2 (95 % CI)", "participation ratio (95 % CI)")
    traces = from_the_helper(fig, series)
    pc1 = traces["PC1 (95 % CI)"]
    np.testing.assert_allclose(pc1.y, [e.value for e in manifold.pc1])
    ci = traces["PC1 (95 % CI): interval"]
    np.testing.assert_allclose(ci.y, [e.high for e in manifold.pc1] + [e.low for e in manifold.pc1][::-1])
    band = traces["PC1 (95 % CI): permute null (95 % band)"]
    assert band.fill == "toself" and band.legendgroup == "PC1 (95 % CI)"
    np.testing.assert_allclose(band.y, [b.pc1.high for b in manifold.null] + [b.pc1.low for b in manifold.null][::-1])
    pr = traces["participation ratio (95 % CI)"]
    np.testing.assert_allclose(pr.y, [e.value for e in manifold.pr])
    assert pr.xaxis == "x2" and traces["participation ratio (95 % CI): permute null (95 % band)"].yaxis == "y2"
    assert set(traces["criterion: 0.30"].y) == {0.30}
    lo, hi = fig.layout.yaxis.range
    assert lo < 0 and hi > 1  # a fraction of variance: the axis shows 0 to 1
    assert "toy" in fig.layout.title.text


def test_manifold_scatter_is_oriented_and_coloured_by_entropy(manifold):
    fig = manifold_scatter(manifold, 7)
    assert len(fig.data) == 1
    np.testing.assert_allclose(fig.data[0].x, manifold.orientation[7] * manifold.coords[7][:, 0])
    np.testing.assert_allclose(fig.data[0].y, manifold.coords[7][:, 1])
    np.testing.assert_allclose(fig.data[0].marker.color, manifold.next_entropy)
    with pytest.raises(ValueError):
        manifold_scatter(manifold, 0)


def test_alignment_figure_shows_rho_with_ci_null_and_significant_layers(alignment):
    fig = alignment_figure(alignment)
    traces = from_the_helper(fig, ["Spearman ρ (95 % CI)"])
    rho = [e.value for e in alignment.spearman]
    line = traces["Spearman ρ (95 % CI)"]
    np.testing.assert_allclose(line.y, rho)
    assert line.marker.symbol == "circle-open"
    ci = traces["Spearman ρ (95 % CI): interval"]
    np.testing.assert_allclose(ci.y, [e.high for e in alignment.spearman] + [e.low for e in alignment.spearman][::-1])
    marked = traces["Spearman ρ (95 % CI): Bonferroni p < 0.05"]
    assert list(marked.x) == [2, 5] and marked.marker.symbol == "circle"
    np.testing.assert_allclose(marked.y, rho[:2])
    null = [t for t in fig.data if "under independence" in t.name]  # the permutation null of |ρ|: mean and band
    assert len(null) == 2 and {t.mode for t in null} == {"lines"}  # a band draws its edge, no markers
    np.testing.assert_allclose(next(t for t in null if t.fill != "toself").y, alignment.null_mean)
    band = next(t for t in null if t.fill == "toself")
    np.testing.assert_allclose(band.y, list(alignment.null_high) + [0.0] * 3)
    assert fig.layout.yaxis.range[0] < 0 and "toy" in fig.layout.title.text


def test_alignment_figure_of_a_file_without_its_null_draws_none(alignment):
    from dataclasses import replace

    old = replace(alignment, null_mean=None, null_high=None)
    assert not [t for t in alignment_figure(old).data if "under independence" in t.name]


def test_focusing_figure_shows_the_numbers(planted_entropies):
    e, n_tokens = planted_entropies
    af = attention_focusing(e, [2, 4, 6, 8, 10], n_tokens, model="planted")
    fig = focusing_figure(af)
    traces = from_the_helper(fig, ["mean head entropy"])
    line = traces["mean head entropy"]
    assert list(line.x) == [2, 4, 6, 8, 10]
    assert list(line.y) == [m.value for m in af.mean]
    ci = traces["mean head entropy: 95 % CI over prompts"]
    assert list(ci.y) == [m.high for m in af.mean] + [m.low for m in af.mean][::-1]
    heads = traces["mean head entropy: heads 10–90 %"]
    assert list(heads.y) == [b for _, b in af.head_band_10_90] + [a for a, _ in af.head_band_10_90][::-1]
    null = traces["mean head entropy: uniform attention (log2 T)"]
    assert list(null.y) == list(af.uniform) and null.line.dash == "dash"
    assert "planted" in fig.layout.title.text and f"{af.reduction.value:.1f} %" in fig.layout.title.text
    assert fig.layout.yaxis.title.text == "final-token attention entropy (bits)"
    assert fig.layout.yaxis.range[0] < 0  # entropy in bits: the axis starts at 0, the ceiling is inside


def test_orthogonality_figure_shows_the_numbers(ko):
    fig = orthogonality_figure(ko)
    traces = from_the_helper(fig, ["mean over heads"])
    assert list(traces["mean over heads"].x) == list(ko.layers)
    assert list(traces["mean over heads"].y) == list(ko.layer_mean)
    for name, band in (("heads 10–90 %", ko.band_10_90), ("heads 25–75 %", ko.band_25_75)):
        t = traces[f"mean over heads: {name}"]
        assert t.fill == "toself" and list(t.y) == [b for _, b in band] + [a for a, _ in band][::-1]
    assert set(traces["iid Gaussian E|cos|"].y) == {ko.gaussian}
    init = traces["mean over heads: random init (twin)"]
    assert list(init.y) == list(ko.init_layer_mean) and init.legendgroup == "mean over heads"
    assert set(traces["threshold"].y) == {0.2}
    assert "planted <b>&" in fig.layout.title.text  # plain text; plotly escapes it when rendering
    assert fig.layout.xaxis.title.text == "layer" and "|cos|" in fig.layout.yaxis.title.text
    lo, hi = fig.layout.yaxis.range
    assert lo < 0 and hi >= max(0.2, ko.gaussian)  # the references and 0 on the axis


def test_orthogonality_figure_without_init_has_no_init_line():
    rng = np.random.default_rng(11)
    fig = orthogonality_figure(key_orthogonality(rng.standard_normal((2, 2, 16, 4)), [0, 1], 16))
    assert not [t for t in fig.data if "random init" in t.name]


def test_entropy_scatter_is_the_oriented_final_layer_against_entropy(scan_result):
    m, a = scan_result.manifold, scan_result.alignment
    layer = scan_result.layers[-1]
    i = list(a.layers).index(layer)
    fig = entropy_scatter(m, a, layer)
    np.testing.assert_allclose(fig.data[0].x, np.asarray(m.coords[layer])[:, 0] * a.orientation[i])
    np.testing.assert_allclose(fig.data[0].y, m.next_entropy)
    assert f"Spearman ρ = {a.spearman[i].value:.2f}" in fig.layout.title.text
    rho = scipy.stats.spearmanr(fig.data[0].x, fig.data[0].y).statistic  # oriented: the alignment's ρ ≥ 0
    assert rho == pytest.approx(a.spearman[i].value, abs=1e-9) and rho >= 0


def test_scorecard_figure_is_the_scorecard_table(scan_result):
    card = scan_result.scorecard
    fig = scorecard_figure(card)
    assert list(fig.data[0].cells.values[2]) == [r["value"] for r in card.rows()]
    assert f"{card.n_passed} of {len(card.criteria)}" in fig.layout.title.text
