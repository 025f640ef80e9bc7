"""The random-init null's statistics (geoprobe.analysis.initnull) against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from geoprobe.analysis.initnull import (
    head_contrast,
    null_contrast,
    pc_shares,
    pc_shares_resampled,
    resample_indices,
)
from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.paired import reduction_resampled


@pytest.mark.parametrize("shape", [(30, 80), (80, 12)])  # n < D (Gram of rows) and n > D (of columns)
def test_pc_shares_equal_the_value_manifold_s(shape):
    x = np.random.default_rng(0).normal(size=shape) @ np.diag(np.linspace(1, 3, shape[1]))
    r = ValueManifold().fit(x).explained_variance_ratio_
    assert pc_shares(x) == pytest.approx((r[0], r[0] + r[1]), abs=1e-12)
    idx = resample_indices(shape[0], 5, 3)
    np.testing.assert_allclose(pc_shares_resampled(x, idx), [pc_shares(x[i]) for i in idx], atol=1e-14)


def test_resample_indices_are_seeded_and_shared():
    a, b = resample_indices(40, 100, 7), resample_indices(40, 100, 7)
    assert a.shape == (100, 40) and np.array_equal(a, b) and not np.array_equal(a, resample_indices(40, 100, 8))


def test_reduction_resampled_is_the_focusing_reduction_of_each_resample():
    rng = np.random.default_rng(1)
    first, last = rng.uniform(3, 4, 25), rng.uniform(1, 2, 25)
    idx = resample_indices(25, 4, 0)
    want = [100 * (1 - last[i].mean() / first[i].mean()) for i in idx]
    np.testing.assert_allclose(reduction_resampled(first, last, idx), want, rtol=1e-13)


def test_the_own_null_contrast_is_a_paired_se_interval_and_zero_for_the_model_itself():
    rng = np.random.default_rng(2)
    boot = rng.normal(0.3, 0.02, 500)
    same = null_contrast(0.3, boot, np.array([0.3]), boot[None], own=True)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)  # the model against itself: beats nothing
    other = rng.normal(0.1, 0.02, 500)
    e = null_contrast(0.3, boot, np.array([0.1]), other[None], own=True)
    z = scipy.stats.norm.ppf(0.975)
    half = z * np.std(boot - other, ddof=1)
    assert (e.value, e.low, e.high) == pytest.approx((0.2, 0.2 - half, 0.2 + half), abs=1e-12)


def test_fresh_draws_add_a_prediction_term_and_one_draw_gives_no_interval():
    rng = np.random.default_rng(3)
    boot, nboot = rng.normal(0.3, 0.02, (500,)), rng.normal(0.1, 0.02, (3, 500))
    nulls = np.array([0.09, 0.1, 0.12])
    e = null_contrast(0.3, boot, nulls, nboot)
    se = np.std(boot - nboot.mean(axis=0), ddof=1)
    pred = scipy.stats.t.ppf(0.975, 2) * nulls.std(ddof=1) * math.sqrt(1 + 1 / 3)
    half = math.hypot(scipy.stats.norm.ppf(0.975) * se, pred)
    assert (e.value, e.low, e.high) == pytest.approx((0.3 - nulls.mean(), e.value - half, e.value + half), abs=1e-12)
    one = null_contrast(0.3, boot, nulls[:1], nboot[:1])
    assert one.value == pytest.approx(0.3 - 0.09) and math.isnan(one.low) and math.isnan(one.high)


def test_head_contrast_is_the_layer_averaged_difference_and_paired_heads_cancel():
    rng = np.random.default_rng(4)
    init = rng.uniform(0.05, 0.1, (3, 8))
    trained = init + 0.02
    e = head_contrast(trained, init[None], own=True, n_resamples=300)
    assert e.value == pytest.approx(0.02, abs=1e-12) and e.high - e.low < 1e-12  # paired: a constant shift
    loose = head_contrast(trained, init[None], own=False, n_resamples=300)  # fresh draw: heads unpaired
    assert math.isnan(loose.low)  # one fresh draw: no interval
    draws = np.stack([init, init + 0.001, init - 0.001])
    three = head_contrast(trained, draws, own=False, n_resamples=300)
    assert three.low < 0.02 < three.high and three.high - three.low > 1e-3
