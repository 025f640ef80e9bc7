"""`geoprobe windtunnel run --seeds` end to end at the tiny scale: one run directory per seed, seeds.json with
the spread, Figure 8 in every seed's HMM result, a rerun that resumes, and bad --seeds in one line."""

from __future__ import annotations

import shutil

import pytest

from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.seeds import TunnelSeeds
from tests.cli.test_cli import run_cli

ARGV = ["windtunnel", "run", "--task", "hmm", "--scale", "tiny", "--steps", "10", "--seeds", "0,1"]


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    """The command once, in this process (tests/windtunnel/test_cli_windtunnel.py runs one in a subprocess)."""
    from tests.cli.test_cli import run_main

    out = tmp_path_factory.mktemp("wts") / "seeds"
    code, stdout, stderr = run_main([*ARGV, "--out", str(out)])
    assert code == 0, stderr
    return out, stdout


def test_one_run_directory_per_seed_and_the_spread(seeds_run):
    out, stdout = seeds_run
    res = TunnelSeeds.load(out)
    assert res.seeds == (0, 1) and res.name == "hmm" and res.scale == "tiny"
    assert [r.run for r in res.runs] == ["seed-0", "seed-1"]
    for s in (0, 1):
        one = WindTunnelResult.load(out / f"seed-{s}")
        assert one.specs["transformer"]["train"]["seed"] == s and one.specs["transformer"]["train"]["steps"] == 10
        assert res.runs[s].metrics == one.metrics  # the summary holds exactly each seed's numbers
        assert set(one.invariance) == {"transformer", "mlp"}  # Figure 8 in every HMM result
        assert one.invariance["transformer"].n == one.at("transformer").n  # n_eval 128 < the cap
        assert 'id="invariance"' in (out / f"seed-{s}" / "windtunnel.html").read_text(encoding="utf-8")
    w0, w1 = (WindTunnelResult.load(out / f"seed-{s}").provenance["weights"]["transformer"] for s in (0, 1))
    assert w0 != w1  # different seeds, different weights
    sp = res.spread("transformer")
    assert sp.values == tuple(r.metrics["transformer"][0].mae_paper.value for r in res.runs)
    assert 'id="seeds"' in (out / "seeds.html").read_text(encoding="utf-8")
    assert "entropy MAE across seeds [0, 1]" in stdout


def test_a_stopped_run_resumes_and_a_finished_one_is_not_overwritten(seeds_run, tmp_path, capsys, monkeypatch):
    src, _ = seeds_run
    out = tmp_path / "seeds"
    shutil.copytree(src, out)
    first = TunnelSeeds.load(out)
    seed0 = (out / "seed-0" / "windtunnel.json").read_bytes()
    # stopped while training seed 1: no summary, no seed-1 results, its last checkpoint not yet written
    for name in ("seeds.json", "seeds.html", ".geoprobe-run.json"):
        (out / name).unlink()
    for name in ("windtunnel.json", "windtunnel.html", ".geoprobe-run.json"):
        (out / "seed-1" / name).unlink()
    ckpts = sorted((out / "seed-1" / "transformer" / "checkpoints").glob("step-*"))
    shutil.rmtree(ckpts[-1])
    code, stdout, err = run_cli([*ARGV, "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    assert "seed 0: already evaluated" in stdout and "resumed from step" in stdout
    assert (out / "seed-0" / "windtunnel.json").read_bytes() == seed0  # a finished seed is read, not redone
    again = TunnelSeeds.load(out)
    assert again.runs[1].metrics == first.runs[1].metrics  # resuming gives the uninterrupted numbers
    before = (out / "seeds.json").read_bytes()
    code, _, err = run_cli([*ARGV, "--out", str(out)], capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "seeds.json" in lines[0] and "--force" in lines[0]
    assert (out / "seeds.json").read_bytes() == before


@pytest.mark.parametrize(
    "seeds, words", [("0,0", "repeats a seed"), ("1", "between 2 and 50"), ("a,b", "neither a count")]
)
def test_bad_seeds_one_line_exit_2_nothing_written(seeds, words, tmp_path, capsys, monkeypatch):
    argv = [*ARGV[:-1], seeds, "--out", str(tmp_path / "o")]
    code, _, err = run_cli(argv, capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and words in lines[0] and "--seeds" in lines[0], err
    assert not (tmp_path / "o").exists()
