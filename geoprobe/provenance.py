"""Provenance: what produced a result (model, weights, prompts, seed, software)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Sequence

from geoprobe.paths import cache_dir
from geoprobe.serial import Record
from geoprobe.version import __version__

_PACKAGES = (
    "geoprobe",
    "torch",
    "transformers",
    "transformer-lens",
    "numpy",
    "scipy",
    "scikit-learn",
    "plotly",
    "safetensors",
    "gguf",
)


def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (``"absent"`` if missing). geoprobe's own
    is the running code's ``__version__``: its distribution is named ``geoprobe-attention`` (the name
    ``geoprobe`` on PyPI is an unrelated package with the same import name, whose version must never
    be recorded as this one's)."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        if name == "geoprobe":
            out[name] = __version__
            continue
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def prompts_hash(prompts: Sequence[str]) -> str:
    """sha256 over the prompts, length-prefixed so that ["ab","c"] != ["a","bc"]."""
    h = hashlib.sha256()
    for p in prompts:
        b = p.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _hash_index_path() -> Path:
    return cache_dir() / "file-hashes.json"


def file_sha256(path: str | os.PathLike, *, use_index: bool = True) -> str:
    """sha256 of a file, remembered per (path, size, mtime) so big weight files hash once."""
    p = Path(path).resolve()
    st = p.stat()
    key = f"{p}|{st.st_size}|{st.st_mtime_ns}"
    index: dict[str, str] = {}
    idx_path = _hash_index_path()
    if use_index and idx_path.exists():
        try:
            index = json.loads(idx_path.read_text())
        except (OSError, ValueError):
            index = {}
        if key in index:
            return index[key]
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    digest = h.hexdigest()
    if use_index:
        index[key] = digest
        idx_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = idx_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index))
        os.replace(tmp, idx_path)
    return digest


@dataclass(frozen=True, eq=False)
class Provenance(Record):
    """Where a result came from. ``weights`` is a revision, a file hash, or a twin seed."""

    model_id: str
    source: str  # "hub" | "local" | "gguf" | "twin" | "memory" (a model object the user passed, see wrap())
    weights: str
    tokenizer: str
    dtype: str
    prompts_hash: str = ""
    seed: int | None = None
    versions: dict[str, str] = field(default_factory=package_versions)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if self.source not in ("hub", "local", "gguf", "twin", "memory"):
            raise ValueError(f"unknown provenance source {self.source!r}")
        if not self.model_id:
            raise ValueError("provenance needs a model_id")

    def with_prompts(self, prompts: Sequence[str], seed: int | None = None) -> "Provenance":
        return replace(self, prompts_hash=prompts_hash(prompts), seed=seed if seed is not None else self.seed)
