"""Provenance: what produced a result (model, weights, prompts, seed, software)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, Sequence

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


def _natural(name: str) -> tuple[str | int, ...]:
    """Sort key of a tensor name with its numbers as numbers (``layers.2`` before ``layers.10``)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


@dataclass(frozen=True, eq=False)
class PartialWeights(Record):
    """Weights that did not match the model's config, loaded anyway (``--allow-partial-weights``), as
    transformers reported them: tensors the config asks for and the weights lack (initialised at
    random), tensors of the weights the config has no place for (dropped), and tensors of the wrong
    shape, ``(name, shape in the weights, shape in the config)`` (initialised at random). Names sorted
    with their numbers as numbers."""

    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = ()

    @classmethod
    def of(
        cls, missing: Sequence[str], unexpected: Sequence[str], mismatched: Sequence[tuple[str, Any, Any]]
    ) -> "PartialWeights":
        return cls(
            missing=tuple(sorted(map(str, missing), key=_natural)),
            unexpected=tuple(sorted(map(str, unexpected), key=_natural)),
            mismatched=tuple(
                sorted(
                    ((str(k), tuple(map(int, a)), tuple(map(int, b))) for k, a, b in mismatched),
                    key=lambda m: _natural(m[0]),
                )
            ),
        )

    def empty(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)

    def summary(self, names: int = 3) -> str:
        """``24 tensors missing (a, b, c, …), 24 unexpected (…), 1 of the wrong shape (name: [63, 64] in
        the weights, [64, 64] in the config)``: the counts and the first ``names`` names of each kind."""
        shaped = [f"{k}: {_shape(a)} in the weights, {_shape(b)} in the config" for k, a, b in self.mismatched]
        parts = []
        for items, what, shown in (
            (self.missing, "missing", names),
            (self.unexpected, "unexpected", names),
            (shaped, "of the wrong shape", max(1, names - 1)),
        ):
            if items:
                listed = ", ".join(items[:shown]) + (", …" if len(items) > shown else "")
                noun = "" if parts else (" tensor" if len(items) == 1 else " tensors")
                parts.append(f"{len(items)}{noun} {what} ({listed})")
        return ", ".join(parts)

    def consequence(self, tense: Literal["would", "did"] = "would") -> str:
        """What transformers does with them: ``transformers would initialise the missing ones at random
        and drop the unexpected ones`` (``did``: ``initialised``, ``dropped``)."""
        random = [w for w, on in (("missing", self.missing), ("mis-shaped", self.mismatched)) if on]
        done = []
        if random:
            ones = "one" if len(self.missing) + len(self.mismatched) == 1 else "ones"
            done.append(
                f"{'initialise' if tense == 'would' else 'initialised'} the {' and '.join(random)} {ones} at random"
            )
        if self.unexpected:
            ones = "one" if len(self.unexpected) == 1 else "ones"
            done.append(f"{'drop' if tense == 'would' else 'dropped'} the unexpected {ones}")
        return f"transformers {'would ' if tense == 'would' else ''}{' and '.join(done)}"


@dataclass(frozen=True, eq=False)
class Provenance(Record):
    """Where a result came from. ``weights`` is a revision, a file hash, or a twin seed (``random-init seed=N``)."""

    model_id: str
    source: str  # "hub" | "local" | "gguf" | "twin" | "memory" (a model object the user passed, see wrap())
    weights: str
    tokenizer: str
    dtype: str
    prompts_hash: str = ""
    seed: int | None = None
    versions: dict[str, str] = field(default_factory=package_versions)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    #: what did not match the config in weights loaded with --allow-partial-weights (not written when None)
    partial_weights: PartialWeights | None = field(default=None, metadata={"omit_none": True})
    #: a random-init twin's weight seed (``twin:ALIAS@N``, ``--weight-seed``); None for weights read from files.
    #: Unlike ``seed`` (the analysis seed once prompts are attached), it names the weights themselves
    weight_seed: int | None = field(default=None, metadata={"omit_none": True})
    #: sha256 of the weights (geoprobe.models.fingerprint): equal for equal weights; None where unknown
    weights_sha256: str | None = field(default=None, metadata={"omit_none": True})
    #: what the weights are where the id alone would mislead: a GGUF file's quantisation (from its header)
    #: and, for an embedded alias, which model it is (geoprobe.models.registry.ModelSpec.note)
    weights_note: str | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if self.source not in ("hub", "local", "gguf", "twin", "memory"):
            raise ValueError(f"unknown provenance source {self.source!r}")
        if not self.model_id:
            raise ValueError("provenance needs a model_id")

    def with_prompts(self, prompts: Sequence[str], seed: int | None = None) -> "Provenance":
        return replace(self, prompts_hash=prompts_hash(prompts), seed=seed if seed is not None else self.seed)
