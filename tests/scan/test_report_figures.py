"""The scan page's figures (geoprobe.scan.report.figures) carry the numbers of the records they draw:
each figure's traces against the record's fields, on planted, seeded inputs."""

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


def test_manifold_figure_traces_carry_the_profile_numbers(manifold):
    fig = manifold_figure(manifold)
    assert isinstance(fig, go.Figure) and len(fig.data) == 6
    names = [t.name for t in fig.data]
    pc1 = fig.data[names.index("PC1 (95 % CI)")]
    np.testing.assert_allclose(pc1.y, [e.value for e in manifold.pc1])
    np.testing.assert_allclose(np.asarray(pc1.error_y.array) + pc1.y, [e.high for e in manifold.pc1])
    band = fig.data[names.index("permute null PC1 (95 % band)")]
    np.testing.assert_allclose(band.y, [b.pc1.high for b in manifold.null] + [b.pc1.low for b in manifold.null][::-1])
    pr = fig.data[names.index("participation ratio (95 % CI)")]
    np.testing.assert_allclose(pr.y, [e.value for e in manifold.pr])
    assert "toy" in fig.layout.title.text


def test_manifold_scatter_is_oriented_and_coloured_by_entropy(manifold):
    fig = manifold_scatter(manifold, 7)
    assert len(fig.data) == 1
    np.testing.assert_allclose(fig.data[0].x, manifold.orientation[7] * manifold.coords[7][:, 0])
    np.testing.assert_allclose(fig.data[0].y, manifold.coords[7][:, 1])
    np.testing.assert_allclose(fig.data[0].marker.color, manifold.next_entropy)
    with pytest.raises(ValueError):
        manifold_scatter(manifold, 0)


def test_alignment_figure_shows_rho_with_ci_and_significant_layers(alignment):
    fig = alignment_figure(alignment)
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    rho = [e.value for e in alignment.spearman]
    np.testing.assert_allclose(fig.data[0].y, rho)
    np.testing.assert_allclose(
        np.asarray(fig.data[0].error_y.arrayminus), np.array(rho) - [e.low for e in alignment.spearman]
    )
    assert list(fig.data[1].x) == [2, 5]
    np.testing.assert_allclose(fig.data[1].y, rho[:2])
    assert "toy" in fig.layout.title.text


def test_focusing_figure_shows_the_numbers(planted_entropies):
    e, n_tokens = planted_entropies
    af = attention_focusing(e, [2, 4, 6, 8, 10], n_tokens, model="planted")
    fig = focusing_figure(af)
    traces = {t.name: t for t in fig.data}
    line = traces["mean head entropy"]
    assert list(line.x) == [2, 4, 6, 8, 10]
    assert list(line.y) == [m.value for m in af.mean]
    assert list(traces["95 % CI over prompts"].y) == [m.low for m in af.mean]
    assert list(traces["95 % CI over prompts high"].y) == [m.high for m in af.mean]
    assert list(traces["heads 10–90 %"].y) == [a for a, _ in af.head_band_10_90]
    assert list(traces["heads 10–90 % high"].y) == [b for _, b in af.head_band_10_90]
    assert list(traces["uniform attention (log2 T)"].y) == list(af.uniform)
    assert "planted" in fig.layout.title.text and f"{af.reduction.value:.1f} %" in fig.layout.title.text
    assert fig.layout.yaxis.title.text == "final-token attention entropy (bits)"


def test_orthogonality_figure_shows_the_numbers(ko):
    fig = orthogonality_figure(ko)
    traces = {t.name: t for t in fig.data}
    assert list(traces["mean over heads"].x) == list(ko.layers)
    assert list(traces["mean over heads"].y) == list(ko.layer_mean)
    assert list(traces["heads 10–90 %"].y) == [a for a, _ in ko.band_10_90]
    assert list(traces["heads 10–90 % high"].y) == [b for _, b in ko.band_10_90]
    assert list(traces["heads 25–75 %"].y) == [a for a, _ in ko.band_25_75]
    assert list(traces["heads 25–75 % high"].y) == [b for _, b in ko.band_25_75]
    assert set(traces["iid Gaussian E|cos|"].y) == {ko.gaussian}
    assert list(traces["random init (twin)"].y) == list(ko.init_layer_mean)
    assert set(traces["threshold"].y) == {0.2}
    assert "planted <b>&" in fig.layout.title.text  # plain text; plotly escapes it when rendering
    assert fig.layout.xaxis.title.text == "layer" and "|cos|" in fig.layout.yaxis.title.text


def test_orthogonality_figure_without_init_has_no_init_line():
    rng = np.random.default_rng(11)
    fig = orthogonality_figure(key_orthogonality(rng.standard_normal((2, 2, 16, 4)), [0, 1], 16))
    assert "random init (twin)" not in {t.name for t in fig.data}


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
