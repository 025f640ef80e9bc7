"""train_tunnel / evaluate_tunnel: the training log across sessions, unfinished runs, config checks."""

from __future__ import annotations

import json

import pytest

from geoprobe.errors import GeoprobeError
from geoprobe.windtunnel.config import WindTunnelConfig
from geoprobe.windtunnel.run import evaluate_tunnel, train_tunnel
from geoprobe.windtunnel.train import TrainingError


def test_training_log_keeps_the_sessions_that_trained(tmp_path):
    out = tmp_path / "wt"

    class Stop(Exception):
        pass

    def stop_at_25(stage, done, total):
        if done == 25:
            raise Stop

    with pytest.raises(Stop):
        train_tunnel("bijection", "tiny", out, arch="transformer", progress=stop_at_25)
    with pytest.raises(TrainingError, match="not finished"):
        evaluate_tunnel(out, geometry=False, ablate=False)
    first = train_tunnel("bijection", "tiny", out, arch="transformer")["transformer"]
    assert first["resumed_from"] is not None and first["steps"] == 40
    assert len(first["sessions"]) == 1 and first["sessions"][0]["from_step"] == first["resumed_from"]
    again = train_tunnel("bijection", "tiny", out, arch="transformer")["transformer"]
    assert again["resumed_from"] == 40 and again["sessions"] == first["sessions"]
    assert again["seconds"] == pytest.approx(first["seconds"])
    assert json.loads((out / "transformer" / "train_log.json").read_text())["sessions"] == first["sessions"]


def test_config_checks_task_parameters():
    assert WindTunnelConfig(task="hmm", scale="tiny", states=4).task_params() == {"S": 4}
    with pytest.raises(GeoprobeError, match="--vocab"):
        WindTunnelConfig(task="bijection", scale="tiny", vocab=500)
    with pytest.raises(GeoprobeError, match="--task hmm"):
        WindTunnelConfig(task="bijection", scale="tiny", states=3)
    with pytest.raises(GeoprobeError, match="--n-eval"):
        WindTunnelConfig(n_eval=2)


def test_custom_length_is_evaluated_first(tmp_path):
    train_tunnel("hmm", "tiny", tmp_path / "h", steps=4, task_params={"K": 7})
    r = evaluate_tunnel(tmp_path / "h", n_eval=16, geometry=False, ablate=False)
    assert r.lengths == (7, 9)  # the training length, then the scale's longer one
    assert r.at("mlp", 9).K == 9
