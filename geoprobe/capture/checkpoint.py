"""Resumable captures: every finished batch on disk, keyed by a fingerprint of what fixes its numbers.

A checkpoint directory (``<run>/capture.partial/`` for ``geoprobe scan``) holds

* ``manifest.json`` — the fingerprint (model id, weights, tokenizer, dtype, device, the ordered
  prompts' hash, the capture config with resolved layers, seed, geoprobe/torch versions) and the
  number of batches;
* ``batch-00000.safetensors`` … — the arrays of one finished batch (its rows of every captured
  array, plus the prompt indices it covers), each written to a ``*.tmp`` file and renamed into
  place, so a kill leaves either a whole batch file or a stray ``*.tmp`` that is ignored;
* ``prompts.json`` (scans only) — the drawn prompt set, so a resumed scan need not resample.

A second run with the same fingerprint loads the finished batches and computes the rest; a
different fingerprint is a one-line :class:`CheckpointMismatch` naming the first differing field
(nothing is deleted). The numbers of a resumed capture equal an uninterrupted one's bit for bit:
batches are the same rows in the same order, and float32 arrays round-trip losslessly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from geoprobe.errors import GeoprobeError
from geoprobe.kinds import CHECKPOINT_KIND
from geoprobe.outputs import foreign_entries, remove_owned
from geoprobe.paths import atomic_write, read_regular, write_json
from geoprobe.version import __version__

PARTIAL_DIR = "capture.partial"  #: the checkpoint directory inside a scan's run directory
#: what a killed write leaves: geoprobe's ``.<name>.*.tmp`` (paths.atomic_write) and the safetensors
#: writer's own temporary file (Rust's ``tempfile``: ``.tmp`` and six random characters)
STRAY = ("*.tmp", ".tmp??????")
MANIFEST = "manifest.json"
PROMPTS = "prompts.json"
KIND = CHECKPOINT_KIND
VERSION = 1


class CheckpointMismatch(GeoprobeError):
    """A checkpoint directory was written by a run with different settings."""

    def __init__(self, owner: Path, what: str, field: str) -> None:
        self.field = field
        super().__init__(
            f"{str(owner)!r} holds an unfinished {what} with different settings ({field}); "
            "pass --force to discard it or choose another --out"
        )


def owner_of(directory: Path) -> Path:
    """The run directory a checkpoint belongs to (its parent for ``capture.partial``)."""
    return directory.parent if directory.name == PARTIAL_DIR else directory


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _short(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= 40 else s[:37] + "…"


def first_difference(stored: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """``"field: was X, now Y"`` for the first field (in ``current``'s order) that differs, else None."""
    a, b = _flat(stored), _flat(current)
    for key in [*b, *(k for k in a if k not in b)]:
        if a.get(key, "<absent>") != b.get(key, "<absent>"):
            return f"{key}: was {_short(a.get(key, '<absent>'))}, now {_short(b.get(key, '<absent>'))}"
    return None


def _jsonable(d: Any) -> Any:
    """``d`` as JSON would give it back (tuples → lists), so stored and current compare equal."""
    return json.loads(json.dumps(d))


def check_or_write(
    path: Path, fingerprint: Mapping[str, Any], *, what: str = "capture", extra: Mapping[str, Any] | None = None
) -> dict | None:
    """The stored record at ``path`` if its fingerprint equals ``fingerprint`` (None if there is no
    record yet: then ``{fingerprint, **extra}`` is written); a mismatch, or a record that cannot be
    read, raises :class:`CheckpointMismatch`."""
    current = _jsonable(dict(fingerprint))
    if path.exists():

        def special(why: str) -> GeoprobeError:  # a FIFO in its place is refused, never waited on
            return GeoprobeError(
                f"{str(owner_of(path.parent))!r} holds an unfinished {what} whose {path.name} {why}; pass --force "
                "to discard it or choose another --out"
            )

        try:
            stored = json.loads(read_regular(path, special))
            ok = stored.get("kind") == KIND and stored.get("version") == VERSION
        except (OSError, ValueError, AttributeError):
            ok, stored = False, {}
        if not ok:
            raise CheckpointMismatch(owner_of(path.parent), what, f"unreadable {path.name}")
        diff = first_difference(stored.get("fingerprint", {}), current)
        if diff:
            raise CheckpointMismatch(owner_of(path.parent), what, diff)
        return stored
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"kind": KIND, "version": VERSION, "fingerprint": current, **_jsonable(dict(extra or {}))})
    return None


class CaptureCheckpoint:
    """Finished batches of one capture in ``directory`` (created on first use)."""

    def __init__(self, directory: str | os.PathLike, fingerprint: Mapping[str, Any], n_batches: int) -> None:
        self.dir = Path(directory)
        self.n_batches = n_batches
        what = "scan" if self.dir.name == PARTIAL_DIR else "capture"
        self.resumed = (
            check_or_write(self.dir / MANIFEST, fingerprint, what=what, extra={"n_batches": n_batches}) is not None
        )
        for pattern in STRAY:  # half-written batches of a killed run
            for stray in self.dir.glob(pattern):
                stray.unlink(missing_ok=True)

    def path(self, i: int) -> Path:
        return self.dir / f"batch-{i:05d}.safetensors"

    def load(self, i: int, rows: np.ndarray) -> dict[str, np.ndarray] | None:
        """Batch ``i``'s arrays, or None when it is missing, unreadable or covers other rows."""
        from safetensors.numpy import load_file

        p = self.path(i)
        if not p.is_file():
            return None
        try:
            arrays = load_file(str(p))
        except Exception:  # noqa: BLE001 - a damaged batch file is recomputed, never trusted
            return None
        if not np.array_equal(arrays.pop("__rows__", None), np.asarray(rows, dtype=np.int64)):
            return None
        return arrays

    def save(self, i: int, rows: np.ndarray, arrays: Mapping[str, np.ndarray]) -> Path:
        """Write batch ``i`` atomically: a ``*.tmp`` file beside it, renamed into place."""
        from safetensors.numpy import save_file

        target = self.path(i)
        data = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
        data["__rows__"] = np.asarray(rows, dtype=np.int64)
        atomic_write(target, lambda tmp: save_file(data, tmp))
        return target


def discard(directory: Path) -> None:
    """Remove a checkpoint (after the finished results are written, or on --force): the files a
    checkpoint holds, then the directory if that empties it. Anything else stays (with a warning)."""
    import warnings

    if not remove_owned(directory, (MANIFEST, PROMPTS), patterns=("batch-*.safetensors", *STRAY)):
        left = foreign_entries(directory, (), stray_prefixes=())
        warnings.warn(f"kept {str(directory)!r}: it holds {left[0]!r}, which geoprobe did not write", stacklevel=2)


def model_fingerprint(model: Any) -> dict[str, Any]:
    """What about a loaded model fixes the numbers it produces: its identity, weights, tokenizer,
    dtype and device, and the geoprobe and torch versions computing with it."""
    import torch

    p = model.provenance
    return {
        "geoprobe": __version__,
        "torch": torch.__version__,
        "model_id": p.model_id,
        "source": p.source,
        "weights": p.weights,
        "tokenizer": p.tokenizer,
        "dtype": p.dtype,
        "device": str(model.device),
    }
