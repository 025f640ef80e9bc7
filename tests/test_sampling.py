"""Stratified-entropy sampling: strata on planted entropies, candidate entropies against the
capture's own next-token entropy, the per-model cache, corpus sets, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from geoprobe.sampling import (
    EntropyCache,
    PromptSet,
    SamplingConfig,
    SamplingError,
    candidate_entropies,
    entropy_strata,
    sample_corpus_set,
    stratified_sample,
)
from tests.conftest import requires_smollm2


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOPROBE_ENTROPY_CACHE", str(tmp_path / "entropy"))


# -- strata on planted entropies ------------------------------------------------------------
def test_strata_are_equal_sized_and_ordered_by_entropy():
    h = np.random.default_rng(0).gamma(2.0, 1.5, size=1003)
    s = entropy_strata(h, 5, seed=0)
    counts = np.bincount(s, minlength=5)
    assert counts.min() >= 1003 // 5 and counts.max() <= 1003 // 5 + 1
    for k in range(4):  # every entropy of stratum k is <= every entropy of stratum k+1
        assert h[s == k].max() <= h[s == k + 1].min()


def test_ties_are_spread_reproducibly_over_neighbouring_strata():
    h = np.array([0.0] * 40 + list(np.linspace(1, 6, 60)))  # 40 % of the candidates tie at 0 bits
    a, b = entropy_strata(h, 5, seed=1), entropy_strata(h, 5, seed=1)
    assert np.array_equal(a, b) and np.bincount(a).tolist() == [20] * 5
    assert set(a[:40]) == {0, 1} and np.array_equal(entropy_strata(h, 5, seed=2)[40:], a[40:])
    assert not np.array_equal(entropy_strata(h, 5, seed=2)[:40], a[:40])  # the seed decides who ties where


def test_stratified_sample_takes_k_per_quintile_deterministically():
    h = np.random.default_rng(3).uniform(0, 8, size=500)
    idx, strata = stratified_sample(h, 15, 5, seed=0)
    assert idx.size == 75 and np.bincount(strata).tolist() == [15] * 5 and np.unique(idx).size == 75
    assert np.array_equal(entropy_strata(h, 5, seed=0)[idx], strata)
    again, _ = stratified_sample(h, 15, 5, seed=0)
    other, _ = stratified_sample(h, 15, 5, seed=1)
    assert np.array_equal(idx, again) and not np.array_equal(idx, other)
    # the sample spans the entropy range: its quintile means increase
    means = [h[idx[strata == k]].mean() for k in range(5)]
    assert means == sorted(means) and means[0] < 2 < 6 < means[-1]


def test_equal_entropies_make_quintiles_impossible():
    with pytest.raises(SamplingError) as exc:
        stratified_sample(np.full(200, 1.25), 15)
    msg = str(exc.value)
    assert "200 candidates" in msg and "1 distinct" in msg and "impossible" in msg and "\n" not in msg


def test_too_few_candidates_says_how_many_exist():
    with pytest.raises(SamplingError, match=r"has 40 candidate\(s\) but 75 are needed .*--per-quintile"):
        stratified_sample(np.linspace(0, 1, 40), 15, what="domain 'math'")


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(per_stratum=0), "--per-quintile"),
        (dict(candidates=50), "--candidates 50 is below the 75"),
        (dict(min_tokens=40, max_tokens=20), "token range [40, 20]"),
        (dict(n_strata=1), "at least 2"),
    ],
)
def test_sampling_config_rejects_bad_values(kwargs, needle):
    with pytest.raises(SamplingError) as exc:
        SamplingConfig(**kwargs)
    assert needle in str(exc.value)


def test_prompt_set_record_has_hash_seed_and_domain_counts():
    ps = PromptSet(
        name="mixed",
        kind="corpus",
        prompts=("a", "b", "c"),
        hash="h",
        seed=4,
        domains=("code", "news", "code"),
        info={"corpus_version": "1"},
    )
    rec = ps.record()
    assert rec["name"] == "mixed" and rec["seed"] == 4 and rec["n"] == 3 and rec["corpus_version"] == "1"
    assert rec["domain_counts"] == {"code": 2, "news": 1}
    with pytest.raises(ValueError, match="domains has 1 entries for 3 prompts"):
        PromptSet(name="x", kind="corpus", prompts=("a", "b", "c"), hash="h", domains=("code",))


# -- candidate entropies against an independent computation ----------------------------------
@pytest.mark.parametrize("alias", ["pythia-410m", "gemma-3-270m"])
def test_candidate_entropies_equal_the_capture_on_twins(twin_factory, prompts, alias):
    from geoprobe.capture import CaptureConfig, capture

    m = twin_factory(alias)
    h = candidate_entropies(m, prompts, batch_size=4, cache=False)  # left padding, logits_to_keep=1
    cap = capture(m, prompts, CaptureConfig(layers=(0,), batch_size=3, key_weights=False))  # right padding, own head
    np.testing.assert_allclose(h, cap.next_entropy, atol=1e-4)


def test_entropy_cache_is_per_model_and_reused(twin_factory, prompts, monkeypatch):
    m = twin_factory("llama-3.2-1b")
    first = candidate_entropies(m, prompts, batch_size=4)
    assert EntropyCache(m).get(prompts) == pytest.approx(list(first))
    assert EntropyCache(twin_factory("llama-3.2-1b", "tiny", 1)).get(prompts) == [None] * len(prompts)  # other weights

    def boom(*a, **k):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(m, "hf_model", boom)
    np.testing.assert_array_equal(candidate_entropies(m, prompts), first)


def test_a_damaged_cache_is_rebuilt(twin_factory, prompts):
    m = twin_factory("mistral-7b")
    cache = EntropyCache(m)
    cache.path.parent.mkdir(parents=True, exist_ok=True)
    cache.path.write_text("{not json")
    h = candidate_entropies(m, prompts[:2])
    assert np.all(np.isfinite(h)) and EntropyCache(m).get(prompts[:2]) == pytest.approx(list(h))


# -- corpus sets ------------------------------------------------------------------------------
def test_corpus_set_on_a_twin_is_stratified_and_reproducible(twin_factory):
    m = twin_factory("llama-3.2-1b")
    cfg = SamplingConfig(candidates=60, per_stratum=4, min_tokens=8, max_tokens=24)
    a = sample_corpus_set(m, "mixed", cfg, seed=0)
    b = sample_corpus_set(m, "mixed", cfg, seed=0)
    assert a.prompts == b.prompts and a.hash == b.hash and len(a.prompts) == 20
    assert sorted(a.stratum) == [k for k in range(5) for _ in range(4)]
    assert len(set(a.domains)) >= 3 and a.info["pool"] >= 60
    # the stored sampling entropies are the model's for these texts
    np.testing.assert_allclose(candidate_entropies(m, list(a.prompts)), a.entropy, atol=1e-9)
    c = sample_corpus_set(m, "mixed", cfg, seed=1)
    assert c.prompts != a.prompts


def test_single_domain_with_too_few_candidates_says_how_many(twin_factory, monkeypatch):
    import geoprobe.corpora as corpora

    real = corpora.candidates
    monkeypatch.setattr(corpora, "candidates", lambda domains, n, **k: real(domains, 12, **k))
    with pytest.raises(SamplingError) as exc:
        sample_corpus_set(twin_factory("llama-3.2-1b"), "math", SamplingConfig(candidates=100, per_stratum=4))
    msg = str(exc.value)
    assert "domain 'math' yields 12 candidate passage(s)" in msg and "--per-quintile to 2" in msg


def test_unknown_domain_lists_the_available_ones(twin_factory):
    from geoprobe.corpora import UnknownDomain

    with pytest.raises(UnknownDomain) as exc:
        sample_corpus_set(twin_factory("llama-3.2-1b"), "poetry")
    msg = str(exc.value)
    assert "'poetry'" in msg and "mixed" in msg and "code" in msg and "--prompts" in msg


@requires_smollm2
@pytest.mark.slow
def test_candidate_entropies_equal_the_capture_on_smollm2(smollm2, prompts):
    from geoprobe.capture import CaptureConfig, capture

    h = candidate_entropies(smollm2, prompts, batch_size=4, cache=False)
    cap = capture(smollm2, prompts, CaptureConfig(layers=(-1,), key_weights=False))
    np.testing.assert_allclose(h, cap.next_entropy, atol=1e-4)


def test_a_file_written_by_sample_remembers_its_set(tmp_path):
    from geoprobe.prompts import prompt_source_kind, resolve_prompt_set, write_prompt_sets

    ps = PromptSet(
        name="math",
        kind="corpus",
        prompts=("What is 2 + 2?", "Find the sum of"),
        hash="h",
        seed=0,
        domains=("math", "math"),
        sources=("a", "b"),
        entropy=(1.0, 2.0),
        stratum=(0, 1),
    )
    f = write_prompt_sets({"math": ps}, tmp_path / "m.jsonl")
    back = resolve_prompt_set(str(f))
    assert prompt_source_kind(str(f)) == "file" and back.prompts == ps.prompts
    assert back.record()["sampled_set"] == "math" and back.record()["domain"] == "math"
    plain = tmp_path / "p.txt"
    plain.write_text("one\ntwo\n")
    assert "domain" not in resolve_prompt_set(str(plain)).record()
