"""How much memory a sweep cell asks Ray for, worked out on the driver without loading its model: the
model's weights at the cell's dtype (from its config or its weight files) plus a worker's fixed cost.
Ray then places no more cells on a node than its memory holds; a cell no node can hold is failed with a
line saying so, instead of waiting forever for a node that does not exist."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Mapping

from geoprobe.capture.memory import WORKER_OVERHEAD

#: bytes per parameter of each --dtype
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
#: a cell's memory beyond its weights: the same as a data-parallel capture worker's
CELL_OVERHEAD = WORKER_OVERHEAD
#: the vocabulary of a twin (the embedded SmolLM2 tokenizer's), without loading the tokenizer
TWIN_VOCAB = 49_152


def cell_memory(coordinates: Mapping[str, Any]) -> int | None:
    """Bytes the cell with these coordinates asks for: its weights at its dtype plus :data:`CELL_OVERHEAD`;
    None where geoprobe cannot tell without loading (a Hub model outside geoprobe's registry, a .gguf file),
    and then Ray places the cell by its CPUs alone."""
    model = coordinates.get("model")
    if not isinstance(model, str):
        from geoprobe.models.registry import DEFAULT_MODEL

        model = DEFAULT_MODEL
    revision = coordinates.get("revision")
    if isinstance(revision, str) and Path(revision).expanduser().is_dir():
        model = revision
    per = DTYPE_BYTES.get(str(coordinates.get("dtype", "float32")), 4)
    weights = _weights_bytes(model, per)
    return None if weights is None else weights + CELL_OVERHEAD


def _weights_bytes(model: str, per: int) -> int | None:
    from geoprobe.models.loading import model_kind

    kind = model_kind(model)
    if kind == "local":
        return _directory_bytes(Path(model).expanduser(), per)
    if kind == "gguf":
        return None
    n = _parameters(model)
    return None if n is None else n * per


@functools.lru_cache(maxsize=256)
def _parameters(model: str) -> int | None:
    """Parameters of a twin, an alias or a registry Hub id, counted from the config on the meta device."""
    from geoprobe.models.init_weights import parameter_bytes
    from geoprobe.models.registry import ALIASES, find_spec_by_hf_id, parameter_count

    if model.startswith("twin:"):  # an alias's twin (a twin named by its model type: None)
        from geoprobe.models.twins import parse_twin, twin_config

        try:
            name = parse_twin(model)  # twin:ALIAS[:tiny|full][@SEED]
            if name.alias not in ALIASES:
                return None
            cfg = twin_config(name.alias, name.scale or "tiny", vocab_size=TWIN_VOCAB)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - the cell itself reports a twin that cannot be built
            return None
        return parameter_bytes(cfg) // 4
    spec = ALIASES.get(model.lower()) or (find_spec_by_hf_id(model) if "/" in model else None)
    if spec is None:
        return None
    try:
        return parameter_count(spec.config)
    except Exception:  # noqa: BLE001 - an estimate that fails must not stop the sweep: Ray places by CPUs
        return None


def _directory_bytes(directory: Path, per: int) -> int | None:
    """A checkpoint directory's weights at ``per`` bytes a parameter: its safetensors (else .bin) files'
    size, rescaled from the dtype its config.json says they are stored in. Only regular files are looked
    at, and config.json is read without ever waiting (a FIFO or a device in its place is no config)."""
    from geoprobe.paths import read_regular

    def regular(fs: list[Path]) -> list[Path]:
        return [f for f in fs if f.is_file()]  # stat only: a FIFO, a socket or a device is not a weights file

    files = regular(sorted(directory.glob("*.safetensors"))) or regular(sorted(directory.glob("*.bin")))
    if not files:
        return None
    try:
        cfg = json.loads(read_regular(directory / "config.json", ValueError, limit=16 << 20))
    except (OSError, ValueError):
        cfg = {}
    cfg = cfg if isinstance(cfg, dict) else {}
    stored = DTYPE_BYTES.get(str(cfg.get("torch_dtype") or cfg.get("dtype") or "float32"), 4)
    return sum(f.stat().st_size for f in files) * per // stored
