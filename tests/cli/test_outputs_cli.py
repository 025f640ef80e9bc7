"""Nothing lost, nothing silent, end to end through the CLI: --overwrite/--force replace only what
geoprobe wrote; a write that fails says where and why and the same command then finishes the run; a
second process on the same --out is refused; files follow the umask; `geoprobe report` finishes any run."""

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest

from geoprobe.capture import Capture
from tests.cli.test_cli import run_cli

TWIN = "twin:llama-3.2-1b"


def _prompts(tmp_path, n=12):
    p = tmp_path / "p.txt"
    p.write_text("\n".join(f"Prompt number {i} says that the weather" for i in range(n)), encoding="utf-8")
    return p


def _tree(d):
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else None) for p in sorted(d.rglob("*"))}


def test_overwrite_never_deletes_a_project_directory(tmp_path, capsys, monkeypatch):
    """The reported data loss: `capture --out proj --overwrite` used to leave proj/ holding only the capture."""
    proj = tmp_path / "proj"
    (proj / "other_run").mkdir(parents=True)
    (proj / "important.txt").write_text("x\n")
    before = _tree(proj)
    code, out, err = run_cli(
        ["capture", "--model", TWIN, "--prompts", str(_prompts(tmp_path)), "--out", str(proj), "--overwrite"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "holds 'important.txt', which geoprobe did not write" in err
    assert _tree(proj) == before


def test_overwrite_replaces_a_capture_geoprobe_wrote_and_files_follow_the_umask(tmp_path, capsys, monkeypatch):
    out_dir = tmp_path / "cap"
    args = ["capture", "--model", TWIN, "--prompts", str(_prompts(tmp_path)), "--out", str(out_dir)]
    old = os.umask(0o022)
    try:
        assert run_cli(args, capsys, monkeypatch)[0] == 0
        modes = {p.name: p.stat().st_mode & 0o777 for p in out_dir.iterdir()}
        assert modes == {"capture.json": 0o644, "arrays.safetensors": 0o644}
        assert json.loads((out_dir / "capture.json").read_text())["kind"] == "geoprobe.capture"
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert code == 2 and "--overwrite" in err
        os.umask(0o077)
        assert run_cli([*args, "--overwrite", "--layers", "0"], capsys, monkeypatch)[0] == 0
        assert Capture.load(out_dir).layers == (0,)
        assert {p.stat().st_mode & 0o777 for p in out_dir.iterdir()} == {0o600}
    finally:
        os.umask(old)


def test_a_failed_write_is_one_line_and_the_same_command_finishes_the_run(tmp_path, capsys, monkeypatch):
    """Disk full while writing report.html: exit 2 naming the file and ENOSPC; the rerun writes report.html from
    results.json without loading the model, and results.json stays byte for byte."""
    from pathlib import Path

    run = tmp_path / "run"
    args = ["scan", "--model", TWIN, "--prompts", str(_prompts(tmp_path)), "--out", str(run)]
    real = Path.write_text

    def full(self, text, *a, **k):  # the page's temporary file hits a full disk
        if self.name.startswith(".report.html."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, text, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    code, out, err = run_cli(args, capsys, monkeypatch)
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("warning")]
    assert code == 2 and len(lines) == 1, err
    assert f"could not write '{run / 'report.html'}': No space left on device (ENOSPC)" in lines[0]
    assert (run / "results.json").exists() and not (run / "report.html").exists()
    before = (run / "results.json").read_bytes()
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]  # no temporary file left behind
    monkeypatch.setattr(Path, "write_text", real)
    import geoprobe.models.loading

    monkeypatch.setattr(geoprobe.models.loading, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "finished" in out and "without recomputing" in " ".join(out.split())
    assert (run / "report.html").stat().st_size > 1_000_000 and (run / "results.json").read_bytes() == before
    code, _, err = run_cli([*args, "--seed", "1"], capsys, monkeypatch)  # other settings: not this run to finish
    assert code == 2 and "already exists" in err


def test_too_little_free_space_is_found_before_the_model_loads(tmp_path, capsys, monkeypatch):
    import geoprobe.models.loading

    class Usage:
        free = 2**20

    monkeypatch.setattr("geoprobe.outputs.shutil.disk_usage", lambda p: Usage)
    monkeypatch.setattr(geoprobe.models.loading, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    code, _, err = run_cli(
        ["scan", "--model", TWIN, "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "run")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and "only 1.0 MiB free" in err and not (tmp_path / "run").exists()


_HOLD = textwrap.dedent("""
    import sys
    from geoprobe.outputs import OutputLock
    lock = OutputLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    sys.stdin.readline()
""")


@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "--model", TWIN, "--prompts", "{p}", "--out", "{run}"],
        ["capture", "--model", TWIN, "--prompts", "{p}", "--out", "{run}"],
        ["sula", "--model", TWIN, "--out", "{run}"],
    ],
    ids=["scan", "capture", "sula"],
)
def test_a_second_process_on_the_same_out_is_refused_at_once(argv, tmp_path, capsys, monkeypatch):
    import geoprobe.models.loading

    run = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(geoprobe.models.loading, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
        args = [a.format(p=_prompts(tmp_path), run=run) for a in argv]
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert code == 2 and f"another geoprobe process (pid {holder.pid}) is writing" in err
    finally:
        holder.kill()
        holder.wait()


def test_a_second_process_through_a_link_to_the_same_out_is_refused(tmp_path, capsys, monkeypatch):
    """The lock is keyed on the resolved directory: a symbolic link to the same --out once let two
    writers in at once (issue 27)."""
    import geoprobe.models.loading

    (tmp_path / "runs" / "run").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "runs" / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path / "runs" / "run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(geoprobe.models.loading, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
        args = ["scan", "--model", TWIN, "--prompts", str(_prompts(tmp_path)), "--out", str(tmp_path / "link")]
        code, _, err = run_cli(args, capsys, monkeypatch)
        assert code == 2 and f"another geoprobe process (pid {holder.pid}) is writing" in err
    finally:
        holder.kill()
        holder.wait()


def test_report_finishes_a_sula_run_killed_between_its_writes(tmp_path, capsys, monkeypatch):
    run = tmp_path / "sula"
    code, _, err = run_cli(
        ["sula", "--model", TWIN, "--k", "0,2", "--n-per-k", "4", "--n-resamples", "50", "--out", str(run)],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    (run / "sula.html").unlink()  # as if killed after sula.json
    code, out, err = run_cli(["report", str(run)], capsys, monkeypatch)
    assert code == 0, err
    assert (run / "sula.html").read_text().startswith("<!DOCTYPE html>")
    code, _, err = run_cli(["report", str(run)], capsys, monkeypatch)
    assert code == 2 and "already exists" in err


def test_report_finishes_a_compare_domains_run(tmp_path, capsys, monkeypatch):
    run = tmp_path / "dom"
    code, _, err = run_cli(
        [
            "compare-domains",
            "--model",
            TWIN,
            "--domains",
            "code",
            "--candidates",
            "60",
            "--domain-candidates",
            "30",
            "--per-quintile",
            "4",
            "--min-tokens",
            "8",
            "--max-prompt-tokens",
            "32",
            "--n-resamples",
            "50",
            "--n-permutations",
            "50",
            "--no-controls",
            "--out",
            str(run),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert (run / "prompts.jsonl").exists()
    (run / "domains.html").unlink()
    code, out, err = run_cli(["report", str(run / "domains.json")], capsys, monkeypatch)
    assert code == 0, err
    assert "Domain" in (run / "domains.html").read_text() or (run / "domains.html").stat().st_size > 1_000_000


def test_report_of_a_directory_with_several_results_asks_which(tmp_path, capsys, monkeypatch):
    for name, kind in (("results.json", "geoprobe.scan"), ("sula.json", "geoprobe.sula")):
        (tmp_path / name).write_text(json.dumps({"kind": kind, "version": 1}))
    code, _, err = run_cli(["report", str(tmp_path)], capsys, monkeypatch)
    assert code == 2 and "several results files (results.json, sula.json)" in err


def test_checkpoint_discard_keeps_files_it_did_not_write(tmp_path):
    from geoprobe.capture import checkpoint

    d = tmp_path / checkpoint.PARTIAL_DIR
    d.mkdir()
    for name in (checkpoint.MANIFEST, "batch-00000.safetensors", "my-notes.txt"):
        (d / name).write_text("x")
    with pytest.warns(UserWarning, match="'my-notes.txt', which geoprobe did not write"):
        checkpoint.discard(d)
    assert os.listdir(d) == ["my-notes.txt"]


def test_a_killed_safetensors_write_leaves_nothing_behind_the_checkpoint(tmp_path):
    """A SIGKILL inside safetensors' writer leaves its own temporary file (Rust's tempfile: '.tmp' and six
    random characters, 0 bytes; seen once in test_resume under load): a resumed run removes it with the
    checkpoint, so the finished run keeps no capture.partial."""
    from geoprobe.capture import checkpoint

    d = tmp_path / checkpoint.PARTIAL_DIR
    d.mkdir()
    for name in (checkpoint.MANIFEST, "batch-00000.safetensors", ".tmpzEYsJf", ".batch-00001.safetensors.ab.tmp"):
        (d / name).write_text("")
    checkpoint.discard(d)
    assert not d.exists()


def _one_error_line(stderr: str) -> str:
    lines = [x for x in stderr.splitlines() if x.strip() and not x.startswith(("warning", "loading"))]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


def test_capture_arrays_past_the_file_size_limit_name_the_file_and_keep_the_old_capture(tmp_path, capsys, monkeypatch):
    """A real EFBIG (RLIMIT_FSIZE below the arrays' size) in `geoprobe capture`: was "error: unexpected
    SafetensorError: Error while serializing: I/O error: File too large (os error 27)", exit 1."""
    from tests.full_disk import geoprobe_code, run_limited

    _prompts(tmp_path, 24)
    args = ["capture", "--model", TWIN, "--prompts", "p.txt", "--out", "cap"]
    # the capture to keep, with no limit: in this process (only the limited run needs one of its own)
    code, _, err = run_cli(args, capsys, monkeypatch, cwd=tmp_path)
    assert code == 0, err
    before = _tree(tmp_path)
    r = run_limited(geoprobe_code([*args, "--overwrite", "--layers", "0,1"]), 8 * 1024, tmp_path)
    assert r.returncode == 2
    assert _one_error_line(r.stderr) == (
        "error: could not write 'cap/arrays.safetensors': File too large (EFBIG); free some space or choose "
        "another --out; rerunning the same command then finishes what is missing"
    )
    assert _tree(tmp_path) == before  # the old capture as it was, no partial directory beside it


def test_a_scan_whose_capture_cannot_be_written_keeps_its_batches_and_the_rerun_resumes(tmp_path, capsys, monkeypatch):
    """Past the file-size limit while writing run/capture/arrays.safetensors: one line naming it, the
    finished batches stay in run/capture.partial, and the same command resumes from them."""
    from tests.full_disk import geoprobe_code, run_limited

    _prompts(tmp_path, 24)
    args = ["scan", "--model", TWIN, "--prompts", "p.txt", "--batch-size", "4", "--out", "run"]
    r = run_limited(geoprobe_code(args), 16 * 1024, tmp_path)  # a batch is ~5 kB, the arrays ~28 kB
    assert r.returncode == 2
    assert _one_error_line(r.stderr).startswith(
        "error: could not write 'run/capture/arrays.safetensors': File too large (EFBIG); free some space"
    )
    run = tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == ["capture.partial"]
    assert len(list((run / "capture.partial").glob("batch-*.safetensors"))) == 6
    code, _, err = run_cli(args, capsys, monkeypatch, cwd=tmp_path)  # the same command, with no limit: here
    assert code == 0, err[-3000:]
    assert "resuming:" in err and Capture.load(run / "capture").n_prompts == 24
