"""Resumable scans: a real SIGKILL mid-capture, then the same command finishes the run with the
numbers of an uninterrupted one; settings that changed refuse to resume; --force discards."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geoprobe.capture import CaptureConfig, capture, checkpoint
from geoprobe.capture.checkpoint import PARTIAL_DIR, CaptureCheckpoint
from geoprobe.scan.run import WALL_CLOCK_KEYS
from tests.cli.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
N_PROMPTS, BATCH = 40, 2  # 20 batches of ~0.1-0.3 s each on a tiny twin: the kill lands mid-capture


def _prompt_file(tmp_path: Path, n: int = N_PROMPTS) -> Path:
    p = tmp_path / "prompts.txt"
    p.write_text(
        "\n".join(f"Prompt number {i} says that the weather in city {7 * i} is" for i in range(n)), encoding="utf-8"
    )
    return p


def _scan_args(prompts: Path, out: Path, *extra: str) -> list[str]:
    return [
        "scan",
        "--model",
        "twin:pythia-410m",
        "--prompts",
        str(prompts),
        "--out",
        str(out),
        "--batch-size",
        str(BATCH),
        "--seed",
        "0",
        *extra,
    ]


def _drop(d: dict, dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if rest:
        _drop(d.get(head, {}), rest)
    else:
        d.pop(head, None)


def comparable(results_path: Path) -> dict:
    """results.json without the wall-clock keys (and without them nothing else may differ)."""
    d = json.loads(results_path.read_text(encoding="utf-8"))
    for key in WALL_CLOCK_KEYS:
        _drop(d, key)
    return d


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    """(the prompt file, the run directory of an uninterrupted scan of it): the run every interrupted scan of
    this module must end equal to, computed once."""
    from tests.cli.test_cli import run_main

    root = tmp_path_factory.mktemp("reference")
    prompts, ref = _prompt_file(root), root / "ref"
    code, _, err = run_main(_scan_args(prompts, ref))
    assert code == 0, f"the reference scan exited {code}: {err[-2000:]}"
    return prompts, ref


def _batch_files(partial: Path) -> list[Path]:
    return sorted(partial.glob("batch-*.safetensors")) if partial.is_dir() else []


def test_sigkill_mid_capture_then_the_same_command_resumes(tmp_path, capsys, monkeypatch, reference):
    prompts, ref = reference
    out = tmp_path / "run"
    partial = out / PARTIAL_DIR
    args = _scan_args(prompts, out)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoprobe.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    try:
        while not _batch_files(partial):
            if proc.poll() is not None:
                pytest.fail(
                    f"the scan exited ({proc.returncode}) before any batch was checkpointed: "
                    f"{proc.stderr.read().decode()[-1500:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail("no batch checkpointed within 300 s")
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    before = _batch_files(partial)
    total = N_PROMPTS // BATCH
    if len(before) >= total:
        pytest.fail(
            f"the kill came too late: all {total} batches were already captured; the test needs a "
            "slower capture (more prompts or a smaller --batch-size)"
        )
    assert not (out / "results.json").exists() and not (out / "capture").exists()
    assert 1 <= len(before) < total

    computed: list[int] = []
    save = CaptureCheckpoint.save
    monkeypatch.setattr(
        CaptureCheckpoint, "save", lambda self, i, rows, arrays: (computed.append(i), save(self, i, rows, arrays))[1]
    )
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if ln.startswith("resuming:")]
    assert lines == [f"resuming: {len(before)} of {total} batches already captured in {partial}"], err
    done_before = {int(p.stem.split("-")[1]) for p in before}
    assert sorted(computed) == sorted(set(range(total)) - done_before)  # only the missing batches ran
    assert not partial.exists() and (out / "results.json").is_file()

    assert comparable(out / "results.json") == comparable(ref / "results.json")
    from safetensors.numpy import load_file

    a, b = (
        load_file(str(out / "capture" / "arrays.safetensors")),
        load_file(str(ref / "capture" / "arrays.safetensors")),
    )
    assert sorted(a) == sorted(b) and all(a[k].tobytes() == b[k].tobytes() for k in a)

    # a finished run is refused as before
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and "already exists" in err and "--force" in err


def interrupt_after_first_batch(args: list[str], partial: Path, signum: int) -> tuple[int, str, int]:
    """Run ``geoprobe ARGS`` in a subprocess and send it ``signum`` once a batch is checkpointed;
    returns (exit code, stderr, batches on disk)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    # a shell's background jobs inherit SIGINT ignored, and Python then installs no handler: restore it
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoprobe.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300
    try:
        while not _batch_files(partial):
            if proc.poll() is not None:
                pytest.fail(f"the scan exited ({proc.returncode}) before any batch was checkpointed")
            if time.monotonic() > deadline:
                pytest.fail("no batch checkpointed within 300 s")
            time.sleep(0.01)
        os.kill(proc.pid, signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err.decode(), len(_batch_files(partial))


@pytest.mark.parametrize("signum, name", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_an_interrupt_says_so_exits_128_plus_signal_and_keeps_the_checkpoint(
    tmp_path, capsys, monkeypatch, signum, name, reference
):
    """Was: SIGINT mid-scan exited 0 and printed nothing (typer returned 130 and main() dropped it)."""
    prompts, ref = reference
    out = tmp_path / "run"
    partial = out / PARTIAL_DIR
    args = _scan_args(prompts, out)
    code, err, kept = interrupt_after_first_batch(args, partial, signum)
    assert code == 128 + signum, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("loading", "warning"))]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({name}); rerun the same command to resume"), err
    assert "Traceback" not in err and "results.json" not in err
    assert 1 <= kept < N_PROMPTS // BATCH and not (out / "results.json").exists()

    code, _, err = run_cli(args, capsys, monkeypatch)  # the same command resumes and finishes
    assert code == 0, err
    assert any(ln.startswith("resuming:") for ln in err.splitlines()), err
    assert comparable(out / "results.json") == comparable(ref / "results.json")


@pytest.fixture
def unfinished(tmp_path, twin_factory):
    """A run directory holding a checkpoint of a seed-0 scan that stopped after every batch but the last."""
    prompts = _prompt_file(tmp_path, 12)
    out = tmp_path / "run"
    texts = prompts.read_text(encoding="utf-8").splitlines()
    cfg = CaptureConfig(layers=None, batch_size=BATCH, key_weights=True)
    capture(twin_factory("pythia-410m"), texts, cfg, seed=0, checkpoint_dir=out / PARTIAL_DIR)
    (out / PARTIAL_DIR / f"batch-{12 // BATCH - 1:05d}.safetensors").unlink()
    return prompts, out


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_a_changed_setting_refuses_to_resume_and_deletes_nothing(unfinished, capsys, monkeypatch):
    prompts, out = unfinished
    before = _snapshot(out / PARTIAL_DIR)
    code, stdout, err = run_cli(_scan_args(prompts, out)[:-2] + ["--seed", "1"], capsys, monkeypatch)
    assert code == 2
    msg = err.strip()
    assert "\n" not in msg and "Traceback" not in msg
    assert msg.startswith(f"error: {str(out)!r} holds an unfinished scan with different settings (seed: was 0, now 1)")
    assert msg.endswith("pass --force to discard it or choose another --out")
    assert _snapshot(out / PARTIAL_DIR) == before and not (out / "results.json").exists()


def test_force_discards_the_unfinished_scan(unfinished, capsys, monkeypatch):
    prompts, out = unfinished
    computed: list[int] = []
    save = CaptureCheckpoint.save
    monkeypatch.setattr(
        CaptureCheckpoint, "save", lambda self, i, rows, arrays: (computed.append(i), save(self, i, rows, arrays))[1]
    )
    code, _, err = run_cli(_scan_args(prompts, out)[:-2] + ["--seed", "1", "--force"], capsys, monkeypatch)
    assert code == 0, err
    assert "resuming:" not in err and sorted(computed) == list(range(12 // BATCH))  # everything recomputed
    assert json.loads((out / "results.json").read_text())["provenance"]["seed"] == 1
    assert not (out / PARTIAL_DIR).exists()


def test_the_same_settings_resume_without_force(unfinished, capsys, monkeypatch):
    prompts, out = unfinished
    code, _, err = run_cli(_scan_args(prompts, out), capsys, monkeypatch)
    assert code == 0, err
    assert f"resuming: {12 // BATCH - 1} of {12 // BATCH} batches already captured" in err


def test_half_written_and_damaged_batch_files_are_recomputed(tmp_path, twin_factory, prompts):
    model = twin_factory("llama-3.2-1b")
    texts = [*prompts, *(f"{p} and then" for p in prompts)]  # 12 prompts, 6 batches
    cfg = CaptureConfig(layers=(0, -1), batch_size=2, attention="distribution", queries=True)
    ref = capture(model, texts, cfg, seed=3)
    ckdir = tmp_path / "ck"
    capture(model, texts, cfg, seed=3, checkpoint_dir=ckdir)
    (ckdir / "batch-00005.safetensors").rename(ckdir / ".batch-00005.safetensors.abc123.tmp")  # never renamed
    damaged = ckdir / "batch-00002.safetensors"
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])  # a torn file under the real name
    seen: list[tuple[int, int]] = []
    computed: list[int] = []
    save = CaptureCheckpoint.save

    def spy(self, i, rows, arrays):
        computed.append(i)
        return save(self, i, rows, arrays)

    CaptureCheckpoint.save = spy
    try:
        got = capture(
            model, texts, cfg, seed=3, checkpoint_dir=ckdir, on_resume=lambda d, n, where: seen.append((d, n))
        )
    finally:
        CaptureCheckpoint.save = save
    assert seen == [(4, 6)] and sorted(computed) == [2, 5]
    assert not list(ckdir.glob("*.tmp"))
    for name in (
        "values",
        "keys",
        "queries",
        "attn_entropy",
        "attn_pattern",
        "next_entropy",
        "next_top_ids",
        "next_top_probs",
        "w_k",
        "n_tokens",
    ):
        assert getattr(got, name).tobytes() == getattr(ref, name).tobytes(), name


def test_a_checkpoint_of_other_prompts_is_refused(tmp_path, twin_factory, prompts):
    model = twin_factory("llama-3.2-1b")
    ckdir = tmp_path / "ck"
    capture(model, prompts, CaptureConfig(batch_size=4), checkpoint_dir=ckdir)
    with pytest.raises(checkpoint.CheckpointMismatch, match=r"\(prompts_hash: was "):
        capture(model, prompts[::-1], CaptureConfig(batch_size=4), checkpoint_dir=ckdir)
    with pytest.raises(checkpoint.CheckpointMismatch, match=r"\(config.batch_size: was 4, now 2\)"):
        capture(model, prompts, CaptureConfig(batch_size=2), checkpoint_dir=ckdir)


def test_a_drawn_corpus_set_is_kept_and_reused_by_the_resumed_scan(tmp_path, twin_factory, monkeypatch):
    import geoprobe.prompts
    from geoprobe.scan import ScanConfig
    from geoprobe.scan.run import resolve_prompts

    monkeypatch.setenv("GEOPROBE_ENTROPY_CACHE", str(tmp_path / "entropy"))
    model = twin_factory("pythia-410m")
    config = ScanConfig(prompts="code").updated(sampling={"candidates": 40, "per_stratum": 4, "max_tokens": 32})
    ckdir = tmp_path / "run" / PARTIAL_DIR
    texts, notes, pset = resolve_prompts(config, None, model, checkpoint_dir=ckdir)
    assert (ckdir / checkpoint.PROMPTS).is_file() and len(texts) == 20

    def no_sampling(*a, **k):
        raise AssertionError("a resumed scan must not sample its prompt set again")

    monkeypatch.setattr(geoprobe.prompts, "resolve_prompt_set", no_sampling)
    again, notes2, pset2 = resolve_prompts(config, None, model, checkpoint_dir=ckdir)
    assert again == texts and notes2 == notes and pset2 == pset and pset2.record() == pset.record()
    with pytest.raises(
        checkpoint.CheckpointMismatch, match=r"unfinished scan with different settings \(seed: was 0, now 5\)"
    ):
        resolve_prompts(config.updated(seed=5), None, model, checkpoint_dir=ckdir)
