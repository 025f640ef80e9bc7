"""Ctrl-C and SIGTERM end a long stage at once (issue 27 part 2), tested with real signals sent to a
``geoprobe`` subprocess on the tiny twin, each stage made long by its flags.

* a scan's value-manifold analysis (10^5 bootstrap resamples and null draws per layer): was honoured
  only when every layer's bootstrap had finished (about 45 s here), because the interrupt reaches only
  the main thread and leaving a thread pool waited for its tasks (geoprobe.analysis.workers);
* intervene's control loop at the largest --controls (1000): honoured within a second, the edits it
  finished kept for the rerun.

Robust on a loaded machine: stderr is read by a thread (every line kept, a deadline on each wait), the one
``interrupted`` line is looked for among the others whatever their order, and the command runs in a session
of its own, so that the only signal it gets is the test's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from geoprobe.capture.checkpoint import PARTIAL_DIR

ROOT = Path(__file__).resolve().parents[2]
TWIN = "twin:llama-3.2-1b"
PROMPT = "Prompt number {i} says that the weather in city {j} is\n"


class Command:
    """``geoprobe ARGS`` in a subprocess of its own session (a signal meant for the test run's process group,
    such as a Ctrl-C at the terminal, does not reach it; only the test's own signal does), its stderr read
    line by line by a thread as it comes, so that waiting for a line has a deadline and no line is lost,
    whatever order the progress lines and the interrupt's line come in."""

    def __init__(self, args: list[str], tmp_path: Path, **env: str) -> None:
        # a shell's background jobs inherit SIGINT ignored, and Python then installs no handler: restore it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "geoprobe.cli", *args],
            cwd=tmp_path,
            env=dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), **env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, ready, what: str, timeout: float = 240) -> None:
        """Until ``ready(lines so far)``; fails when the command ends first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while not ready(list(self.lines)):
            if self.proc.poll() is not None:
                self.reader.join(timeout=10)
                if ready(list(self.lines)):
                    return
                pytest.fail(f"the command ended ({self.proc.returncode}) before {what}: {self.text()[-1500:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"not {what} within {timeout} s: {self.text()[-1500:]}")
            time.sleep(0.02)

    def interrupt(self, signum: int, within: float) -> tuple[int, str, float]:
        """Send ``signum``; return (exit status, all of stderr, seconds until the process ended), failing
        when it is still running after ``within`` seconds."""
        t0 = time.monotonic()
        os.kill(self.proc.pid, signum)
        try:
            self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"still running {within} s after the signal")
        seconds = time.monotonic() - t0
        self.reader.join(timeout=30)
        return self.proc.returncode, self.text(), seconds

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _interrupted_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("interrupted")]


@pytest.mark.parametrize("signum, name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_an_interrupt_during_the_value_manifold_bootstrap_ends_the_scan_at_once(tmp_path, signum, name):
    (tmp_path / "p.txt").write_text("".join(PROMPT.format(i=i, j=7 * i) for i in range(12)))
    (tmp_path / "long.toml").write_text(
        '[probe]\ncommand = "scan"\n[analyses]\npca_resamples = 100000\nnull_draws = 100000\n'
        'null_kind = "permute"\nci_layers = "all"\n'
    )
    # GEOPROBE_PROGRESS_EVERY=0: a progress line at each new stage, so the test sees the analysis begin
    cmd = Command(
        ["run", "long.toml", "--model", TWIN, "--prompts", "p.txt", "--out", "run"],
        tmp_path,
        GEOPROBE_PROGRESS_EVERY="0",
    )
    try:
        partial = tmp_path / "run" / PARTIAL_DIR
        # the capture is done and checkpointed: the value manifold (about 45 s) runs first
        cmd.wait_for(
            lambda lines: any(ln.startswith("manifold: ") for ln in lines), "the value-manifold analysis began"
        )
        assert any(partial.glob("batch-*.safetensors")), "the capture was not checkpointed"
        time.sleep(1)  # well inside the bootstrap (its PCA fits take milliseconds)
        assert cmd.proc.poll() is None, "the scan ended before the signal; it needs a longer analysis"
        code, err, seconds = cmd.interrupt(signum, within=20)
    finally:
        cmd.stop()
    assert code == 128 + signum, err
    # exactly one interrupt line, wherever the progress lines of the analysis's threads fall around it; a scan
    # recipe resumes from its checkpointed batches (was: "nothing unfinished was kept")
    assert _interrupted_lines(err) == [
        f"interrupted ({name}); rerun the same command to resume (the finished capture batches in "
        "<run>/capture.partial are kept)"
    ], err
    assert "Traceback" not in err and not [ln for ln in err.splitlines() if ln.startswith("error")], err
    assert not (tmp_path / "run" / "results.json").exists()
    assert any((tmp_path / "run" / PARTIAL_DIR).glob("batch-*.safetensors"))  # and they are still there
    assert seconds < 20


@pytest.mark.parametrize("signum, name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")])
def test_an_interrupt_during_intervenes_control_loop_ends_it_at_once(tmp_path, signum, name):
    """At the largest --controls the loop runs for hours; the signal ends it within seconds, in one line."""
    cmd = Command(
        ["intervene", "--model", TWIN, "--controls", "1000", "--n-per-k", "4", "--out", "iv"],
        tmp_path,
        GEOPROBE_PROGRESS_EVERY="0",
    )
    try:  # the progress lines say how far the control loop got
        cmd.wait_for(lambda lines: any(ln.startswith("interventions: 2/") for ln in lines), "the control loop ran")
        code, err, seconds = cmd.interrupt(signum, within=20)
    finally:
        cmd.stop()
    assert code == 128 + signum, err
    assert _interrupted_lines(err) == [
        f"interrupted ({name}); rerun the same command to resume (the finished edits in <run>/intervene.partial "
        "are kept)"
    ], err
    assert "Traceback" not in err and not [ln for ln in err.splitlines() if ln.startswith("error")], err
    assert seconds < 20
    assert any((tmp_path / "iv" / "intervene.partial").glob("unit-*.safetensors"))  # what the rerun starts from
