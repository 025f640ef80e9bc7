"""The sha256 of a model's weights (``Provenance.weights_sha256``): what tells two checkpoints with the same
weights apart from two that differ (EleutherAI/pythia issue #205: pythia-2.8b serves its final weights
from 86 of its 154 ``step`` branches), cheaply.

* Weight files (a local directory, a Hub snapshot in the Hugging Face cache): sha256 over each file's
  name and its own sha256, files in name order (:func:`files_sha256`). A Hub snapshot's weight files are
  links to blobs named by their sha256 (Git LFS), so nothing is read; a local file is hashed once and
  remembered by path, size and mtime (:func:`geoprobe.provenance.file_sha256`). A local copy of a Hub
  snapshot hashes to the same value as the snapshot.
* A model built in memory (a twin): sha256 over its state dict, tensors in the state dict's order, each
  as its name, dtype, shape and raw bytes (:func:`tensors_sha256`; about 60 ms for a tiny twin's 6.5 M
  parameters).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Callable, Sequence

from geoprobe.provenance import file_sha256

_HEX64 = re.compile(r"[0-9a-f]{64}")


def weight_files(directory: Path) -> list[Path]:
    """A model directory's weight files: its ``*.safetensors``, else its ``*.bin``, in name order."""
    return sorted(directory.glob("*.safetensors")) or sorted(directory.glob("*.bin"))


def files_sha256(files: Sequence[Path], digest: Callable[[Path], str] = file_sha256) -> str | None:
    """sha256 (hex) over each file's name and its sha256 (``digest``), in the order given; None for no files."""
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(digest(f).encode())
    return h.hexdigest()


def local_weights_hash(directory: Path) -> str:
    """``sha256:<hex>`` of a local model directory's weight files (:func:`files_sha256`), ``unknown`` without any."""
    digest = files_sha256(weight_files(Path(directory)))
    return "unknown" if digest is None else f"sha256:{digest}"


def _blob_sha256(path: Path) -> str:
    """A Hugging Face cache file's sha256: the name of the LFS blob it links to, else its bytes hashed."""
    name = Path(os.path.realpath(path)).name
    return name if _HEX64.fullmatch(name) else file_sha256(path)


def hub_weights_sha256(repo_id: str, commit: str | None, cache: str | os.PathLike | None = None) -> str | None:
    """:func:`files_sha256` of the weight files of ``repo_id`` at ``commit`` in the Hugging Face cache
    (``cache``: the hub cache directory, default ``HF_HUB_CACHE``); None where the snapshot is not there."""
    if not commit or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        return None
    if cache is None:
        from huggingface_hub import constants

        cache = constants.HF_HUB_CACHE
    snapshot = Path(cache) / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit
    return files_sha256(weight_files(snapshot), _blob_sha256) if snapshot.is_dir() else None


def tensors_sha256(model: Any) -> str:
    """sha256 (hex) over a torch module's state dict: each tensor's name, dtype, shape and bytes, in order."""
    import torch

    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(f"{name}|{str(t.dtype).removeprefix('torch.')}|{tuple(t.shape)}|".encode())
        flat = t.detach().to("cpu").contiguous().reshape(-1)
        h.update(flat.view(torch.uint8).numpy().data if flat.numel() else b"")
    return h.hexdigest()
