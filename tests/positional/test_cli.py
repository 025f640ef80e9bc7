"""`geoprobe positional` end to end on a tiny twin (and SmolLM2), and one-line errors for bad input."""

import json
import os
import subprocess
import sys

import pytest

from tests.cli.test_cli import run_cli
from tests.conftest import requires_smollm2


def test_positional_end_to_end_in_a_subprocess(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    args = [
        sys.executable,
        "-m",
        "geoprobe.cli",
        "positional",
        "--model",
        "twin:llama-3.2-1b",
        "--lengths",
        "8,16",
        "--n-prompts",
        "5",
        "--n-resamples",
        "20",
        "--layers",
        "0,-1",
        "--batch-size",
        "3",
        "--out",
        str(out),
    ]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads((out / "positional.json").read_text())
    assert d["kind"] == "geoprobe.positional" and d["layers"] == [0, 2] and d["fit_length"] == 16
    assert d["provenance"]["model_id"] == "twin:llama-3.2-1b:tiny" and d["provenance"]["prompts_hash"]
    assert sum(d["class_counts"].values()) == 2 * 4
    html = (out / "positional.html").read_text()
    assert "Positional priors" in html and "<script" in html
    code, _, err = run_cli(args[3:], capsys, monkeypatch)  # the same command again, refused (in this process)
    assert code == 2 and "--force" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--lengths", "16,8"], "increasing"),
        (["--lengths", "8,8,16"], "increasing"),
        (["--lengths", "1,8"], "at least 2"),
        (["--lengths", "8,x"], "comma-separated"),
        (["--n-prompts", "2"], "--n-prompts 2"),
        (["--lengths", "64", "--max-distance", "600"], "--max-distance 600 needs prompts of at least 602"),
        (["--lengths", "16,200000"], "above the limit of 131072 (the longest context window"),
        (["--model", "no-such-model"], "unknown model"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle, tmp_path, capsys, monkeypatch):
    model = [] if "--model" in args else ["--model", "twin:llama-3.2-1b"]
    code, _, err = run_cli(["positional", *model, *args, "--out", str(tmp_path / "o")], capsys, monkeypatch)
    assert code == 2, err
    assert needle in err and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_three_prompts_the_least_the_cli_allows_run_to_the_end(tmp_path, capsys, monkeypatch):
    """Issue 27: --n-prompts 3 (allowed) crashed on a reshape in the bootstrap (1 resample in 9 draws
    one prompt three times); now it runs, with finite, wide PC1 intervals."""
    out = tmp_path / "p3"
    code, _, err = run_cli(
        ["positional", "--model", "twin:llama-3.2-1b", "--lengths", "8,16", "--n-prompts", "3"]
        + ["--n-resamples", "30", "--layers", "-1", "--out", str(out)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    d = json.loads((out / "positional.json").read_text())
    assert d["n_prompts"] == 3 and [p["n"] for p in d["stability"]["points"]] == [3, 3]
    for point in d["stability"]["points"]:
        for e in point["pc1"]:
            assert 0 <= e["low"] <= e["value"] <= e["high"] <= 1


def test_existing_output_needs_force(tmp_path, capsys, monkeypatch):
    (tmp_path / "positional.json").write_text('{"kind": "geoprobe.positional"}')
    code, _, err = run_cli(["positional", "--model", "twin:llama-3.2-1b", "--out", str(tmp_path)], capsys, monkeypatch)
    assert code == 2 and "already exists" in err and "--force" in err


def test_a_file_geoprobe_did_not_write_is_refused_even_with_force(tmp_path, capsys, monkeypatch):
    (tmp_path / "positional.json").write_text("{}")
    code, _, err = run_cli(
        ["positional", "--model", "twin:llama-3.2-1b", "--out", str(tmp_path), "--force"], capsys, monkeypatch
    )
    assert code == 2 and "not written by geoprobe" in err
    assert (tmp_path / "positional.json").read_text() == "{}"


@requires_smollm2
@pytest.mark.slow
def test_positional_on_smollm2(tmp_path, capsys, monkeypatch):
    """The real model at small settings: SmolLM2 has sink-dominated heads (BOS-less first-token sinks)."""
    code, out, err = run_cli(
        [
            "positional",
            "--model",
            "smollm2-135m",
            "--lengths",
            "32,64",
            "--n-prompts",
            "6",
            "--n-resamples",
            "50",
            "--layers",
            "0,15,-1",
            "--out",
            str(tmp_path),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    d = json.loads((tmp_path / "positional.json").read_text())
    assert d["layers"] == [0, 15, 29] and len(d["heads"]) == 27
    assert d["rope"] == [100000.0, 64]
    assert d["class_counts"]["sink-dominated"] > 0


def test_recipe_runs_through_geoprobe_run(tmp_path, capsys, monkeypatch):
    from geoprobe.recipes import load_probe

    shipped = load_probe("probes/positional.toml").config
    assert shipped.lengths == (16, 32, 64, 128, 256) and shipped.n_resamples == 200
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(
        '[probe]\ncommand = "positional"\n[positional]\nlengths = [8, 16]\nn_prompts = 4\n'
        "layers = [-1]\nstability = false\n[analyses]\nn_resamples = 10\nseed = 2\n"
    )
    code, _, err = run_cli(
        ["run", str(recipe), "--model", "twin:llama-3.2-1b", "--out", str(tmp_path / "o")], capsys, monkeypatch
    )
    assert code == 0, err
    d = json.loads((tmp_path / "o" / "positional.json").read_text())
    assert d["fit_length"] == 16 and d["layers"] == [2] and d["stability"] is None and d["provenance"]["seed"] == 2


def test_positional_on_a_gpt2_type_twin(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        [
            "positional",
            "--model",
            "twin:gpt2",
            "--lengths",
            "8,16",
            "--n-prompts",
            "4",
            "--n-resamples",
            "10",
            "--layers",
            "-1",
            "--out",
            str(tmp_path / "p"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    d = json.loads((tmp_path / "p" / "positional.json").read_text())
    assert d["layers"] == [2] and d["provenance"]["model_id"] == "twin:gpt2:tiny"
