"""A damaged saved capture is named in one line, never a bare SafetensorError (issue 17)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from geoprobe.capture import Capture, CaptureConfig, capture
from geoprobe.errors import ResultsError


@pytest.fixture
def saved(tmp_path, twin_factory, prompts):
    return capture(twin_factory("llama-3.2-1b"), prompts[:3], CaptureConfig(batch_size=3)).save(tmp_path / "cap")


@pytest.mark.parametrize("how", ["truncated", "garbled header", "empty", "huge header length"])
def test_a_damaged_arrays_file_names_the_file(saved, how):
    f = saved / "arrays.safetensors"
    raw = f.read_bytes()
    f.write_bytes(
        {
            "truncated": raw[: len(raw) // 2],
            "garbled header": raw[:8] + b"{not json" + raw[17:],
            "empty": b"",
            "huge header length": (2**40).to_bytes(8, "little") + raw[8:],
        }[how]
    )
    with pytest.raises(ResultsError) as e:
        Capture.load(saved)
    msg = str(e.value)
    assert msg.startswith(f"capture file {str(f)!r} is damaged (Error while deserializing header") and "\n" not in msg
    assert "capture again" in msg


def test_arrays_that_disagree_with_the_metadata_are_damaged(saved):
    f = saved / "arrays.safetensors"
    arrays = load_file(str(f))
    arrays["values"] = arrays["values"][:, :2].copy()  # one prompt short
    save_file(arrays, str(f))
    with pytest.raises(ResultsError, match=r"capture '.*' is damaged: .*values has shape"):
        Capture.load(saved)


def test_a_damaged_capture_json_names_the_file(saved):
    meta = saved / "capture.json"
    meta.write_text(meta.read_text()[:100])
    with pytest.raises(ResultsError, match=r"capture file '.*capture\.json' is damaged \(not valid JSON"):
        Capture.load(saved)
    meta.write_text(json.dumps({"format_version": 1, "layers": [0]}))
    with pytest.raises(ResultsError, match=r"is damaged: .*KeyError"):
        Capture.load(saved)


def test_an_intact_capture_still_loads(saved, twin_factory, prompts):
    back = Capture.load(saved)
    assert back.n_prompts == 3 and np.isfinite(back.values).all()
