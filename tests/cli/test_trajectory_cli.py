"""geoprobe trajectory end to end: a tiny run on a real corpus domain, the run directory's life (rerun
refused, --force rewrites the manifest without retraining, other settings named), and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

ARGS = (
    "--steps 3 --domains math --layers 2 --hidden-size 32 --heads 2 --vocab-size 300 --seq-len 16 --batch-size 2 "
    "--threads 1"
).split()


def geoprobe(*argv, cwd):
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "GEOPROBE_PROGRESS_EVERY": "0"}
    import os

    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    env["HOME"] = str(cwd)
    return subprocess.run([sys.executable, "-m", "geoprobe", *argv], cwd=cwd, capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cli")
    p = geoprobe("trajectory", "--out", "traj", *ARGS, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return cwd, p


def test_trains_on_the_math_corpus_and_writes_the_manifest_page_and_checkpoints(run):
    cwd, p = run
    d = json.loads((cwd / "traj" / "trajectory.json").read_text())
    assert [c["step"] for c in d["checkpoints"]] == [0, 1, 2, 3]
    assert d["data"]["source"] == "corpora" and d["data"]["domains"] == ["math"]
    assert d["data"]["corpus_version"] and d["data"]["documents"]["math"] > 300
    assert (cwd / "traj" / "trajectory.html").is_file() and (cwd / "traj" / ".geoprobe-run.json").is_file()
    assert "4 checkpoints" in p.stdout and "wrote" in p.stdout


def test_rerun_is_refused_and_force_rewrites_without_retraining(run):
    cwd, _ = run
    before = (cwd / "traj" / "checkpoints" / "step3" / "model.safetensors").stat().st_mtime_ns
    p = geoprobe("trajectory", "--out", "traj", *ARGS, cwd=cwd)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        f"error: '{'traj/trajectory.json'}' already exists; pass --force to replace this run or choose another --out"
    ]
    p = geoprobe("trajectory", "--out", "traj", *ARGS, "--force", cwd=cwd)
    assert p.returncode == 0, p.stderr
    assert "already trained: nothing to do" in p.stdout
    assert (cwd / "traj" / "checkpoints" / "step3" / "model.safetensors").stat().st_mtime_ns == before


def test_other_settings_are_refused_before_the_claim_naming_the_flag(run):
    cwd, _ = run
    p = geoprobe("trajectory", "--out", "traj", *ARGS, "--seed", "4", cwd=cwd)
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert "trained with other settings (seed 0 vs 4); pass --seed 0 to resume it" in line


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--steps", "-5"], "--steps = -5 is below 1"),  # more in the error audit (tests/cli/cases_trajectory.py)
        (["--threads", "0"], "--threads = 0 is below 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_writing_nothing(argv, words, tmp_path):
    p = geoprobe("trajectory", "--out", "t", *argv, cwd=tmp_path)
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("error: ") and words in line
    assert not (tmp_path / "t").exists()
