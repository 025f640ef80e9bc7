"""Ctrl-C and SIGTERM end a long stage at once (issue 27 part 2), tested with real signals sent to a
``geoprobe`` subprocess on the tiny twin, each stage made long by its flags.

* a scan's value-manifold analysis (10^5 bootstrap resamples and null draws per layer): was honoured
  only when every layer's bootstrap had finished (about 45 s here), because the interrupt reaches only
  the main thread and leaving a thread pool waited for its tasks (geoprobe.analysis.workers);
* intervene's control loop at the largest --controls (1000): honoured within a second, the edits it
  finished kept for the rerun.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geoprobe.capture.checkpoint import PARTIAL_DIR

ROOT = Path(__file__).resolve().parents[2]
TWIN = "twin:llama-3.2-1b"
PROMPT = "Prompt number {i} says that the weather in city {j} is\n"


def _start(args: list[str], tmp_path: Path, **env: str) -> subprocess.Popen:
    # a shell's background jobs inherit SIGINT ignored, and Python then installs no handler: restore it
    return subprocess.Popen(
        [sys.executable, "-m", "geoprobe.cli", *args],
        cwd=tmp_path,
        env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(proc: subprocess.Popen, ready, what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the command ended ({proc.returncode}) before {what}: {proc.stderr.read()[-1500:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"not {what} within {timeout} s")
        time.sleep(0.02)


def _interrupt(proc: subprocess.Popen, signum: int, within: float) -> tuple[int, str, float]:
    """Send ``signum``; return (exit status, stderr, seconds until the process ended), failing when it
    is still running after ``within`` seconds."""
    t0 = time.monotonic()
    os.kill(proc.pid, signum)
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {within} s after the signal")
    return proc.returncode, err, time.monotonic() - t0


@pytest.mark.parametrize("signum, name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_an_interrupt_during_the_value_manifold_bootstrap_ends_the_scan_at_once(tmp_path, signum, name):
    (tmp_path / "p.txt").write_text("".join(PROMPT.format(i=i, j=7 * i) for i in range(12)))
    (tmp_path / "long.toml").write_text(
        '[probe]\ncommand = "scan"\n[analyses]\npca_resamples = 100000\nnull_draws = 100000\n'
        'null_kind = "permute"\nci_layers = "all"\n'
    )
    # GEOPROBE_PROGRESS_EVERY=0: a progress line at each new stage, so the test sees the analysis begin
    proc = _start(
        ["run", "long.toml", "--model", TWIN, "--prompts", "p.txt", "--out", "run"],
        tmp_path,
        GEOPROBE_PROGRESS_EVERY="0",
    )
    try:
        partial = tmp_path / "run" / PARTIAL_DIR
        before: list[str] = []

        def analysing() -> bool:  # the capture is done and checkpointed: the value manifold (about 45 s) runs first
            line = proc.stderr.readline()
            before.append(line)
            return line.startswith("manifold: ")

        _wait_for(proc, analysing, "the value-manifold analysis began")
        assert any(partial.glob("batch-*.safetensors")), "the capture was not checkpointed"
        time.sleep(1)  # well inside the bootstrap (its PCA fits take milliseconds)
        assert proc.poll() is None, "the scan ended before the signal; it needs a longer analysis"
        code, err, seconds = _interrupt(proc, signum, within=20)
        err = "".join(before) + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 128 + signum, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning")]
    # a scan recipe resumes from its checkpointed batches (was: "nothing unfinished was kept")
    assert lines[-1] == (
        f"interrupted ({name}); rerun the same command to resume (the finished capture batches in "
        "<run>/capture.partial are kept)"
    ), err
    assert "Traceback" not in err and not (tmp_path / "run" / "results.json").exists()
    assert any((tmp_path / "run" / PARTIAL_DIR).glob("batch-*.safetensors"))  # and they are still there
    assert seconds < 20


@pytest.mark.parametrize("signum, name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_an_interrupt_during_intervenes_control_loop_ends_it_at_once(tmp_path, signum, name):
    """At the largest --controls the loop runs for hours; the signal ends it within seconds, in one line."""
    proc = _start(
        ["intervene", "--model", TWIN, "--controls", "1000", "--n-per-k", "4", "--out", "iv"],
        tmp_path,
        GEOPROBE_PROGRESS_EVERY="0",
    )
    try:
        lines: list[str] = []

        def looping() -> bool:  # the progress lines say how far the control loop got
            line = proc.stderr.readline()
            lines.append(line)
            return line.startswith("interventions: 2/")

        _wait_for(proc, looping, "the control loop ran")
        code, err, seconds = _interrupt(proc, signum, within=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 128 + signum, err
    assert [ln for ln in err.splitlines() if ln.startswith("interrupted")] == [
        f"interrupted ({name}); rerun the same command to resume (the finished edits in <run>/intervene.partial "
        "are kept)"
    ], err
    assert "Traceback" not in err and seconds < 20
    assert any((tmp_path / "iv" / "intervene.partial").glob("unit-*.safetensors"))  # what the rerun starts from
