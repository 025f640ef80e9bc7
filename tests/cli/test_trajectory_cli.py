"""geoprobe trajectory end to end: a tiny run on a real corpus domain, the run directory's life (rerun
refused, --force rewrites the manifest without retraining, a lost page finished from the JSON, other
settings named), ``geoprobe report`` and ``geoprobe run RECIPE``, and bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.cli.test_cli import run_cli

TINY = "--steps 3 --domains math --layers 2 --hidden-size 32 --heads 2 --vocab-size 300 --seq-len 16 --batch-size 2"
ARGS = [*TINY.split(), "--threads", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``geoprobe trajectory`` in this process (the SIGTERM test below runs ``python -m geoprobe trajectory`` in a
    subprocess): (its working directory, its exit code, stdout and stderr)."""
    from tests.cli.test_cli import run_main

    cwd = tmp_path_factory.mktemp("cli")
    code, out, err = run_main(["trajectory", "--out", "traj", *ARGS], cwd=cwd, GEOPROBE_PROGRESS_EVERY="0")
    p = subprocess.CompletedProcess([], code, out, err)
    assert p.returncode == 0, p.stderr
    return cwd, p


@pytest.fixture
def copy(trained, tmp_path):
    shutil.copytree(trained[0] / "traj", tmp_path / "traj")
    return tmp_path


def test_trains_on_the_math_corpus_and_writes_the_manifest_page_and_checkpoints(trained):
    cwd, p = trained
    d = json.loads((cwd / "traj" / "trajectory.json").read_text())
    assert [c["step"] for c in d["checkpoints"]] == [0, 1, 2, 3]
    assert d["data"]["source"] == "corpora" and d["data"]["domains"] == ["math"]
    assert d["data"]["corpus_version"] and d["data"]["documents"]["math"] > 300
    assert d["provenance"]["sessions"] == [[0, 1]]  # (first step, threads) of each session
    assert (cwd / "traj" / "trajectory.html").is_file() and (cwd / "traj" / ".geoprobe-run.json").is_file()
    assert "4 checkpoints" in p.stdout and "wrote" in p.stdout
    assert "training: 3/3" in p.stderr  # progress lines where stderr is not a terminal


def test_rerun_is_refused_and_force_rewrites_without_retraining(copy, capsys, monkeypatch):
    weights = copy / "traj" / "checkpoints" / "step3" / "model.safetensors"
    before = weights.stat().st_mtime_ns
    code, _, err = run_cli(["trajectory", "--out", "traj", *ARGS], capsys, monkeypatch, cwd=copy)
    assert code == 2 and err.strip().splitlines() == [
        "error: 'traj/trajectory.json' already exists; pass --force to replace this run or choose another --out"
    ]
    code, out, err = run_cli(["trajectory", "--out", "traj", *ARGS, "--force"], capsys, monkeypatch, cwd=copy)
    assert code == 0, err
    assert "already trained: nothing to do" in out
    assert weights.stat().st_mtime_ns == before


def test_a_lost_page_is_finished_from_the_json_and_report_rebuilds_it(copy, capsys, monkeypatch):
    (copy / "traj" / "trajectory.html").unlink()
    code, out, err = run_cli(["trajectory", "--out", "traj", *ARGS], capsys, monkeypatch, cwd=copy)
    assert code == 0, err
    assert "finished traj" in out and (copy / "traj" / "trajectory.html").is_file()
    code, out, err = run_cli(["report", "traj", "--out", "page.html"], capsys, monkeypatch, cwd=copy)
    assert code == 0, err
    assert "checkpoints/step3" in (copy / "page.html").read_text()


def test_other_settings_are_refused_before_the_claim_naming_the_flag(copy, capsys, monkeypatch):
    code, _, err = run_cli(["trajectory", "--out", "traj", *ARGS, "--seed", "4"], capsys, monkeypatch, cwd=copy)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "trained with other settings (seed 0 vs 4); pass --seed 0 to resume it" in line


def test_the_recipe_runs_the_same_training(trained, tmp_path, capsys, monkeypatch):
    recipe = tmp_path / "t.toml"
    recipe.write_text(
        '[probe]\ncommand = "trajectory"\n[trajectory]\nsteps = 3\ndomains = ["math"]\nlayers = 2\nhidden_size = 32\n'
        "heads = 2\nvocab_size = 300\nseq_len = 16\nbatch_size = 2\n"
    )
    code, _, err = run_cli(["run", str(recipe), "--out", "traj", "--seed", "0"], capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, err
    ours = json.loads((tmp_path / "traj" / "trajectory.json").read_text())
    theirs = json.loads((trained[0] / "traj" / "trajectory.json").read_text())
    assert ours["config"] == theirs["config"] and ours["data"] == theirs["data"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--steps", "-5"], "--steps = -5 is below 1"),  # more in the error audit (tests/cli/cases_trajectory.py)
        (["--threads", "0"], "--threads = 0 is below 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_writing_nothing(argv, words, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(["trajectory", "--out", "t", *argv], capsys, monkeypatch, cwd=tmp_path)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and words in line
    assert not (tmp_path / "t").exists()


def test_a_real_sigterm_mid_training_exits_143_and_the_rerun_ends_bit_identical(tmp_path, capsys, monkeypatch):
    """SIGTERM to ``python -m geoprobe trajectory`` once checkpoint step1 is published (299 steps before its
    end): exit 143 and one line saying the rerun resumes; the rerun ends with every checkpoint of an
    uninterrupted run (Python API)."""
    import signal
    import time

    from geoprobe.trajectory import TrajectoryConfig, train_trajectory

    argv = ["--out", "traj", "--steps", "300", *ARGS[2:]]  # ARGS without its --steps 3
    env = dict(os.environ, HF_HUB_OFFLINE="1", GEOPROBE_PROGRESS_EVERY="0")
    p = subprocess.Popen(
        [sys.executable, "-m", "geoprobe", "trajectory", *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "traj" / "checkpoints" / "step1").is_dir() and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.005)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1] == (
        "interrupted (SIGTERM); rerun the same command to resume (the published checkpoints and the optimiser "
        "state in <run>/resume are kept)"
    )
    assert not (tmp_path / "traj" / "trajectory.json").exists()
    assert not any(p.name.startswith(".tmp") for p in (tmp_path / "traj" / "checkpoints").iterdir())
    code, out, err = run_cli(["trajectory", *argv], capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, err
    assert "resumed from step" in out
    resumed = json.loads((tmp_path / "traj" / "trajectory.json").read_text())
    config = TrajectoryConfig(**{k: v for k, v in resumed["config"].items() if k != "notes"})
    whole = train_trajectory(config, out=tmp_path / "whole", threads=1)
    assert [c["sha256"] for c in resumed["checkpoints"]] == [c.sha256 for c in whole.checkpoints]
    assert resumed["losses"] == list(whole.losses)


def test_threads_are_the_runs_own_and_the_callers_count_comes_back(tmp_path, capsys, monkeypatch):
    """Was: --threads N set the process's torch thread count and never put it back, so in-process (a
    notebook, CliRunner) every later computation ran on N threads and lost bitwise equality with runs
    made before it (tests/dynamics' resume check failed by 1 ulp after this test)."""
    import torch

    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    argv = ["trajectory", "--out", "t", *TINY.split(), "--threads", str(other)]
    code, _, err = run_cli(argv, capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, err
    assert json.loads((tmp_path / "t" / "trajectory.json").read_text())["provenance"]["sessions"] == [[0, other]]
    assert torch.get_num_threads() == before
