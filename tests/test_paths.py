"""geoprobe.paths: a full disk inside safetensors' writer becomes geoprobe's one-line OutputWriteError.

safetensors writes through Rust and reports an operating-system error as a ``SafetensorError`` whose text
ends in ``(os error N)``; before issue 27 that reached the user as "unexpected SafetensorError". The
conditions here are real: a tmpfs that is full (ENOSPC) and a file-size limit (EFBIG), each in a
subprocess (tests/full_disk.py).
"""

from __future__ import annotations

import errno
import json

import numpy as np
import pytest

from geoprobe.errors import OutputWriteError
from geoprobe.paths import atomic_write, os_error_of, writing
from tests.full_disk import run_in_tmpfs, run_limited, tmpfs_unavailable

# a capture of 12 prompts on the tiny twin, saved into DISK/old, then DISK filled but for a page or
# two, then the same capture saved over DISK/old (overwrite) and into DISK/new: both must fail in one
# line naming the file and ENOSPC, remove their partial files, and leave DISK/old as it was
_SAVE_ON_A_FULL_DISK = """
import hashlib, json, os, sys
from pathlib import Path
from geoprobe.capture import CaptureConfig, capture
from geoprobe.errors import OutputWriteError
from geoprobe.models.loading import load_model

disk = Path({disk!r})
m = load_model("twin:llama-3.2-1b")
cap = capture(m, [f"Prompt {{i}} tells the story of a river in the north" for i in range(12)], CaptureConfig())
cap.save(disk / "old")
before = {{p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (disk / "old").iterdir()}}
free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
with open(disk / "filler", "wb") as f:
    f.write(b"x" * (free - 8192))
out = {{}}
for name, overwrite in (("old", True), ("new", False)):
    try:
        cap.save(disk / name, overwrite=overwrite)
        out[name] = "saved"
    except OutputWriteError as exc:
        out[name] = str(exc)
out["after"] = {{p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (disk / "old").iterdir()}}
out["before"] = before
out["entries"] = sorted(os.listdir(disk))
print(json.dumps(out))
"""


def test_saving_a_capture_on_a_full_disk_names_the_file_and_enospc_and_loses_nothing(tmp_path):
    """Was: "error: unexpected SafetensorError: Error while serializing: I/O error: No space left on device
    (os error 28)" (exit 1)."""
    why = tmpfs_unavailable()
    if why:
        pytest.skip(why)
    disk = tmp_path / "disk"
    disk.mkdir()
    r = run_in_tmpfs(_SAVE_ON_A_FULL_DISK.format(disk=str(disk)), disk, 4 * 2**20, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for name in ("old", "new"):
        assert out[name] == (
            f"could not write '{disk / name / 'arrays.safetensors'}': No space left on device (ENOSPC); free "
            "some space or choose another --out; rerunning the same command then finishes what is missing"
        )
    assert out["after"] == out["before"] and set(out["before"]) == {"capture.json", "arrays.safetensors"}
    assert out["entries"] == ["filler", "old"]  # no partial directory left behind


_ATOMIC = """
import json, os, numpy as np
from pathlib import Path
from safetensors.numpy import save_file
from geoprobe.errors import OutputWriteError
from geoprobe.paths import atomic_write

arrays = {"a": np.zeros(50_000, dtype=np.float32)}  # 200 kB, past the 64 kB limit
try:
    atomic_write("batch.safetensors", lambda tmp: save_file(arrays, tmp))
    print(json.dumps("saved"))
except OutputWriteError as exc:
    print(json.dumps([str(exc), exc.errno, sorted(os.listdir("."))]))
"""


def test_atomic_write_of_safetensors_past_the_file_size_limit_is_one_line_and_leaves_no_temporary(tmp_path):
    """A capture checkpoint batch (atomic_write + save_file) past RLIMIT_FSIZE: EFBIG, the file named."""
    r = run_limited(_ATOMIC, 64 * 1024, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    message, code, entries = json.loads(r.stdout.strip().splitlines()[-1])
    assert message.startswith("could not write 'batch.safetensors': File too large (EFBIG); free some space")
    assert code == errno.EFBIG and entries == []


def test_os_error_of_reads_the_errno_safetensors_reports_and_nothing_else(tmp_path):
    from safetensors import SafetensorError

    found = os_error_of(
        SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"), "x"
    )
    assert isinstance(found, OSError) and found.errno == errno.ENOSPC and found.filename == "x"
    assert os_error_of(SafetensorError("Error while deserializing header: HeaderTooLarge"), "x") is None
    same = OSError(errno.EROFS, "Read-only file system")
    assert os_error_of(same, "x") is same


def test_a_safetensors_error_of_its_own_type_inside_writing_becomes_the_os_error(tmp_path, monkeypatch):
    """safetensors raising its own error type (monkeypatched writer): atomic_write turns it into one line."""
    from safetensors import SafetensorError
    from safetensors import numpy as st_numpy

    def full(arrays, filename, metadata=None):
        raise SafetensorError("Error while serializing: I/O error: Disk quota exceeded (os error 122)")

    monkeypatch.setattr(st_numpy, "save_file", full)
    target = tmp_path / "x.safetensors"
    with pytest.raises(OutputWriteError) as info:
        atomic_write(target, lambda tmp: st_numpy.save_file({"a": np.zeros(1)}, tmp))
    assert str(info.value).startswith(f"could not write '{target}': Disk quota exceeded (EDQUOT); free some space")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SafetensorError), writing(target):  # an error without an errno is left as it is
        raise SafetensorError("Error while serializing: invalid tensor")
