"""geoprobe.outputs: what geoprobe wrote is recognised, nothing else is ever replaced, the location is
checked before any work, and one process writes an output at a time."""

import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest

from geoprobe.errors import ForeignOutputError, GeoprobeError, OutputLocationError, OutputWriteError
from geoprobe.kinds import CAPTURE_KIND, PAGE_KIND, PROMPTS_KIND, RECORD, RECORD_KIND
from geoprobe.outputs import (
    GENERATOR_META,
    OutputLock,
    check_location,
    check_nesting,
    check_page_name,
    check_prompts_name,
    check_replaceable_dir,
    check_same_kind,
    foreign_entries,
    is_geoprobe_file,
    refuse_cwd,
    remove_owned,
)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "name, text, ours",
    [
        ("results.json", json.dumps({"kind": "geoprobe.scan", "version": 1}), True),
        ("sula.json", json.dumps({"kind": "geoprobe.sula"}), True),
        ("capture.json", json.dumps({"format_version": 1, "layout": {}, "provenance": {}}), True),  # 0.1.0, no kind
        ("results.json", json.dumps({"kind": "mine"}), False),
        ("results.json", json.dumps([1, 2]), False),
        ("results.json", "{not json", False),
        ("report.html", f"<!DOCTYPE html><html><head>{GENERATOR_META}<title>x</title>", True),
        ("report.html", "<!DOCTYPE html><html><head><title>geoprobe sula: m</title>", True),  # 0.1.0 pages
        ("report.html", "<html><head><title>My report</title></head></html>", False),
        ("prompts.jsonl", '{"set": "math", "prompt": "1 + 1 ="}\n{"set": "math", "prompt": "2 + 2 ="}\n', True),
        ("prompts.jsonl", '{"prompt": "no set"}\n', False),
        ("notes.txt", "anything", False),
    ],
)
def test_geoprobe_files_are_recognised_by_name_and_marker(tmp_path, name, text, ours):
    assert is_geoprobe_file(_write(tmp_path / name, text)) is ours


def test_a_symlink_to_a_geoprobe_file_is_not_ours(tmp_path):
    target = _write(tmp_path / "real.json", json.dumps({"kind": "geoprobe.scan"}))
    (tmp_path / "link.json").symlink_to(target)
    assert is_geoprobe_file(target) and not is_geoprobe_file(tmp_path / "link.json")


def test_foreign_entries_take_names_patterns_and_skip_dot_temporaries(tmp_path):
    for n in ("manifest.json", "batch-00000.safetensors", "batch-00001.safetensors", ".x.tmp", "mine.txt", "zz"):
        _write(tmp_path / n, "")
    assert foreign_entries(tmp_path, ("manifest.json", "batch-*.safetensors")) == ["mine.txt", "zz"]
    assert foreign_entries(tmp_path, ("*",)) == []


def test_a_directory_is_replaceable_only_when_it_holds_nothing_foreign(tmp_path):
    d = tmp_path / "cap"
    _write(d / "capture.json", json.dumps({"kind": "geoprobe.capture"}))
    _write(d / "arrays.safetensors", "x")
    check_replaceable_dir(d, ("capture.json", "arrays.safetensors"), "capture.json")  # no error
    _write(d / "important.txt", "keep")
    with pytest.raises(ForeignOutputError, match="'important.txt', which geoprobe did not write"):
        check_replaceable_dir(d, ("capture.json", "arrays.safetensors"), "capture.json")
    (d / "important.txt").unlink()
    _write(d / "capture.json", json.dumps({"kind": "someone else's"}))
    with pytest.raises(ForeignOutputError, match="not written by geoprobe"):
        check_replaceable_dir(d, ("capture.json", "arrays.safetensors"), "capture.json")
    f = _write(tmp_path / "file", "x")
    with pytest.raises(ForeignOutputError):
        check_replaceable_dir(f, ("capture.json",), "capture.json")


def test_remove_owned_keeps_everything_else(tmp_path):
    d = tmp_path / "partial"
    for n in ("manifest.json", "batch-00000.safetensors", ".batch-00001.safetensors.ab.tmp", "mine.txt"):
        _write(d / n, "x")
    assert remove_owned(d, ("manifest.json",), patterns=("batch-*.safetensors", "*.tmp")) is False
    assert sorted(os.listdir(d)) == ["mine.txt"]
    (d / "mine.txt").unlink()
    assert remove_owned(d, ("manifest.json",)) is True and not d.exists()


def test_check_location_refuses_a_file_a_path_under_a_file_and_no_space(tmp_path, monkeypatch):
    f = _write(tmp_path / "afile", "x")
    with pytest.raises(OutputLocationError, match="is a file, not a directory"):
        check_location(f)
    with pytest.raises(OutputLocationError, match="lies under .*afile.*which is a file"):
        check_location(f / "run")
    assert check_location(tmp_path / "new" / "run") == tmp_path / "new" / "run"
    assert not (tmp_path / "new").exists()  # checking creates nothing

    class Usage:
        free = 10 * 2**20

    monkeypatch.setattr("geoprobe.outputs.shutil.disk_usage", lambda p: Usage)
    with pytest.raises(OutputLocationError, match=r"only 10\.0 MiB free .* needs about 64\.0 MiB"):
        check_location(tmp_path / "run")


def test_check_location_refuses_a_directory_it_cannot_write(tmp_path):
    if os.geteuid() == 0:  # root writes through permission bits: use a place nobody can create files in
        target = "/proc/geoprobe-test-run"
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        target = ro / "run"
    with pytest.raises(OutputLocationError, match="cannot write in"):
        check_location(target)


def test_refuse_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for bad in (".", str(tmp_path), ".."):
        with pytest.raises(OutputLocationError, match="working directory"):
            refuse_cwd(bad)
    refuse_cwd("sub")  # fine


def test_output_write_error_names_the_path_and_the_errno():
    e = OutputWriteError("runs/x/report.html", OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    assert str(e).startswith("could not write 'runs/x/report.html': No space left on device (ENOSPC); free some space")
    assert "\n" not in str(e) and isinstance(e, GeoprobeError)


_HOLD = textwrap.dedent("""
    import sys, time
    from geoprobe.outputs import OutputLock
    lock = OutputLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    sys.stdin.readline()
    lock.release()
""")


def test_a_second_process_is_refused_at_once_and_the_lock_dies_with_its_holder(tmp_path):
    target = tmp_path / "runs" / "scan"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(GeoprobeError, match=rf"another geoprobe process \(pid {holder.pid}\) is writing"):
            OutputLock(target).acquire()
        holder.kill()  # killed, not released: the kernel drops the flock
        holder.wait()
        with OutputLock(target) as lock:
            assert lock.path.exists()
        assert not lock.path.exists()  # removed on release
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_the_lock_removes_the_parent_directories_it_made(tmp_path):
    with OutputLock(tmp_path / "a" / "b" / "run"):
        assert (tmp_path / "a" / "b").is_dir()
    assert not (tmp_path / "a").exists()


# ---------------------------------------------------------------- issue 27: only the same kind, never nested

PAGE = f"<!DOCTYPE html><html><head>{GENERATOR_META}<title>x</title></head></html>"
SCAN = json.dumps({"kind": "geoprobe.scan", "version": 1})


@pytest.mark.parametrize(
    "name, text, kind, verdict",
    [
        ("report.html", PAGE, PAGE_KIND, None),  # a page over a page
        ("p.jsonl", '{"set": "mixed", "prompt": "a"}\n', PROMPTS_KIND, None),
        ("results.json", SCAN, "geoprobe.scan", None),
        ("results.json", SCAN, PAGE_KIND, "is a scan results file that geoprobe wrote, not an HTML page"),
        ("results.json", SCAN, "geoprobe.sula", "not a sula results file"),
        ("capture.json", json.dumps({"kind": CAPTURE_KIND}), PAGE_KIND, "is capture metadata that geoprobe wrote"),
        (RECORD, json.dumps({"kind": RECORD_KIND}), PAGE_KIND, "is a run record that geoprobe wrote"),
        ("mine.html", "<html>my notes</html>", PAGE_KIND, "was not written by geoprobe"),
    ],
)
def test_force_replaces_only_a_file_of_the_same_kind(tmp_path, name, text, kind, verdict):
    p = _write(tmp_path / name, text)
    if verdict is None:
        check_same_kind(p, kind)
        assert is_geoprobe_file(p, kind)
    else:
        with pytest.raises(ForeignOutputError, match=verdict):
            check_same_kind(p, kind)
        assert not is_geoprobe_file(p, kind)
    check_same_kind(tmp_path / "absent.html", PAGE_KIND)  # nothing there: nothing to refuse


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (check_page_name, "r.html", "results.json"),
        (check_page_name, "r.HTM", "r"),
        (check_prompts_name, "p.jsonl", "p.txt"),
    ],
)
def test_a_file_output_is_named_by_its_kind(tmp_path, check, good, bad):
    check(tmp_path / good)
    with pytest.raises(OutputLocationError, match=f"{bad}' does not end in"):
        check(tmp_path / bad)


def _run_dir(d, result="results.json"):
    _write(d / RECORD, json.dumps({"kind": RECORD_KIND, "version": 1, "result": result}))
    return d


def _capture_dir(d):
    _write(d / "capture.json", json.dumps({"kind": CAPTURE_KIND}))
    return d


def test_a_run_never_lands_inside_another_output(tmp_path):
    run = _run_dir(tmp_path / "run")
    cap = _capture_dir(run / "capture")
    for target in (run / "capture", run / "sub", run / "a" / "b", cap / "deeper"):
        for writes in ("run", "capture"):
            with pytest.raises(OutputLocationError, match="geoprobe never writes a .* inside another output"):
                check_nesting(target, writes=writes)
    check_nesting(run / "notes.html", writes="file")  # a run directory takes other files
    with pytest.raises(OutputLocationError, match="lies inside '.*capture', a capture directory"):
        check_nesting(cap / "page.html", writes="file")  # a capture is written whole
    check_nesting(run / "seed-0", writes="run", parent=run)  # the run it is declared part of
    check_nesting(tmp_path / "elsewhere", writes="run")


def test_a_directory_is_reused_only_as_its_own_kind(tmp_path):
    run = _run_dir(tmp_path / "run")
    cap = _capture_dir(tmp_path / "cap")
    check_nesting(run, writes="run", result="results.json")  # the same command's run: --force may replace it
    with pytest.raises(OutputLocationError, match=r"run directory of another command \(its results: results.json; "):
        check_nesting(run, writes="run", result="sula.json")
    with pytest.raises(OutputLocationError, match="is a capture directory of geoprobe's, not a run directory"):
        check_nesting(cap, writes="run")
    with pytest.raises(OutputLocationError, match="is a run directory of geoprobe's .*, not a capture directory"):
        check_nesting(run, writes="capture")
    check_nesting(cap, writes="capture")


def test_a_dangling_link_or_a_loop_is_refused_as_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("nowhere", "dangling")
    os.symlink("loop", "loop")
    with pytest.raises(OutputLocationError, match="'dangling' is a symbolic link to 'nowhere', which does not exist"):
        check_location("dangling")
    with pytest.raises(OutputLocationError, match="'loop' is a symbolic link to 'loop'"):
        check_location("loop", directory=False)
    with pytest.raises(OutputLocationError, match="symbolic-link loop"):
        check_location("loop/run")
    assert not (tmp_path / "nowhere").exists()


def test_a_link_to_the_same_directory_meets_the_same_lock(tmp_path):
    (tmp_path / "runs" / "scan").mkdir(parents=True)
    os.symlink(tmp_path / "runs", tmp_path / "alias")
    os.symlink(tmp_path / "runs" / "scan", tmp_path / "link")
    target = tmp_path / "runs" / "scan"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        for other in (tmp_path / "link", tmp_path / "alias" / "scan", tmp_path / "runs" / ".." / "alias" / "scan"):
            with pytest.raises(GeoprobeError, match=rf"another geoprobe process \(pid {holder.pid}\) is writing"):
                OutputLock(other).acquire()
    finally:
        holder.kill()
        holder.wait()
