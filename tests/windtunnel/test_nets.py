"""The learners: capacity matching, the MLP's causal input, the word tokenizer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.windtunnel.nets import MLPConfig, build_mlp, matched_mlp_config, n_params, to_text, word_tokenizer
from geoprobe.windtunnel.scales import SCALES, run_specs
from geoprobe.windtunnel.tasks import BijectionTask, HMMTask
from geoprobe.windtunnel.train import build


@pytest.mark.parametrize("task", ["bijection", "hmm"])
@pytest.mark.parametrize("scale", SCALES)
def test_mlp_is_capacity_matched_within_one_percent(task, scale):
    tf, ml = run_specs(task, scale)
    a, b = n_params(build(tf)), n_params(build(ml))
    assert abs(a - b) <= 0.01 * a
    assert MLPConfig(**ml.size).n_params() == b  # the closed-form count is the module's


def test_paper_bijection_transformer_size():
    tf, ml = run_specs("bijection", "paper")
    assert (tf.size["n_layers"], tf.size["n_heads"], tf.size["d_model"]) == (6, 6, 192)
    assert 2.6e6 < n_params(build(tf)) < 2.7e6  # the paper's ≈2.67M
    assert ml.size["depth"] == 20


def test_matching_fails_loudly():
    with pytest.raises(ValueError, match="within 1 %"):
        matched_mlp_config(10, vocab_size=50, seq_len=40, depth=4)


def test_mlp_prediction_sees_only_its_prefix():
    cfg = MLPConfig(vocab_size=12, seq_len=9, d_embed=4, width=16, depth=3)
    mlp = build_mlp(cfg, seed=0).eval()
    ids = torch.randint(1, 12, (2, 9))
    pos = torch.tensor([2, 5, 8])
    base = mlp(ids, pos)
    later = ids.clone()
    later[:, 6:] = (later[:, 6:] % 11) + 1  # change tokens after position 5 only
    out = mlp(later, pos)
    torch.testing.assert_close(out[:, :2], base[:, :2])  # predictions at 2 and 5 unchanged
    assert not torch.allclose(out[:, 2], base[:, 2])
    # a shorter sequence reads as padded
    torch.testing.assert_close(mlp(ids[:, :6], pos[:2]), base[:, :2])
    with pytest.raises(ValueError, match="longer than"):
        mlp(torch.randint(1, 12, (1, 10)), pos)


@pytest.mark.parametrize("task", [BijectionTask(V=7, K=5), HMMTask(S=3, V=4, K=6)])
def test_word_tokenizer_round_trips_token_ids(task):
    tok = word_tokenizer(task.vocab)
    b = task.sample(4, np.random.default_rng(0))
    for row in b.ids:
        text = to_text(row[1:], task.vocab)
        assert tok(text)["input_ids"] == list(row)  # <bos> prepended, every word its id
    assert tok.pad_token_id == 0 and tok.bos_token_id == 1


@pytest.mark.parametrize("task", ["bijection", "hmm"])
def test_the_small_scale_sits_between_tiny_and_cpu(task):
    """``small``: models that learn in minutes a seed on one core (docs/windtunnel.md records that they do)."""
    sizes = [n_params(build(run_specs(task, scale)[0])) for scale in ("tiny", "small", "cpu")]
    assert sizes[0] < sizes[1] < sizes[2]
    tf, _ = run_specs(task, "small", seed=3)
    assert tf.train.seed == 3 and tf.train.n_checkpoints == 12  # enough checkpoints for a t90


def test_an_unknown_scale_names_every_scale_and_the_flag():
    from geoprobe.errors import GeoprobeError

    with pytest.raises(GeoprobeError, match=r"not tiny\|small\|cpu\|paper; pass --scale"):
        run_specs("bijection", "medium")


@pytest.mark.parametrize("task", ["bijection", "hmm"])
def test_the_frame_recipes_ask_for_five_seeds_of_the_small_scale(task):
    from pathlib import Path

    from geoprobe.recipes import load_probe

    probe = load_probe(Path(__file__).resolve().parents[2] / "probes" / f"windtunnel-frame-{task}.toml")
    cfg = probe.config
    assert (cfg.task, cfg.scale, cfg.arch, cfg.seeds, cfg.ablations) == (task, "small", "transformer", 5, False)
