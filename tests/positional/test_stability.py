"""Stability over prompt length: the critical-length rule, and the analyser end to end on a tiny twin."""

import math

import numpy as np
import pytest

from geoprobe.analysis.stats import Estimate
from geoprobe.positional.stability import critical_length


def test_critical_length_is_the_first_ci_wholly_below_the_baseline():
    e = lambda v, h: Estimate(v, v - h, v + h)  # noqa: E731
    Ts = (16, 32, 64, 128)
    assert critical_length(Ts, [e(0.5, 0.05), e(0.47, 0.05), e(0.40, 0.04), e(0.2, 0.05)]) == 64
    assert critical_length(Ts, [e(0.5, 0.05), e(0.47, 0.05), e(0.44, 0.02), e(0.9, 0.05)]) is None  # overlaps / rises
    assert critical_length(Ts, [Estimate(0.5, math.nan, math.nan), e(0.1, 0.01), e(0.1, 0.01), e(0.1, 0.01)]) is None


def test_critical_length_of_an_error_is_the_first_ci_wholly_above_the_baseline():
    e = lambda v, h: Estimate(v, v - h, v + h)  # noqa: E731
    Ks = (20, 30, 40, 50)
    errors = [e(0.08, 0.01), e(0.085, 0.01), e(0.11, 0.01), e(0.2, 0.01)]
    assert critical_length(Ks, errors, worse="higher") == 40
    assert critical_length(Ks, errors) is None  # the same numbers never fall below the baseline


def test_stability_end_to_end_on_a_tiny_twin(twin_factory, tmp_path):
    from geoprobe.positional import PositionalConfig, load_positional, run_positional

    m = twin_factory("llama-3.2-1b")
    cfg = PositionalConfig(lengths=(8, 16, 24), n_prompts=6, n_resamples=30, layers=(0, -1), batch_size=4)
    res = run_positional(m, cfg)
    s = res.stability
    assert s.lengths == (8, 16, 24) and s.layers == (0, 2) and res.layers == (0, 2)
    for p in s.points:
        assert p.n == 6 and len(p.pc1) == 2
        assert all(0 <= e.value <= 1 for e in p.pc1) and all(0 <= e.value <= 1 for e in p.alignment)
        # a random-init twin attends almost uniformly: entropy close to log2 of the length
        assert all(0.8 * math.log2(p.T) < h <= math.log2(p.T) + 1e-6 for h in p.attn_entropy)
    assert res.max_distance == 24 - 1 - 1 and res.profiles.shape == (2, m.layout.n_heads, 23)
    assert res.class_counts()["flat (NoPE-like)"] == 2 * m.layout.n_heads
    assert res.rope is not None and res.rope[1] == m.layout.rotary_dim
    assert all("rope" in h.kl_ref for h in res.heads)
    assert res.provenance["prompts_hash"] and res.provenance["seed"] == 0
    path = res.save(tmp_path / "positional.json")
    back = load_positional(path)
    assert back == res and back.stability.critical("pc1", 2) == s.critical("pc1", 2)
    html_figs = res.figures()
    assert {f.anchor for f in html_figs} == {"beta", "profiles", "classes", "stability"}


def test_stability_numbers_come_from_the_shared_analysers(twin_factory):
    """PC1 ratio and ρ at one length equal ValueManifold / EntropyAlignment on the same capture."""
    from geoprobe.analysis.alignment import EntropyAlignment
    from geoprobe.analysis.manifold import ValueManifold
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.positional.profile import token_windows
    from geoprobe.positional.stability import length_point

    m = twin_factory("llama-3.2-1b")
    cap = capture(m, token_windows(m.tokenizer, 12, 8, seed=2)[0], CaptureConfig(keys=False, key_weights=False))
    pt = length_point(cap, (2,), n_resamples=50, seed=0)
    vm = ValueManifold().fit(cap.values_flat(2))
    assert pt.pc1[0].value == pytest.approx(vm.explained_variance_ratio_[0], rel=1e-9)
    ea = EntropyAlignment(n_resamples=50, n_permutations=50, random_state=0).fit(vm.coords_[:, 0], cap.next_entropy)
    assert pt.alignment[0].value == pytest.approx(ea.spearman_.value, abs=1e-9)
    assert pt.attn_entropy[0] == pytest.approx(float(np.mean(cap.attn_entropy[cap.index(2)])), rel=1e-6)
