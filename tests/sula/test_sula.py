"""SULA: closed forms, generator, controls, tokenisation, evaluation on planted fakes, end to end."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.stats
import torch

from geoprobe.errors import GeoprobeError, ResultsError
from geoprobe.sula import (
    CARRIER_WORDS,
    SulaConfig,
    SulaError,
    SulaResult,
    binary_entropy_bits,
    calibration_metrics,
    check_context,
    choose_labels,
    generate,
    generate_all,
    label_distribution,
    label_logprobs,
    label_tokens,
    posterior_l1,
    predictive_l1,
    run_sula,
)
from geoprobe.sula.config import DEFAULT_LABELS, DEFAULT_REMAP_LABELS
from geoprobe.sula.report import calibration_figure, per_k_figure, trajectory_figure
from geoprobe.sula.task import NEGATIVE_WORDS, POSITIVE_WORDS
from tests.conftest import requires_smollm2

FAST = dict(n_resamples=200)


@pytest.fixture(scope="module")
def tokenizer(twin_factory):
    return twin_factory("llama-3.2-1b").tokenizer  # the twins use SmolLM2's tokenizer


# -- closed forms -------------------------------------------------------------------------------
def _brute_force(labels: tuple[int, ...], a: float) -> tuple[float, float]:
    """Posterior P(y = 1) and predictive P(next label = 1) by enumerating y and the next label."""
    joint = {}
    for y in (1, 2):
        lik = 0.5
        for lab in labels:
            lik *= a if lab == y else 1 - a
        joint[y] = lik
    post = joint[1] / (joint[1] + joint[2])
    pred = sum(joint[y] * (a if y == 1 else 1 - a) for y in (1, 2)) / (joint[1] + joint[2])
    return post, pred


@pytest.mark.parametrize("a", [0.9, 0.7, 0.99])
def test_posterior_matches_brute_force(a):
    for k in range(0, 7):
        for labels in itertools.product((1, 2), repeat=k):
            n1 = labels.count(1)
            post, pred = _brute_force(labels, a)
            assert posterior_l1(n1, k - n1, a) == pytest.approx(post, abs=1e-12)
            assert predictive_l1(posterior_l1(n1, k - n1, a), a) == pytest.approx(pred, abs=1e-12)


def test_entropy_closed_form():
    assert binary_entropy_bits(0.5) == 1.0
    assert binary_entropy_bits(0.0) == 0.0 and binary_entropy_bits(1.0) == 0.0
    q = np.array([0.1, 0.3, 0.9])
    assert np.allclose(binary_entropy_bits(q), scipy.stats.entropy(np.stack([q, 1 - q]), base=2))
    # the predictive never leaves [0.1, 0.9], so H_Bayes >= h(0.9)
    assert binary_entropy_bits(predictive_l1(posterior_l1(40, 0))) == pytest.approx(binary_entropy_bits(0.9))


# -- generator ----------------------------------------------------------------------------------
def test_carrier_words():
    assert len(POSITIVE_WORDS) == 35 and len(NEGATIVE_WORDS) == 35 and len(set(CARRIER_WORDS)) == 70


def test_generator_deterministic_and_counts():
    cfg = SulaConfig(k_values=(0, 1, 3, 8), n_per_k=7, seed=3)
    a, b = generate(cfg), generate(cfg)
    assert a == b
    assert generate(replace(cfg, seed=4)) != a
    assert [p.k for p in a] == [k for k in cfg.k_values for _ in range(7)]
    for p in a:
        assert p.n1 + p.n2 == p.k
        assert p.text.endswith("test:") and p.text.count(": bip") == p.n1 and p.text.count(": pim") == p.n2
        assert p.posterior == pytest.approx(posterior_l1(p.n1, p.n2))
        assert p.entropy_bits == pytest.approx(binary_entropy_bits(p.predictive))
    assert a[0].text == "test:"


def test_format_is_a_parameter():
    cfg = SulaConfig(k_values=(2,), n_per_k=1, example_format="{word} is {label}", separator=". ", query="test is")
    p = generate(cfg)[0]
    assert p.text.endswith(". test is") and " is bip" in p.text or " is pim" in p.text


def test_agreement_rate_and_imbalance():
    cfg = SulaConfig(k_values=(8,), n_per_k=2000, seed=1)
    ps = generate(cfg)
    agree = sum((p.n1 if p.y == 1 else p.n2) for p in ps)
    total = sum(p.k for p in ps)
    rate = agree / total
    sd = math.sqrt(0.9 * 0.1 / total)
    assert abs(rate - 0.9) < 4 * sd
    assert abs(np.mean([p.y == 1 for p in ps]) - 0.5) < 4 * math.sqrt(0.25 / len(ps))
    # label imbalance varies: many distinct (n1, n2) splits, also within the default 50 prompts
    assert len({p.n1 for p in ps}) >= 7
    assert len({p.n1 for p in generate(SulaConfig()) if p.k == 8}) >= 3


def test_controls():
    cfg = SulaConfig(k_values=(0, 2, 4, 8), n_per_k=30, seed=2)
    allc = generate_all(cfg)
    main, remap, shuf, abl = allc["main"], allc["lexical_remap"], allc["shuffled"], allc["ablated"]
    assert all(p.predictive == 0.5 and p.posterior == 0.5 and p.entropy_bits == 1.0 for p in shuf)
    assert len({p.n1 for p in shuf if p.k == 8}) >= 3  # labels still vary, but carry no evidence
    for m, r, s, b in zip(main, remap, shuf, abl):
        assert (m.k, m.y) == (r.k, r.y) == (s.k, s.y) == (b.k, b.y)
        assert (b.n1, b.n2, b.posterior, b.predictive, b.entropy_bits) == (
            m.n1,
            m.n2,
            m.posterior,
            m.predictive,
            m.entropy_bits,
        )
        assert (r.n1, r.posterior, r.entropy_bits) == (m.n1, m.posterior, m.entropy_bits)
        assert r.text.count(": kel") == m.n1 and r.text.count(": pom") == m.n2
        assert not any(w in b.text.replace("item", "").split(": ")[0] for w in CARRIER_WORDS if len(w) > 3)
        assert b.text.count("item:") == m.k
        assert b.text == m.text if m.k == 0 else b.text != m.text


@pytest.mark.parametrize(
    "kw, flag",
    [
        (dict(k_values=(0, -1)), "--k"),
        (dict(n_per_k=0), "--n-per-k"),
        (dict(agreement=0.5), "--agreement"),
        (dict(agreement=1.0), "--agreement"),
        (dict(labels=("bip", "bip")), "--labels"),
        (dict(condition="x"), "main"),
    ],
)
def test_config_errors(kw, flag):
    with pytest.raises(SulaError) as e:
        SulaConfig(**kw)
    msg = str(e.value)
    assert flag in msg and "\n" not in msg
    assert isinstance(e.value, GeoprobeError)


def test_config_round_trip():
    cfg = SulaConfig(k_values=(1, 3), n_per_k=5, labels=("zig", "lum"))
    assert SulaConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


# -- tokenisation -------------------------------------------------------------------------------
def test_default_labels_are_single_tokens(tokenizer):
    for pair in (DEFAULT_LABELS, DEFAULT_REMAP_LABELS):
        lt = label_tokens(tokenizer, pair)
        assert all(len(t) == 1 for t in lt.tokens) and lt.ids[0] != lt.ids[1]
        assert lt.ids[0] == tokenizer(" " + pair[0], add_special_tokens=False)["input_ids"][0]
    assert choose_labels(tokenizer) == DEFAULT_LABELS
    assert choose_labels(tokenizer, ("dax", "zorb", "kel", "wug", "pom")) == ("kel", "pom")
    # the label token is exactly the token that follows the query in a real prompt
    ids = tokenizer("a: bip, test: bip", add_special_tokens=False)["input_ids"]
    assert ids[-1] == label_tokens(tokenizer, DEFAULT_LABELS).ids[0]


def test_multi_token_label_error(tokenizer):
    with pytest.raises(SulaError) as e:
        label_tokens(tokenizer, ("zorb", "bip"))
    msg = str(e.value)
    assert "' zorb' tokenises as [' z', 'orb'] (2 tokens)" in msg
    assert "--labels" in msg and "--first-token" in msg and "first_token = true" in msg  # CLI and recipe/API fixes
    lt = label_tokens(tokenizer, ("zorb", "bip"), first_token=True)
    assert lt.first_token and lt.tokens[0] == (" z", "orb")
    with pytest.raises(SulaError, match="need 2"):
        choose_labels(tokenizer, ("zorb", "dax", "bip"))


def test_context_error(tokenizer):
    fake = SimpleNamespace(tokenizer=tokenizer, context_length=2048, model_id="smollm2-135m")
    ps = generate(SulaConfig(k_values=(4, 512), n_per_k=1))
    with pytest.raises(SulaError) as e:
        check_context(fake, ps)
    msg = str(e.value)
    assert msg.startswith("k = 512 makes prompts of ") and "smollm2-135m's context is 2,048; lower --k" in msg
    assert check_context(fake, generate(SulaConfig(n_per_k=2))) < 64


# -- evaluation on planted fakes ----------------------------------------------------------------
def _fake_model(tokenizer, prompts, label_ids, predictive=None):
    """A model whose next-token distribution puts ``predictive`` on L1 and the rest on L2 (or,
    with ``predictive=None``, a uniform distribution over the whole vocabulary)."""
    V = len(tokenizer)
    table = {
        tuple(tokenizer(p.text)["input_ids"]): q
        for p, q in zip(prompts, predictive if predictive is not None else [None] * len(prompts))
    }

    def hf_model(tok, attention_mask, position_ids, logits_to_keep, use_cache):
        assert logits_to_keep == 1
        assert bool(attention_mask[:, -1].all())  # left padding: every row ends with a real token
        out = torch.zeros(tok.shape[0], 1, V)
        for b in range(tok.shape[0]):
            q = table[tuple(tok[b][attention_mask[b].bool()].tolist())]
            if q is not None:
                out[b, 0] = -1e4
                out[b, 0, label_ids[0]] = math.log(q)
                out[b, 0, label_ids[1]] = math.log(1 - q)
        return SimpleNamespace(logits=out)

    arch = SimpleNamespace(name="fake", position_offset=0)  # numbers positions 0..n-1, as most models
    return SimpleNamespace(
        tokenizer=tokenizer, hf_model=hf_model, context_length=4096, device=torch.device("cpu"), arch=arch
    )


def test_planted_model_is_calibrated(tokenizer):
    # agreement 0.7 and k <= 4 keep the analytic entropies apart by far more than float32 logits resolve
    ps = generate(SulaConfig(k_values=(0, 1, 2, 3, 4), agreement=0.7, n_per_k=8, seed=5))
    ids = label_tokens(tokenizer, DEFAULT_LABELS).ids
    fake = _fake_model(tokenizer, ps, ids, [p.predictive for p in ps])
    d = label_distribution(label_logprobs(fake, [p.text for p in ps], ids, batch_size=6))
    assert np.allclose(d["predictive"], [p.predictive for p in ps], atol=1e-5)
    assert np.allclose(d["mass"], 1.0, atol=1e-5)
    hb = np.array([p.entropy_bits for p in ps])
    m = calibration_metrics([p.k for p in ps], hb, d["entropy"], d["mass"], **FAST)
    assert m.mae.value < 1e-4 and m.pearson.value > 0.9999
    # many prompts share one analytic entropy (every k = 0 prompt has 1 bit); float rounding breaks
    # those ties at random, so ranks agree exactly once both entropies are rounded to 1e-4 bits
    m = calibration_metrics([p.k for p in ps], np.round(hb, 4), np.round(d["entropy"], 4), d["mass"], **FAST)
    assert m.spearman.value == pytest.approx(1.0, abs=1e-12) and m.pearson.value > 0.9999
    for e_model, e_bayes in zip(m.model_per_k, m.bayes_per_k):
        assert e_model.value == pytest.approx(e_bayes.value, abs=1e-4)
    assert m.label_mass.value == pytest.approx(1.0, abs=1e-5)


def test_uniform_model_mae(tokenizer):
    ps = generate(SulaConfig(n_per_k=8, seed=6))
    ids = label_tokens(tokenizer, DEFAULT_LABELS).ids
    fake = _fake_model(tokenizer, ps, ids, None)
    d = label_distribution(label_logprobs(fake, [p.text for p in ps], ids))
    hb = [p.entropy_bits for p in ps]
    m = calibration_metrics([p.k for p in ps], hb, d["entropy"], d["mass"], **FAST)
    expected = sum(abs(1.0 - h) for h in hb) / len(hb)
    assert m.mae.value == pytest.approx(expected, abs=1e-9)
    assert m.mae.low <= m.mae.value <= m.mae.high
    assert m.label_mass.value == pytest.approx(2 / len(tokenizer), rel=1e-4)


# -- end to end ---------------------------------------------------------------------------------
def test_run_sula_twin(twin_factory, tmp_path):
    m = twin_factory("llama-3.2-1b")
    seen = []
    # a random twin puts ~2/vocab on the labels: threshold 0 scores every prompt, so every line is drawn
    cfg = SulaConfig(n_per_k=4, min_label_mass=0.0, **FAST)
    r = run_sula(m, cfg, progress=lambda stage, done, total: seen.append(stage))
    assert set(r.conditions) == {"main", "lexical_remap", "shuffled", "ablated"}
    assert r.layer == m.layout.n_layers - 1 and r.model == m.provenance.model_id
    assert r.provenance["seed"] == 0 and len(r.provenance["prompts_hash"]) == 64 and r.provenance["versions"]
    main = r.main
    assert main.n == 20 and main.k.tolist() == [k for k in cfg.k_values for _ in range(4)]
    assert np.all((main.model_entropy >= 0) & (main.model_entropy <= 1))
    assert np.all((main.label_mass > 0) & (main.label_mass <= 1))
    assert np.allclose(r.conditions["shuffled"].bayes_entropy, 1.0)
    assert np.array_equal(r.conditions["ablated"].bayes_entropy, main.bayes_entropy)
    assert r.conditions["lexical_remap"].labels.labels == DEFAULT_REMAP_LABELS
    # orientation: PC1 grows with the model's entropy on the main prompts
    assert scipy.stats.spearmanr(main.pc1, main.model_entropy).statistic >= 0 or np.ptp(main.model_entropy) == 0
    assert len(main.geometry.pc1_per_k) == 5 and any(s.endswith("values") for s in seen)
    # persistence
    back = SulaResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and back.config == cfg
    path = r.save(tmp_path / "sula.json")
    assert SulaResult.load(tmp_path) == r and SulaResult.load(path) == r
    for fig in (calibration_figure(r), per_k_figure(r), trajectory_figure(r)):
        assert fig.data
    # per condition: model, predictive entropy, posterior entropy
    assert len(per_k_figure(r).data) == 12 and len(trajectory_figure(r).data) == 4


def test_results_kind_and_version(tmp_path):
    from geoprobe.paths import write_json

    write_json(tmp_path / "a.json", {"kind": "geoprobe.scan", "version": 1})
    with pytest.raises(ResultsError, match="not a geoprobe SULA results file"):
        SulaResult.load(tmp_path / "a.json")
    write_json(tmp_path / "b.json", {"kind": "geoprobe.sula", "version": 99})
    with pytest.raises(ResultsError, match="version 99"):
        SulaResult.load(tmp_path / "b.json")
    write_json(tmp_path / "c.json", {"kind": "geoprobe.sula", "version": 1, "model": "m"})
    with pytest.raises(ResultsError, match="damaged"):
        SulaResult.load(tmp_path / "c.json")


def test_run_sula_rejects_multi_token_labels_before_running(twin_factory):
    m = twin_factory("llama-3.2-1b")
    with pytest.raises(SulaError, match="tokenises as"):
        run_sula(m, SulaConfig(n_per_k=1, remap_labels=("zorb", "dax")))


@pytest.mark.slow
@requires_smollm2
def test_run_sula_smollm2(smollm2):
    r = run_sula(smollm2, SulaConfig(n_per_k=6, **FAST))
    main = r.main
    assert main.n == 30 and r.layer == smollm2.layout.n_layers - 1
    # a real model puts visible mass on the in-context labels once it has seen some
    assert main.label_mass[main.k >= 2].mean() > 0.05
    assert math.isfinite(main.metrics.mae.value) and 0 <= main.metrics.mae.value <= 1
    assert math.isfinite(main.geometry.rho_pc1_bayes.value)
    assert SulaResult.from_dict(r.to_dict()) == r
