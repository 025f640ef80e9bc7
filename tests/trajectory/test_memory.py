"""The trajectory's memory estimate: it grows with every size flag, a spec over the memory available is
refused in one line before anything is read or written (the API and the CLI), and the tiny config passes."""

from __future__ import annotations

import re

import pytest

from geoprobe.capture.memory import MEMORY_ENV, format_bytes
from geoprobe.trajectory import TrajectoryConfig, TrajectoryError, train_trajectory
from geoprobe.trajectory.memory import SIZE_FLAGS, check_trajectory_memory, peak_bytes
from tests.cli.test_cli import run_cli
from tests.trajectory.conftest import tiny

#: 48 layers of width 2048: ~2.4 G parameters, far over the 4 GiB planted below
HUGE = ["--layers", "48", "--hidden-size", "2048", "--heads", "16"]


@pytest.mark.parametrize(
    "change",
    [
        {"layers": 7},
        {"hidden_size": 132},  # a multiple of the 4 heads
        {"heads": 8},  # only with eager attention: the scores
        {"batch_size": 9},
        {"seq_len": 129},
        {"vocab_size": 4097},
    ],
)
def test_the_estimate_grows_with_each_size_flag(change):
    base = TrajectoryConfig()
    bigger = TrajectoryConfig(**change)
    if "heads" in change:
        assert peak_bytes(bigger, eager=True) > peak_bytes(base, eager=True)
        assert peak_bytes(bigger, eager=False) == peak_bytes(base, eager=False)  # SDPA keeps no T×T scores
    else:
        assert peak_bytes(bigger) > peak_bytes(base)
        assert peak_bytes(bigger, eager=True) > peak_bytes(base, eager=True)


def test_eager_attention_adds_the_scores():
    c = TrajectoryConfig(seq_len=1024)
    assert peak_bytes(c, eager=True) - peak_bytes(c, eager=False) == 2 * 4 * c.heads * c.seq_len**2 * (
        c.batch_size * c.layers
    )


def test_the_tiny_and_default_configs_pass(monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    check_trajectory_memory(tiny())  # this machine's memory
    monkeypatch.setenv(MEMORY_ENV, "2GiB")
    check_trajectory_memory(tiny())
    check_trajectory_memory(TrajectoryConfig())
    assert peak_bytes(TrajectoryConfig()) < 1.5 * 2**30


def test_a_spec_over_the_memory_is_refused_by_the_api_before_anything_is_written(monkeypatch, tmp_path):
    monkeypatch.setenv(MEMORY_ENV, "4GiB")
    config = TrajectoryConfig(layers=48, hidden_size=2048, heads=16)
    out = tmp_path / "traj"
    with pytest.raises(TrajectoryError) as err:
        train_trajectory(config, out=out, documents=["never read"])
    text = str(err.value)
    assert "\n" not in text and not out.exists()
    need = format_bytes(peak_bytes(config))
    assert f"needs about {need} of memory, more than 3.6 GiB (90% of the 4.0 GiB set by {MEMORY_ENV})" in text
    for flag, _ in SIZE_FLAGS.values():
        assert flag in text


def test_the_values_the_message_suggests_fit_and_one_more_does_not(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "4GiB")
    budget = int(0.9 * 4 * 2**30)
    config = TrajectoryConfig(layers=24, hidden_size=1024, heads=8, batch_size=16)
    with pytest.raises(TrajectoryError) as err:
        check_trajectory_memory(config)
    suggested = dict(re.findall(r"(--[a-z-]+) (\d+)", str(err.value).split("; ")[-1]))
    assert suggested, str(err.value)
    fields = {flag: name for name, (flag, _) in SIZE_FLAGS.items()}
    step = {"hidden_size": config.heads}
    for flag, value in suggested.items():
        name, v = fields[flag], int(value)
        fits = TrajectoryConfig(**{**config.identity(), "notes": (), name: v})
        assert peak_bytes(fits) <= budget, flag
        over = TrajectoryConfig(**{**config.identity(), "notes": (), name: v + step.get(name, 1)})
        assert peak_bytes(over) > budget, flag


def test_nothing_fits_says_to_free_memory(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "100MiB")
    with pytest.raises(TrajectoryError, match="even the smallest model needs .*: free some memory"):
        check_trajectory_memory(tiny())


def test_the_cli_refuses_in_one_line_naming_the_flags_and_writes_nothing(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(MEMORY_ENV, "4GiB")
    code, out, err = run_cli(["trajectory", "--out", "traj", *HUGE], capsys, monkeypatch, cwd=tmp_path)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: training 48 layers of width 2048"), err
    for flag in ("--layers", "--hidden-size", "--batch-size", "--seq-len", "--vocab-size"):
        assert flag in lines[0]
    assert "Traceback" not in out + err
    assert list(tmp_path.iterdir()) == []
