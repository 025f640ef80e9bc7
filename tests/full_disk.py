"""Real full-disk conditions for tests, in a subprocess (never the test process itself).

* :func:`run_limited`: Python code (or ``geoprobe ARGV``) under ``RLIMIT_FSIZE`` with ``SIGXFSZ``
  ignored: a write past the limit fails with ``EFBIG`` ("File too large"), a file too large for the
  space it may take, as the kernel reports it. Works on every Linux, unprivileged.
* :func:`run_in_tmpfs`: Python code in a private mount namespace (``unshare -rm``) with a small tmpfs
  mounted at a directory: a write past its size fails with ``ENOSPC`` ("No space left on device"),
  a disk that is really full. Needs user namespaces; :func:`tmpfs_unavailable` says why not where
  they are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_LIMIT = (
    "import resource, signal\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, ({n}, {n}))\n"
)
_GEOPROBE = "import sys\nsys.argv = ['geoprobe', *{argv!r}]\nfrom geoprobe.cli import main\nmain()\n"


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=path)


def run_limited(code: str, limit: int, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python whose files may not grow past ``limit`` bytes."""
    return subprocess.run(
        [sys.executable, "-c", _LIMIT.format(n=int(limit)) + code],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def geoprobe_code(argv: list[str]) -> str:
    """Python code that runs ``geoprobe ARGV`` the way the console script does."""
    return _GEOPROBE.format(argv=list(argv))


def tmpfs_unavailable() -> str | None:
    """Why :func:`run_in_tmpfs` cannot run here, or None."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return "needs Linux and unshare(1) to mount a private tmpfs"
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a user namespace here ({probe.stderr.strip() or probe.returncode})"
    return None


def run_in_tmpfs(code: str, mount: Path, size: int, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python that sees a ``size``-byte tmpfs at ``mount`` (an existing empty
    directory; the mount is private to that process and gone when it exits)."""
    script = 'mount -t tmpfs -o size="$1" tmpfs "$2" && exec "$3" -c "$4"'
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", str(int(size)), str(mount), sys.executable, code],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
