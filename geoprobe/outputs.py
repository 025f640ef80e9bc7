"""Where geoprobe writes: it replaces only what it wrote itself, checks the location before any
work, lets one process write an output at a time, and cleans up after itself on failure.

**Ownership.** ``--force`` / ``--overwrite`` replace an existing output only when geoprobe wrote
it, recognised by its name (one the command writes) and a marker:

* ``*.json``: a JSON object whose ``"kind"`` starts with ``geoprobe``;
* ``*.html``: a page carrying ``<meta name="generator" content="geoprobe …">`` (pages of 0.1.0:
  a ``<title>geoprobe …`` title);
* ``*.jsonl``: prompt lines written by ``geoprobe sample`` / ``compare-domains`` (every line an
  object with ``set`` and ``prompt``);
* figure files: listed in ``figures/.geoprobe-figures.json`` (:func:`owned_figures`; written by
  :mod:`geoprobe.report.export`);
* a directory: only the names its writer puts there, with that writer's marker file.

Anything else is *foreign*: no flag makes geoprobe replace or delete it; the command stops with
one line naming it, before any model loads.

**Location.** :func:`check_location` fails early, in one line, when ``--out`` names a regular
file, sits under something that is not a directory, is not writable, or has less free space than
the run needs. :class:`OutputWriteError` turns an ``OSError`` raised while writing into one line
naming the path and the meaning of its errno.

**One writer.** :class:`OutputLock` holds ``.<name>.geoprobe.lock`` beside an output (an
``flock``, released by the kernel if the process dies) so that a second process aiming at the
same ``--out`` is refused at once instead of computing and colliding at the end.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

from geoprobe.errors import ForeignOutputError, GeoprobeError, OutputExistsError, OutputLocationError, OutputWriteError

#: the generator tag every HTML page geoprobe writes carries (read back by :func:`is_geoprobe_file`)
GENERATOR = "geoprobe"
GENERATOR_META = f'<meta name="generator" content="{GENERATOR}">'
#: free space below which no run starts (reports embed plotly.js, about 4.6 MB a page)
MIN_FREE_BYTES = 64 * 2**20
#: the files of a capture directory (capture.json is its marker)
CAPTURE_FILES = ("capture.json", "arrays.safetensors")
#: the folder of a run directory that static figures go to, and the list of the files geoprobe wrote there
FIGURES_DIR = "figures"
FIGURES_MANIFEST = ".geoprobe-figures.json"
FIGURES_KIND = "geoprobe.figures"


# ---------------------------------------------------------------------------------- ownership
def _head(path: Path, n: int = 8192) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _json_kind(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            d = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict):
        return None
    kind = d.get("kind")
    if kind is None and {"format_version", "layout", "provenance"} <= d.keys():
        return "geoprobe.capture"  # capture.json of geoprobe 0.1.0, written before captures named their kind
    return kind if isinstance(kind, str) else None


def _is_prompt_lines(path: Path) -> bool:
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return bool(lines) and all(
            isinstance(d := json.loads(line), dict) and "set" in d and "prompt" in d for line in lines
        )
    except (OSError, ValueError):
        return False


def is_geoprobe_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file that geoprobe wrote, by its suffix and marker (module docs)."""
    p = Path(path)
    if p.is_symlink() or not p.is_file():
        return False
    if p.suffix == ".json":
        kind = _json_kind(p)
        return kind is not None and kind.startswith("geoprobe")
    if p.suffix == ".html":
        head = _head(p)
        return GENERATOR_META.encode() in head or b"<title>geoprobe " in head
    if p.suffix == ".jsonl":
        return _is_prompt_lines(p)
    return False


def figures_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / FIGURES_DIR


def owned_figures(out_dir: str | os.PathLike) -> set[str]:
    """Names of the figure files in ``out_dir`` that geoprobe wrote (listed in its manifest)."""
    try:
        d = json.loads((Path(out_dir) / FIGURES_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(d, dict) or d.get("kind") != FIGURES_KIND or not isinstance(d.get("files"), list):
        return set()
    return {str(n) for n in d["files"]}


def _entries(directory: Path) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []


def foreign_entries(
    directory: str | os.PathLike, allowed: Iterable[str], *, stray_prefixes: Sequence[str] = (".",)
) -> list[str]:
    """Names in ``directory`` that match none of ``allowed`` (names or glob patterns such as
    ``batch-*.safetensors``) and do not start with one of ``stray_prefixes`` (geoprobe's temporary
    files start with '.'); sorted."""
    from fnmatch import fnmatchcase

    ok = tuple(allowed)
    return [
        n
        for n in _entries(Path(directory))
        if not any(fnmatchcase(n, a) for a in ok) and not n.startswith(tuple(stray_prefixes))
    ]


def refuse_foreign(path: str | os.PathLike, what: str = "it") -> None:
    """A one-line :class:`ForeignOutputError` for ``path``: geoprobe did not write it."""
    raise ForeignOutputError(
        f"{str(path)!r} already exists and was not written by geoprobe; geoprobe never replaces "
        f"{what}: move it away or choose another --out"
    )


def check_replaceable_dir(
    target: str | os.PathLike, names: Iterable[str], marker: str | None, *, flag: str = "--out"
) -> None:
    """``target`` (a directory geoprobe writes whole, such as a capture) may be replaced: it holds
    only ``names`` (and geoprobe's own '.'-prefixed temporaries), and its ``marker`` file is
    geoprobe's. Otherwise a one-line :class:`ForeignOutputError` naming the first foreign entry."""
    t = Path(target)
    if not t.is_dir() or t.is_symlink():
        refuse_foreign(t, "a file or link where it writes a directory")
    foreign = foreign_entries(t, names)
    if foreign:
        raise ForeignOutputError(
            f"{str(t)!r} holds {foreign[0]!r}, which geoprobe did not write; geoprobe replaces or "
            f"writes into only a directory it made itself: move {foreign[0]!r} away or choose "
            f"another {flag}"
        )
    if marker is not None and (t / marker).exists() and not is_geoprobe_file(t / marker):
        refuse_foreign(t / marker)


def remove_owned(directory: str | os.PathLike, names: Iterable[str], patterns: Sequence[str] = ()) -> bool:
    """Remove ``names`` and files matching ``patterns`` from ``directory``, then the directory if it
    is left empty; anything else stays. Returns whether the directory is gone."""
    d = Path(directory)
    if not d.is_dir():
        return True
    for name in names:
        p = d / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    for pattern in patterns:
        for p in d.glob(pattern):
            if p.is_file() or p.is_symlink():
                p.unlink(missing_ok=True)
    try:
        d.rmdir()
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------- location
def _existing_ancestor(p: Path) -> Path:
    q = p
    while not q.exists() and q != q.parent:
        q = q.parent
    return q


def check_location(
    target: str | os.PathLike, *, need_bytes: int = MIN_FREE_BYTES, flag: str = "--out", directory: bool = True
) -> Path:
    """Fail in one line, before any work, if ``target`` cannot be written: ``directory`` outputs
    must not be a regular file; the nearest existing ancestor must be a writable directory (tried
    by creating a temporary file there); it needs ``need_bytes`` free. Returns ``target``."""
    t = Path(target)
    if directory and t.exists() and not t.is_dir():
        raise OutputLocationError(f"{flag} {str(t)!r} is a file, not a directory; choose a directory for {flag}")
    if not directory and t.is_dir():
        raise OutputLocationError(f"{flag} {str(t)!r} is a directory; pass a file name to {flag}")
    base = _existing_ancestor(t.parent if not directory or not t.exists() else t)
    if not base.is_dir():
        raise OutputLocationError(
            f"{flag} {str(t)!r} lies under {str(base)!r}, which is a file, not a directory; choose another {flag}"
        )
    probe = base / f".geoprobe-write-test-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputLocationError(
            f"{flag} {str(t)!r}: cannot write in {str(base)!r} ({reason}); choose a writable {flag}"
        ) from None
    free = shutil.disk_usage(base).free
    if free < need_bytes:
        raise OutputLocationError(
            f"{flag} {str(t)!r}: only {_size(free)} free on its file system, this run needs about "
            f"{_size(need_bytes)}; free some space or choose another {flag}"
        )
    return t


def check_free_space(target: str | os.PathLike, need_bytes: int, what: str, flag: str = "--out") -> None:
    """A one-line error when the file system of ``target`` has less than ``need_bytes`` free for ``what``."""
    base = _existing_ancestor(Path(target))
    free = shutil.disk_usage(base).free
    if free < need_bytes:
        raise OutputLocationError(
            f"{flag} {str(target)!r}: {what} needs about {_size(need_bytes)} but only "
            f"{_size(free)} is free there; free some space or choose another {flag}"
        )


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def refuse_cwd(target: str | os.PathLike, flag: str = "--out") -> None:
    """A directory written whole (renamed into place) cannot be the working directory or hold it."""
    t = Path(target)
    try:
        here, there = Path.cwd().resolve(), t.resolve()
    except OSError:
        return
    if here == there or here.is_relative_to(there):
        raise OutputLocationError(
            f"{flag} {str(t)!r} is the working directory or holds it; geoprobe writes a new "
            f"directory there: pass a new directory name such as {flag} runs/capture"
        )


# ---------------------------------------------------------------------------------- one writer
class OutputLock:
    """An exclusive, non-blocking ``flock`` on ``<parent>/.<name>.geoprobe.lock`` for one output.

    A second holder fails at once with a one-line error naming the first's pid; the lock dies with
    the process (the kernel releases it), and the file is removed on release."""

    def __init__(self, target: str | os.PathLike, flag: str = "--out") -> None:
        t = Path(target)
        self.target = t
        self.flag = flag
        self.path = t.parent / f".{t.name or 'out'}.geoprobe.lock"
        self._fd: int | None = None
        self._made: list[Path] = []

    def acquire(self) -> "OutputLock":
        missing = []
        q = self.path.parent
        while not q.exists():
            missing.append(q)
            q = q.parent
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._made = missing  # parents made for the lock: removed again on release if still empty
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                self._remove_made()
                raise GeoprobeError(
                    f"another geoprobe process (pid {holder}) is writing {str(self.target)!r}; wait for "
                    f"it to finish or choose another {self.flag}"
                ) from None
            try:  # the file we locked may have been removed by its last holder in between: lock the new one
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None
            self._remove_made()

    def _remove_made(self) -> None:
        for d in self._made:  # innermost first
            try:
                d.rmdir()
            except OSError:
                break
        self._made = []

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def existing_ancestor(path: str | os.PathLike) -> Path:
    """The nearest ancestor of ``path`` (itself included) that exists."""
    return _existing_ancestor(Path(path))


__all__ = [
    "GENERATOR_META",
    "MIN_FREE_BYTES",
    "ForeignOutputError",
    "OutputLocationError",
    "OutputWriteError",
    "OutputExistsError",
    "OutputLock",
    "check_free_space",
    "check_location",
    "check_replaceable_dir",
    "existing_ancestor",
    "foreign_entries",
    "is_geoprobe_file",
    "refuse_cwd",
    "refuse_foreign",
    "remove_owned",
]
