"""The memory check before a capture's first forward pass (issue 17), with planted available memory."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from geoprobe.capture import CaptureConfig, capture, memory
from geoprobe.capture.memory import (
    FIXED_BYTES,
    SAFETY_FRACTION,
    check_capture_memory,
    forward_peak_bytes,
    parse_bytes,
)
from geoprobe.errors import CaptureError, GeoprobeError

MiB = 2**20


@pytest.fixture
def planted(monkeypatch):
    """Plant the figure psutil reports as available (the test never exhausts real memory)."""
    import psutil

    monkeypatch.delenv(memory.MEMORY_ENV, raising=False)

    def plant(n: int) -> None:
        monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=n))

    return plant


def _forwards(m):
    """A counter of forward passes (a pre-hook on the first decoder layer) and a factory of the context
    that attaches it."""
    calls = []

    @contextmanager
    def counting():
        handle = (
            m.hf_model.get_decoder()
            .layers[0]
            .register_forward_pre_hook(lambda module, args: calls.append(args[0].shape))
        )
        try:
            yield
        finally:
            handle.remove()

    return calls, counting


def test_the_estimate_counts_scores_only_where_attention_is_eager(twin_factory):
    """SDPA (the twins' default): activations and the T² mask, no (heads × T²) scores; eager (Gemma-2's
    default, legacy modules): two score-sized tensors on top."""
    from geoprobe.capture.memory import (
        ACTIVATION_FACTOR,
        MASK_BYTES,
        MIN_ACTIVATION_LAYERS,
        eager_attention,
    )

    llama = twin_factory("llama-3.2-1b")
    assert not eager_attention(llama)
    lay, cfg = llama.layout, llama.hf_model.config
    acts = 4 * 2048 * (lay.d_model + cfg.intermediate_size)
    layers = max(MIN_ACTIVATION_LAYERS, ACTIVATION_FACTOR * lay.n_layers)  # 8 for the 3-layer twin
    assert forward_peak_bytes(llama, 1, 2048) - FIXED_BYTES == layers * acts + MASK_BYTES * 2048**2
    assert forward_peak_bytes(llama, 4, 2048) - FIXED_BYTES == 4 * (forward_peak_bytes(llama, 1, 2048) - FIXED_BYTES)
    big, small = forward_peak_bytes(llama, 1, 8192) - FIXED_BYTES, forward_peak_bytes(llama, 1, 4096) - FIXED_BYTES
    assert 2 < big / small <= 4  # between linear (activations) and T² (mask)
    gemma2 = twin_factory("gemma-2-2b")
    assert eager_attention(gemma2)
    g = gemma2.layout
    d_mlp = gemma2.hf_model.config.intermediate_size
    layers = max(MIN_ACTIVATION_LAYERS, ACTIVATION_FACTOR * g.n_layers)
    expected = layers * 4 * 2048 * (g.d_model + d_mlp) + MASK_BYTES * 2048**2 + 2 * 4 * g.n_heads * 2048**2
    assert forward_peak_bytes(gemma2, 1, 2048) - FIXED_BYTES == expected


def test_a_batch_that_cannot_fit_is_refused_before_any_forward(twin_factory, prompts, planted):
    m = twin_factory("llama-3.2-1b")
    planted(10 * MiB)  # less than the fixed overhead alone
    calls, counting = _forwards(m)
    with counting(), pytest.raises(CaptureError) as e:
        capture(m, prompts, CaptureConfig(batch_size=4))
    assert calls == []
    msg = str(e.value)
    longest = max(len(m.tokenizer(p)["input_ids"]) for p in prompts)
    need = memory.format_bytes(forward_peak_bytes(m, 4, longest))
    assert msg.startswith(f"a capture batch of 4 prompt(s) of {longest} tokens needs about {need} for its forward pass")
    assert f"{SAFETY_FRACTION:.0%} of the 10 MiB available" in msg
    assert "not even --batch-size 1 with --max-tokens 1 fits" in msg and "\n" not in msg


def test_the_message_names_the_batch_size_that_fits(twin_factory, prompts, planted):
    m = twin_factory("llama-3.2-1b")
    long = " ".join(f"w{i}" for i in range(3000))
    ids_len = min(len(m.tokenizer(long)["input_ids"]), 2048)
    per = forward_peak_bytes(m, 2, ids_len)  # room for exactly two such prompts
    planted(int((per + 1) / SAFETY_FRACTION) + 1)
    calls, counting = _forwards(m)
    with (
        counting(),
        pytest.raises(
            CaptureError,
            match=r"batch of 6 prompt\(s\) of 2048 tokens .* pass --batch-size 2 "
            r"\(or less\), or a lower --max-tokens",
        ),
    ):
        capture(m, [long + f" {i}" for i in range(6)], CaptureConfig(batch_size=6))
    assert calls == []
    with counting():  # what the message says works (the planted figure still applies)
        cap = capture(m, [long + f" {i}" for i in range(6)], CaptureConfig(batch_size=2))
    assert cap.n_prompts == 6 and len(calls) == 3


def test_when_one_prompt_is_too_long_the_message_names_max_tokens(twin_factory, planted):
    m = twin_factory("llama-3.2-1b")
    planted(int(forward_peak_bytes(m, 1, 512) / SAFETY_FRACTION) + 1)
    long = " ".join(f"w{i}" for i in range(3000))
    with pytest.raises(CaptureError) as e:
        capture(m, [long], CaptureConfig(batch_size=1))
    assert "even one prompt of 2048 tokens needs" in str(e.value)
    assert "pass --max-tokens 512 (or less) and --batch-size 1" in str(e.value)


def test_the_largest_batch_is_checked_not_the_first(twin_factory, planted):
    """Unsorted batches: the long prompt is in the second batch, and still nothing runs."""
    m = twin_factory("llama-3.2-1b")
    long = " ".join(f"w{i}" for i in range(3000))
    planted(int(forward_peak_bytes(m, 1, 1024) / SAFETY_FRACTION))
    calls, counting = _forwards(m)
    with counting(), pytest.raises(CaptureError, match="of 2048 tokens"):
        capture(m, ["short", long], CaptureConfig(batch_size=1, sort_by_length=False))
    assert calls == []


def test_the_environment_variable_overrides_the_measurement(twin_factory, prompts, monkeypatch, planted):
    m = twin_factory("llama-3.2-1b")
    planted(10 * MiB)
    monkeypatch.setenv(memory.MEMORY_ENV, "64GiB")
    capture(m, prompts[:2])  # allowed: the variable says 64 GiB
    monkeypatch.setenv(memory.MEMORY_ENV, "1MiB")
    with pytest.raises(CaptureError, match=r"of the 1 MiB set by GEOPROBE_MEMORY_AVAILABLE"):
        capture(m, prompts[:2])
    assert parse_bytes("12GiB", "x") == 12 * 2**30 and parse_bytes("512M", "x") == 512 * MiB
    assert parse_bytes("1048576", "x") == MiB and parse_bytes("1.5 KiB", "x") == 1536
    with pytest.raises(GeoprobeError, match="GEOPROBE_MEMORY_AVAILABLE='lots' is not a size"):
        parse_bytes("lots", memory.MEMORY_ENV)


def test_a_real_sized_machine_passes(twin_factory, prompts, monkeypatch):
    monkeypatch.delenv(memory.MEMORY_ENV, raising=False)
    m = twin_factory("llama-3.2-1b")
    check_capture_memory(m, [(4, 1024)])  # about 150 MiB: fits any machine that runs the tests
    with pytest.raises(CaptureError, match="needs about"):
        check_capture_memory(m, [(1, 10**6)])  # 10^6 tokens: a 4·10^12-byte attention mask


def test_the_arrays_of_many_prompts_are_estimated_before_tokenising_and_the_largest_count_named(
    twin_factory, planted, monkeypatch
):
    """Issue 27: a million-line prompt file held its arrays (and silence) for hours; now the arrays of
    every prompt and one prompt's forward pass must fit before anything is tokenised, and the message
    names the largest number of prompts that does."""
    from geoprobe.capture import run as capture_run

    m = twin_factory("llama-3.2-1b")
    cfg = CaptureConfig(batch_size=4)
    per_prompt = cfg.nbytes(m.layout, 2, 1) - cfg.nbytes(m.layout, 1, 1)  # independent of the check's code
    fixed = cfg.nbytes(m.layout, 0, 1) + forward_peak_bytes(m, 1, 1)
    fits = 5000
    planted(int((fixed + fits * per_prompt + per_prompt // 2) / SAFETY_FRACTION))  # room for 5000, not 5001
    tokenised = []

    def tokenize(*a, **k):
        tokenised.append(1)
        raise AssertionError("tokenised before the memory check")

    monkeypatch.setattr(capture_run, "tokenize", tokenize)
    prompts = [f"Prompt {i} reads" for i in range(20_000)]
    with pytest.raises(GeoprobeError) as e:
        capture(m, prompts, cfg)
    msg = str(e.value)
    assert tokenised == [] and "\n" not in msg
    assert msg.startswith("the capture's arrays of 20000 prompts × 3 layers (and a forward pass) needs about")
    assert f"capture at most {fits} prompts at a time (split the --prompts file), or fewer --layers" in msg


def test_the_cuda_estimate_covers_the_peaks_measured_on_a_gpu(twin_factory):
    """On a CUDA device the estimate is 4 layers' activations in the model's dtype + the mask + 64 MiB (the
    caching allocator reuses a freed layer's blocks; no glibc arenas). Held against what the GPU run measured
    (benchmarks/gpu/bench_gpu.py on an H200, mistral-7b twin in bfloat16, torch.cuda.max_memory_allocated
    above the loaded model; docs/benchmarks.md "GPU"): never below, at most 2.5× above, each measured peak.
    The layout is mistral-7b's (d_model 4096, d_mlp 14336, 32 heads), on a tiny twin of the same widths."""
    from geoprobe.capture import memory as mem

    m = twin_factory("llama-3.2-1b")
    lay = m.layout
    d_mlp = m.hf_model.config.intermediate_size
    for batch, tokens, measured_mib in ((1, 64, 8.6), (16, 64, 128.8), (1, 512, 59.1), (16, 512, 944.5),
                                         (1, 2048, 233.8), (16, 2048, 3741.1)):  # fmt: skip
        est = forward_peak_bytes(m, batch, tokens, device_type="cuda")
        acts = 4 * batch * tokens * (lay.d_model + d_mlp)  # float32 twin: 4 bytes per element
        assert est == mem.CUDA_ACTIVATION_LAYERS * acts + mem.MASK_BYTES * batch * tokens**2 + mem.CUDA_FIXED_BYTES
        # the measured model: mistral-7b in bfloat16 (2 bytes), same formula
        mistral = 4 * 2 * batch * tokens * (4096 + 14336) + mem.MASK_BYTES * batch * tokens**2 + mem.CUDA_FIXED_BYTES
        assert measured_mib * MiB <= mistral <= 2.5 * measured_mib * MiB + mem.CUDA_FIXED_BYTES, (batch, tokens)
