"""run_sula's label-mass threshold (issue 27) on planted label probabilities with a known mass per
condition and per prompt: which prompts are left out of the calibration metrics, which conditions are
flagged and kept out of the headline, and the numbers over the scored prompts against an independent
computation. The values come from the tiny twin (the geometry is not what is tested here)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.stats

from geoprobe.errors import ResultsError
from geoprobe.sula import SulaConfig, SulaResult, binary_entropy_bits, calibration_metrics, generate, run_sula
from geoprobe.sula import run as sula_run
from geoprobe.sula.report import mass_paragraph, per_k_figure, per_k_rows, summary_rows

CFG = SulaConfig(k_values=(0, 1, 2, 4), n_per_k=10, n_resamples=200, seed=3)
N = 40  # prompts per condition

#: planted label mass per condition and prompt index (k = 0..3 → indices 0-9, 10-19, 20-29, 30-39)
MASS = {
    "main": lambda i, k: 1e-7 if k == 0 else 0.6,  # the labels unseen at k = 0: those prompts left out
    "lexical_remap": lambda i, k: 0.2,  # every prompt scored
    "shuffled": lambda i, k: 0.02 if i % 2 else 0.004,  # half left out; mean 0.012 ≥ 0.01: not flagged
    "ablated": lambda i, k: 0.05 if i % 10 == 0 else 0.002,  # mean 0.0068 < 0.01: flagged; 4 prompts scored
}


@pytest.fixture(scope="module")
def planted(twin_factory):
    """run_sula on the twin with the label log-probabilities replaced by planted ones: P(L1) = m q and
    P(L2) = m (1 − q), with q the prompt's analytic predictive (a calibrated model) except at k = 0,
    where q = 0.9 (what tail noise could give: not 1 bit)."""
    prompts = {c: generate(replace(CFG, condition=c)) for c in MASS}
    planted_lp = {}  # the condition's prompt texts (in order) → (n, 2) log-probabilities
    for c, ps in prompts.items():
        rows = []
        for i, p in enumerate(ps):
            m, q = MASS[c](i, p.k), 0.9 if p.k == 0 else p.predictive
            rows.append((math.log(m * q), math.log(m * (1 - q))))
        planted_lp[tuple(p.text for p in ps)] = np.array(rows)

    def fake_logprobs(model, texts, label_ids, *, batch_size=16, progress=None):
        return planted_lp[tuple(texts)]

    mp = pytest.MonkeyPatch()
    mp.setattr(sula_run, "label_logprobs", fake_logprobs)
    try:
        result = run_sula(twin_factory("llama-3.2-1b"), CFG)
    finally:
        mp.undo()
    return result, prompts


def test_planted_masses_are_what_the_run_measured(planted):
    r, prompts = planted
    for c, ps in prompts.items():
        want = [MASS[c](i, p.k) for i, p in enumerate(ps)]
        np.testing.assert_allclose(r.conditions[c].label_mass, want, rtol=1e-12)


def test_low_mass_prompts_and_conditions_are_flagged(planted):
    r, _ = planted
    assert r.config.min_label_mass == 0.01
    assert r.flagged == ("ablated",)
    main = r.main
    assert np.array_equal(main.low_mass, main.k == 0) and not main.flagged
    assert r.conditions["lexical_remap"].low_mass.sum() == 0
    assert np.array_equal(r.conditions["shuffled"].low_mass, np.arange(N) % 2 == 0)
    ablated = r.conditions["ablated"]
    assert ablated.flagged and (~ablated.low_mass).sum() == 4
    for c, n_scored in (("main", 30), ("lexical_remap", 40), ("shuffled", 20), ("ablated", 4)):
        for m in (r.conditions[c].metrics, r.conditions[c].posterior_metrics):
            assert (m.n, m.n_excluded) == (n_scored, N - n_scored)


def test_metrics_are_over_the_scored_prompts_only(planted):
    r, prompts = planted
    main = r.main
    ok = main.k > 0
    h_model = main.model_entropy
    # q = the analytic predictive on every scored prompt: the predictive-entropy MAE is 0 there
    assert main.metrics.mae.value == pytest.approx(0.0, abs=1e-12)
    # the posterior-entropy MAE over the scored prompts, computed here independently
    want = np.mean(np.abs(h_model[ok] - main.posterior_entropy[ok]))
    assert main.posterior_metrics.mae.value == pytest.approx(want, abs=1e-12)
    everything = np.mean(np.abs(h_model - main.posterior_entropy))
    assert abs(everything - want) > 0.05  # the k = 0 prompts (Ĥ = h(0.9) against 1 bit) would move it
    rho = scipy.stats.spearmanr(h_model[ok], main.posterior_entropy[ok]).statistic
    assert main.posterior_metrics.spearman.value == pytest.approx(rho, abs=1e-12)
    # per k: nothing scored at k = 0 (NaN), the scored means elsewhere
    assert math.isnan(main.metrics.model_per_k[0].value)
    for i, k in enumerate(main.metrics.k_values[1:], start=1):
        assert main.metrics.model_per_k[i].value == pytest.approx(h_model[main.k == k].mean(), abs=1e-12)
    # the label mass is the mean over every prompt, scored or not
    assert main.metrics.label_mass.value == pytest.approx(0.75 * 0.6 + 0.25 * 1e-7, rel=1e-9)
    ab = r.conditions["ablated"]
    assert ab.metrics.label_mass.value == pytest.approx(0.0068, rel=1e-9)
    assert binary_entropy_bits(0.9) == pytest.approx(h_model[main.k == 0][0], abs=1e-9)


def test_the_flagged_condition_is_left_out_of_the_headline(planted):
    r, _ = planted
    for target in ("posterior entropy", "predictive entropy"):
        rows = {row["condition"]: row for row in summary_rows(r, target)}
        assert rows["ablated"]["MAE (bits)"] == "flagged (label mass < 0.01)"
        assert rows["ablated"]["Spearman ρ(model H, target)"].startswith("flagged")
        mae = r.main.target(target)[1].mae
        if target == "predictive entropy":  # the planted model is calibrated: MAE 0 in every resample, no interval
            assert max(abs(mae.value), abs(mae.low), abs(mae.high)) < 1e-15
            assert rows["main"]["MAE (bits)"] == "0.000 (no interval: every resample gives the same value)"
        else:
            assert mae.high > mae.low and rows["main"]["MAE (bits)"] == format(mae, ".3f")
        assert (rows["main"]["scored"], rows["shuffled"]["scored"], rows["ablated"]["scored"]) == ("30", "20", "4")
    assert [row["scored"] for row in per_k_rows(r)] == ["0 of 10", "10 of 10", "10 of 10", "10 of 10"]
    text = mass_paragraph(r)
    assert "Prompts left out: main 10 of 40, lexical_remap 0 of 40, shuffled 20 of 40, ablated 36 of 40" in text
    assert "Flagged: ablated 0.0068" in text
    assert r.summary()["ablated"]["flagged"] == 1.0 and r.summary()["main"]["n_scored"] == 30.0


def test_flags_round_trip_and_must_agree_with_the_threshold(planted, tmp_path):
    r, _ = planted
    d = json.loads(json.dumps(r.to_dict()))
    assert d["config"]["min_label_mass"] == 0.01 and d["conditions"]["ablated"]["flagged"] is True
    assert d["conditions"]["main"]["low_mass"][:10] == [True] * 10 and d["conditions"]["main"]["metrics"]["n"] == 30
    assert SulaResult.from_dict(d) == r
    d["conditions"]["ablated"]["flagged"] = False
    with pytest.raises(ResultsError, match="disagree with min_label_mass"):
        SulaResult.from_dict(d)


def test_calibration_metrics_threshold_zero_none_and_nothing_scored():
    """0 scores every prompt (the numbers of no threshold, with n_excluded 0); a threshold no prompt
    reaches gives NaN metrics, not an error."""
    rng = np.random.default_rng(0)
    k = np.repeat([0, 1, 2, 4], 10)
    h, hm, mass = rng.uniform(0, 1, 40), rng.uniform(0, 1, 40), rng.uniform(0.001, 0.5, 40)
    plain = calibration_metrics(k, h, hm, mass, n_resamples=100)
    zero = calibration_metrics(k, h, hm, mass, n_resamples=100, min_label_mass=0.0)
    assert plain.n_excluded is None and (zero.n, zero.n_excluded) == (40, 0)
    assert zero.mae == plain.mae and zero.spearman == plain.spearman and zero.label_mass == plain.label_mass
    none = calibration_metrics(k, h, hm, mass, n_resamples=100, min_label_mass=0.9)
    assert (none.n, none.n_excluded) == (0, 40) and math.isnan(none.mae.value) and math.isnan(none.spearman.value)
    assert none.label_mass.value == pytest.approx(mass.mean(), rel=1e-12)


def test_per_k_figure_leaves_out_a_condition_with_nothing_scored_and_says_so(planted):
    """A condition with no prompt at or above the threshold at any k has only NaN means: the figure
    draws no line for it (a line of NaNs draws nothing) and names it in an annotation."""
    r, _ = planted
    fig = per_k_figure(r)
    assert {t.name.split(":")[0] for t in fig.data} == set(r.conditions) and not fig.layout.annotations
    ab = r.conditions["ablated"]
    nan = tuple(replace(e, value=math.nan, low=math.nan, high=math.nan) for e in ab.metrics.model_per_k)
    emptied = replace(ab, metrics=replace(ab.metrics, model_per_k=nan))
    fig = per_k_figure(replace(r, conditions={**r.conditions, "ablated": emptied}))
    names = {t.name.split(":")[0] for t in fig.data}
    assert names == set(r.conditions) - {"ablated"}
    assert all(np.isfinite(np.asarray(t.y, dtype=float)).any() for t in fig.data)
    (note,) = fig.layout.annotations
    assert "ablated" in note.text and "0.01" in note.text
