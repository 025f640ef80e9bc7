"""Where geoprobe writes: it replaces only what it wrote itself, of the same kind, checks the
location before any work, lets one process write an output at a time, and cleans up after itself
on failure.

**Ownership.** ``--force`` / ``--overwrite`` replace an existing output only when geoprobe wrote
it **as the same kind of file** (:mod:`geoprobe.kinds`: a page only over a page, prompts only
over prompts, results only over results of the same command; :func:`check_same_kind`):

* ``*.json``: a JSON object whose ``"kind"`` starts with ``geoprobe``;
* ``*.html``: a page carrying ``<meta name="generator" content="geoprobe …">`` (pages of 0.1.0:
  a ``<title>geoprobe …`` title);
* ``*.jsonl``: prompt lines written by ``geoprobe sample`` / ``compare-domains`` (every line an
  object with ``set`` and ``prompt``);
* figure files: listed in ``figures/.geoprobe-figures.json`` (:func:`owned_figures`; written by
  :mod:`geoprobe.report.export`);
* a directory: only the names its writer puts there, with that writer's marker file of its kind.

Anything else is *foreign*: no flag makes geoprobe replace or delete it; the command stops with
one line naming it, before any model loads.

**Location.** :func:`check_location` fails early, in one line, when ``--out`` names a regular
file, a dangling symbolic link or a link loop, sits under something that is not a directory, is not
writable, has less free space than the run needs, or lies inside a directory geoprobe wrote for
another output (:func:`check_nesting`: a run never inside another run, a capture or a training
run; a file never inside a directory geoprobe writes whole). :class:`OutputWriteError` turns an
``OSError`` raised while writing into one line naming the path and the meaning of its errno.

**One writer.** :class:`OutputLock` holds ``.<name>.geoprobe.lock`` beside an output (an
``flock``, released by the kernel if the process dies), keyed on the output's resolved path (a
symbolic link to the same directory meets the same lock), so that a second process aiming at the
same output is refused at once instead of computing and colliding at the end.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

from geoprobe.errors import ForeignOutputError, GeoprobeError, OutputExistsError, OutputLocationError, OutputWriteError
from geoprobe.kinds import (
    CAPTURE_KIND,
    FIGURES_KIND,
    FIGURES_MANIFEST,
    GENERATOR_META,
    PAGE_SUFFIXES,
    describe_file,
    directory_kind,
    file_kind,
)

#: free space below which no run starts (reports embed plotly.js, about 4.6 MB a page)
MIN_FREE_BYTES = 64 * 2**20
#: the files of a capture directory (capture.json is its marker)
CAPTURE_FILES = ("capture.json", "arrays.safetensors")
#: the folder of a run directory that static figures go to, and the list of the files geoprobe wrote there
FIGURES_DIR = "figures"


# ---------------------------------------------------------------------------------- ownership
def is_geoprobe_file(path: str | os.PathLike, kind: str | None = None) -> bool:
    """Whether ``path`` is a regular file that geoprobe wrote (by its suffix and marker:
    :func:`geoprobe.kinds.file_kind`), and, given ``kind``, one of that kind."""
    found = file_kind(path)
    return found is not None and (kind is None or found == kind)


def check_same_kind(path: str | os.PathLike, kind: str, *, flag: str = "--out") -> None:
    """An existing ``path`` may be replaced (with --force) only when geoprobe wrote it as ``kind``: a
    page only over a page, prompts only over prompts, results only over results of the same
    command. Otherwise a one-line :class:`ForeignOutputError`; a missing ``path`` passes."""
    p = Path(path)
    if not (p.exists() or p.is_symlink()):
        return
    found = file_kind(p)
    if found is None:
        refuse_foreign(p)
    if found != kind:
        raise ForeignOutputError(
            f"{str(p)!r} is {describe_file(found)} that geoprobe wrote, not {describe_file(kind)}; --force "
            f"replaces only {describe_file(kind)} geoprobe wrote, never another kind of file: choose another {flag}"
        )


def check_suffix(
    path: str | os.PathLike, suffixes: Sequence[str], what: str, example: str, *, flag: str = "--out"
) -> None:
    """A file output's name must end in one of ``suffixes`` (what marks its kind, :mod:`geoprobe.kinds`), or a
    one-line :class:`OutputLocationError`: a page named results.json would hide what it is from a later --force."""
    p = Path(path)
    if p.suffix.lower() not in suffixes:
        raise OutputLocationError(
            f"{flag} {str(p)!r} does not end in {' or '.join(suffixes)}; geoprobe writes {what} only under such a "
            f"name: pass e.g. {flag} {example}"
        )


def check_page_name(path: str | os.PathLike, flag: str = "--out") -> None:
    """A page's file name ends in .html or .htm (:func:`check_suffix`)."""
    check_suffix(path, PAGE_SUFFIXES, "an HTML page", str(Path(path).with_suffix(".html")), flag=flag)


def check_prompts_name(path: str | os.PathLike, flag: str = "--out") -> None:
    """A prompt-lines file's name ends in .jsonl (:func:`check_suffix`)."""
    check_suffix(path, (".jsonl",), "prompt lines (JSON lines)", str(Path(path).with_suffix(".jsonl")), flag=flag)


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
    target: str | os.PathLike,
    names: Iterable[str],
    marker: str | None,
    *,
    flag: str = "--out",
    marker_kind: str | None = None,
) -> None:
    """``target`` (a directory geoprobe writes whole, such as a capture) may be replaced: it holds
    only ``names`` (and geoprobe's own '.'-prefixed temporaries), and its ``marker`` file is
    geoprobe's (of ``marker_kind``, when given). Otherwise a one-line :class:`ForeignOutputError`
    naming the first foreign entry."""
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
    if marker is not None and (t / marker).exists():
        if marker_kind is None:
            if not is_geoprobe_file(t / marker):
                refuse_foreign(t / marker)
        else:
            check_same_kind(t / marker, marker_kind, flag=flag)


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
    target: str | os.PathLike,
    *,
    need_bytes: int = MIN_FREE_BYTES,
    flag: str = "--out",
    directory: bool = True,
    writes: str | None = None,
    result: str | None = None,
    parent: str | os.PathLike | None = None,
) -> Path:
    """Fail in one line, before any work, if ``target`` cannot be written: ``directory`` outputs
    must not be a regular file; a symbolic link must lead somewhere; the nearest existing ancestor
    must be a writable directory (tried by creating a temporary file there); it needs ``need_bytes``
    free; and it must not lie inside a directory geoprobe wrote for another output
    (:func:`check_nesting` with ``writes``, ``result`` and ``parent``). Returns ``target``."""
    t = Path(target)
    if t.is_symlink() and not t.exists():
        try:
            to = os.readlink(t)
        except OSError:
            to = "?"
        raise OutputLocationError(
            f"{flag} {str(t)!r} is a symbolic link to {to!r}, which does not exist (or loops); geoprobe does not "
            f"write through a dangling link: remove the link or choose another {flag}"
        )
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
    check_nesting(t, writes=writes or ("run" if directory else "file"), result=result, parent=parent, flag=flag)
    return t


#: what a writer writes, in words (check_nesting's ``writes``)
_WRITES = {"run": "a run", "capture": "a capture", "file": "a file", "sweep": "a sweep"}


def resolved(path: str | os.PathLike, flag: str = "--out") -> Path:
    """``path`` with every symbolic link followed (as far as it exists); a link loop is one line."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):  # Python 3.11 raises RuntimeError on a loop
        raise OutputLocationError(
            f"{flag} {str(path)!r} runs into a symbolic-link loop; fix the link or choose another {flag}"
        ) from None


def shown(path: Path) -> str:
    """A resolved path as a message shows it: relative to the working directory when inside it."""
    try:
        here = Path.cwd().resolve()
    except OSError:
        return str(path)
    return os.path.relpath(path, here) if path.is_relative_to(here) else str(path)


def check_nesting(
    target: str | os.PathLike,
    *,
    writes: str,
    result: str | None = None,
    parent: str | os.PathLike | None = None,
    flag: str = "--out",
) -> None:
    """A one-line :class:`OutputLocationError` when ``target`` would land inside a directory geoprobe
    wrote for another output (:func:`geoprobe.kinds.directory_kind`), where it would be lost or
    refused as foreign when that output is replaced:

    * ``writes="run"`` or ``"capture"`` (a directory): no directory above it is a run, a capture, an
      unfinished capture, a training run or a figures folder, up to ``parent`` (the run this one
      is part of: a seed of ``windtunnel run --seeds``, a scan of ``compare-models``); ``target``
      itself is no directory of another kind, and a run directory only one of ``result`` (the
      results file this command writes: one command's run to a directory);
    * ``writes="sweep"``: no directory above it is any output of geoprobe's (a sweep never inside a run,
      a capture or another sweep), and ``target`` itself is no directory of another kind;
    * ``writes="file"`` (a page, prompt lines): no directory above it is one that geoprobe writes
      whole (a run directory may hold other files; a sweep holds only its own files and cells)."""
    t = resolved(target, flag)
    stop = resolved(parent, flag) if parent is not None else None
    what = _WRITES[writes]
    for above in t.parents:
        if stop is not None and above == stop:
            break
        kind = directory_kind(above)
        if kind is None or (writes == "file" and kind.is_run):
            continue
        raise OutputLocationError(
            f"{flag} {str(target)!r} lies inside {shown(above)!r}, {kind.describe()}; geoprobe never writes {what} "
            f"inside another output's directory: choose an {flag} outside {shown(above)!r}"
        )
    if writes == "file":
        return
    own = directory_kind(t)
    if own is None:
        return
    if (
        (writes == "capture" and own.kind != CAPTURE_KIND)
        or (writes == "run" and not own.is_run)
        or (writes == "sweep" and not own.is_sweep)
    ):
        raise OutputLocationError(
            f"{flag} {str(target)!r} is {own.describe()}, not {what} directory; geoprobe replaces only its own "
            f"kind of output, with any flag: choose another {flag}"
        )
    if writes == "run" and result is not None and own.result not in (None, result):
        raise OutputLocationError(
            f"{flag} {str(target)!r} is the run directory of another command (its results: {own.result}; this "
            f"command writes {result}); a run directory holds one command's run and --force replaces only that: "
            f"choose another {flag}"
        )


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
LOCK_SUFFIX = ".geoprobe.lock"  # the lock file of output NAME is .NAME.geoprobe.lock beside it


class OutputLock:
    """An exclusive, non-blocking ``flock`` on ``<parent>/.<name>.geoprobe.lock`` for one output,
    ``<parent>/<name>`` being the output's resolved path (symbolic links followed).

    A second holder fails at once with a one-line error naming the first's pid; the lock dies with
    the process (the kernel releases it), and the file is removed on release."""

    def __init__(self, target: str | os.PathLike, flag: str = "--out") -> None:
        t = Path(target)
        self.target = t
        self.flag = flag
        real = resolved(t, flag)  # one lock per real output: a symbolic link to it meets the same lock
        self.path = real.parent / f".{real.name or 'out'}{LOCK_SUFFIX}"
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
    "check_nesting",
    "check_page_name",
    "check_prompts_name",
    "check_replaceable_dir",
    "check_same_kind",
    "check_suffix",
    "existing_ancestor",
    "foreign_entries",
    "is_geoprobe_file",
    "refuse_cwd",
    "refuse_foreign",
    "remove_owned",
    "resolved",
]
