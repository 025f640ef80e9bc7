"""Where geoprobe keeps its cache (dequantised GGUF weights, file hashes), and atomic writes."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


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


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, public_mode())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p
