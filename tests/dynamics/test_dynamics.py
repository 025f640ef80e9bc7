"""geoprobe dynamics: the sticky chain against enumeration and Monte-Carlo, the training loop against
the schedules it claims, the result's round trip and page, and the command end to end (tiny scale)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from geoprobe.analysis.stats import t_interval
from geoprobe.dynamics.config import DynamicsConfig, DynamicsError
from geoprobe.dynamics.result import DynamicsResult, SeedRun, steps_to
from geoprobe.dynamics.run import head_loss, init_weights, run_dynamics, train
from geoprobe.dynamics.task import conditional_entropy_nats, sample, transition_matrix
from tests.cli.test_cli import run_cli

TINY = DynamicsConfig(length=60, steps=12, seeds=2)


def test_transition_matrix_is_the_authors_sticky_chain():
    P = transition_matrix(8, 0.3)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.diag(P), 0.3)
    w = np.array([1, 1 / 2, 1 / 3, 1 / 4, 1 / 3, 1 / 2, 1])  # 1 / circular distance from state 0 to 1..7
    np.testing.assert_allclose(P[0, 1:], 0.7 * w / w.sum(), rtol=1e-14)
    for i in range(8):  # circulant: every row is row 0 rotated
        np.testing.assert_allclose(P[i], np.roll(P[0], i), rtol=1e-14)
    h = -(P[0] * np.log(P[0])).sum()  # every row has the same entropy
    assert conditional_entropy_nats(P) == pytest.approx(h, rel=1e-14)


def test_sampled_chain_follows_the_transitions_within_monte_carlo_error():
    P = transition_matrix(8, 0.3)
    x, y = sample(P, 40_001, 20, seed=5)
    prev = torch.cat([torch.tensor([-1]), y[:-1]]).numpy()  # y_t's predecessor is y_{t-1}; the first is unknown
    counts = np.zeros((8, 8))
    np.add.at(counts, (prev[1:], y[1:].numpy()), 1)
    freq = counts / counts.sum(1, keepdims=True)
    se = np.sqrt(P * (1 - P) / counts.sum(1, keepdims=True))
    assert np.all(np.abs(freq - P) < 5 * se)  # 5 SE on each of 64 cells
    assert x.shape == (40_000, 20) and x.dtype == torch.float32


def test_inputs_are_the_previous_symbols_mean_plus_unit_noise():
    P = transition_matrix(8, 0.3)
    x, y = sample(P, 3001, 20, seed=1)
    means = torch.randn(8, 20, generator=torch.Generator().manual_seed(0))
    resid = x[1:] - means[y[:-1]]  # x_{t+1} = μ_{y_t} + ε
    assert abs(float(resid.mean())) < 0.02 and abs(float(resid.std()) - 1.0) < 0.02


def test_em_like_schedule_moves_each_weight_at_its_own_rate():
    """One step of `train` equals a hand step: W −= lr_w · ∂L/∂W, with autograd's gradient."""
    P = transition_matrix(8, 0.3)
    x, y = sample(P, 50, 20, seed=2)
    w0 = init_weights(TINY, 2)
    lrs = {"W_Q": 0.01, "W_K": 0.01, "W_O": 0.01, "W_V": 0.1}
    w = {k: t.clone().requires_grad_(True) for k, t in w0.items()}
    grads = dict(zip(w, torch.autograd.grad(head_loss(w, x, y), list(w.values()))))
    expect = {k: w0[k] - lrs[k] * grads[k] for k in w0}
    losses = train(w0, x, y, lrs, 2)
    w_after = {k: expect[k].clone().requires_grad_(False) for k in expect}
    assert losses[1] == pytest.approx(float(head_loss(w_after, x, y)), rel=1e-6)


def test_run_result_round_trip_and_page(tmp_path):
    r = run_dynamics(TINY)
    assert len(r.runs) == 2 and all(len(s.sgd) == 12 and len(s.em) == 12 for s in r.runs)
    assert r.runs[0].sgd[0] == r.runs[0].em[0]  # the same initialisation for both schedules
    back = DynamicsResult.load(r.save(tmp_path / "dynamics.json"))
    assert back == r and back.speedup() == r.speedup()
    html = r.report(tmp_path / "dynamics.html").read_text()
    assert "loss-curves" in html and "2.3×" in html and "Student t" in html


def test_steps_to_threshold_and_mean_ci():
    assert steps_to([3.0, 2.0, 1.0], 1.5) == 2 and steps_to([3.0, 2.0], 1.0) == 2
    e = t_interval([1.0, 2.0, 3.0])
    t = 0.95 / math.sqrt(2 * 0.975 * 0.025)  # Student t, 2 df, 0.975 quantile in closed form
    assert e.value == 2.0 and e.high - e.value == pytest.approx(t * 1.0 / math.sqrt(3), rel=1e-12)  # SD 1
    cfg = DynamicsConfig(length=10, steps=3, seeds=2)
    r = DynamicsResult(
        config=cfg,
        floor_nats=1.0,
        runs=(SeedRun(0, (3.0, 2.0, 1.0), (3.0, 0.5, 0.4)), SeedRun(1, (3.0, 2.0, 1.2), (3.0, 2.5, 0.9))),
    )
    assert r.threshold() == pytest.approx(1.1) and r.em_steps_to_sgd().value == 1.5 and r.speedup() == 2.0


def test_bad_settings_are_one_line_errors():
    with pytest.raises(
        DynamicsError, match=r"steps 0 is below 1; pass --steps 1 or more \(or steps in the dynamics recipe\)"
    ):
        DynamicsConfig(steps=0)
    with pytest.raises(DynamicsError, match="self_prob 1.0 must be in"):
        DynamicsConfig(self_prob=1.0)
    with pytest.raises(DynamicsError, match="d_k 0 is below 1; set d_k in the dynamics recipe"):
        DynamicsConfig(d_k=0)
    with pytest.raises(DynamicsError, match="lr_value -1.0 must be positive; pass --lr-value a positive value"):
        DynamicsConfig(lr_value=-1.0)


def test_cli_end_to_end(tmp_path, capsys, monkeypatch):
    cmd = [
        sys.executable,
        "-m",
        "geoprobe",
        "dynamics",
        "--steps",
        "10",
        "--seeds",
        "2",
        "--length",
        "40",
        "--out",
        str(tmp_path / "run"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={"HF_HUB_OFFLINE": "1", "PATH": ""})
    assert done.returncode == 0, done.stderr
    assert "EM-like reaches SGD's final loss" in done.stdout
    d = json.loads((tmp_path / "run" / "dynamics.json").read_text())
    assert d["kind"] == "geoprobe.dynamics" and len(d["runs"]) == 2 and d["config"]["steps"] == 10
    assert [c["seed"] for c in d["gradient_checks"]] == [0, 1]
    page = (tmp_path / "run" / "dynamics.html").read_text()  # the page beside the results, as every command writes
    assert 'id="loss-curves"' in page and "against autograd" in page and "dynamics.html" in done.stdout
    code, _, err = run_cli(cmd[3:], capsys, monkeypatch)  # the same command again, in this process
    assert code == 2 and "--force" in err  # nothing written is silently replaced


def test_cli_shows_progress_with_an_eta_and_resumes_after_ctrl_c(tmp_path, capsys, monkeypatch):
    """Was: about 11 minutes of silence with the defaults (one spinner, no counts, no ETA), and Ctrl-C kept
    nothing ("the outputs are written at the end"). Now a bar (here, where stderr is a pipe, progress lines)
    with counts and an ETA, and every 100 steps (dynamics.run.BLOCK) each schedule's weights and losses are
    kept: the same command after Ctrl-C goes on from there, to the numbers of an uninterrupted run."""
    import os
    import signal

    from geoprobe.cli.progress import EVERY_ENV

    root = Path(__file__).resolve().parents[2]
    config = DynamicsConfig(steps=400, seeds=1, length=40)
    cmd = [sys.executable, "-m", "geoprobe", "dynamics", "--steps", "400", "--seeds", "1", "--length", "40"]
    cmd += ["--out", str(tmp_path / "run")]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(root), **{EVERY_ENV: "0"})
    proc = subprocess.Popen(  # a background job inherits SIGINT ignored: restore Python's handler
        cmd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = []
    for line in proc.stderr:
        if line.startswith("training: "):
            assert "/800 (" in line and line.rstrip().endswith("left"), line  # counts and an ETA
            seen.append(int(line.split()[1].split("/")[0].replace(",", "")))
            if seen[-1] >= 150:  # a block of the first schedule kept
                os.kill(proc.pid, signal.SIGINT)
                break
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, rest
    assert "rerun the same command to resume (each schedule's weights and losses" in rest, rest
    assert (tmp_path / "run" / "dynamics.partial" / "unit-0.sgd.safetensors").is_file()
    assert not (tmp_path / "run" / "dynamics.json").exists()
    monkeypatch.setenv(EVERY_ENV, "0")
    code, _, err = run_cli(cmd[3:], capsys, monkeypatch)  # the same command resumes (in this process: stderr is
    assert code == 0, err  # captured, not a terminal, so it shows the same progress lines)
    first = next(line for line in err.splitlines() if line.startswith("training: "))
    assert int(first.split()[1].split("/")[0].replace(",", "")) >= 100, first  # went on from the kept block
    resumed = DynamicsResult.load(tmp_path / "run")
    assert resumed.runs == run_dynamics(config).runs  # bit for bit the uninterrupted curves
    assert not (tmp_path / "run" / "dynamics.partial").exists()
