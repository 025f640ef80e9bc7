"""`geoprobe windtunnel` end to end at the tiny scale, results file and report, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from geoprobe.errors import ResultsError
from geoprobe.windtunnel.result import WindTunnelResult
from tests.cli.test_cli import run_cli


@pytest.fixture(scope="module")
def tiny_tunnel(tmp_path_factory):
    """One full tiny HMM tunnel through the CLI in a subprocess (train, eval, report)."""
    out = tmp_path_factory.mktemp("wt") / "hmm"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "geoprobe.cli",
            "windtunnel",
            "run",
            "--task",
            "hmm",
            "--scale",
            "tiny",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return out, r.stdout


def test_run_writes_checkpoints_results_and_report(tiny_tunnel):
    out, stdout = tiny_tunnel
    assert "transformer" in stdout and "MAE" in stdout
    res = WindTunnelResult.load(out)
    assert res.name == "hmm" and res.scale == "tiny"
    assert res.lengths == (6, 9)  # the training length, then a longer one
    assert set(res.metrics) == {"transformer", "mlp"}
    assert abs(res.n_params["transformer"] - res.n_params["mlp"]) <= 0.01 * res.n_params["transformer"]
    assert res.ablations is not None and res.geometry is not None
    assert res.provenance["weights"]["transformer"].startswith("sha256:")
    assert res.provenance["versions"]["torch"]
    html = (out / "windtunnel.html").read_text()
    for anchor in ("entropy", "ablations", "dynamics", "focusing", "calibration"):
        assert f'id="{anchor}"' in html
    assert "0.409" in html  # the paper's table
    assert (out / "transformer" / "train_log.json").exists()


def test_existing_results_are_not_overwritten(tiny_tunnel, capsys, monkeypatch):
    out, _ = tiny_tunnel
    before = (out / "windtunnel.json").read_bytes()
    code, _, err = run_cli(
        ["windtunnel", "run", "--task", "hmm", "--scale", "tiny", "--out", str(out)], capsys, monkeypatch
    )
    assert code == 2 and "already exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["windtunnel", "eval", str(out)], capsys, monkeypatch)
    assert code == 2 and "--force" in err
    code, _, err = run_cli(["windtunnel", "report", str(out)], capsys, monkeypatch)
    assert code == 2 and "--force" in err
    assert (out / "windtunnel.json").read_bytes() == before


def test_report_escapes_and_rewrites(tiny_tunnel, tmp_path, capsys, monkeypatch):
    out, _ = tiny_tunnel
    d = json.loads((out / "windtunnel.json").read_text())
    d["provenance"]["run_dir"] = "<script>alert(1)</script>"
    (tmp_path / "windtunnel.json").write_text(json.dumps(d))
    code, _, err = run_cli(
        ["windtunnel", "report", str(tmp_path), "--out", str(tmp_path / "r.html")], capsys, monkeypatch
    )
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_results_of_another_kind_are_refused(tmp_path):
    (tmp_path / "windtunnel.json").write_text(json.dumps({"kind": "geoprobe.sula", "version": 1}))
    with pytest.raises(ResultsError, match="not a geoprobe wind-tunnel results file"):
        WindTunnelResult.load(tmp_path)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--task", "sudoku"], "--task bijection"),
        (["--scale", "huge"], "--scale tiny"),
        (["--vocab", "1"], "--vocab"),
        (["--length", "0"], "--length"),
        (["--task", "hmm", "--states", "40"], "--states"),
        (["--states", "3"], "--task hmm"),
        (["--arch", "cnn"], "--arch"),
        (["--device", "tpu9"], "--device"),
    ],
)
def test_bad_input_is_one_line(args, needle, tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["windtunnel", "train", "--scale", "tiny", "--out", str(tmp_path / "x"), *args], capsys, monkeypatch
    )
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_training_into_a_run_of_another_task_is_refused(tiny_tunnel, capsys, monkeypatch):
    out, _ = tiny_tunnel
    code, _, err = run_cli(
        ["windtunnel", "train", "--task", "bijection", "--scale", "tiny", "--out", str(out)], capsys, monkeypatch
    )
    assert code == 2 and "another task or config" in err and len(err.strip().splitlines()) == 1


def test_recipe_runs_through_geoprobe_run(tmp_path, capsys, monkeypatch):
    recipe = tmp_path / "wt.toml"
    recipe.write_text(
        '[probe]\ncommand = "windtunnel"\n[windtunnel]\ntask = "bijection"\nscale = "tiny"\n'
        "geometry = false\nablations = false\n"
    )
    code, stdout, err = run_cli(["run", str(recipe), "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 0, err
    res = WindTunnelResult.load(tmp_path / "o")
    assert res.geometry is None and res.ablations is None and res.name == "bijection"
    bad = tmp_path / "bad.toml"
    bad.write_text('[probe]\ncommand = "windtunnel"\n[windtunnel]\nlayers = 3\n')
    code, _, err = run_cli(["run", str(bad)], capsys, monkeypatch)
    assert code == 2 and "unknown key windtunnel.layers" in err


def test_shipped_recipe_loads():
    from geoprobe.recipes import load_probe

    cfg = load_probe("probes/windtunnel.toml").config
    assert (cfg.task, cfg.scale, cfg.arch) == ("bijection", "cpu", "both")


@pytest.mark.parametrize("command", ["run", "train"])
def test_more_threads_than_cpus_is_refused_naming_the_cpus_here(tmp_path, capsys, monkeypatch, command):
    """Was: `windtunnel run --threads 100000` aborted (a Rust allocator panic, exit 134). The limit is this
    machine's CPUs, so the case lives here rather than in docs/errors.md."""
    cpus = len(os.sched_getaffinity(0))
    code, _, err = run_cli(
        ["windtunnel", command, "--scale", "tiny", "--threads", "100000", "--out", str(tmp_path / "wt")],
        capsys,
        monkeypatch,
    )
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: --threads = 100000 is above the limit of {cpus} (the CPUs this process")
    assert lines[0].endswith(f"pass --threads {cpus} or less") and not (tmp_path / "wt").exists()
