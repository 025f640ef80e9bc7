"""Model code and pickled weights are refused unless the user opts in, and opting in to pickles
still unpickles tensors only (torch.load(weights_only=True))."""

from __future__ import annotations

import runpy
import sys

import pytest
import torch

from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import load_model
from tests.cli.case_kit import MARKER, payload_model_dir, tiny_model_dir


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_custom_code_directory_is_refused_without_running_its_code(tmp_path):
    d = tiny_model_dir(tmp_path, "custom", pickle=False, custom_code=True)
    with pytest.raises(GeoprobeError, match="--trust-remote-code") as e:
        load_model(str(d))
    assert "\n" not in str(e.value) and "auto_map" in str(e.value)
    assert not (d / MARKER).exists(), "geoprobe imported the directory's own Python file"
    assert "custom_model" not in sys.modules
    runpy.run_path(str(d / "custom_model.py"))  # the marker works: running that file does create it
    assert (d / MARKER).exists()


def test_pickle_only_directory_is_refused_without_allow_pickle(tmp_path, monkeypatch):
    d = tiny_model_dir(tmp_path, "pickled", pickle=True)
    assert not list(d.glob("*.safetensors")) and (d / "pytorch_model.bin").is_file()
    calls = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or pytest.fail("torch.load ran"))
    with pytest.raises(GeoprobeError, match="--allow-pickle") as e:
        load_model(str(d))
    assert "\n" not in str(e.value) and calls == []


def test_allow_pickle_loads_through_weights_only_torch_load(tmp_path, monkeypatch):
    d = tiny_model_dir(tmp_path, "pickled", pickle=True)
    real, calls = torch.load, []

    def recording(*a, **k):
        calls.append(k.get("weights_only"))
        return real(*a, **k)

    monkeypatch.setattr(torch, "load", recording)
    m = load_model(str(d), allow_pickle=True)
    assert calls and all(w is True for w in calls), calls
    assert m.provenance.source == "local" and m.layout.n_layers == 3
    expected = real(d / "pytorch_model.bin", weights_only=True)["model.embed_tokens.weight"]
    assert torch.equal(m.hf_model.get_input_embeddings().weight.detach().cpu(), expected)


def test_allow_pickle_still_refuses_a_code_running_pickle(tmp_path):
    payload_model_dir(tmp_path)
    d = tmp_path / "payload"
    with pytest.raises(GeoprobeError, match=r"weights_only=True") as e:
        load_model(str(d), allow_pickle=True)
    assert "\n" not in str(e.value)
    assert not (d / MARKER).exists(), "unpickling ran the payload"
    with pytest.raises(Exception):  # the payload is real: a full unpickle would run it
        torch.load(d / "pytorch_model.bin", weights_only=True)
    torch.load(d / "pytorch_model.bin", weights_only=False)
    assert (d / MARKER).exists()


def _auto_map_with_stock_type(tmp_path):
    """A Llama directory whose config names its own code (auto_map) but also the stock model_type
    "llama": transformers, without trust_remote_code, ran LlamaForCausalLM in its place, silently."""
    import json

    d = tiny_model_dir(tmp_path, "llama_am", pickle=False, custom_code=True)
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(model_type="llama", architectures=["LlamaForCausalLM"])
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_auto_map_with_a_stock_model_type_is_refused_not_swapped_for_the_stock_class(tmp_path):
    d = _auto_map_with_stock_type(tmp_path)
    with pytest.raises(GeoprobeError, match="--trust-remote-code") as e:
        load_model(str(d))
    msg = str(e.value)
    assert "auto_map" in msg and "stock 'llama' class" in msg and "remove auto_map" in msg and "\n" not in msg
    assert not (d / MARKER).exists()


def test_auto_map_with_trust_remote_code_runs_the_directory_s_own_class(tmp_path):
    """Opting in loads the class auto_map names (its module ran: the marker exists), not the stock one."""
    d = _auto_map_with_stock_type(tmp_path)
    m = load_model(str(d), trust_remote_code=True)
    assert (d / MARKER).exists()
    assert type(m.hf_model).__name__ == "CustomForCausalLM"
