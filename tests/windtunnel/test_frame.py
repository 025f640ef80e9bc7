"""Frame vs precision over training seeds (issue 37 item 4): five seeds of the tiny bijection through the real
code path (`geoprobe run` of a recipe with `seeds = 5`), the interval against a plain numpy/scipy computation
on the per-seed t90s, planted per-seed t90s for each verdict, and one run's prompt-level bootstrap."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import scipy.stats

from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.frame import FramePrecision, read_runs, verdict
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.seeds import TunnelSeeds
from geoprobe.windtunnel.t90 import frame_fraction, precision_fraction, t90, t90_interval

SEEDS = (0, 1, 2, 3, 4)
# the tiny bijection at V = K = 4 and 200 steps: small enough for seconds a seed, long enough that every
# seed's entropy error falls (at the tiny scale's 40 steps it does not, and no precision t90 exists)
RECIPE = """[probe]
command = "windtunnel"
[windtunnel]
task = "bijection"
scale = "tiny"
arch = "transformer"
steps = 200
vocab = 4
length = 4
ablations = false
threads = 1
seeds = 5
"""


def plain_t90(steps, frac):
    """The first crossing of 0.9, linear in log(step + 1) (np.interp), written apart from geoprobe's."""
    i = next(k for k, f in enumerate(frac) if f >= 0.9)
    if i == 0:
        return float(steps[0])
    x = np.log1p([steps[i - 1], steps[i]])
    return float(np.expm1(np.interp(0.9, [frac[i - 1], frac[i]], x)))


def plain_t_interval(d):
    d = np.asarray(d, dtype=np.float64)
    half = scipy.stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return d.mean(), d.mean() - half, d.mean() + half


@pytest.fixture(scope="module")
def five(tmp_path_factory):
    from tests.cli.test_cli import run_main

    top = tmp_path_factory.mktemp("frames")
    recipe = top / "frames.toml"
    recipe.write_text(RECIPE)
    code, stdout, stderr = run_main(["run", str(recipe), "--out", str(top / "seeds")])
    assert code == 0, stderr
    return top / "seeds", stdout


def test_five_tiny_seeds_the_interval_is_a_t_interval_of_the_per_seed_differences(five):
    out, stdout = five
    res = TunnelSeeds.load(out)
    fp = res.frame_precision
    assert res.seeds == SEEDS and fp is not None and fp.task == "bijection"
    assert fp.n_seeds == 5, [r.note for r in fp.seeds]  # every seed's error fell: the test is not vacuous
    tf, tp = [], []
    for s, row in zip(SEEDS, fp.seeds):
        g = WindTunnelResult.load(out / f"seed-{s}").geometry
        assert row.seed == s and g.steps == (0, 5, 33, 200)
        # the t90s from the stored curves, recomputed apart from geoprobe's code
        frame = 1 - np.asarray(g.frame_tv) / g.frame_tv[0]
        mae = np.asarray(g.mae_sample)
        precision = np.log(mae[0] / mae) / np.log(mae[0] / mae[-1])
        assert row.t90_frame == pytest.approx(plain_t90(g.steps, frame), rel=1e-9)
        assert row.t90_precision == pytest.approx(plain_t90(g.steps, precision), rel=1e-9)
        assert row.prompt_interval.to_dict() == g.t90_interval.difference.to_dict()
        tf.append(row.t90_frame)
        tp.append(row.t90_precision)
    d_log = np.log1p(tf) - np.log1p(tp)
    d_steps = np.subtract(tf, tp)
    np.testing.assert_allclose([r.difference_log for r in fp.seeds], d_log, rtol=0, atol=1e-12)
    for est, d in ((fp.difference_log, d_log), (fp.difference_steps, d_steps)):
        want = plain_t_interval(d)
        np.testing.assert_allclose((est.value, est.low, est.high), want, rtol=0, atol=1e-12 * max(1.0, abs(want[0])))
    m, lo, hi = plain_t_interval(d_log)
    assert fp.verdict == (
        "frame first" if hi < 0 else "precision first" if lo > 0 else "no dissociation detected (5 seeds)"
    )
    # the command line's summary and the page show it
    assert "frame vs precision over seeds" in stdout and fp.verdict in stdout
    page = (out / "seeds.html").read_text(encoding="utf-8")
    assert "Frame vs precision over seeds" in page and 'id="frame-seeds"' in page
    one = (out / "seed-0" / "windtunnel.html").read_text(encoding="utf-8")
    assert "One training seed: not testable" in one


def test_read_runs_from_the_seed_directories_agrees_with_seeds_json(five, tmp_path):
    out, _ = five
    stored = TunnelSeeds.load(out).frame_precision
    for paths in ([out], [out / f"seed-{s}" for s in reversed(SEEDS)]):
        found = read_runs(paths)
        assert list(found) == ["bijection (tiny, geoprobe, 200 steps)"]
        assert found["bijection (tiny, geoprobe, 200 steps)"].to_dict() == stored.to_dict()
    # a sweep over the wind tunnel's seed keeps each run in cells/<id>/ (its layout, files copied here)
    for s in SEEDS:
        (tmp_path / "sweep" / "cells" / f"{s}-cell").mkdir(parents=True)
        shutil.copy(out / f"seed-{s}" / "windtunnel.json", tmp_path / "sweep" / "cells" / f"{s}-cell")
    assert read_runs([tmp_path / "sweep"])["bijection (tiny, geoprobe, 200 steps)"].to_dict() == stored.to_dict()
    with pytest.raises(GeoprobeError, match="seed 0 appears twice"):
        read_runs([out, out / "seed-0"])
    with pytest.raises(GeoprobeError, match="holds no windtunnel.json"):
        read_runs([tmp_path / "sweep" / "cells"])


@pytest.mark.parametrize(
    "tf, tp, want",
    [
        ([100, 150, 120, 90, 300], [200, 260, 180, 200, 500], "frame first"),  # frame first in every seed
        ([300, 400, 250, 260, 900], [100, 150, 120, 90, 300], "precision first"),
        ([100, 400, 120, 260, 300], [200, 150, 180, 90, 500], "no dissociation detected (5 seeds)"),  # mixed signs
    ],
)
def test_planted_per_seed_t90s_give_the_verdict(tf, tp, want):
    fp = FramePrecision.of("hmm", SEEDS, tf, tp)
    assert fp.verdict == want and fp.n_seeds == 5
    want_mean = plain_t_interval(np.log1p(tf) - np.log1p(tp))
    assert (fp.difference_log.value, fp.difference_log.low, fp.difference_log.high) == pytest.approx(
        want_mean, abs=1e-12
    )
    assert FramePrecision.from_dict(fp.to_dict()).to_dict() == fp.to_dict()


def test_one_seed_or_undefined_seeds_are_not_testable():
    one = FramePrecision.of("bijection", [3], [100.0], [200.0])
    assert one.verdict == "one seed: not testable" and math.isnan(one.difference_log.low)
    assert one.difference_log.value == pytest.approx(math.log(101 / 201), abs=1e-12)
    # a seed whose error did not fall has no precision t90: listed with the reason, left out of the mean
    fp = FramePrecision.of("hmm", SEEDS, [100, 150, 120, 90, 300], [200, math.nan, 180, 200, 500])
    assert fp.n_seeds == 4 and "did not fall" in fp.seeds[1].note and not fp.seeds[1].defined
    assert fp.difference_log.value == pytest.approx(
        np.mean(np.log1p([100, 120, 90, 300]) - np.log1p([200, 180, 200, 500]))
    )
    none = FramePrecision.of("hmm", [0, 1], [math.nan, 5.0], [1.0, math.nan])
    assert none.n_seeds == 0 and none.verdict.startswith("no seed") and math.isnan(none.difference_log.value)
    assert verdict(fp.difference_log, 4) == fp.verdict
    with pytest.raises(ValueError, match="repeat"):
        FramePrecision.of("hmm", [0, 0], [1.0, 2.0], [3.0, 4.0])


def test_fractions_and_t90_on_planted_curves():
    steps = (0, 9, 99, 999)
    assert t90(steps, np.array([0.0, 0.5, 0.95, 1.0])) == pytest.approx(
        plain_t90(steps, [0.0, 0.5, 0.95, 1.0]), rel=1e-12
    )
    assert t90(steps, np.array([0.0, 0.95, 0.97, 1.0])) == pytest.approx(10 ** (0.9 / 0.95) - 1, rel=1e-12)
    # an error that did not fall, attention that never moved: undefined, not "step 0"
    assert np.isnan(precision_fraction(np.array([1.0, 1.1, 1.2, 1.1]))).all()
    assert np.isnan(frame_fraction(np.zeros(4))).all()
    assert math.isnan(t90(steps, precision_fraction(np.array([1.0, 0.9, 1.0, 1.0]))))
    np.testing.assert_allclose(precision_fraction(np.array([1.0, 0.1, 0.01])), [0.0, 0.5, 1.0], atol=1e-15)


def _planted_curves(n=400, m=300, noise=0.02, seed=0):
    """Per-prompt TV and per-sequence MAE around known mean curves (frame ahead of precision)."""
    rng = np.random.default_rng(seed)
    steps = (0, 10, 100, 1000, 10000)
    tv = np.array([0.5, 0.3, 0.08, 0.02, 0.0])
    mae = np.array([1.0, 0.8, 0.2, 0.02, 0.01])
    tv_p = tv[:, None] + noise * rng.standard_normal((5, n)) * (tv[:, None] > 0)
    mae_s = mae[:, None] * np.exp(noise * rng.standard_normal((5, m)))
    return steps, tv_p, mae_s


def test_one_run_bootstrap_against_a_plain_loop_and_on_constant_prompts():
    steps, tv_p, mae_s = _planted_curves()
    got = t90_interval(steps, tv_p, mae_s, n_resamples=200, seed=5)
    rng = np.random.default_rng(5)
    ip = rng.integers(0, tv_p.shape[1], size=(200, tv_p.shape[1]))
    js = rng.integers(0, mae_s.shape[1], size=(200, mae_s.shape[1]))
    draws = []
    for b in range(200):
        f = plain_t90(steps, 1 - tv_p[:, ip[b]].mean(1) / tv_p[0, ip[b]].mean())
        mb = mae_s[:, js[b]].mean(1)
        p = plain_t90(steps, np.log(mb[0] / mb) / np.log(mb[0] / mb[-1]))
        draws.append((f, p, np.log1p(f) - np.log1p(p)))
    want = np.quantile(np.array(draws), [0.025, 0.975], axis=0)
    for k, est in enumerate((got.frame, got.precision, got.difference)):
        np.testing.assert_allclose((est.low, est.high), want[:, k], rtol=1e-9)
    assert got.difference.high < 0 and got.undefined == 0  # planted: the frame is ahead, far beyond the noise
    # every prompt the same curve: nothing to resample, the interval is the point
    flat = t90_interval(
        steps, np.repeat(tv_p.mean(1, keepdims=True), 50, 1), np.repeat(mae_s.mean(1, keepdims=True), 40, 1)
    )
    for est in (flat.frame, flat.precision, flat.difference):
        assert est.low == pytest.approx(est.value, rel=1e-12) and est.high == pytest.approx(est.value, rel=1e-12)
    # an error that rose: no t90, no interval
    rising = t90_interval(steps, tv_p, mae_s[::-1], n_resamples=50)
    assert math.isnan(rising.precision.value) and math.isnan(rising.difference.low) and rising.undefined == 50
