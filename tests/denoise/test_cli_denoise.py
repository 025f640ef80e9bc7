"""`geoprobe denoise` end to end (tiny) in a subprocess, and bad input through the CLI (exit 2, one line)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from geoprobe.denoise.result import DenoiseResult
from tests.cli.test_cli import run_cli


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dn") / "sphere"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "geoprobe.cli",
            "denoise",
            "--tiny",
            "--task",
            "sphere",
            "--steps",
            "30",
            "--n-resamples",
            "50",
            "--seed",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return out, r.stdout


def test_end_to_end(tiny_run):
    out, stdout = tiny_run
    assert "oracle" in stdout and "softmax attention MSE / Bayes MSE" in stdout
    res = DenoiseResult.load(out)
    assert res.name == "sphere" and res.task["d"] == 2 and res.config["steps"] == 30 and res.provenance["seed"] == 3
    assert (out / "denoise.html").read_text().count("<h2>") >= 4


def test_existing_output_is_kept(tiny_run, capsys, monkeypatch):
    out, _ = tiny_run
    before = (out / "denoise.json").read_bytes()
    code, _, err = run_cli(["denoise", "--tiny", "--out", str(out)], capsys, monkeypatch)
    assert code == 2 and "already exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (out / "denoise.json").read_bytes() == before


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--context-length", "8"], "context length 8 is not larger than the subspace dimension 8"),
        (["--noise-var", "0"], "--noise-var"),
        (["--signal-var", "-2"], "--signal-var"),
        (["--dim", "20"], "--dim"),
        (["--task", "mixture", "--clusters", "0"], "--clusters"),
        (["--steps", "0"], "--steps"),
        (["--task", "circle"], "--task"),
        (["--lengths", "5,x"], "--lengths"),
    ],
)
def test_bad_input(args, needle, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(["denoise", *args, "--out", str(tmp_path / "x")], capsys, monkeypatch)
    assert code == 2, err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_recipe_runs_through_geoprobe_run(tmp_path, capsys, monkeypatch):
    from geoprobe.recipes import load_probe

    shipped = load_probe("probes/denoise.toml").config
    assert (shipped.task, shipped.context_length, shipped.warp) == ("linear", 500, True)
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(
        '[probe]\ncommand = "denoise"\n[denoise]\ntask = "mixture"\nambient = 6\nclusters = 3\n'
        "context_length = 40\nsteps = 20\nbatch_size = 16\nn_eval = 64\nlengths = [10, 40]\n"
        "transfer_dims = []\nenergy = false\n[analyses]\nn_resamples = 50\nseed = 1\n"
    )
    code, _, err = run_cli(["run", str(recipe), "--seed", "4", "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 0, err
    res = DenoiseResult.load(tmp_path / "o")
    assert res.name == "mixture" and res.config["steps"] == 20 and res.provenance["seed"] == 4  # --seed overrides
    bad = tmp_path / "bad.toml"
    bad.write_text('[probe]\ncommand = "denoise"\n[denoise]\nlayers = 3\n')
    code, _, err = run_cli(["run", str(bad)], capsys, monkeypatch)
    assert code == 2 and "unknown key denoise.layers" in err
