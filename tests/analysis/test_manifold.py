"""geoprobe.analysis.manifold on planted structure (seeded, fast)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from geoprobe.analysis.manifold import ManifoldProfile, ValueManifold, value_manifold
from geoprobe.analysis.stats import Estimate, spectrum

N, D = 40, 60
FAST = dict(n_resamples=40, null_draws=60)


def planted(n: int = N, d: int = D, strength: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Noise plus a rank-1 factor t (returned): x_ij = strength · t_i · u_j + noise."""
    rng = np.random.default_rng(seed)
    t = rng.standard_normal(n)
    u = rng.uniform(0.5, 1.5, d) * rng.choice([-1, 1], d)
    return strength * np.outer(t, u) + rng.standard_normal((n, d)), t


@pytest.fixture(scope="module")
def profile() -> ManifoldProfile:
    """Layer 0: pure noise; layers 3 and 7: a planted factor that entropy follows (layer 7 with
    the factor negated in the data, so its PC1 must be re-oriented)."""
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((N, D))
    x, t = planted(strength=1.5, seed=2)
    entropy = 2.0 + t + 0.1 * rng.standard_normal(N)
    values = np.stack([noise, x, -x])
    return value_manifold(values, (0, 3, 7), entropy, model="toy", scatter_layers=(3,), random_state=0, **FAST)


# -- ValueManifold -----------------------------------------------------------------------------
def test_value_manifold_matches_the_spectrum_and_planted_factor():
    x, t = planted(n=400, strength=2.0)
    vm = ValueManifold().fit(x)
    np.testing.assert_allclose(vm.explained_variance_ratio_, spectrum(x), atol=1e-10)
    assert vm.explained_variance_ratio_.shape == (min(400 - 1, D),)
    assert vm.participation_ratio_ == pytest.approx(1 / np.sum(spectrum(x) ** 2))
    assert abs(np.corrcoef(vm.coords_[:, 0], t)[0, 1]) > 0.99
    np.testing.assert_allclose(vm.transform(x), vm.coords_)
    assert vm.n_samples_ == 400 and vm.n_features_ == D and vm.components_.shape == (D, D)


def test_signs_are_deterministic():
    x, _ = planted()
    a, b = ValueManifold().fit(x), ValueManifold().fit(x.copy())
    np.testing.assert_array_equal(a.components_, b.components_)
    top = np.abs(a.components_).argmax(axis=1)
    assert np.all(a.components_[np.arange(len(top)), top] > 0)
    neg = ValueManifold().fit(-x)  # same axes, same signs, mirrored coordinates
    np.testing.assert_allclose(neg.components_, a.components_, atol=1e-10)
    np.testing.assert_allclose(neg.coords_, -a.coords_, atol=1e-10)
    j = int(np.argsort(np.abs(a.components_[0]))[0])  # a column that cannot decide PC1's sign
    flipped = x.copy()
    flipped[:, j] *= -1
    f = ValueManifold(n_components=1).fit(flipped)
    assert f.components_[0, j] == pytest.approx(-a.components_[0, j], abs=1e-10)
    np.testing.assert_allclose(np.delete(f.components_[0], j), np.delete(a.components_[0], j), atol=1e-10)
    np.testing.assert_allclose(f.coords_[:, 0], a.coords_[:, 0], atol=1e-10)


def test_truncation_constant_columns_and_unstandardised_mode():
    x, _ = planted()
    x[:, [4, 9]] = 3.0
    full, two = ValueManifold().fit(x), ValueManifold(n_components=2).fit(x)
    assert two.kept_features_.sum() == D - 2 and two.components_.shape == (2, D - 2)
    np.testing.assert_allclose(two.explained_variance_ratio_, full.explained_variance_ratio_[:2])
    assert two.participation_ratio_ == pytest.approx(full.participation_ratio_)
    scaled = x.copy()
    scaled[:, 0] *= 1000
    assert ValueManifold(standardize=False).fit(scaled).explained_variance_ratio_[0] > 0.99
    assert ValueManifold().fit(scaled).explained_variance_ratio_[0] == pytest.approx(full.explained_variance_ratio_[0])
    with pytest.raises(ValueError):
        full.transform(x[:, :-1])
    with pytest.raises(ValueError):
        ValueManifold().fit(np.ones((5, 3)))


# -- value_manifold / ManifoldProfile ----------------------------------------------------------
def test_profile_values_nulls_and_orientation(profile):
    assert profile.layers == (0, 3, 7) and (profile.n, profile.d) == (N, D)
    x, _ = planted(strength=1.5, seed=2)
    r = spectrum(x)
    assert profile.pc1[1].value == pytest.approx(r[0]) and profile.pc1[2].value == pytest.approx(r[0])
    assert profile.pc12[1].value == pytest.approx(r[0] + r[1])
    for e in profile.pc1 + profile.pc12:
        assert e.low <= e.value <= e.high and e.confidence == 0.95
    assert profile.beats_null_pc1 == (False, True, True)
    assert profile.null[0].pc1.low <= profile.pc1[0].value <= profile.null[0].pc1.high
    assert profile.null[0].pc1.value > 0.05  # n = 40 < d = 60: noise PC1 is well above 5 %
    # entropy grows with t; the data of layer 7 are negated, so its raw PC1 is flipped back
    assert profile.orientation[3] * profile.orientation[7] == -1
    np.testing.assert_allclose(profile.pc1_coords[2], -profile.pc1_coords[1], atol=1e-9)
    for layer in (3, 7):
        oriented = profile.orientation[layer] * profile.pc1_coords[profile.layers.index(layer)]
        assert np.corrcoef(oriented, profile.next_entropy)[0, 1] > 0.8
    assert sorted(profile.coords) == [3, 7]  # the final layer is always kept for scatter plots
    np.testing.assert_allclose(profile.coords[7][:, 0], profile.pc1_coords[2])


def test_profile_is_deterministic_and_gaussian_null_is_shared(profile):
    rng = np.random.default_rng(1)
    noise = rng.standard_normal((N, D))
    x, t = planted(strength=1.5, seed=2)
    again = value_manifold(
        np.stack([noise, x, -x]),
        (0, 3, 7),
        profile.next_entropy,
        model="toy",
        scatter_layers=(3,),
        random_state=0,
        **FAST,
    )
    assert again == profile
    g = value_manifold(np.stack([noise, x]), (0, 1), t, null_kind="gaussian", random_state=0, **FAST)
    assert g.null[0] == g.null[1] and g.null[0].kind == "gaussian"


def test_profile_json_round_trip_is_exact(profile):
    back = ManifoldProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert back == profile
    assert back.to_dict() == profile.to_dict()
    np.testing.assert_array_equal(back.pc1_coords, profile.pc1_coords)
    assert back.orientation == profile.orientation and set(back.coords) == {3, 7}


@pytest.mark.parametrize(
    "change",
    [
        dict(beats_null_pc1=(True, True, True)),
        dict(orientation={0: 1, 3: 0, 7: 1}),
        dict(orientation={0: 1, 3: 1}),
        dict(pc1=(Estimate(1.2, 1.1, 1.3),) * 3),
        dict(pr=(Estimate(0.5, 0.4, 0.6),) * 3),
        dict(coords={7: np.zeros((N, 3))}),
        dict(coords={5: np.zeros((N, 2))}),
        dict(next_entropy=np.zeros(N - 1)),
        dict(pc1_coords=np.zeros((2, N))),
        dict(layers=(0, 3, 3)),
    ],
)
def test_profile_rejects_inconsistent_fields(profile, change):
    fields = {f.name: getattr(profile, f.name) for f in dataclasses.fields(profile)}
    with pytest.raises(ValueError):
        ManifoldProfile(**{**fields, **change})


def test_profile_arrays_are_read_only(profile):
    with pytest.raises(ValueError):
        profile.next_entropy[0] = 1.0


def test_value_manifold_validates_inputs():
    x = np.random.default_rng(3).standard_normal((2, N, D))
    e = np.zeros(N)
    with pytest.raises(ValueError):
        value_manifold(x, (0,), e, **FAST)
    with pytest.raises(ValueError):
        value_manifold(x, (0, 1), e[:-1], **FAST)
    with pytest.raises(ValueError):
        value_manifold(x, (0, 1), e, scatter_layers=(5,), **FAST)
    bad = x.copy()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError):
        value_manifold(bad, (0, 1), e, **FAST)


def test_a_layer_without_variance_is_reported_as_undefined_not_an_error():
    """Prompts that share their final token have identical layer-0 values: that layer's PCA is
    undefined (NaN estimates, zero coordinates); the other layers are analysed as usual."""
    import math

    rng = np.random.default_rng(0)
    n = 12
    values = rng.normal(size=(2, n, 8))
    values[0] = values[0, :1]  # layer 0: every prompt identical
    prof = value_manifold(values, (0, 1), rng.uniform(0, 3, n), scatter_layers=(0,), n_resamples=20, null_draws=20)
    assert math.isnan(prof.pc1[0].value) and math.isnan(prof.pr[0].value) and not prof.beats_null_pc1[0]
    assert (prof.coords[0] == 0).all() and 0 < prof.pc1[1].value < 1
    assert json.loads(json.dumps(prof.to_dict())) == prof.to_dict()


def test_bootstrap_se_with_three_prompts_leaves_out_the_resamples_without_variance():
    """Issue 27: with 3 prompts, 1 resample in 9 draws one prompt three times (no variance, no
    spectrum); that crashed on a reshape. The SE is now that of the other resamples, checked against
    the spectra of the explicitly repeated rows (``spectrum``), resample by resample."""
    from geoprobe.analysis.manifold import spectrum_se
    from geoprobe.analysis.stats import participation_ratio

    x = np.random.default_rng(3).normal(size=(3, 16))
    R = 300
    se = spectrum_se(x, R, np.random.default_rng(5))
    idx = np.random.default_rng(5).integers(0, 3, size=(R, 3))  # the draws spectrum_se makes
    stats = []
    for rows in idx:
        if len(set(rows.tolist())) < 2:
            continue  # one prompt three times
        r = spectrum(x[rows])
        stats.append((r[0], r[:2].sum(), participation_ratio(r)))
    assert 0.05 * R < R - len(stats) < 0.2 * R  # about 1 in 9 left out
    np.testing.assert_allclose(se, np.std(stats, axis=0, ddof=1), rtol=1e-9, atol=1e-12)
    # no resample with variance (every prompt the same): no SE at all (NaN), not a crash
    assert np.isnan(spectrum_se(np.repeat(x[:1], 3, axis=0), 10, np.random.default_rng(0))).all()


# -- many prompts (issue 27) ---------------------------------------------------------------------------
def test_the_spectrum_bootstrap_draws_its_resamples_in_chunks_with_the_same_numbers(monkeypatch):
    from geoprobe.analysis import stats
    from geoprobe.analysis.manifold import spectrum_se

    x = np.random.default_rng(3).normal(size=(40, 10))
    whole = spectrum_se(x, 300, np.random.default_rng(1))
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 100)  # two resamples per chunk
    assert np.array_equal(spectrum_se(x, 300, np.random.default_rng(1)), whole)


def _planted_values(n: int, d: int = 12, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = rng.uniform(0, 5, n)
    axis = rng.normal(size=d)
    x = np.outer(h - h.mean(), axis) + rng.normal(size=(n, d))
    return x[None], h


def test_many_prompts_fit_each_layer_on_the_d_by_d_covariance_with_the_same_profile(monkeypatch):
    """Above 2,000 prompts a layer's PCA uses the D × D covariance instead of the n × n Gram matrix:
    the same spectrum and loadings, so the same profile to rounding."""
    from geoprobe.analysis import manifold

    x, h = _planted_values(300)
    kw = dict(n_resamples=20, null_draws=10, random_state=0)
    gram = value_manifold(x, [0], h, **kw)
    monkeypatch.setattr(manifold, "_GRAM_ELEMENTS", 1000)  # 300² > 1000: the covariance
    cov = value_manifold(x, [0], h, **kw)
    for name in ("pc1", "pc12", "pr"):
        a, b = getattr(gram, name)[0], getattr(cov, name)[0]
        assert a.value == pytest.approx(b.value, rel=1e-10) and a.high == pytest.approx(b.high, rel=1e-10)
    assert np.allclose(gram.coords[0], cov.coords[0], atol=1e-9)
    assert np.allclose(gram.pc1_coords, cov.pc1_coords, atol=1e-9)


def test_a_layer_of_many_prompts_never_holds_an_n_by_n_matrix():
    """Was: 6,000 prompts built a 6,000 × 6,000 Gram matrix per layer (288 MB, and 163 s for 4 layers of
    8,000; 8 TB at a million prompts)."""
    import tracemalloc

    x, h = _planted_values(6000, d=16)
    tracemalloc.start()
    try:
        value_manifold(x, [0], h, n_resamples=10, null_draws=2, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_layers_with_their_own_value_widths():
    """Per-layer head layouts: one (n, D_l) array per layer; each layer's PCA is its own, and a list of
    equal widths gives exactly the stacked array's profile."""
    from geoprobe.analysis.manifold import ValueManifold, value_manifold

    rng = np.random.default_rng(1)
    per_layer = [rng.normal(size=(40, 6)), rng.normal(size=(40, 24))]
    h = rng.uniform(0, 4, size=40)
    prof = value_manifold(per_layer, [0, 1], h, n_resamples=20, null_draws=10)
    for i, x in enumerate(per_layer):
        assert prof.pc1[i].value == pytest.approx(ValueManifold().fit(x).explained_variance_ratio_[0], abs=1e-10)
        assert prof.null[i].d == x.shape[1]  # the null matched to the layer's own n × d
    assert prof.d == 24
    same = [rng.normal(size=(40, 6)) for _ in range(2)]
    a = value_manifold(same, [0, 1], h, n_resamples=20, null_draws=10)
    assert a == value_manifold(np.stack(same), [0, 1], h, n_resamples=20, null_draws=10)
