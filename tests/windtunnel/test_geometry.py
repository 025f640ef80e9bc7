"""Probes on wind-tunnel checkpoints: prompts, capture against the plain model, frame vs precision."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.analysis.stats import Estimate
from geoprobe.windtunnel.geometry import TrainingGeometry, pc1_coords, probe_prompts, training_geometry
from geoprobe.windtunnel.tasks import BijectionTask, HMMTask, entropy_bits


@pytest.mark.parametrize("task,first", [(BijectionTask(V=6, K=6), "k"), (HMMTask(S=3, V=3, K=6), "o")])
def test_probe_prompts_end_at_a_query_with_its_analytic_entropy(task, first):
    texts, h, which = probe_prompts(task, 40, seed=0)
    assert all(t.split()[-1].startswith(first) for t in texts)
    b = task.sample(40, __import__("geoprobe.windtunnel.train", fromlist=["x"]).step_rng(0 + 20_000_033, task.K))
    np.testing.assert_allclose(h, b.entropy[np.arange(40), which])
    assert len(set(which.tolist())) > 1  # cut positions vary


def test_pc1_recovers_a_planted_axis():
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 4, 300)
    axis = rng.normal(size=(2, 16))
    values = t[:, None, None] * axis[None] + 0.05 * rng.normal(size=(300, 2, 16))
    coords, share = pc1_coords(values)
    assert share > 0.9
    assert abs(np.corrcoef(coords, t)[0, 1]) > 0.99


def _geometry(frame_tv, mae):
    C = len(frame_tv)
    return TrainingGeometry(
        steps=tuple(range(0, 10 * C, 10)),
        n_probes=3,
        key_orth=((0.1,),) * C,
        attn_entropy=((1.0,),) * C,
        frame_tv=tuple(frame_tv),
        value_pc1=(0.5,) * C,
        value_rho=(0.9,) * C,
        mae_paper=tuple(mae),
        mae_sample=tuple(mae),
        final_layer_rho=(0.9,),
        calibration=Estimate(0.9, 0.8, 0.95),
        final_pc1=(0.0, 1.0, 2.0),
        analytic_entropy=(2.0, 1.0, 0.0),
        final_model_entropy=(2.0, 1.0, 0.0),
    )


def test_frame_first_dissociation_on_planted_curves():
    g = _geometry([0.8, 0.05, 0.01, 0.0, 0.0], [2.0, 1.0, 0.2, 0.012, 0.01])  # log-scale 0.97 at step 30
    # frame: 0 at step 0, 0.9375 at step 10 -> 0.9 reached at 11^(0.9/0.9375) - 1 (linear in log(step + 1))
    assert g.t90_frame == pytest.approx(11 ** (0.9 / 0.9375) - 1)
    p = np.log(2.0 / np.array([0.2, 0.012])) / np.log(200.0)  # precision at steps 20 and 30
    w = (0.9 - p[0]) / (p[1] - p[0])
    assert g.t90_precision == pytest.approx(21 * (31 / 21) ** w - 1)
    assert g.dissociation
    g2 = _geometry([0.8, 0.7, 0.5, 0.3, 0.0], [2.0, 0.02, 0.012, 0.011, 0.01])
    assert not g2.dissociation
    assert TrainingGeometry.from_dict(g.to_dict()).to_dict() == g.to_dict()
    with pytest.raises(ValueError, match="checkpoints"):
        _geometry([0.8, 0.1], [1.0])


def test_checkpoint_capture_matches_the_plain_model(tmp_path):
    """geoprobe's capture on a checkpoint directory gives the model's own next-token entropy."""
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models.loading import load_model
    from geoprobe.windtunnel.nets import word_tokenizer
    from geoprobe.windtunnel.scales import run_specs
    from geoprobe.windtunnel.train import checkpoint_dir, load_weights, train

    tf, _ = run_specs("hmm", "tiny", steps=10)
    train(tf, tmp_path / "t")
    ckpt = checkpoint_dir(tmp_path / "t", 10)
    texts, _, _ = probe_prompts(tf.task_obj, 16, seed=0)
    cap = capture(load_model(str(ckpt)), texts, CaptureConfig(values=True, keys=False, batch_size=5))
    hf = load_weights(tf, ckpt)
    tok = word_tokenizer(tf.task_obj.vocab)
    for i, t in enumerate(texts):
        ids = torch.tensor([tok(t)["input_ids"]])
        with torch.inference_mode():
            p = torch.softmax(hf(input_ids=ids).logits[0, -1].double(), -1).numpy()
        assert cap.next_entropy[i] == pytest.approx(entropy_bits(p), abs=1e-4)


def test_training_geometry_on_a_tiny_run(tmp_path):
    from geoprobe.windtunnel.scales import run_specs
    from geoprobe.windtunnel.train import train

    tf, _ = run_specs("bijection", "tiny", steps=20)
    train(tf, tmp_path / "t")
    g = training_geometry(tmp_path / "t", tf, n_probes=40, eval_n=64, n_resamples=200)
    assert g.steps[0] == 0 and g.steps[-1] == 20
    assert g.frame_tv[-1] == 0.0 and g.frame_tv[0] > 0
    assert len(g.key_orth[0]) == tf.size["n_layers"]
    assert 0 <= g.calibration.low <= g.calibration.high <= 1
    assert 0 <= g.calibration_layer < tf.size["n_layers"]
    assert g.calibration.value == pytest.approx(np.nanmax(np.abs(g.final_layer_rho)))
