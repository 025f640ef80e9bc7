"""Short training runs: well below the trivial baselines, the predicted weight structure on the linear task,
and bit-identical repeats with the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from geoprobe.denoise.attention import predict, weight_fit
from geoprobe.denoise.bayes import oracle, per_prompt_mse
from geoprobe.denoise.tasks import make_task, sample
from geoprobe.denoise.train import TrainSettings, train_model
from geoprobe.errors import GeoprobeError

TASK = make_task("linear", n=6, d=2, context_length=100)


@pytest.fixture(scope="module")
def trained():
    s = TrainSettings(steps=300, batch_size=32, lr=0.02)
    return {k: train_model(TASK, k, s, seed=0) for k in ("softmax", "linear")}


def test_training_beats_the_baselines(trained):
    p = sample(TASK, 1000, np.random.default_rng(123))
    zero = per_prompt_mse(np.zeros_like(p.clean), p.clean).mean()  # ≈ (d/n) σ0² = 0.67
    ident = per_prompt_mse(p.noisy, p.clean).mean()  # ≈ σZ² = 1
    bayes = per_prompt_mse(oracle(TASK, p), p.clean).mean()  # ≈ 0.22
    for kind, (model, log) in trained.items():
        mse = per_prompt_mse(predict(model, p.context, p.noisy), p.clean).mean()
        assert mse < 0.6 * min(zero, ident), (kind, mse, zero, ident)
        assert mse < 1.5 * bayes, (kind, mse, bayes)
        assert log["steps"] == 300 and len(log["loss_curve"]) == 10


def test_linear_attention_learns_the_predicted_structure(trained):
    """W_PV·W_KQ ≈ I/(σ0²+σZ²) = I/3 (loose: 300 steps, L = 100)."""
    W = trained["linear"][0].matrices()["W_PV·W_KQ"]
    c, residual = weight_fit(W)
    assert abs(c - 1 / 3) < 0.25 / 3, c
    assert residual < 0.3, residual


def test_same_seed_same_weights_other_seed_other_weights():
    s = TrainSettings(steps=15, batch_size=8)
    a = train_model(TASK, "softmax", s, seed=3)[0].matrices()
    b = train_model(TASK, "softmax", s, seed=3)[0].matrices()
    c = train_model(TASK, "softmax", s, seed=4)[0].matrices()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.allclose(a["W_KQ"], c["W_KQ"])


def test_bad_settings():
    with pytest.raises(GeoprobeError, match="--steps 1"):
        TrainSettings(steps=0)
    with pytest.raises(GeoprobeError, match="--batch-size"):
        TrainSettings(batch_size=0)
