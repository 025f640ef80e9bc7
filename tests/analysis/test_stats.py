"""geoprobe.analysis.stats on data with known answers (seeded, fast)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from geoprobe.analysis.stats import (
    Estimate,
    NullBand,
    bonferroni,
    bootstrap_batch,
    bootstrap_ci,
    matched_null,
    participation_ratio,
    permutation_pvalue,
    spectrum,
    zscore,
)


def equicorrelated(n: int, d: int, rho: float, seed: int = 0) -> np.ndarray:
    """n draws with unit variances and all pairwise correlations rho: the correlation matrix has
    eigenvalues 1 + (d - 1)·rho (once) and 1 - rho, so PC1 of standardised data = (1 + (d-1)rho)/d."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal((n, 1))
    return math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.standard_normal((n, d))


def no_warnings():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


# -- Estimate ----------------------------------------------------------------------------------
def test_estimate_json_round_trip_is_exact_including_nan():
    for e in (Estimate(0.1234567890123, -0.5, 2.75, 0.9), Estimate(math.nan, math.nan, math.nan)):
        back = Estimate.from_dict(json.loads(json.dumps(e.to_dict())))
        assert back == e
        assert back.to_dict() == e.to_dict()
    assert Estimate(math.nan, 0, 1).to_dict()["value"] is None
    assert Estimate(1, 0, 2) != Estimate(1, 0, 2.5)


@pytest.mark.parametrize("args", [(0.5, 0.6, 0.4), (0.5, 0.4, 0.6, 1.0), (0.5, 0.4, 0.6, 0.0)])
def test_estimate_rejects_bad_values(args):
    with pytest.raises(ValueError):
        Estimate(*args)


def test_estimate_allows_value_outside_interval():
    e = Estimate(0.9, 0.1, 0.5)  # BCa edge cases
    assert (e.low, e.high) == (0.1, 0.5)


# -- bootstrap / permutation / Bonferroni ------------------------------------------------------
@pytest.mark.parametrize("method", ["BCa", "percentile"])
def test_bootstrap_ci_covers_known_mean_with_expected_width(method):
    x = np.random.default_rng(1).normal(3.0, 1.0, size=400)
    e = bootstrap_ci(x, np.mean, method=method, random_state=0)
    assert e.low < 3.0 < e.high
    assert e.value == pytest.approx(x.mean())
    assert 2 * 1.96 / 20 * 0.8 < e.high - e.low < 2 * 1.96 / 20 * 1.2  # ≈ 2·z·σ/√n
    assert bootstrap_ci(x, np.mean, method=method, random_state=0) == e  # seeded


def test_bootstrap_ci_paired_difference():
    rng = np.random.default_rng(2)
    a = rng.normal(size=300)
    b = a + 0.5 + 0.1 * rng.normal(size=300)  # paired: the difference is tight around 0.5
    e = bootstrap_ci((b, a), lambda x, y, axis=-1: np.mean(x - y, axis=axis), random_state=0)
    assert e.low < 0.5 < e.high and e.high - e.low < 0.05


def test_bootstrap_ci_degenerate_data_gives_point_interval_without_warnings():
    ctx = no_warnings()
    try:
        e = bootstrap_ci(np.full(50, 2.5), random_state=0)
        one = bootstrap_ci(np.array([7.0]), random_state=0)
        r = bootstrap_ci(
            (np.ones(30), np.arange(30.0)), lambda x, y, axis=-1: np.corrcoef(x, y)[0, 1] + 0 * x.sum(axis)
        )
    finally:
        ctx.__exit__(None, None, None)
    assert (e.value, e.low, e.high) == (2.5, 2.5, 2.5)
    assert (one.value, one.low, one.high) == (7.0, 7.0, 7.0)
    assert math.isnan(r.value) and math.isnan(r.low) and math.isnan(r.high)


def test_bootstrap_ci_rejects_a_non_scalar_statistic():
    with pytest.raises(ValueError, match="one number"):
        bootstrap_ci(np.ones((10, 3)) + np.arange(10)[:, None])


def test_permutation_pvalue_detects_association_and_not_noise():
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)

    def r(a, b, axis=-1):
        a = a - a.mean(axis, keepdims=True)
        b = b - b.mean(axis, keepdims=True)
        return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))

    y = x + 0.5 * rng.normal(size=80)
    p_assoc = permutation_pvalue((x, y), r, permutation_type="pairings", random_state=0)
    p_greater = permutation_pvalue((x, y), r, permutation_type="pairings", alternative="greater", random_state=0)
    p_noise = permutation_pvalue((x, rng.normal(size=80)), r, permutation_type="pairings", random_state=0)
    assert p_greater == pytest.approx(1 / 1001)  # nothing in the null reaches it (scipy counts the data once)
    assert p_assoc == pytest.approx(2 / 1001)  # two-sided doubles the smaller tail
    assert p_noise > 0.05
    batched = permutation_pvalue(
        (np.stack([x, x]), np.stack([x, rng.normal(size=80)])), r, permutation_type="pairings", random_state=0, axis=-1
    )
    assert batched.shape == (2,) and batched[0] < 0.01
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(permutation_pvalue((np.ones(20), x[:20]), r, permutation_type="pairings", random_state=0))


def test_bonferroni():
    np.testing.assert_allclose(bonferroni([0.01, 0.2, 0.5]), [0.03, 0.6, 1.0])
    np.testing.assert_allclose(bonferroni([0.01], m=10), [0.1])
    out = bonferroni([math.nan, 0.02])
    assert math.isnan(out[0]) and out[1] == pytest.approx(0.04)
    with pytest.raises(ValueError):
        bonferroni([1.5])
    with pytest.raises(ValueError):
        bonferroni([0.1, 0.2], m=1)


# -- spectra -----------------------------------------------------------------------------------
def test_spectrum_recovers_a_planted_correlation_spectrum():
    d, rho = 20, 0.5
    r = spectrum(equicorrelated(20_000, d, rho))
    assert r[0] == pytest.approx((1 + (d - 1) * rho) / d, abs=0.01)  # 0.525
    assert r[1] == pytest.approx((1 - rho) / d, abs=0.005)
    assert r.sum() == pytest.approx(1.0) and r.shape == (d,) and r.dtype == np.float64
    # two planted blocks of 10 correlated columns: PC1+PC2 = 2 (1 + 9 rho) / 20
    x = np.hstack([equicorrelated(20_000, 10, 0.6, seed=1), equicorrelated(20_000, 10, 0.6, seed=2)])
    r2 = spectrum(x)
    assert r2[:2].sum() == pytest.approx(2 * (1 + 9 * 0.6) / 20, abs=0.01)


def test_spectrum_standardisation_drops_constant_columns_and_removes_scale():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 8))
    x[:, 0] *= 100.0  # dominates unstandardised PCA
    wide = np.hstack([x, np.full((50, 3), 1.7)])
    np.testing.assert_allclose(spectrum(wide), spectrum(x), atol=1e-12)
    assert spectrum(x, standardize=False)[0] > 0.99
    assert spectrum(x)[0] < 0.4
    assert spectrum(rng.standard_normal((5, 30))).shape == (4,)  # k = n - 1
    assert spectrum(np.ones((10, 4))).size == 0


def test_participation_ratio_definition_and_isotropic_scaling():
    assert participation_ratio(np.full(7, 1 / 7)) == pytest.approx(7)
    assert participation_ratio([1.0, 0.0, 0.0]) == pytest.approx(1)
    assert participation_ratio([3.0, 1.0]) == pytest.approx(participation_ratio([0.75, 0.25])) == pytest.approx(1.6)
    assert math.isnan(participation_ratio([]))
    rng = np.random.default_rng(5)
    for n, d in ((4000, 20), (20, 2000)):  # isotropic: PR ≈ min(n - 1, d) / (1 + ratio)
        pr = participation_ratio(spectrum(rng.standard_normal((n, d))))
        assert 0.9 * min(n - 1, d) < pr <= min(n - 1, d)


def test_zscore_is_batched_and_zeroes_constant_columns():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 12, 5))
    x[1, :, 2] = 4.0
    z = zscore(x)
    np.testing.assert_allclose(z[0], (x[0] - x[0].mean(0)) / x[0].std(0))
    assert np.all(z[1, :, 2] == 0)
    np.testing.assert_allclose((z[2] ** 2).mean(0), 1.0)


# -- matched nulls -----------------------------------------------------------------------------
def test_matched_null_for_small_n_is_far_above_five_percent_and_contains_noise():
    x = np.random.default_rng(7).standard_normal((20, 200))
    pc1 = spectrum(x)[0]
    for kind in ("permute", "gaussian"):
        band = matched_null(x, kind=kind, draws=200, random_state=0)
        assert (band.kind, band.n, band.d, band.draws) == (kind, 20, 200, 200)
        assert band.pc1.low <= pc1 <= band.pc1.high
        assert band.pc1.low > 0.05 * 1.3  # the "≈ 5 % random PC1" line is no null here
        assert band.pc1.value == pytest.approx((1 / math.sqrt(20) + 1 / math.sqrt(200)) ** 2, rel=0.15)
        assert band.pc1.value <= band.pc12.value and band.pr.value > 1


def test_planted_rank_one_signal_beats_the_null():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((20, 200)) + 0.8 * rng.standard_normal((20, 1)) * rng.standard_normal((1, 200))
    band = matched_null(x, kind="permute", draws=200, random_state=0)
    assert spectrum(x)[0] > band.pc1.high


def test_matched_null_is_seeded_and_validates():
    x = np.random.default_rng(9).standard_normal((15, 40))
    assert matched_null(x, draws=30, random_state=1) == matched_null(x, draws=30, random_state=1)
    assert matched_null(x, draws=30, random_state=1) != matched_null(x, draws=30, random_state=2)
    x[:, 3] = 0.0
    assert matched_null(x, draws=10, random_state=0).d == 39  # constant column dropped
    assert matched_null(None, 15, 40, kind="gaussian", draws=10, random_state=0).d == 40
    with pytest.raises(ValueError):
        matched_null(None, 15, 40, kind="permute")
    with pytest.raises(ValueError):
        matched_null(x, n=16)
    with pytest.raises(ValueError):
        matched_null(x, kind="shuffle")


def test_null_band_round_trip_and_validation():
    band = matched_null(None, 12, 30, kind="gaussian", draws=20, random_state=0)
    assert NullBand.from_dict(json.loads(json.dumps(band.to_dict()))) == band
    e = Estimate(0.1, 0.05, 0.2)
    with pytest.raises(ValueError):
        NullBand("uniform", 12, 30, 20, e, e, Estimate(2, 1.5, 3))
    with pytest.raises(ValueError):
        NullBand("permute", 12, 30, 20, Estimate(1.5, 1.2, 1.8), e, Estimate(2, 1.5, 3))
    with pytest.raises(ValueError):
        NullBand("permute", 12, 30, 0, e, e, Estimate(2, 1.5, 3))


# -- many prompts (issue 27): resampling in ~32 MB batches, the same draws ------------------------------
def _peak_bytes(fn) -> int:
    """Peak bytes traced (numpy reports its arrays to tracemalloc) while ``fn()`` runs."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bootstraps_and_permutation_tests_in_batches_give_the_same_numbers(monkeypatch):
    from geoprobe.analysis import stats

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(3, 60)), rng.normal(size=60)

    def run() -> list:
        return [
            bootstrap_batch((x,), np.mean, n_resamples=999, random_state=4),
            bootstrap_batch(
                (x, np.broadcast_to(y, x.shape)),
                lambda a, b, axis: np.mean(a - b, axis=axis),
                n_resamples=500,
                method="percentile",
                random_state=5,
            ),
            permutation_pvalue(
                (x[0], y),
                lambda a, b, axis: np.mean(a - b, axis=axis),
                permutation_type="samples",
                n_resamples=999,
                random_state=6,
            ),
        ]

    whole = run()
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 500)  # a few resamples per batch
    batched = run()
    for a, b in zip(whole, batched):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def test_a_bca_bootstrap_of_many_prompts_never_holds_the_n_by_n_jackknife():
    """Was: scipy's BCa jackknife of n = 10,000 prompts held a 10,000 × 9,999 array (800 MB; 8 TB at a
    million prompts); in batches the peak stays near a few 32 MB batches (resamples and their indices)."""
    x = np.random.default_rng(1).normal(size=10_000)
    peak = _peak_bytes(lambda: bootstrap_ci(x, np.mean, n_resamples=200, random_state=0))
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB"
