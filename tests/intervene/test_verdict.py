"""The calibration verdict of `geoprobe intervene`: the rule on planted outcomes, the two-level
bootstrap against its expected spread, the headline choice, and old files without a verdict."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from geoprobe.analysis.stats import Estimate
from geoprobe.intervene import InterventionResult
from geoprobe.intervene.report import sections
from geoprobe.intervene.verdict import (
    MARGIN_BITS,
    CalibrationVerdict,
    TargetVerdict,
    calibration_change,
    calibration_verdict,
    decide,
    headline,
)
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE

N, M = 200, 5


def _planted(seed: int = 0):
    """Targets and an unperturbed model: the posterior entropy in [0, 1], the predictive entropy
    above it, and a model whose label entropy sits 0.1 bits below the posterior entropy."""
    rng = np.random.default_rng(seed)
    hp = rng.uniform(0.1, 0.9, N)
    hq = 0.47 + 0.53 * hp
    base = hp - 0.1
    return rng, {POSTERIOR: hp, PREDICTIVE: hq}, base


def test_reads_out_when_the_axis_edit_moves_calibration_no_more_than_random_edits():
    rng, targets, base = _planted()
    axis = base + rng.normal(0, 0.005, N)
    controls = base + rng.normal(0, 0.005, (M, N))
    v = calibration_verdict((10, 20), 1.0, "cut", targets, base, axis, controls, n_resamples=500)
    assert [t.outcome for t in v.targets] == ["reads out", "reads out"]
    assert [t.target for t in v.targets] == [POSTERIOR, PREDICTIVE]
    assert "the axis reads out, it does not steer" in v.line and v.line.startswith("Verdict (layers 10,20, cut 1)")
    for t in v.targets:
        assert -MARGIN_BITS <= t.difference.low <= t.difference.value <= t.difference.high <= MARGIN_BITS


def test_steers_when_the_axis_edit_worsens_calibration_beyond_random_edits():
    rng, targets, base = _planted(1)
    axis = base - 0.08 + rng.normal(0, 0.01, N)  # 0.08 bits further below the posterior entropy
    controls = base + rng.normal(0, 0.01, (M, N))
    v = calibration_verdict((5,), 1.0, "cut", targets, base, axis, controls, n_resamples=500)
    post = v.targets[0]
    assert post.outcome == "steers" and post.difference.low > MARGIN_BITS
    assert post.axis_change.value == pytest.approx(0.08, abs=0.005)  # |Ĥ − H| grows by 0.08 on every prompt
    assert post.random_change.value == pytest.approx(0.0, abs=0.005)
    assert "worsens calibration beyond random axes: the axis steers" in v.line
    assert v.outcome(PREDICTIVE) == "steers"


def test_steers_when_the_axis_edit_improves_calibration_and_the_targets_can_disagree():
    rng, targets, base = _planted(2)
    axis = targets[POSTERIOR] + rng.normal(0, 0.005, N)  # the edit makes the model match the posterior entropy
    controls = base + rng.normal(0, 0.005, (M, N))
    v = calibration_verdict((5,), 1.0, "cut", targets, base, axis, controls, n_resamples=500)
    post = v.targets[0]
    assert post.outcome == "steers" and post.difference.high < 0
    # |Ĥ − H| drops from 0.1 to |N(0, 0.005)|, whose mean is 0.005 √(2/π)
    assert post.axis_change.value == pytest.approx(-0.1 + 0.005 * math.sqrt(2 / math.pi), abs=0.002)
    assert "improves calibration beyond random axes" in post.clause("cut", MARGIN_BITS)
    # against the predictive entropy (0.47 + 0.53 H_post ≥ H_post) the same edit helps too, by a different amount
    pred = v.targets[1]
    expected = np.mean(np.abs(axis - targets[PREDICTIVE]) - np.abs(base - targets[PREDICTIVE]))
    assert pred.axis_change.value == pytest.approx(expected, abs=1e-12)


def test_inconclusive_when_the_difference_is_too_noisy_to_tell():
    rng, targets, _ = _planted(3)
    base = targets[POSTERIOR] - 0.3  # |Ĥ₀ − H| = 0.3
    sign = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    axis = base - 0.2 * sign  # the error becomes 0.5 or 0.1 on alternate prompts: mean change exactly 0, sd 0.2
    controls = base + rng.normal(0, 0.005, (M, N))
    v = calibration_verdict((5,), 1.0, "cut", {POSTERIOR: targets[POSTERIOR]}, base, axis, controls, n_resamples=1000)
    d = v.targets[0].difference
    assert v.targets[0].axis_change.value == pytest.approx(0.0, abs=1e-12)
    assert d.low < 0 < d.high and d.high - d.low > 2 * MARGIN_BITS  # half-width ≈ 1.96 · 0.2 / √200 ≈ 0.028
    assert v.targets[0].outcome == "inconclusive" and "inconclusive" in v.line


def test_decide_on_the_boundaries():
    assert decide(Estimate(0.0, -MARGIN_BITS, MARGIN_BITS)) == "reads out"
    assert decide(Estimate(0.015, 0.011, 0.019)) == "reads out"  # detectable but inside the margin
    assert decide(Estimate(0.03, 0.001, 0.05)) == "steers"
    assert decide(Estimate(-0.03, -0.05, -0.001)) == "steers"
    assert decide(Estimate(0.0, -0.03, 0.01)) == "inconclusive"
    assert decide(Estimate(math.nan, math.nan, math.nan)) == "inconclusive"


def test_the_difference_is_axis_minus_random_mean_and_its_ci_carries_both_spreads():
    rng = np.random.default_rng(4)
    h = np.zeros(400)
    base = np.full(400, 0.5)  # |Ĥ₀ − H| = 0.5 everywhere
    noise = rng.normal(0, 0.1, 400)
    axis = base + noise  # d_A,i = noise_i (base + noise stays above H = 0)
    offsets = np.array([-0.03, -0.01, 0.0, 0.01, 0.03])
    controls = base + offsets[:, None] + np.zeros((1, 400))  # no spread between prompts, only between axes
    a, r, d = calibration_change(h, base, axis, controls, n_resamples=4000, random_state=1)
    assert a.value == pytest.approx(noise.mean(), abs=1e-12) and r.value == pytest.approx(0.0, abs=1e-12)
    assert d.value == pytest.approx(a.value - r.value, abs=1e-12)
    # the axis change: prompts only, normal approximation sd / √n (MC tolerance 15 %)
    half = 1.96 * noise.std(ddof=1) / math.sqrt(400)
    assert (a.high - a.low) / 2 == pytest.approx(half, rel=0.15)
    # the random mean: prompts are identical, so its whole CI comes from resampling the 5 axes:
    # the bootstrap mean of 5 values has sd = sd(offsets, ddof 0) / √5
    half_r = 1.96 * offsets.std() / math.sqrt(5)
    assert (r.high - r.low) / 2 == pytest.approx(half_r, rel=0.25)
    # the difference's CI holds both: wider than either alone
    assert d.high - d.low > max(a.high - a.low, r.high - r.low)


def test_headline_is_the_multi_layer_edit_at_its_strongest():
    def v(layers, s):
        return calibration_verdict(
            layers, s, "cut", {POSTERIOR: np.zeros(4)}, np.ones(4), np.ones(4), np.ones((1, 4)), n_resamples=20
        )

    vs = [v((15,), 1.0), v((10, 15, 20), 0.5), v((10, 15, 20), 1.0), v((29,), 1.0)]
    assert headline(vs) == 2
    assert headline([v((3,), -2.0), v((3,), 2.0)]) == 1


def test_verdict_round_trips_and_rejects_bad_outcomes():
    _, targets, base = _planted()
    v = calibration_verdict((1,), 0.5, "cut", targets, base, base, base[None, :], n_resamples=50)
    back = CalibrationVerdict.from_dict(json.loads(json.dumps(v.to_dict())))
    assert back == v and back.line == v.line
    t = v.targets[0]
    with pytest.raises(ValueError, match="outcome 'maybe'"):
        TargetVerdict(t.target, t.axis_change, t.random_change, t.difference, t.n_controls, "maybe")


def test_a_0_1_0_file_has_no_verdict_and_says_so():
    old = InterventionResult.load(Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "intervene.json")
    assert old.verdicts is None and old.verdict is None
    first = sections(old)[0]
    assert first.title == "Verdict" and "No calibration verdict" in first.html
    assert all(r["metric"] != "sula_mae_posterior" for r in old.summary())


def test_the_verdicts_resamples_are_drawn_in_chunks_with_the_same_numbers(monkeypatch):
    """Controls × resamples × prompts are resampled ~32 MB at a time (issue 27: 1,000 controls × 10^5
    resamples × 5,000 prompts held 4 TB at once): the same draws, the same estimates."""
    from geoprobe.analysis import stats

    rng = np.random.default_rng(0)
    h, base, axis = rng.random(100), rng.random(100), rng.random(100)
    controls = rng.random((7, 100))
    whole = calibration_change(h, base, axis, controls, n_resamples=3000, random_state=1)
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 900)  # a handful of resamples a chunk
    chunked = calibration_change(h, base, axis, controls, n_resamples=3000, random_state=1)
    assert [e.to_dict() for e in whole] == [e.to_dict() for e in chunked]


def test_the_verdict_of_many_controls_and_prompts_holds_chunks_not_the_whole_resample():
    """Was: 20 controls × 1,000 resamples × 1,500 prompts resampled at once, 240 MB (and 4 TB at the
    limits); now about one 32 MB chunk at a time."""
    import tracemalloc

    rng = np.random.default_rng(1)
    h, base, axis = rng.random(1500), rng.random(1500), rng.random(1500)
    controls = rng.random((20, 1500))
    tracemalloc.start()
    try:
        calibration_change(h, base, axis, controls, n_resamples=1000, random_state=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 120 * 2**20, f"{peak / 2**20:.0f} MiB"
