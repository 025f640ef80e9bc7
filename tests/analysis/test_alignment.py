"""geoprobe.analysis.alignment on planted entropy axes (seeded, fast)."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from geoprobe.analysis.alignment import AlignmentProfile, EntropyAlignment, entropy_alignment, orientation
from geoprobe.analysis.stats import Estimate

N = 120
FAST = dict(n_resamples=200, n_permutations=200)


def planted(seed: int = 0, noise: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """A coordinate t and an entropy that is a monotone function of t plus a little noise."""
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(N)
    return t, np.log2(1 + np.exp(t)) + noise * rng.standard_normal(N)


@pytest.fixture(scope="module")
def profile() -> AlignmentProfile:
    """Layer 2: entropy along +PC1; layer 5: along -PC1; layer 9: unrelated."""
    t, h = planted()
    coords = np.stack([t, -t, np.random.default_rng(1).standard_normal(N)])
    return entropy_alignment(coords, h, (2, 5, 9), model="toy", random_state=0, **FAST)


def test_planted_axis_gives_spearman_near_one_and_positive_orientation():
    t, h = planted()
    a = EntropyAlignment(random_state=0, **FAST).fit(t, h)
    assert a.orientation_ == 1 and a.n_samples_ == N
    assert a.spearman_.value > 0.97 and a.spearman_.low > 0.9 and a.spearman_.high <= 1.0
    assert a.pearson_.value > 0.9
    assert a.p_value_ == pytest.approx(1 / 201)  # no permutation reaches ρ ≈ 1


def test_negated_axis_flips_orientation_and_nothing_else():
    t, h = planted()
    pos = EntropyAlignment(random_state=0, **FAST).fit(t, h)
    neg = EntropyAlignment(random_state=0, **FAST).fit(-t, h)
    assert neg.orientation_ == -1
    assert neg.spearman_ == pos.spearman_ and neg.pearson_ == pos.pearson_ and neg.p_value_ == pos.p_value_


def test_pearson_ci_covers_a_known_correlation():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(800)
    y = 0.6 * x + 0.8 * rng.standard_normal(800)  # ρ = 0.6
    a = EntropyAlignment(random_state=0, n_resamples=500, n_permutations=100).fit(x, y)
    assert a.pearson_.low < 0.6 < a.pearson_.high and a.pearson_.high - a.pearson_.low < 0.13


def test_unrelated_entropy_is_not_significant():
    t, _ = planted()
    a = EntropyAlignment(random_state=0, **FAST).fit(t, np.random.default_rng(3).standard_normal(N))
    assert a.p_value_ > 0.05 and a.spearman_.low < 0 < a.spearman_.high


def test_constant_coordinate_is_undefined_without_warnings():
    _, h = planted()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = EntropyAlignment(random_state=0, **FAST).fit(np.full(N, 0.3), h)
    assert a.orientation_ == 1
    assert math.isnan(a.spearman_.value) and math.isnan(a.pearson_.high) and math.isnan(a.p_value_)


def test_orientation_helper_is_batched():
    t, h = planted()
    assert orientation(t, h) == 1 and orientation(-t, h) == -1
    np.testing.assert_array_equal(orientation(np.stack([t, -t, t]), h), [1, -1, 1])


def test_fit_validates_inputs():
    t, h = planted()
    for coord, ent in ((t[:5], h), (t[:2], h[:2]), (np.where(np.arange(N) == 0, np.nan, t), h), (np.stack([t, t]), h)):
        with pytest.raises(ValueError):
            EntropyAlignment().fit(coord, ent)


# -- entropy_alignment / AlignmentProfile ------------------------------------------------------
def test_profile_layers_equal_single_fits_and_bonferroni(profile):
    t, h = planted()
    coords = np.stack([t, -t, np.random.default_rng(1).standard_normal(N)])
    for i, layer in enumerate(profile.layers):
        one = EntropyAlignment(random_state=0, **FAST).fit(coords[i], h)
        for batched, single in ((profile.spearman[i], one.spearman_), (profile.pearson[i], one.pearson_)):
            assert (batched.value, batched.low, batched.high) == pytest.approx(
                (single.value, single.low, single.high), rel=1e-12, nan_ok=True
            )
        assert profile.p_value[i] == one.p_value_ and profile.orientation[i] == one.orientation_
    assert profile.orientation[:2] == (1, -1)
    np.testing.assert_allclose(profile.p_bonferroni, np.minimum(1, 3 * np.array(profile.p_value)))
    assert profile.significant == (True, True, False)


def test_profile_json_round_trip_is_exact(profile):
    back = AlignmentProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert back == profile and back.to_dict() == profile.to_dict()
    nan = dataclasses.replace(
        profile,
        spearman=(Estimate(math.nan, math.nan, math.nan),) + profile.spearman[1:],
        p_value=(math.nan,) + profile.p_value[1:],
        p_bonferroni=(math.nan,) + profile.p_bonferroni[1:],
    )
    assert AlignmentProfile.from_dict(json.loads(json.dumps(nan.to_dict()))) == nan


@pytest.mark.parametrize(
    "change",
    [
        dict(orientation=(1, 0, 1)),
        dict(spearman=(Estimate(-0.5, -0.6, -0.4),) * 3),
        dict(p_bonferroni=(0.0, 0.0, 0.0)),
        dict(p_value=(0.1, 0.2)),
        dict(layers=(2, 2, 9)),
        dict(n=2),
    ],
)
def test_profile_rejects_inconsistent_fields(profile, change):
    with pytest.raises(ValueError):
        dataclasses.replace(profile, **change)


def test_entropy_alignment_validates_shapes():
    t, h = planted()
    with pytest.raises(ValueError):
        entropy_alignment(np.stack([t, t]), h, (0, 1, 2))
    with pytest.raises(ValueError):
        entropy_alignment(t, h, (0,))


def test_permutations_are_drawn_in_chunks_with_the_same_p_values(monkeypatch):
    """Many prompts × permutations are drawn ~32 MB at a time (issue 27): the same permutations."""
    from geoprobe.analysis import stats

    rng = np.random.default_rng(2)
    h = rng.uniform(0, 5, 50)
    coords = np.stack([h + rng.normal(scale=s, size=50) for s in (0.5, 5.0, 50.0)])
    whole = entropy_alignment(coords, h, [0, 1, 2], n_resamples=50, n_permutations=999, random_state=3)
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 120)  # two permutations a chunk
    chunked = entropy_alignment(coords, h, [0, 1, 2], n_resamples=50, n_permutations=999, random_state=3)
    assert whole.to_dict() == chunked.to_dict()


def test_the_permutation_null_of_abs_rho_is_not_zero():
    """Issue 37: the null of |ρ| is the permutation distribution's, about √(2/(π(n−1))) on average for
    independent variables (its mean is checked against that to its Monte-Carlo error), not 0."""
    rng = np.random.default_rng(5)
    n = 75
    h, c = rng.normal(size=n), rng.normal(size=(1, n))
    prof = entropy_alignment(c, h, [0], n_resamples=50, n_permutations=4000, random_state=1)
    expected = np.sqrt(2 / (np.pi * (n - 1)))
    # |ρ| has sd ≈ √((1 − 2/π)/(n − 1)) ≈ 0.07 under independence; 4,000 draws: SE ≈ 0.0011
    assert abs(prof.null_mean[0] - expected) < 5 * 0.0011
    assert prof.null_high[0] > prof.null_mean[0] > 0.05
