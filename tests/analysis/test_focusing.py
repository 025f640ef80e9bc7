"""Attention focusing on planted entropies: exact means, reduction and its test, Jensen, round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from geoprobe.analysis.focusing import AttentionFocusing, attention_focusing
from geoprobe.analysis.stats import Estimate


def _entropy_bits(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(p), 0.0)
    return terms.sum(axis=-1)


@pytest.fixture
def planted():
    """L=5 layers, n=40 prompts, H=6 heads; head entropies fall from ~4 to ~1 bit."""
    rng = np.random.default_rng(0)
    L, n, H = 5, 40, 6
    level = np.linspace(4.0, 1.0, L)[:, None, None]
    e = level + rng.uniform(-0.5, 0.5, size=(L, n, H))
    n_tokens = rng.integers(20, 60, size=n)
    return e, n_tokens


def test_layer_means_are_exact(planted):
    e, n_tokens = planted
    layers = [0, 2, 4, 6, 8]
    af = attention_focusing(e, layers, n_tokens, model="planted")
    np.testing.assert_array_equal(af.per_prompt, e.mean(axis=2))
    for row, est in zip(e.mean(axis=2), af.mean):
        assert isinstance(est, Estimate)
        assert est.value == row.mean()
        assert est.low <= est.value <= est.high and est.confidence == 0.95
    np.testing.assert_array_equal(np.array(af.head_band_10_90).T, np.percentile(e.mean(axis=1), [10, 90], axis=1))
    assert af.uniform == (float(np.mean(np.log2(n_tokens))),) * 5
    assert af.layers == tuple(layers) and af.n == 40 and af.model == "planted"
    assert not af.per_prompt.flags.writeable


def test_planted_head_entropies_give_exact_means_without_noise():
    e = np.broadcast_to(np.array([3.0, 2.5, 1.0, 0.5])[:, None, None], (4, 8, 2)).copy()
    e[:, :, 1] += 1.0  # head 1 one bit above head 0: head mean = level + 0.5
    af = attention_focusing(e, range(4), np.full(8, 16))
    assert [m.value for m in af.mean] == [3.5, 3.0, 1.5, 1.0]
    assert all(m.low == m.high == m.value for m in af.mean)  # no spread over prompts
    assert af.head_band_10_90 == tuple((lvl + 0.1, lvl + 0.9) for lvl in (3.0, 2.5, 1.0, 0.5))
    assert af.uniform == (4.0,) * 4
    assert af.reduction.value == pytest.approx(100 * (1 - 1.0 / 3.5), rel=1e-14)


def test_decreasing_profile_gives_reduction_and_small_p(planted):
    e, n_tokens = planted
    af = attention_focusing(e, range(5), n_tokens, n_resamples=1000)
    pp = e.mean(axis=2)
    assert af.reduction.value == pytest.approx(100 * (1 - pp[-1].mean() / pp[0].mean()), rel=1e-12)
    assert 70 < af.reduction.value < 80  # planted 4 -> 1 bit: 75 %
    assert af.reduction.low <= af.reduction.value <= af.reduction.high
    assert af.reduction.low > 60 and af.reduction.high < 90
    assert af.reduction_p <= 2 / 1001  # no sign flip of 40 positive differences reaches the observed mean


def test_flat_profile_has_ci_containing_zero():
    rng = np.random.default_rng(1)
    e = 3.0 + rng.normal(0, 0.4, size=(6, 50, 4))
    af = attention_focusing(e, range(6), np.full(50, 32))
    assert af.reduction.low < 0 < af.reduction.high
    assert af.reduction_p > 0.05


def test_identical_first_and_last_layer():
    rng = np.random.default_rng(2)
    e = rng.uniform(0, 3, size=(1, 10, 3))
    af = attention_focusing(e, [7], np.full(10, 12))
    assert (af.reduction.value, af.reduction.low, af.reduction.high) == (0.0, 0.0, 0.0)
    assert af.reduction_p == 1.0


def test_one_prompt_has_a_degenerate_interval_and_no_test():
    e = np.array([[[3.0, 2.0]], [[1.0, 1.0]]])  # (L=2, n=1, H=2)
    af = attention_focusing(e, [0, 1], np.array([9]))
    assert af.mean[0] == Estimate(2.5, 2.5, 2.5) and af.reduction == Estimate(60.0, 60.0, 60.0)
    assert math.isnan(af.reduction_p)


def test_zero_entropy_first_layer_makes_reduction_undefined():
    e = np.zeros((3, 4, 2))
    e[1:] = 1.0
    af = attention_focusing(e, range(3), np.full(4, 1))
    assert math.isnan(af.reduction.value) and math.isnan(af.reduction_p)
    assert af.to_dict()["reduction_p"] is None


def test_seeded_and_generator_random_state(planted):
    e, n_tokens = planted
    a = attention_focusing(e, range(5), n_tokens, random_state=3)
    b = attention_focusing(e, range(5), n_tokens, random_state=3)
    c = attention_focusing(e, range(5), n_tokens, random_state=np.random.default_rng(3))
    assert a == b
    assert c.reduction.value == a.reduction.value


def test_small_n_uses_an_exact_sign_flip_test():
    """n=5 prompts, all differences positive: exactly 1 of the 2^5 sign patterns reaches the
    observed mean, p = 1/32."""
    e = np.stack([np.full((5, 2), 3.0), np.full((5, 2), 1.0)])
    e[0, :, 0] += np.arange(5) * 0.1
    af = attention_focusing(e, [0, 1], np.full(5, 8))
    assert af.reduction_p == pytest.approx(1 / 32)


def test_entropy_of_average_is_at_least_average_entropy():
    """Jensen: H(mean_h p_h) >= mean_h H(p_h); equal when all heads agree; the two-token example
    of the docs gives 1 bit against 0.469 bits."""
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(20, 0.3), size=(100, 8))  # (prompts, heads, tokens)
    mean_entropy = _entropy_bits(p).mean(axis=1)
    entropy_of_mean = _entropy_bits(p.mean(axis=1))
    assert np.all(entropy_of_mean >= mean_entropy - 1e-12)
    assert np.all(entropy_of_mean - mean_entropy > 0.1)  # heads disagree: a large gap
    same = np.repeat(p[:, :1], 8, axis=1)
    np.testing.assert_allclose(_entropy_bits(same.mean(axis=1)), _entropy_bits(same).mean(axis=1), atol=1e-12)
    two = np.array([[0.9, 0.1], [0.1, 0.9]])
    assert _entropy_bits(two).mean() == pytest.approx(0.4690, abs=1e-4)
    assert _entropy_bits(two.mean(axis=0)) == pytest.approx(1.0)
    # attention_focusing averages entropies: it reports the per-head mean, not the larger number
    af = attention_focusing(_entropy_bits(p)[None], [0], np.full(100, 20))
    np.testing.assert_allclose(af.per_prompt[0], mean_entropy, rtol=1e-14)


def test_round_trips_exactly_through_json(planted):
    e, n_tokens = planted
    af = attention_focusing(e, [1, 3, 5, 7, 9], n_tokens, model="planted <i>&")
    d = af.to_dict()
    back = AttentionFocusing.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == af and back.to_dict() == d
    np.testing.assert_array_equal(back.per_prompt, af.per_prompt)
    assert back.mean == af.mean and back.reduction == af.reduction and back.reduction_p == af.reduction_p


def test_post_init_rejects_bad_results(planted):
    e, n_tokens = planted
    af = attention_focusing(e, range(5), n_tokens)
    good = {f: getattr(af, f) for f in af.__dataclass_fields__}
    est = af.mean[0]
    bad_cases = [
        dict(per_prompt=af.per_prompt[:4]),
        dict(n=39),
        dict(per_prompt=af.per_prompt - 10.0),
        dict(per_prompt=np.where(af.per_prompt > 3, np.nan, af.per_prompt)),
        dict(mean=af.mean[:4]),
        dict(mean=(1.0,) * 5),
        dict(head_band_10_90=af.head_band_10_90[:4]),
        dict(head_band_10_90=tuple((b, a) for a, b in af.head_band_10_90)),
        dict(uniform=af.uniform[:4]),
        dict(uniform=(-1.0,) * 5),
        dict(reduction=est.value),
        dict(reduction_p=1.5),
        dict(layers=(0, 1, 1, 2, 3)),
        dict(layers=()),
    ]
    for change in bad_cases:
        with pytest.raises(ValueError) as err:
            AttentionFocusing(**{**good, **change})
        assert "\n" not in str(err.value)


def test_attention_focusing_rejects_bad_input(planted):
    e, n_tokens = planted
    with pytest.raises(ValueError, match="shape"):
        attention_focusing(e[0], range(5), n_tokens)
    with pytest.raises(ValueError, match="layers"):
        attention_focusing(e, range(4), n_tokens)
    with pytest.raises(ValueError, match="n_tokens"):
        attention_focusing(e, range(5), n_tokens[:-1])
    with pytest.raises(ValueError, match="n_tokens"):
        attention_focusing(e, range(5), np.zeros_like(n_tokens))
    with pytest.raises(ValueError, match=">= 0"):
        attention_focusing(-e, range(5), n_tokens)
    bad = e.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="finite"):
        attention_focusing(bad, range(5), n_tokens)
    with pytest.raises(ValueError, match="confidence"):
        attention_focusing(e, range(5), n_tokens, confidence=1.0)


def test_layers_with_their_own_head_counts():
    """Per-layer head layouts: one (n, H_l) array per layer; each layer's mean and head band over its own heads."""
    from geoprobe.analysis.focusing import attention_focusing

    rng = np.random.default_rng(0)
    per_layer = [rng.uniform(1, 3, size=(6, 2)), rng.uniform(0, 1, size=(6, 8))]
    f = attention_focusing(per_layer, [0, 1], np.full(6, 16), n_resamples=50)
    for i, x in enumerate(per_layer):
        np.testing.assert_array_equal(f.per_prompt[i], x.mean(axis=1))
        assert f.head_band_10_90[i] == pytest.approx(tuple(np.percentile(x.mean(axis=0), [10, 90])), abs=1e-15)
    same = [rng.uniform(0, 3, size=(6, 4)) for _ in range(2)]
    assert attention_focusing(same, [0, 1], np.full(6, 16)) == attention_focusing(
        np.stack(same), [0, 1], np.full(6, 16)
    )
