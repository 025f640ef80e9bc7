"""Where geoprobe keeps its cache (dequantised GGUF weights, file hashes)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$GEOPROBE_CACHE`` if set, else ``$XDG_CACHE_HOME/geoprobe`` or ``~/.cache/geoprobe``."""
    env = os.environ.get("GEOPROBE_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "geoprobe"
