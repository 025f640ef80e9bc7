"""``--device-map``: how accelerate places a Hub or local model's modules, disk offload included.

A value is a strategy (``auto``, ``balanced``, ...), one device (``cpu``), a JSON object mapping
module names to a device, ``"cpu"`` or ``"disk"``, or a ``.json`` file holding one. Disk offload
needs a folder only for weights transformers re-saves (pickled weights, MoE experts converted at
load time; safetensors are read in place): :func:`offload_folder` makes a temporary one, which
the loader removes with the model (docs/models.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from geoprobe.errors import GeoprobeError

_PLACING = ("auto", "balanced", "balanced_low_0", "sequential")


def parse_device_map(value: str | dict) -> str | dict:
    """``--device-map``: a strategy (``auto``, ``balanced``, ...), a device (``cpu``), a JSON object
    ``{"module": "cpu" | "disk" | 0, ...}``, or a ``.json`` file holding one."""
    import json

    if isinstance(value, dict):
        return value
    text = value.strip()
    if text.lower().endswith(".json"):
        try:
            text = Path(os.path.expanduser(text)).read_text(encoding="utf-8")
        except OSError as exc:
            raise GeoprobeError(
                f"--device-map {value!r}: cannot read it ({exc.strerror or exc}); pass a strategy "
                "such as auto, a JSON object or a readable .json file"
            ) from exc
    if not text.startswith("{"):
        return text
    try:
        out = json.loads(text)
    except ValueError as exc:
        raise GeoprobeError(
            f"--device-map {value[:60]!r} is not valid JSON ({exc}); pass an object such as "
            '{"model.layers.1": "disk", "": "cpu"}'
        ) from exc
    if not isinstance(out, dict) or not all(isinstance(v, (str, int)) for v in out.values()):
        raise GeoprobeError(f'--device-map {value[:60]!r} must map module names to a device, "cpu" or "disk"')
    return out


def offload_folder(device_map: str | dict) -> str | None:
    """A fresh temporary folder for weights transformers must re-save when offloading to disk
    (pickled weights, converted MoE experts; safetensors are read in place), for device maps
    that send modules to ``disk`` or let accelerate decide; removed with the model."""
    import tempfile

    places = device_map.values() if isinstance(device_map, dict) else [device_map]
    if not any(p == "disk" or p in _PLACING for p in places):
        return None
    return tempfile.mkdtemp(prefix="geoprobe-offload-")
