"""accelerate device maps with disk offload, on CPU (issue 18, part 5).

A tiny model saved to a local directory (safetensors) is loaded with ``device_map`` sending some
modules to ``"disk"``: safetensors weights are then read in place from the model's own files,
and weights transformers must re-save (MoE experts converted at load time, pickled weights) go
to a temporary ``geoprobe-offload-*`` folder that geoprobe creates and removes with the model.
Capture (values, keys, entropies, W_K read through accelerate's hooks) equals the undispatched
model's within 1e-6, through the Python API and the CLI (``--device-map`` as a JSON object).
"""

from __future__ import annotations

import gc
import json
import os
import tempfile

import numpy as np
import pytest

from geoprobe.capture import Capture, CaptureConfig, capture
from geoprobe.errors import GeoprobeError
from geoprobe.models import load_model
from geoprobe.models.tiny import tiny_model
from tests.cli.test_cli import run_cli

PROMPTS = ["The capital of France is", "One two three four five six seven eight", "A short one"]
TOL = 1e-6
LAYERS_ON_DISK = {
    "model.embed_tokens": "cpu",
    "model.layers.0": "cpu",
    "model.layers.1": "disk",
    "model.layers.2": "disk",
    "model.norm": "cpu",
    "model.rotary_emb": "cpu",
    "lm_head": "cpu",
}
EMBEDDINGS_ON_DISK = {
    **LAYERS_ON_DISK,
    "model.embed_tokens": "disk",
    "model.layers.0": "disk",
    "model.layers.1": "cpu",
    "lm_head": "disk",
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from geoprobe.models.twins import embedded_tokenizer

    def save(model_type: str) -> str:
        d = tmp_path_factory.mktemp(model_type)
        tok = embedded_tokenizer()
        tiny_model(model_type, vocab_size=len(tok)).save_pretrained(d, safe_serialization=True)
        tok.save_pretrained(d)
        return str(d)

    return save


def _same(a: Capture, b: Capture) -> None:
    for name in ("values", "keys", "attn_entropy", "w_k"):
        x, y = getattr(a, name), getattr(b, name)
        assert x is not None and y is not None, name
        np.testing.assert_allclose(y, x, atol=TOL, rtol=0, err_msg=name)


def _offload_folders() -> set[str]:
    return {f for f in os.listdir(tempfile.gettempdir()) if f.startswith("geoprobe-offload-")}


@pytest.mark.parametrize("device_map", [LAYERS_ON_DISK, EMBEDDINGS_ON_DISK], ids=["layers", "embeddings"])
def test_disk_offloaded_model_captures_the_same_arrays(saved, device_map):
    d = saved("llama")
    plain, off = load_model(d), load_model(d, device_map=device_map)
    assert off.hf_model.hf_device_map == device_map
    assert off.hf_model.model.layers[2].self_attn.k_proj.weight.device.type == "meta"  # offloaded
    cc = CaptureConfig(batch_size=2)
    _same(capture(plain, PROMPTS, cc), capture(off, PROMPTS, cc))
    for a, b in zip(plain.arch.key_weight_views(), off.arch.key_weight_views()):
        np.testing.assert_array_equal(b.numpy(), a.numpy())  # W_K read through accelerate's hooks


def test_weights_that_must_be_resaved_go_to_a_folder_removed_with_the_model(saved):
    """Mixtral's experts are converted at load time, so transformers re-saves them and needs an
    offload folder (it refuses without one); geoprobe supplies a temporary one."""
    from transformers import AutoModelForCausalLM

    d = saved("mixtral")
    with pytest.raises(ValueError, match="offload_folder"):
        AutoModelForCausalLM.from_pretrained(d, device_map=LAYERS_ON_DISK)
    before = _offload_folders()
    off = load_model(d, device_map=LAYERS_ON_DISK)
    new = _offload_folders() - before
    assert len(new) == 1 and os.listdir(os.path.join(tempfile.gettempdir(), *new))
    _same(
        capture(load_model(d), PROMPTS[:2], CaptureConfig(batch_size=2)),
        capture(off, PROMPTS[:2], CaptureConfig(batch_size=2)),
    )
    del off
    gc.collect()
    assert not (_offload_folders() - before)


def test_cli_device_map_json_with_disk_offload(saved, tmp_path, capsys, monkeypatch):
    d = saved("llama")
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(PROMPTS), encoding="utf-8")
    code, _, err = run_cli(
        ["capture", "--model", d, "--prompts", str(prompts), "--out", str(tmp_path / "plain")], capsys, monkeypatch
    )
    assert code == 0, err
    code, _, err = run_cli(
        [
            "capture",
            "--model",
            d,
            "--prompts",
            str(prompts),
            "--device-map",
            json.dumps(LAYERS_ON_DISK),
            "--out",
            str(tmp_path / "off"),
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    _same(Capture.load(tmp_path / "plain"), Capture.load(tmp_path / "off"))
    code, _, err = run_cli(
        ["capture", "--model", d, "--device-map", '{"model.layers.1": disk}', "--out", str(tmp_path / "bad")],
        capsys,
        monkeypatch,
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not valid JSON" in err


def test_device_map_values():
    from geoprobe.models.device_map import offload_folder, parse_device_map

    assert parse_device_map("auto") == "auto" and parse_device_map({"": "cpu"}) == {"": "cpu"}
    assert parse_device_map('{"": "cpu"}') == {"": "cpu"}
    with pytest.raises(GeoprobeError, match="must map module names"):
        parse_device_map('{"": [1]}')
    with pytest.raises(GeoprobeError, match="cannot read it"):
        parse_device_map("/nonexistent/map.json")
    assert offload_folder("cpu") is None and offload_folder({"": "cpu"}) is None
    folder = offload_folder({"a": "disk"})
    assert folder is not None and os.path.isdir(folder)
    os.rmdir(folder)
