"""What a sweep cell asks Ray for: its weights at its dtype plus a fixed overhead, worked out without
loading the model; checked against the parameters of the model loaded for real."""

from __future__ import annotations

import json

import pytest

from geoprobe.sweep.memory import CELL_OVERHEAD, cell_memory


def _bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.hf_model.parameters())


def test_an_alias_twin_is_its_parameters_at_its_dtype(twin_factory):
    real = _bytes(twin_factory("llama-3.2-1b"))  # float32
    assert cell_memory({"model": "twin:llama-3.2-1b"}) == real + CELL_OVERHEAD
    assert cell_memory({"model": "twin:llama-3.2-1b", "dtype": "bfloat16"}) == real // 2 + CELL_OVERHEAD


def test_a_checkpoint_directory_is_its_weight_files_rescaled_to_the_cells_dtype(twin_factory, tmp_path):
    """A directory stored in float16 asks for twice its files at float32; the revision of a series is
    the directory, as the cell loads it."""
    model = twin_factory("llama-3.2-1b")
    d = tmp_path / "ck" / "step8"
    model.hf_model.save_pretrained(d)
    files = sum(f.stat().st_size for f in d.glob("*.safetensors"))
    assert abs(files - _bytes(model)) / _bytes(model) < 0.01  # the file is the parameters (+ a small header)
    assert cell_memory({"model": "series", "revision": str(d)}) == files + CELL_OVERHEAD
    cfg = json.loads((d / "config.json").read_text())
    cfg["torch_dtype"] = cfg["dtype"] = "float16"
    (d / "config.json").write_text(json.dumps(cfg))
    assert cell_memory({"model": str(d)}) == 2 * files + CELL_OVERHEAD


def test_registry_models_are_counted_from_their_config():
    from geoprobe.models.registry import parameter_count

    n = parameter_count("pythia-410m")
    assert cell_memory({"model": "pythia-410m", "dtype": "float16"}) == 2 * n + CELL_OVERHEAD
    assert cell_memory({"model": "EleutherAI/pythia-410m"}) == 4 * n + CELL_OVERHEAD


@pytest.mark.parametrize("model", ["twin:llama", "someone/unknown-model", "weights.gguf"])
def test_none_where_it_cannot_be_told_without_loading(model):
    assert cell_memory({"model": model}) is None


def test_a_fifo_or_device_in_a_checkpoint_directory_never_blocks(twin_factory, tmp_path):
    """Was: a FIFO config.json in a revision directory blocked the Ray driver's memory estimate for ever."""
    import os

    d = tmp_path / "ck" / "step8"
    twin_factory("llama-3.2-1b").hf_model.save_pretrained(d)
    files = sum(f.stat().st_size for f in d.glob("*.safetensors"))
    (d / "config.json").unlink()
    os.mkfifo(d / "config.json")
    os.mkfifo(d / "extra.safetensors")
    assert cell_memory({"model": str(d)}) == files + CELL_OVERHEAD  # stored dtype unknown: float32 assumed
