"""Finished units of a run's work (a condition, a seed, a block of training steps), kept so that an
interrupted run resumes from them.

A run's partial directory (``<run>/<name>.partial``) holds ``manifest.json`` (the fingerprint of what
fixes the run's numbers, as :mod:`geoprobe.capture.checkpoint` writes it: a rerun with other settings is
a one-line error naming the first setting that differs, and --force discards it) and one
``unit-<key>.safetensors`` per finished unit: its arrays, bit for bit, and a JSON record of anything
else, written atomically. Subdirectories hold the capture checkpoints of captures the run makes
(``capture.partial``-style, :func:`geoprobe.capture.checkpoint.discard`). A unit that cannot be read is
computed again, never trusted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from geoprobe.capture.checkpoint import MANIFEST, STRAY, check_or_write
from geoprobe.capture.checkpoint import discard as discard_capture
from geoprobe.paths import atomic_write

UNIT = "unit-{}.safetensors"
_KEY = re.compile(r"^[A-Za-z0-9_.=+-]+$")


class Units:
    """The finished units of one run in ``directory`` (None: nothing is kept, every unit is computed).
    ``fingerprint``: what fixes the run's numbers (a directory kept with another one is refused at once);
    ``what``: the run's command, for messages. Nothing is written before the first unit finishes."""

    def __init__(self, directory: str | os.PathLike | None, fingerprint: Mapping[str, Any], what: str) -> None:
        self.dir = None if directory is None else Path(directory)
        self.fingerprint, self.what = fingerprint, what
        self.started = False
        if self.dir is not None and (self.dir / MANIFEST).exists():  # another run's settings: refused here
            self.started = check_or_write(self.dir / MANIFEST, fingerprint, what=what) is not None
            for pattern in STRAY:
                for stray in self.dir.glob(pattern):
                    stray.unlink(missing_ok=True)

    def begin(self) -> None:
        """Keep the fingerprint now (a run whose own outputs mark what it finished, such as compare-models')."""
        if self.dir is not None and not self.started:
            check_or_write(self.dir / MANIFEST, self.fingerprint, what=self.what)
            self.started = True

    def path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"unit key {key!r}: letters, digits and _.=+- only")
        assert self.dir is not None
        return self.dir / UNIT.format(key)

    def get(self, key: str) -> tuple[dict[str, np.ndarray], Any] | None:
        """Unit ``key``'s arrays and record, or None when it is not there (or cannot be read)."""
        if self.dir is None or not self.path(key).is_file():
            return None
        from safetensors import safe_open

        try:
            with safe_open(str(self.path(key)), framework="numpy") as f:
                record = json.loads((f.metadata() or {}).get("record", "null"))
                arrays = {k: f.get_tensor(k) for k in f.keys()}
        except Exception:  # noqa: BLE001 - a damaged unit is recomputed, never trusted
            return None
        return arrays, record

    def put(self, key: str, arrays: Mapping[str, Any] | None = None, record: Any = None) -> None:
        """Keep unit ``key``: ``arrays`` (name -> numpy array) and a JSON-able ``record``."""
        if self.dir is None:
            return
        from safetensors.numpy import save_file

        self.begin()  # the manifest is written with the first unit: a run that fails before leaves nothing
        data = {k: np.ascontiguousarray(np.asarray(v)) for k, v in (arrays or {}).items()}
        meta = {"record": json.dumps(record, allow_nan=True)}
        atomic_write(self.path(key), lambda tmp: save_file(data, tmp, metadata=meta))

    def sub(self, name: str) -> Path | None:
        """A subdirectory for a capture checkpoint of this run (None where nothing is kept)."""
        return None if self.dir is None else self.dir / name


def discard(directory: str | os.PathLike) -> None:
    """Remove a run's partial state: its units, its captures' checkpoints, then the directory itself if
    that empties it (anything geoprobe did not write stays, with a warning)."""
    d = Path(directory)
    for sub in sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink()) if d.is_dir() else ():
        if (sub / MANIFEST).exists():
            discard_capture(sub)
    from geoprobe.outputs import foreign_entries, remove_owned

    if not remove_owned(d, (MANIFEST, "prompts.json"), patterns=("batch-*.safetensors", "unit-*.safetensors", *STRAY)):
        import warnings

        left = foreign_entries(d, (), stray_prefixes=())
        if left:
            warnings.warn(f"kept {str(d)!r}: it holds {left[0]!r}, which geoprobe did not write", stacklevel=2)
