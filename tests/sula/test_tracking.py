"""ρ_S(k, PC1) across prompts and the paired contrast of main with each control (issue 37), which replace
ρ(k, mean PC1) over five values of k (±1 whenever the five means are monotone, so −1.00 [−1.00, −1.00] in
the controls as in main). Planted structure: PC1 tracks k in main but not in the shuffled control
(detected there, not here; the contrast excludes 0); a control like the condition (the contrast covers 0;
an identical one gets no interval, and says why); the numbers against scipy.stats.spearmanr on the same
resamples (1e-12); the intervals' coverage over seeds; how the result is stored and shown."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats

from geoprobe.sula import SulaConfig, SulaResult, run_sula
from geoprobe.sula.geometry import geometry_stats
from geoprobe.sula.report import K_RHO, OLD_FILE, k_contrast_column, k_tracking_rows, sections, trajectory_figure
from geoprobe.sula.tracking import interval_text, resampled_indices, resampled_rho, track_k

K = np.repeat([0, 1, 2, 4, 8], 40)  # the default design's k values, 40 prompts each
TOL = 1e-12
#: an interval printed as a CI whose two ends are the same number
DEGENERATE = re.compile(r"\[([−+-]?\d+\.\d+), \1\]")


def _tracks_k(rng: np.random.Generator, slope: float = 1.0, noise: float = 0.5) -> np.ndarray:
    """PC1 that falls with log(1 + k) (towards confidence as examples accumulate), plus noise per prompt."""
    return -slope * np.log1p(K) + noise * rng.normal(size=K.size)


def _loop_rho(k: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The independent computation: scipy.stats.spearmanr on each resample, one at a time."""
    return np.array([scipy.stats.spearmanr(k[i], y[i]).statistic for i in idx])


# -- planted structure --------------------------------------------------------------------------
def test_pc1_that_tracks_k_is_detected_and_the_shuffled_control_is_not():
    # one seed (a null interval misses 0 one time in 20: calibration is the coverage test's, below)
    rng = np.random.default_rng(2)
    main, shuffled = _tracks_k(rng), 0.9 * rng.normal(size=K.size)  # shuffled: no relation to k
    out = track_k({"main": K, "shuffled": K}, {"main": main, "shuffled": shuffled}, random_state=2)
    rho_main, rho_shuf = out["main"][0], out["shuffled"][0]
    assert out["main"][1] is None  # main is the reference
    assert rho_main.rho.value < -0.6 and rho_main.rho.high < -0.5 and rho_main.p_value < 0.01
    assert rho_shuf.rho.low < 0 < rho_shuf.rho.high and rho_shuf.p_value > 0.05
    c = out["shuffled"][1]
    assert c.condition == "main" and c.control == "shuffled" and c.paired
    assert c.difference.value == pytest.approx(rho_main.rho.value - rho_shuf.rho.value, abs=TOL)
    assert c.difference.high < -0.3  # main tracks k more than the shuffled control: the interval excludes 0
    assert all(x.note is None for x in (rho_main, rho_shuf, c))


def test_the_per_k_means_cannot_tell_a_weak_control_from_main_and_the_prompts_can():
    """Both conditions' per-k mean PC1 fall monotonically with k, so ρ(k, mean PC1) is −1 in both (what
    geoprobe 0.1 reported); across prompts, main's ρ is strong, the control's weak, and their contrast
    excludes 0."""
    rng = np.random.default_rng(3)
    main = _tracks_k(rng)
    noise = rng.normal(size=K.size)
    for v in np.unique(K):  # centre the noise within each k: the control's means are exactly its weak trend
        noise[K == v] -= noise[K == v].mean()
    weak = -0.05 * np.log1p(K) + noise
    h = np.linspace(0, 1, K.size)
    for y in (main, weak):
        assert geometry_stats(K, y, h, n_resamples=50).rho_k_pc1.value == -1.0
    out = track_k({"main": K, "ablated": K}, {"main": main, "ablated": weak}, random_state=4)
    assert out["main"][0].rho.value < -0.7 and abs(out["ablated"][0].rho.value) < 0.2
    assert out["ablated"][1].difference.high < -0.4


def test_a_control_like_the_condition_covers_0_and_an_identical_one_has_no_interval():
    rng = np.random.default_rng(5)
    main, twin = _tracks_k(rng), _tracks_k(rng)  # the same planted trend, independent noise
    out = track_k({"main": K, "lexical_remap": K, "same": K}, {"main": main, "lexical_remap": twin, "same": main})
    c = out["lexical_remap"][1]
    assert c.difference.low < 0 < c.difference.high and c.note is None
    same = out["same"][1]
    assert same.difference.value == 0.0
    assert math.isnan(same.difference.low) and math.isnan(same.difference.high)  # not [0, 0]
    assert same.note == "same has the same PC1 as main on every prompt: the difference is 0 in every resample"
    assert interval_text(same.difference, same.note) == f"0.00 (no interval: {same.note})"  # zero has no sign
    assert interval_text(same.difference, same.note, reason=False) == "0.00 (no interval)"


def test_the_intervals_cover_at_their_level_over_seeds():
    """Over 100 seeds: the shuffled control's interval covers ρ = 0 and the contrast of main with a control
    of the same planted trend covers 0 at about the 95 % they claim (binomial sd 2.2 %; 3 sd below: 0.88)."""
    covers = np.zeros((100, 2), dtype=bool)
    for seed in range(100):
        rng = np.random.default_rng(1000 + seed)
        ys = {"main": _tracks_k(rng, noise=1.5), "twin": _tracks_k(rng, noise=1.5), "shuffled": rng.normal(size=K.size)}
        out = track_k({c: K for c in ys}, ys, n_resamples=400, random_state=seed)
        shuf, twin = out["shuffled"][0].rho, out["twin"][1].difference
        covers[seed] = (shuf.low < 0 < shuf.high, twin.low < 0 < twin.high)
    assert np.all(covers.mean(axis=0) >= 0.88), covers.mean(axis=0)


# -- against an independent computation ---------------------------------------------------------
def test_values_draws_and_intervals_match_spearmanr_on_the_same_resamples():
    rng = np.random.default_rng(7)
    ys = {"main": _tracks_k(rng), "shuffled": rng.normal(size=K.size), "ablated": _tracks_k(rng, slope=0.3)}
    seed, n = 11, 300
    out = track_k({c: K for c in ys}, ys, n_resamples=n, random_state=seed)
    # the resamples track_k draws (its docstring: the first of the seed's two spawned generators)
    idx = np.concatenate(list(resampled_indices(K, n, np.random.default_rng(seed).spawn(2)[0])))
    assert idx.shape == (n, K.size) and np.all(K[idx] == K)  # stratified: each k keeps its prompts
    assert all(set(idx[:, K == v].ravel()) <= set(np.flatnonzero(K == v)) for v in np.unique(K))
    loop = {c: _loop_rho(K, y, idx) for c, y in ys.items()}
    blocks = resampled_indices(K, n, np.random.default_rng(seed).spawn(2)[0], chunk=37)  # another block size
    draws = resampled_rho(K, np.stack(list(ys.values())), blocks)
    for row, c in zip(draws, ys):
        assert np.max(np.abs(row - loop[c])) < TOL
    q = [0.025, 0.975]
    for c, y in ys.items():
        rho = out[c][0].rho
        assert abs(rho.value - scipy.stats.spearmanr(K, y).statistic) < TOL
        assert np.max(np.abs(np.array([rho.low, rho.high]) - np.quantile(loop[c], q))) < TOL
        if c != "main":
            d = out[c][1].difference
            assert abs(d.value - (out["main"][0].rho.value - rho.value)) < TOL
            assert np.max(np.abs(np.array([d.low, d.high]) - np.quantile(loop["main"] - loop[c], q))) < TOL


def test_unpaired_conditions_are_resampled_independently():
    rng = np.random.default_rng(8)
    k2 = np.repeat([0, 2, 8], 30)  # another design: not the same prompts
    y1, y2 = _tracks_k(rng), -np.log1p(k2) + rng.normal(size=k2.size)
    with pytest.raises(ValueError, match="cannot be paired; pass paired=False"):
        track_k({"main": K, "other": k2}, {"main": y1, "other": y2})
    out = track_k({"main": K, "other": k2}, {"main": y1, "other": y2}, paired=False, n_resamples=200, random_state=3)
    c = out["other"][1]
    assert not c.paired
    g1, g2 = np.random.default_rng(3).spawn(2)[0].spawn(2)
    d = _loop_rho(K, y1, next(resampled_indices(K, 200, g1))) - _loop_rho(k2, y2, next(resampled_indices(k2, 200, g2)))
    assert np.max(np.abs(np.array([c.difference.low, c.difference.high]) - np.quantile(d, [0.025, 0.975]))) < TOL


def test_the_same_numbers_whatever_the_block_size(monkeypatch):
    from geoprobe.analysis import stats

    rng = np.random.default_rng(9)
    ys = {"main": _tracks_k(rng), "shuffled": rng.normal(size=K.size)}
    whole = track_k({c: K for c in ys}, ys, n_resamples=300, random_state=1)
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 5000)
    assert next(resampled_indices(K, 300, np.random.default_rng(0))).shape == (6, K.size)  # blocks of 6
    chunked = track_k({c: K for c in ys}, ys, n_resamples=300, random_state=1)
    for c in ys:
        assert [x and x.to_dict() for x in whole[c]] == [x and x.to_dict() for x in chunked[c]]


def test_an_interval_is_shown_only_when_it_is_one():
    from geoprobe.analysis.stats import Estimate

    assert interval_text(Estimate(-0.5, -0.6, -0.4)) == "-0.50 [-0.60, -0.40]"
    assert interval_text(Estimate(0.68, 0.68, 0.68), spec=".3f") == (
        "0.680 (no interval: every resample gives the same value)"
    )
    # a real interval narrower than the digits asked for: shown with more significant digits, not as [x, x]
    assert interval_text(Estimate(1.2e-5, 8e-6, 1.7e-5), spec=".3f") == "1.2e-05 [8e-06, 1.7e-05]"
    assert interval_text(Estimate(0.3, float("nan"), float("nan")), "why") == "+0.30 (no interval: why)"
    # a value that rounds to zero is written without a sign (issue 39 case 5: "-0.00" read as code)
    assert interval_text(Estimate(-0.001, -0.2, 0.3)) == "0.00 [-0.20, +0.30]"
    assert interval_text(Estimate(0.2, -0.004, 0.5)) == "+0.20 [0.00, +0.50]"


def test_undefined_values_say_why():
    rng = np.random.default_rng(10)
    one_k = np.full(20, 4)
    out = track_k({"main": one_k, "flat": one_k}, {"main": rng.normal(size=20), "flat": np.zeros(20)})
    t = out["main"][0]
    assert math.isnan(t.rho.value) and math.isnan(t.p_value) and t.note == "every prompt has k = 4"
    assert interval_text(t.rho, t.note) == "n/a (every prompt has k = 4)"
    assert out["flat"][1].note == "ρ_S(k, PC1) is undefined in main and flat"
    flat = track_k({"main": K}, {"main": np.ones(K.size)})["main"][0]
    assert flat.note == "PC1 is the same on every prompt" and math.isnan(flat.rho.value)


# -- stored and shown ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def twin_result(twin_factory):
    cfg = SulaConfig(k_values=(0, 1, 2, 4), n_per_k=5, n_resamples=200, min_label_mass=0.0)
    return run_sula(twin_factory("llama-3.2-1b"), cfg)


def test_run_sula_stores_the_tracking_and_paired_contrasts(twin_result):
    r = twin_result
    main = r.main
    for name, c in r.conditions.items():
        kt, kc = c.geometry.k_tracking, c.geometry.k_contrast
        assert kt.n == c.n == 20 and kt.n_resamples == 200
        if math.isfinite(kt.rho.value):
            assert abs(kt.rho.value - scipy.stats.spearmanr(c.k, c.pc1).statistic) < TOL
        if name == "main":
            assert kc is None
        else:
            assert kc.paired and kc.control == name and kc.condition == "main"
            if math.isfinite(kc.difference.value):
                assert abs(kc.difference.value - (main.geometry.k_tracking.rho.value - kt.rho.value)) < TOL
        shown = [(kt.rho, kt.note)] + ([] if kc is None else [(kc.difference, kc.note)])
        for est, note in shown:  # a real interval, or none and the reason
            assert est.high - est.low > 1e-12 if math.isfinite(est.low) else note
    assert (
        r.summary()["shuffled"]["rho_k_pc1_contrast"] == r.conditions["shuffled"].geometry.k_contrast.difference.value
    )
    back = SulaResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and back.conditions["ablated"].geometry.k_contrast.paired


def test_the_page_shows_the_new_statistic_and_never_a_degenerate_interval(twin_result):
    r = twin_result
    # make lexical_remap's contrast one with no interval: main's own PC1 (identical on every prompt)
    same = track_k({"main": r.main.k, "lexical_remap": r.main.k}, {"main": r.main.pc1, "lexical_remap": r.main.pc1})
    remap = r.conditions["lexical_remap"]
    geometry = replace(remap.geometry, k_contrast=same["lexical_remap"][1])
    r = replace(r, conditions={**r.conditions, "lexical_remap": replace(remap, geometry=geometry)})
    html = "\n".join(f"{sec.title}\n{sec.html}" for sec in sections(r))
    assert "Does PC1 follow k? (value geometry, every prompt)" in html and K_RHO in html
    assert "main − condition (paired)" == k_contrast_column(r)
    assert "lexical_remap has the same PC1 as main on every prompt" in html
    assert "ρ(k, mean PC1)</th>" not in html and not DEGENERATE.search(html)
    assert "not geoprobe&#x27;s ρ_S(k, PC1)" in html or "not geoprobe's ρ_S(k, PC1)" in html
    rows = {row["condition"]: row for row in k_tracking_rows(r)}
    assert rows["main"]["main − condition (paired)"] == "—"
    assert rows["lexical_remap"]["main − condition (paired)"].startswith("0.00 (no interval: lexical_remap has")
    assert "ρ_S(k, PC1)" in trajectory_figure(r).data[0].name


def test_a_file_from_before_issue_37_says_the_statistic_is_not_in_it():
    from pathlib import Path

    old = SulaResult.load(Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "sula.json")
    assert all(c.geometry.k_tracking is None and c.geometry.k_contrast is None for c in old.conditions.values())
    assert math.isfinite(old.main.geometry.rho_k_pc1.value)  # the old field still loads
    assert all(row[K_RHO] == OLD_FILE for row in k_tracking_rows(old))
    assert math.isnan(old.summary()["main"]["rho_k_pc1_prompts"])
    html = "\n".join(f"{sec.title}\n{sec.html}" for sec in sections(old))
    assert OLD_FILE in html and not DEGENERATE.search(html)


def test_the_command_line_prints_the_new_table_and_the_reasons(tmp_path, capsys, monkeypatch):
    from tests.cli.test_cli import run_cli

    out = tmp_path / "s"
    args = ["sula", "--model", "twin:llama-3.2-1b", "--k", "0,1,2", "--n-per-k", "4", "--n-resamples", "50"]
    code, stdout, err = run_cli([*args, "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    text = " ".join(stdout.split())
    res = SulaResult.load(out / "sula.json")
    assert "Does PC1 follow k?" in text and "ρ(k, mean PC1)" not in text and not DEGENERATE.search(text)
    assert "the paper's ρ(k, PC1) = 0.86 (Pythia-410M) is not set beside this as the same quantity" in text
    assert "permutation p" in text
    for name, c in res.conditions.items():
        kt = c.geometry.k_tracking
        assert interval_text(kt.rho, kt.note, reason=False).split(" (")[0] in text
        if kt.note:
            assert f"{name}: ρ_S(k, PC1): " in text and kt.note in text
