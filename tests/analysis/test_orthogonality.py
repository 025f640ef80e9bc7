"""Key orthogonality on planted structure: exact values, baselines, round trip, validation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from geoprobe.analysis.orthogonality import (
    KeyOrthogonality,
    gaussian_baseline,
    head_orthogonality,
    key_activation_cosines,
    key_orthogonality,
)


def _orthonormal(rng: np.random.Generator, D: int, d: int) -> np.ndarray:
    q, _ = np.linalg.qr(rng.standard_normal((D, d)))
    return q


def _equicosine(rng: np.random.Generator, D: int, d: int, c: float) -> np.ndarray:
    """d columns in R^D with cos(col_i, col_j) = ±c for all i != j (signs and lengths random).

    u_i = sqrt(1-c) q_i + sqrt(c) q_0 with q_0..q_d orthonormal gives u_i·u_j = c, |u_i| = 1;
    flipping a column's sign flips its cosines' signs, scaling it changes none.
    """
    q = _orthonormal(rng, D, d + 1)
    u = math.sqrt(1 - c) * q[:, 1:] + math.sqrt(c) * q[:, :1]
    signs = rng.choice([-1.0, 1.0], size=d)
    scales = rng.uniform(0.1, 10.0, size=d)
    return u * signs * scales


def _weights(rng, L, H, D, d, make) -> np.ndarray:
    return np.stack([np.stack([make(rng, D, d) for _ in range(H)]) for _ in range(L)])


# -- head_orthogonality --------------------------------------------------------------------
def test_orthonormal_columns_give_zero():
    rng = np.random.default_rng(0)
    w = _weights(rng, 3, 2, 96, 16, _orthonormal)
    assert np.abs(head_orthogonality(w)).max() <= 1e-12
    # orthogonal but not normalised: still zero (the measure normalises columns first)
    w_scaled = w * rng.uniform(0.01, 100, size=(3, 2, 1, 16))
    assert np.abs(head_orthogonality(w_scaled)).max() <= 1e-12


@pytest.mark.parametrize("c", [0.05, 0.2, 0.5, 0.9])
def test_planted_pairwise_cosine_gives_c(c):
    rng = np.random.default_rng(1)
    w = _weights(rng, 2, 3, 80, 12, lambda r, D, d: _equicosine(r, D, d, c))
    got = head_orthogonality(w)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, c, atol=1e-12)
    # the same columns in float32 agree to float32 precision
    np.testing.assert_allclose(head_orthogonality(w.astype(np.float32)), c, atol=1e-6)


def test_matches_a_direct_pairwise_loop():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((2, 2, 20, 5))
    got = head_orthogonality(w)
    for layer in range(2):
        for h in range(2):
            cols = [w[layer, h, :, j] / np.linalg.norm(w[layer, h, :, j]) for j in range(5)]
            pairs = [abs(cols[i] @ cols[j]) for i in range(5) for j in range(5) if i != j]
            assert got[layer, h] == pytest.approx(np.mean(pairs), abs=1e-14)


def test_random_gaussian_columns_match_gaussian_baseline():
    """iid N(0,1) columns in D=4096: each head's mean |cos| over 64·63 pairs is within 5 % of
    E|cos| = 0.01247 (its standard error is ≈ 1.7 %), the mean over 8 heads within 2 %."""
    rng = np.random.default_rng(3)
    D = 4096
    w = rng.standard_normal((2, 4, D, 64))
    got = head_orthogonality(w)
    g = gaussian_baseline(D)
    assert np.all(np.abs(got / g - 1) < 0.05), got / g
    assert abs(got.mean() / g - 1) < 0.02


def test_gaussian_baseline_exact_values_and_approximation():
    assert gaussian_baseline(2) == pytest.approx(2 / math.pi, rel=1e-14)  # uniform angle
    assert gaussian_baseline(3) == pytest.approx(0.5, rel=1e-14)  # cos uniform on [-1, 1]
    assert gaussian_baseline(4) == pytest.approx(4 / (3 * math.pi), rel=1e-14)
    for D in (1024, 4096, 16384):
        exact, approx = gaussian_baseline(D), gaussian_baseline(D, exact=False)
        assert approx == pytest.approx(math.sqrt(2 / (math.pi * D)), rel=1e-15)
        assert abs(exact / approx - 1) < 1 / (2 * D)  # relative gap ≈ 1/(4D)
    # finite at huge D (log-gamma, no overflow)
    assert gaussian_baseline(10**7) == pytest.approx(math.sqrt(2 / (math.pi * 10**7)), rel=1e-6)


def test_gaussian_baseline_monte_carlo():
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((2, 200_000, 10))
    cos = np.abs(np.sum(a * b, axis=1)) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cos.mean() == pytest.approx(gaussian_baseline(10), abs=3e-3)  # SE ≈ 5e-4


@pytest.mark.parametrize("bad", [0, 1, 2.5, -3])
def test_gaussian_baseline_rejects_bad_dimension(bad):
    with pytest.raises(ValueError, match="d_model"):
        gaussian_baseline(bad)


def test_head_orthogonality_rejects_degenerate_input():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((1, 1, 8, 4))
    with pytest.raises(ValueError, match="shape"):
        head_orthogonality(w[0])
    with pytest.raises(ValueError, match="d_head >= 2"):
        head_orthogonality(w[..., :1])
    zero = w.copy()
    zero[0, 0, :, 2] = 0
    with pytest.raises(ValueError, match="all-zero"):
        head_orthogonality(zero)
    nan = w.copy()
    nan[0, 0, 3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        head_orthogonality(nan)


# -- key activations -------------------------------------------------------------------------
def test_activation_cosines_on_planted_keys():
    """Head h's key for every prompt is a positive or negative multiple of q_h (q orthonormal):
    within a head |cos| = 1, across heads 0. Mixing in a shared direction plants cos = c."""
    rng = np.random.default_rng(6)
    L, n, H, d = 2, 7, 3, 16
    q = _orthonormal(rng, d, H + 1)  # (d, H+1)
    scale = rng.uniform(0.5, 2.0, size=(L, n, H, 1)) * rng.choice([-1.0, 1.0], size=(L, n, H, 1))
    keys = scale * q[:, :H].T[None, None]
    within, across = key_activation_cosines(keys)
    np.testing.assert_allclose(within, 1.0, atol=1e-12)
    np.testing.assert_allclose(across, 0.0, atol=1e-12)

    c = 0.3  # head h: sqrt(1-c) q_h + sqrt(c) q_shared  ->  cos between heads = c, same head = 1
    planted = math.sqrt(1 - c) * q[:, :H].T + math.sqrt(c) * q[:, H]
    keys = scale * planted[None, None]
    within, across = key_activation_cosines(keys)
    np.testing.assert_allclose(within, 1.0, atol=1e-12)
    np.testing.assert_allclose(across, c, atol=1e-12)


def test_activation_cosines_single_head_or_prompt_is_nan():
    rng = np.random.default_rng(7)
    within, across = key_activation_cosines(rng.standard_normal((2, 5, 1, 8)))  # multi-query attention
    assert np.all(np.isfinite(within)) and np.all(np.isnan(across))
    within, across = key_activation_cosines(rng.standard_normal((2, 1, 3, 8)))  # one prompt
    assert np.all(np.isnan(within)) and np.all(np.isfinite(across))


# -- KeyOrthogonality ------------------------------------------------------------------------
@pytest.fixture
def result() -> KeyOrthogonality:
    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 3, 48, 8)) + 0.3 * rng.standard_normal((4, 3, 48, 1))  # shared direction
    init = rng.standard_normal((4, 3, 48, 8))
    keys = rng.standard_normal((4, 10, 3, 8))
    return key_orthogonality(
        w, [0, 3, 7, 11], 48, model="planted <b>&", init_w_k=init, init_label="twin seed=0", keys=keys
    )


def test_result_numbers(result):
    ph = result.per_head
    assert ph.shape == (4, 3) and result.d_model == 48 and result.d_head == 8
    np.testing.assert_array_equal(result.layer_mean, ph.mean(axis=1))
    np.testing.assert_array_equal(np.array(result.band_10_90).T, np.percentile(ph, [10, 90], axis=1))
    np.testing.assert_array_equal(np.array(result.band_25_75).T, np.percentile(ph, [25, 75], axis=1))
    assert result.gaussian == gaussian_baseline(48)
    assert result.init_label == "twin seed=0" and result.init_per_head.shape == (4, 3)
    assert result.init_layer_mean == pytest.approx(result.init_per_head.mean(axis=1))
    assert len(result.activation_within) == len(result.activation_across) == 4
    assert result.frac_below_threshold == np.mean(ph.mean(axis=1) < 0.2)
    assert not result.per_head.flags.writeable


def test_result_round_trips_exactly_through_json(result):
    d = result.to_dict()
    back = KeyOrthogonality.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == result
    assert back.to_dict() == d
    np.testing.assert_array_equal(back.per_head, result.per_head)
    np.testing.assert_array_equal(back.init_per_head, result.init_per_head)
    assert back.layers == result.layers and back.activation_within == result.activation_within


def test_round_trip_with_nan_and_without_optionals():
    rng = np.random.default_rng(9)
    r = key_orthogonality(rng.standard_normal((2, 1, 16, 4)), [0, 1], 16, keys=rng.standard_normal((2, 6, 1, 4)))
    assert r.init_per_head is None and r.init_label is None and r.init_layer_mean is None
    d = r.to_dict()
    assert d["activation_across"] == [None, None]  # one KV head: undefined, NaN -> None
    back = KeyOrthogonality.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == r and all(math.isnan(x) for x in back.activation_across)


def test_post_init_rejects_bad_results(result):
    good = {f: getattr(result, f) for f in result.__dataclass_fields__}
    bad_cases = [
        dict(per_head=result.per_head[:3]),
        dict(per_head=result.per_head.ravel()),
        dict(layer_mean=result.layer_mean[:3]),
        dict(band_10_90=result.band_10_90[:3]),
        dict(band_25_75=tuple((b + 0.01, a) for a, b in result.band_25_75)),
        dict(per_head=result.per_head + 1.0),
        dict(per_head=np.where(np.eye(4, 3) > 0, np.nan, result.per_head)),
        dict(gaussian=0.0),
        dict(init_per_head=result.per_head[:, :2]),
        dict(init_per_head=None),  # label without data
        dict(activation_within=(0.1,)),
        dict(threshold=1.5),
        dict(layers=(0, 0, 1, 2)),
        dict(d_head=1),
    ]
    for change in bad_cases:
        with pytest.raises(ValueError) as err:
            KeyOrthogonality(**{**good, **change})
        assert "\n" not in str(err.value)


def test_key_orthogonality_rejects_mismatches():
    rng = np.random.default_rng(10)
    w = rng.standard_normal((2, 2, 16, 4))
    with pytest.raises(ValueError, match="layers"):
        key_orthogonality(w, [0], 16)
    with pytest.raises(ValueError, match="d_model"):
        key_orthogonality(w, [0, 1], 32)
    with pytest.raises(ValueError, match="init_w_k"):
        key_orthogonality(w, [0, 1], 16, init_w_k=w[:1])
    with pytest.raises(ValueError, match="init_label"):
        key_orthogonality(w, [0, 1], 16, init_label="twin")
    with pytest.raises(ValueError, match="keys"):
        key_orthogonality(w, [0, 1], 16, keys=rng.standard_normal((2, 5, 3, 4)))


# -- random-init twins sit at the Gaussian baseline -------------------------------------------
@pytest.mark.parametrize("alias", ["llama-3.2-1b", "pythia-410m"])
def test_twin_random_init_is_near_gaussian_baseline(alias, twin_factory):
    """A random-init twin's W_K (iid normal init, d_model 64, d_head 16) sits at the Gaussian
    E|cos| = 0.0998: the mean over all heads (≥ 6 heads × 120 pairs, SE ≈ 3 %) within 10 %."""
    model = twin_factory(alias)
    w_k = torch.stack(model.arch.key_weight_views()).float().numpy()
    lay = model.layout
    r = key_orthogonality(w_k, range(lay.n_layers), lay.d_model, model=alias, init_w_k=w_k, init_label="itself")
    assert abs(np.mean(r.layer_mean) / r.gaussian - 1) < 0.10
    np.testing.assert_array_equal(r.init_per_head, r.per_head)


def test_key_cosines_of_many_prompts_are_summed_over_blocks_of_rows(monkeypatch):
    """Above 32 MB of Gram entries the within-head cosines are summed over blocks of rows, never an
    n × n matrix per head (issue 27: 20,000 prompts × 16 heads held 51 GB); the same means to rounding."""
    import tracemalloc

    from geoprobe.analysis import orthogonality

    k = np.random.default_rng(0).normal(size=(2, 300, 3, 8)) + 0.3
    whole = key_activation_cosines(k)
    monkeypatch.setattr(orthogonality, "_GRAM_ELEMENTS", 2000)
    blocks = key_activation_cosines(k)
    assert np.allclose(whole[0], blocks[0], rtol=1e-12) and np.array_equal(whole[1], blocks[1])
    monkeypatch.undo()
    big = np.random.default_rng(1).normal(size=(1, 6000, 2, 8))
    tracemalloc.start()
    try:
        key_activation_cosines(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150 * 2**20, f"{peak / 2**20:.0f} MiB"  # was 2 heads × 6,000² × 8 B = 576 MB and more


def test_layers_with_their_own_head_counts_and_widths():
    """Per-layer head layouts: one (H_l, D, d_l) W_K per layer; each layer's heads measured alone, NaN
    beyond them; the layer mean, bands and baselines over the layer's own heads."""
    from geoprobe.analysis.orthogonality import head_orthogonality, key_orthogonality

    rng = np.random.default_rng(3)
    ws = [rng.normal(size=(2, 32, 8)), rng.normal(size=(4, 32, 16))]
    inits = [rng.normal(size=w.shape) for w in ws]
    keys = [rng.normal(size=(5, 2, 8)), rng.normal(size=(5, 4, 16))]
    ko = key_orthogonality(ws, [0, 5], 32, init_w_k=inits, keys=keys)
    for i, w in enumerate(ws):
        own = head_orthogonality(w[None])[0]
        np.testing.assert_array_equal(ko.per_head[i, : len(own)], own)
        assert np.isnan(ko.per_head[i, len(own) :]).all()
        assert ko.layer_mean[i] == pytest.approx(own.mean(), abs=1e-15)
        assert ko.band_10_90[i] == pytest.approx(tuple(np.percentile(own, [10, 90])), abs=1e-15)
        assert ko.init_layer_mean[i] == pytest.approx(head_orthogonality(inits[i][None])[0].mean(), abs=1e-15)
        k = keys[i]
        cos = [
            abs(k[a, h] @ k[b, h]) / np.linalg.norm(k[a, h]) / np.linalg.norm(k[b, h])
            for h in range(k.shape[1])
            for a in range(5)
            for b in range(5)
            if a != b
        ]
        assert ko.activation_within[i] == pytest.approx(np.mean(cos), abs=1e-12)
    assert ko.d_head == 16 and ko.per_head.shape == (2, 4)
    same = [rng.normal(size=(2, 32, 8)) for _ in range(3)]
    assert key_orthogonality(same, [0, 1, 2], 32) == key_orthogonality(np.stack(same), [0, 1, 2], 32)
    assert KeyOrthogonality.from_dict(json.loads(json.dumps(ko.to_dict()))) == ko
