"""SULA's two analytic targets: the posterior entropy (the paper's H_Bayes, the authors' pipeline)
and the predictive entropy (label noise included), each against an independent computation,
stored, reported and compared with the paper only where it matches."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from geoprobe.sula import SulaConfig, SulaResult, binary_entropy_bits, calibration_metrics, generate, run_sula
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE
from geoprobe.sula.geometry import geometry_stats
from geoprobe.sula.report import PAPER, calibration_figure, per_k_figure, per_k_rows, sections, summary_rows
from geoprobe.sula.tracking import interval_text

FAST = dict(n_resamples=200)


def _rule_posterior_by_enumeration(labels: list[int], a: float) -> float:
    """P(rule = L1 | example labels) by enumerating the two rules and multiplying the label-noise
    likelihood of every example (a when the label is the rule, 1 − a otherwise), uniform prior."""
    joint = {}
    for rule in (1, 2):
        lik = 0.5
        for lab in labels:
            lik *= a if lab == rule else 1 - a
        joint[rule] = lik
    return joint[1] / (joint[1] + joint[2])


def _labels_of(text: str, config: SulaConfig) -> list[int]:
    """The example labels read back from the prompt text (1 = L1, 2 = L2), in order."""
    L1, L2 = config.labels
    out = []
    for part in text.split(config.separator)[:-1]:
        lab = part.rsplit(" ", 1)[1]
        assert lab in (L1, L2), part
        out.append(1 if lab == L1 else 2)
    return out


def _entropy(p: float) -> float:
    return -sum(x * math.log2(x) for x in (p, 1 - p) if x > 0)


@pytest.mark.parametrize("a", [0.9, 0.75])
def test_posterior_entropy_of_planted_prompts_matches_enumeration(a):
    cfg = SulaConfig(k_values=(0, 1, 2, 3, 5, 8), n_per_k=40, agreement=a, seed=5)
    for p in generate(cfg):
        labels = _labels_of(p.text, cfg)
        post = _rule_posterior_by_enumeration(labels, a)
        assert p.posterior_entropy_bits == pytest.approx(_entropy(post), abs=1e-12)
        # the predictive entropy: the next label is the rule with probability a
        q = a * post + (1 - a) * (1 - post)
        assert p.entropy_bits == pytest.approx(_entropy(q), abs=1e-12)
    # shuffled: no evidence, both targets are 1 bit
    assert all(
        p.posterior_entropy_bits == 1.0 and p.entropy_bits == 1.0 for p in generate(replace(cfg, condition="shuffled"))
    )


def test_per_k_means_of_both_targets_on_the_default_set():
    """The issue's per-k means (default set: k = 0, 1, 2, 4, 8, 50 per k, seed 0), from the generator
    alone; k = 1 is exact: every prompt has |n1 − n2| = 1."""
    ps = generate(SulaConfig())
    pred = [np.mean([p.entropy_bits for p in ps if p.k == k]) for k in (0, 1, 2, 4, 8)]
    post = [np.mean([p.posterior_entropy_bits for p in ps if p.k == k]) for k in (0, 1, 2, 4, 8)]
    assert np.round(pred, 2).tolist() == [1.0, 0.68, 0.60, 0.48, 0.48]
    assert np.round(post, 3).tolist() == [1.0, 0.469, 0.276, 0.045, 0.022]
    assert post[1] == pytest.approx(_entropy(0.9), abs=1e-12) and pred[1] == pytest.approx(_entropy(0.82), abs=1e-12)
    # the two targets differ by up to h(0.9) − 0 ≈ 0.47 bits (certainty about the rule, label noise left)
    gap = max(p.entropy_bits - p.posterior_entropy_bits for p in ps)
    assert 0.45 < gap <= _entropy(0.9) + 1e-12


def test_the_targets_share_their_ranks_so_spearman_agrees_and_mae_does_not():
    rng = np.random.default_rng(0)
    cfg = SulaConfig(n_per_k=30, seed=1)
    ps = generate(cfg)
    k = np.array([p.k for p in ps])
    hq = np.array([p.entropy_bits for p in ps])
    hp = np.array([p.posterior_entropy_bits for p in ps])
    # a planted model that reports the posterior entropy plus noise
    model = np.clip(hp + rng.normal(0, 0.05, hp.size), 0, 1)
    # prompts with the same |n1 − n2| get bit-identical entropies (exact ties), for both targets
    margins = {abs(p.n1 - p.n2) for p in ps}
    assert len(set(hq.tolist())) == len(set(hp.tolist())) == len(margins)
    mass = np.full(hp.size, 0.5)
    mq = calibration_metrics(k, hq, model, mass, random_state=3, target=PREDICTIVE, **FAST)
    mp = calibration_metrics(k, hp, model, mass, random_state=3, target=POSTERIOR, **FAST)
    assert mq.spearman == mp.spearman  # same value and the same CI: equal ranks, same resamples
    assert mp.mae.value < 0.05 < mq.mae.value  # the planted model is calibrated to the posterior only
    assert mp.mae.value == pytest.approx(np.mean(np.abs(model - hp)), abs=1e-12)
    assert mq.mae.value == pytest.approx(np.mean(np.abs(model - hq)), abs=1e-12)
    assert [e.value for e in mp.bayes_per_k] == pytest.approx([hp[k == v].mean() for v in (0, 1, 2, 4, 8)])
    # geometry: a PC1 that is the posterior entropy: ρ_S equal for both targets, Pearson r only 1 for the posterior
    g = geometry_stats(k, hp, hq, posterior_entropy=hp, **FAST)
    assert g.rho_pc1_posterior == g.rho_pc1_bayes and g.rho_pc1_bayes.value == pytest.approx(1.0)
    assert g.r_pc1_posterior.value == pytest.approx(1.0) and g.r_pc1_bayes.value < 0.999
    # without the posterior, the 0.1.0 fields only
    assert geometry_stats(k, hp, hq, **FAST).r_pc1_posterior is None


def test_enumerated_targets_are_monotone_in_the_label_margin():
    """Both targets are increasing functions of |n1 − n2| (why their ranks agree), checked by enumeration."""
    a = 0.9
    seen: dict[int, tuple[float, float]] = {}
    for k in range(7):
        for labels in itertools.product((1, 2), repeat=k):
            d = abs(labels.count(1) - labels.count(2))
            post = _rule_posterior_by_enumeration(list(labels), a)
            pair = (_entropy(post), _entropy(a * post + (1 - a) * (1 - post)))
            assert seen.setdefault(d, pair) == pytest.approx(pair, abs=1e-12)
    ds = sorted(seen)
    for x, y in zip(ds, ds[1:]):
        assert seen[x][0] > seen[y][0] and seen[x][1] > seen[y][1]
    assert binary_entropy_bits(0.5) == seen[0][0] == seen[0][1] == 1.0


def test_run_sula_stores_reports_and_compares_only_the_matching_target(twin_factory, tmp_path):
    m = twin_factory("llama-3.2-1b")
    # every prompt scored: the twin's label mass is tiny (tests/sula/test_run.py tests the threshold)
    r = run_sula(m, SulaConfig(n_per_k=4, min_label_mass=0.0, **FAST))
    for name, c in r.conditions.items():
        hp = np.array([p.posterior_entropy_bits for p in generate(replace(r.config, condition=name))])
        assert np.array_equal(c.posterior_entropy, hp)
        assert c.metrics.target == PREDICTIVE and c.posterior_metrics.target == POSTERIOR
        assert c.posterior_metrics.mae.value == pytest.approx(np.mean(np.abs(c.model_entropy - hp)), abs=1e-12)
        assert c.posterior_metrics.spearman == c.metrics.spearman
    main = r.main
    assert main.geometry.rho_pc1_posterior == main.geometry.rho_pc1_bayes
    assert math.isfinite(main.geometry.r_pc1_posterior.value) and math.isfinite(main.geometry.r_pc1_bayes.value)
    d = r.to_dict()["conditions"]["main"]
    assert d["metrics"]["target"] == "predictive entropy" and d["posterior_metrics"]["target"] == "posterior entropy"
    back = SulaResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and np.array_equal(back.main.posterior_entropy, main.posterior_entropy)
    s = r.summary()["main"]
    assert s["mae_bits_posterior"] == main.posterior_metrics.mae.value and s["mae_bits"] == main.metrics.mae.value
    # the page: one table per target, the paper's numbers under the posterior heading only
    html = "\n".join(f"{sec.title}\n{sec.html}" for sec in sections(r))
    assert "Against the posterior entropy" in html and "Against the predictive entropy" in html
    assert "The paper's numbers (posterior entropy)" in html and "0.44" in html
    assert all("posterior entropy" in q for q, _ in PAPER[:2])
    rows = summary_rows(r, POSTERIOR)
    assert rows[0]["MAE (bits)"] == f"{main.posterior_metrics.mae:.3f}"
    # every prompt of k = 0 (1 bit) and k = 1 (0.469 bits) has the same posterior entropy: no interval, not [x, x]
    per_k = [row[POSTERIOR] for row in per_k_rows(r)]
    assert per_k == [interval_text(e, spec=".3f") for e in main.posterior_metrics.bayes_per_k]
    assert per_k[0] == "1.000 (no interval: every resample gives the same value)"
    assert len(calibration_figure(r).data) == 4 and len(per_k_figure(r).data) == 12


def test_a_file_without_the_posterior_target_reports_it_absent():
    from pathlib import Path

    old = SulaResult.load(Path(__file__).parents[1] / "fixtures" / "v0_1_0" / "sula.json")
    assert old.main.posterior_metrics is None and old.main.metrics.target is None
    assert old.targets() == (PREDICTIVE,)
    html = "\n".join(f"{sec.title}\n{sec.html}" for sec in sections(old))
    assert "Not in this file" in html
    assert math.isnan(old.summary()["main"]["mae_bits_posterior"])
    assert all(row[POSTERIOR] == "n/a" for row in per_k_rows(old))
    assert len(calibration_figure(old).data) == 2


def test_the_k_correlations_resamples_are_drawn_in_chunks_with_the_same_numbers(monkeypatch):
    """Prompts within each k are resampled ~32 MB at a time (issue 27): the same draws and estimates."""
    from geoprobe.analysis import stats

    rng = np.random.default_rng(4)
    k = np.repeat([0, 1, 2, 4, 8], 30)
    pc1 = k + rng.normal(size=k.size)
    h = rng.random(k.size)
    whole = geometry_stats(k, pc1, h, n_resamples=500, random_state=np.random.default_rng(5))
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 100)
    chunked = geometry_stats(k, pc1, h, n_resamples=500, random_state=np.random.default_rng(5))
    assert whole.to_dict() == chunked.to_dict()
