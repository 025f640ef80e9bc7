"""Where geoprobe keeps its cache (dequantised GGUF weights, file hashes), atomic writes, and reading
a file only when it is a regular file (a FIFO, a device or a socket is refused without waiting on it)."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from geoprobe.errors import OutputWriteError, ResultsError


def cache_dir() -> Path:
    """``$GEOPROBE_CACHE`` if set, else ``$XDG_CACHE_HOME/geoprobe`` or ``~/.cache/geoprobe``."""
    env = os.environ.get("GEOPROBE_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "geoprobe"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def public_mode(directory: bool = False) -> int:
    """The mode a plain ``open()``/``mkdir()`` would give under the current umask (tempfile's
    mkstemp/mkdtemp use 0600/0700, which would hide results from collaborators)."""
    return (0o777 if directory else 0o666) & ~_umask()


_SPECIAL = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(st: os.stat_result) -> str | None:
    """What a file that is not a regular file is ("a FIFO (named pipe)", "a character device", …),
    or None for a regular file."""
    if stat.S_ISREG(st.st_mode):
        return None
    return next((name for test, name in _SPECIAL if test(st.st_mode)), "a special file")


def check_regular(path: str | os.PathLike, error: Callable[[str], Exception]) -> None:
    """Raise ``error(why)`` when ``path`` exists and is not a regular file (following links), where
    ``why`` reads "is a FIFO (named pipe), not a regular file". Only ``stat`` is called: a FIFO's
    ``open()`` would wait for a writer, a device's read would never end."""
    try:
        st = os.stat(path)
    except OSError:
        return  # missing or unreadable: the reader says so
    kind = special_kind(st)
    if kind is not None:
        raise error(f"is {kind}, not a regular file")


def read_regular(path: str | os.PathLike, error: Callable[[str], Exception], limit: int | None = None) -> bytes:
    """The bytes of regular file ``path``, read without ever blocking: refused by ``error(why)`` when it
    is a FIFO, a device or a socket (checked before opening, and again on the opened descriptor,
    which is opened non-blocking should a FIFO replace the file in between). With ``limit``, at most
    ``limit + 1`` bytes are read (the caller compares). ``OSError`` (missing, permissions) propagates."""
    check_regular(path, error)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        kind = special_kind(os.fstat(fd))
        if kind is not None:
            raise error(f"is {kind}, not a regular file")
        return f.read() if limit is None else f.read(limit + 1)


def safetensors_damage(path: str | os.PathLike) -> str | None:
    """Why ``path`` is not a readable safetensors file, or None when it is. Reads only the header
    (safetensors checks it is valid JSON and that the file holds every byte its tensors declare),
    so a truncated or garbled file is named before a loader fails on it with a bare SafetensorError.
    A file whose tensor bytes are overwritten in place passes: the format carries no checksum."""
    from safetensors import SafetensorError, safe_open

    try:
        kind = special_kind(os.stat(path))
        if kind is not None:  # safe_open would wait on a FIFO for a writer
            return f"it is {kind}, not a regular file"
        with safe_open(str(path), framework="numpy") as f:
            f.keys()
    except SafetensorError as exc:
        return " ".join(str(exc).split())
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None


#: how Rust's std::io::Error shows an operating-system error ("No space left on device (os error 28)"),
#: which safetensors' writer passes on inside a SafetensorError
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def os_error_of(exc: BaseException, path: str | os.PathLike) -> OSError | None:
    """The operating-system error inside ``exc`` as an ``OSError`` naming ``path``: ``exc`` itself when it
    is one, the errno a safetensors ``SafetensorError`` reports in its text (a full disk while writing
    arrays or weights), else None."""
    if isinstance(exc, OSError):
        return exc
    found = _OS_ERROR.search(str(exc))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code), str(path))


@contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Around a writer that is not Python's own (safetensors' ``save_file``, ``save_pretrained``): an
    error carrying an operating-system error leaves as that ``OSError`` naming ``path``, so the caller's
    ``except OSError`` removes its partial output and raises geoprobe's one-line error."""
    try:
        yield
    except OSError:
        raise
    except Exception as exc:
        found = os_error_of(exc, path)
        if found is None:
            raise
        raise found from exc


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place: a kill
    leaves either the whole new file or a stray ``.<name>.*.tmp``, never half a file."""
    p = Path(path)
    tmp = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        os.close(fd)
        with writing(p):
            write(tmp)
        os.chmod(tmp, public_mode())
        os.replace(tmp, p)
    except OSError as exc:  # disk full, read-only, permissions: one line naming the file
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OutputWriteError(p, exc) from exc
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    return p


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike, data: object) -> Path:
    """Strict JSON (no NaN), UTF-8, indented, written atomically (the caller decides about overwriting)."""
    import json

    return atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False))


def read_json(path: str | os.PathLike, *, default_name: str | None, what: str, fix: str) -> tuple[object, str]:
    """``(data, source)`` from a results file (or ``default_name`` inside a directory); a missing
    or unparsable file is a one-line ResultsError naming the path, ``what`` it should be and ``fix``."""
    import json

    p = Path(path)
    if default_name and p.is_dir():
        p = p / default_name
    if not p.exists():
        raise ResultsError(f"{what} {str(p)!r} does not exist; {fix}")
    try:
        raw = read_regular(p, lambda why: ResultsError(f"{what} {str(p)!r} {why}; {fix}"))
    except OSError as exc:
        raise ResultsError(f"{what} {str(p)!r} cannot be read ({exc.strerror or exc}); {fix}") from None
    try:
        return json.loads(
            raw.decode("utf-8"),
            parse_int=_bounded_int,
            parse_float=_finite_float,
            parse_constant=_no_constant,
        ), repr(str(p))
    except _Implausible as exc:
        raise ResultsError(f"{str(p)!r} is damaged: it holds {exc}, which geoprobe never writes; {fix}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ResultsError(f"{str(p)!r} is not valid JSON ({exc}); {fix}") from None


MAX_RESULT_INT = 2**64  # no integer a result holds comes near 64 bits (seeds are below 2**32: geoprobe.checks)


class _Implausible(ValueError):
    """A number a geoprobe results file cannot hold (strict JSON, 64-bit integers)."""


def _bounded_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > 20 or abs(int(text)) >= MAX_RESULT_INT:  # 2**64 has 20 digits; never convert a huge one
        shown = text if len(text) <= 40 else f"{text[:20]}… ({len(digits)} digits)"
        raise _Implausible(f"the integer {shown} (beyond 64 bits)")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Implausible(f"the number {text[:40]} (beyond the floating-point range)")
    return value


def _no_constant(name: str) -> float:
    raise _Implausible(f"{name} (results are strict JSON: a missing value is null)")
