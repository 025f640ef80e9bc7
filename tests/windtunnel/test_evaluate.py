"""Evaluation metrics on planted predictions, and head ablation (an out-edit of geoprobe's attention function) against a
direct zeroing of the Hugging Face module's input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geoprobe.windtunnel.evaluate import (
    TunnelMetrics,
    ablations,
    kl_bits,
    metrics,
    model_predictive,
    paper_mae,
    probed_predictive,
    zeroed_heads,
)
from geoprobe.windtunnel.tasks import Batch, BijectionTask, entropy_bits


def _batch(n=400, K=20, seed=0):
    return BijectionTask(V=20, K=K).sample(n, np.random.default_rng(seed))


def test_perfect_predictions_score_zero():
    b = _batch()
    m = metrics("oracle", b.targets, b)
    assert m.mae_paper.value == pytest.approx(0, abs=1e-12)
    assert m.mae_sample.value == pytest.approx(0, abs=1e-12)
    assert m.kl.value == pytest.approx(0, abs=1e-12)
    assert m.curve_model == pytest.approx(m.curve_bayes)


def test_uniform_predictions_have_the_known_error():
    b = _batch()
    uni = np.full_like(b.targets, 1 / 20)
    m = metrics("uniform", uni, b)
    h = b.entropy
    assert m.mae_paper.value == pytest.approx(np.mean(np.abs(math.log2(20) - h.mean(0))))
    assert m.mae_sample.value == pytest.approx(np.mean(np.abs(math.log2(20) - h)))
    # KL(p || uniform) = log2 V - H(p)
    assert m.kl.value == pytest.approx(np.mean(math.log2(20) - h))
    assert m.mae_paper.low <= m.mae_paper.value <= m.mae_paper.high


def test_paper_definition_lets_errors_cancel_and_per_sample_does_not():
    """Half the sequences over-, half under-estimate the entropy by the same amount."""
    n, K = 200, 4
    targets = np.tile(np.array([0.7, 0.1, 0.1, 0.1]), (n, K, 1))
    b = Batch(np.ones((n, 2 * K + 1), dtype=np.int64), targets, 1 + 2 * np.arange(K), np.zeros((n, K), dtype=np.int64))
    sharper, flatter = np.array([0.8, 0.2 / 3, 0.2 / 3, 0.2 / 3]), None
    h0, h1 = entropy_bits(targets[0, 0]), entropy_bits(sharper)
    # find a flatter distribution with entropy h0 + (h0 - h1)
    from scipy.optimize import brentq

    q = brentq(lambda x: entropy_bits(np.array([x, *(3 * [(1 - x) / 3])])) - (2 * h0 - h1), 0.3, 0.7)
    flatter = np.array([q, *(3 * [(1 - q) / 3])])
    probs = np.concatenate([np.tile(sharper, (n // 2, K, 1)), np.tile(flatter, (n // 2, K, 1))])
    m = metrics("cancel", probs, b)
    assert m.mae_paper.value == pytest.approx(0, abs=1e-9)
    assert m.mae_sample.value == pytest.approx(h0 - h1, rel=1e-6)


def test_kl_bits_planted():
    p = np.array([0.5, 0.5, 0.0])
    q = np.array([0.25, 0.25, 0.5])
    assert kl_bits(p, q) == pytest.approx(1.0)
    assert kl_bits(p, p) == pytest.approx(0.0)


def test_metrics_round_trip_and_validation():
    b = _batch(n=50, K=5)
    m = metrics("x", b.targets, b)
    assert TunnelMetrics.from_dict(m.to_dict()).to_dict() == m.to_dict()
    with pytest.raises(ValueError, match="shape"):
        metrics("x", b.targets[:, :3], b)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from geoprobe.windtunnel.scales import run_specs
    from geoprobe.windtunnel.train import checkpoint_dir, train

    tf, _ = run_specs("bijection", "tiny", steps=20)
    run = tmp_path_factory.mktemp("wt") / "transformer"
    train(tf, run)
    return tf, checkpoint_dir(run, 20)


def test_probed_predictions_equal_the_plain_model(tiny_run):
    from geoprobe.models.loading import load_model
    from geoprobe.windtunnel.train import load_weights

    spec, ckpt = tiny_run
    task = spec.task_obj
    b = task.sample(64, np.random.default_rng(0))
    p_hf, m_hf = model_predictive(load_weights(spec, ckpt), b, task.answer_ids)
    p_br, m_br = probed_predictive(load_model(str(ckpt)), b, task.answer_ids)
    np.testing.assert_allclose(p_br, p_hf, atol=1e-5)
    np.testing.assert_allclose(m_br, m_hf, atol=1e-5)


def test_head_ablation_matches_zeroing_the_output_projection_input(tiny_run):
    """Independent computation: a pre-hook on the HF layer's o_proj zeroes head h's slice."""
    from geoprobe.models.loading import load_model
    from geoprobe.windtunnel.evaluate import predictive
    from geoprobe.windtunnel.train import load_weights

    spec, ckpt = tiny_run
    task = spec.task_obj
    b = task.sample(32, np.random.default_rng(1))
    layer, head = 1, 1
    hf = load_weights(spec, ckpt)
    d_head = hf.config.hidden_size // hf.config.num_attention_heads

    def pre(module, args):
        x = args[0].clone()
        x[..., head * d_head : (head + 1) * d_head] = 0
        return (x,)

    handle = hf.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(pre)
    try:
        with torch.inference_mode():
            want, _ = predictive(hf(input_ids=torch.as_tensor(b.ids)).logits[:, b.positions], task.answer_ids)
    finally:
        handle.remove()
    loaded = load_model(str(ckpt))
    with zeroed_heads(loaded, {layer: [head]}):
        got, _ = probed_predictive(loaded, b, task.answer_ids)
    intact, _ = probed_predictive(loaded, b, task.answer_ids)  # hooks gone after the block
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.abs(intact - got).max() > 1e-4


def test_ablation_table_shape_and_baseline(tiny_run):
    from geoprobe.models.loading import load_model

    spec, ckpt = tiny_run
    task = spec.task_obj
    b = task.sample(64, np.random.default_rng(2))
    a = ablations(load_model(str(ckpt)), task, b)
    L, H = spec.size["n_layers"], spec.size["n_heads"]
    assert len(a.layer_mae) == L and all(len(r) == H for r in a.head_mae)
    p, _ = model_predictive(
        __import__("geoprobe.windtunnel.train", fromlist=["x"]).load_weights(spec, ckpt), b, task.answer_ids
    )
    assert a.baseline == pytest.approx(paper_mae(entropy_bits(p), b.entropy), abs=1e-6)
    assert 0 <= a.hypothesis_head < H
