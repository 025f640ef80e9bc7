"""``geoprobe capture`` and ``geoprobe scan`` with ``--executor ray`` on the session's Ray cluster (a head
and two one-CPU worker nodes): the capture a subprocess writes through ``--address`` equals the local
one; a scan stopped under the local executor resumes on Ray with the numbers of an uninterrupted local
scan; without Ray, one line and exit 2."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from geoprobe.capture import Capture, CaptureConfig, capture
from geoprobe.capture import run as run_module
from geoprobe.capture.checkpoint import PARTIAL_DIR, CaptureCheckpoint
from tests.capture.same_capture import assert_same_capture, one_torch_thread
from tests.cli.test_cli import run_cli
from tests.scan.test_resume import comparable, interrupt_after_first_batch

ROOT = Path(__file__).resolve().parents[2]
TWIN = "twin:llama-3.2-1b"


def _prompts(tmp_path: Path, n: int) -> Path:
    p = tmp_path / "prompts.txt"
    p.write_text(
        "".join(" ".join(["word"] * (1 + (5 * i) % 9)) + f" and number {i} is\n" for i in range(n)), encoding="utf-8"
    )
    return p


def test_capture_through_the_cli_on_ray_equals_the_local_capture(ray_cluster, tmp_path, capsys, monkeypatch):
    prompts = _prompts(tmp_path, 15)
    args = ["capture", "--model", TWIN, "--prompts", str(prompts), "--batch-size", "2", "--attention", "distribution"]
    r = subprocess.run(
        [sys.executable, "-m", "geoprobe.cli", *args, "--out", str(tmp_path / "ray")]
        + ["--executor", "ray", "--workers", "2", "--address", ray_cluster.address],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "wrote" in r.stdout and "Traceback" not in r.stderr
    # the prompts were captured by the workers: 8 batches of 2 (the last of 1), one per shard (four shards per worker)
    assert re.search(r"^captured on [12] Ray workers? on [12] nodes? \(15 prompts in 8 shards\)$", r.stderr, re.M)
    with one_torch_thread():  # as each worker runs (DataParallel's default)
        code, _, err = run_cli([*args, "--out", str(tmp_path / "local")], capsys, monkeypatch)
    assert code == 0, err
    assert_same_capture(Capture.load(tmp_path / "ray"), Capture.load(tmp_path / "local"), loaded_apart=True)


def _no_forward_here(*args, **kwargs):
    raise AssertionError("a capture batch ran in the driver, not on a Ray worker")


def test_a_scan_stopped_locally_resumes_on_ray_with_the_same_numbers(
    ray_cluster, tmp_path, capsys, monkeypatch, twin_factory
):
    """A checkpoint of 6 batches with batches 1 and 4 missing (as a stopped scan leaves it): the Ray scan
    computes exactly those two, and its results and capture equal an uninterrupted local scan's."""
    prompts = _prompts(tmp_path, 12)
    out = tmp_path / "run"
    texts = prompts.read_text(encoding="utf-8").splitlines()
    # --no-init-baseline: the random-init null's draws are captured in the driver (docs/scale.md); this test is
    # about the scan's own batches, which must all run on the workers
    args = ["scan", "--model", "twin:pythia-410m", "--prompts", str(prompts), "--batch-size", "2", "--seed", "0"]
    args.append("--no-init-baseline")
    computed: list[int] = []
    save = CaptureCheckpoint.save
    with one_torch_thread():
        cfg = CaptureConfig(layers=None, batch_size=2, key_weights=True)
        capture(twin_factory("pythia-410m"), texts, cfg, seed=0, checkpoint_dir=out / PARTIAL_DIR)
        for b in (1, 4):
            (out / PARTIAL_DIR / f"batch-{b:05d}.safetensors").unlink()
        monkeypatch.setattr(
            CaptureCheckpoint, "save", lambda self, i, rows, a: (computed.append(i), save(self, i, rows, a))[1]
        )
        with monkeypatch.context() as patch:  # no forward pass of the capture in this process: the workers ran them
            patch.setattr(run_module, "run_batch", _no_forward_here)
            code, _, err = run_cli(
                [*args, "--out", str(out), "--executor", "ray", "--workers", "2"], capsys, monkeypatch
            )
        assert code == 0, err
        assert "resuming: 4 of 6 batches already captured" in err
        assert re.search(r"^captured on [12] Ray workers? on [12] nodes? \(4 prompts in 2 shards\)$", err, re.M), err
        assert sorted(computed) == [1, 4] and not (out / PARTIAL_DIR).exists()
        code, _, err = run_cli([*args, "--out", str(tmp_path / "ref")], capsys, monkeypatch)
    assert code == 0, err
    assert comparable(out / "results.json") == comparable(tmp_path / "ref" / "results.json")
    assert_same_capture(Capture.load(out / "capture"), Capture.load(tmp_path / "ref" / "capture"), loaded_apart=True)


def test_sigterm_on_a_ray_scan_says_so_exits_143_and_the_rerun_resumes(ray_cluster, tmp_path, capsys, monkeypatch):
    """ray.init installs its own SIGTERM handler (exit 15, nothing said); the CLI's is put back."""
    prompts = _prompts(tmp_path, 40)
    out = tmp_path / "run"
    args = ["scan", "--model", TWIN, "--prompts", str(prompts), "--batch-size", "2", "--out", str(out)]
    ray_args = ["--executor", "ray", "--workers", "2", "--address", ray_cluster.address]
    code, err, kept = interrupt_after_first_batch([*args, *ray_args], out / PARTIAL_DIR, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err
    said = ("loading", "warning", "captured", "capturing:")  # progress lines are no messages
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(said)]
    assert len(lines) == 1 and lines[0].startswith("interrupted (SIGTERM); rerun the same command to resume"), err
    assert kept >= 1 and not (out / "results.json").exists()
    code, _, err = run_cli(args, capsys, monkeypatch)  # the same command resumes, here under --executor local
    assert code == 0, err
    assert "resuming:" in err


@pytest.mark.parametrize("command", ["capture", "scan"])
def test_without_ray_the_cli_says_what_to_install(command, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    prompts = _prompts(tmp_path, 3)
    argv = [command, "--model", TWIN, "--prompts", str(prompts), "--out", str(tmp_path / "out"), "--executor", "ray"]
    code, out, err = run_cli(argv, capsys, monkeypatch)
    assert code == 2 and out == ""
    assert (
        err.strip()
        == 'error: --executor ray needs Ray, which is not installed here: pip install "geoprobe-attention[ray]"'
    )
    assert not (tmp_path / "out").exists()
