"""The memory check before a capture's first forward pass (issue 17), with planted available memory."""
from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from geoprobe.capture import CaptureConfig, capture
from geoprobe.capture import memory
from geoprobe.capture.memory import (FIXED_BYTES, SAFETY_FRACTION, check_capture_memory, forward_peak_bytes,
                                     parse_bytes)
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
        handle = m.hf_model.get_decoder().layers[0].register_forward_pre_hook(
            lambda module, args: calls.append(args[0].shape))
        try:
            yield
        finally:
            handle.remove()

    return calls, counting


def test_the_estimate_grows_with_t_squared_and_counts_kept_patterns(twin_factory):
    llama, pythia = twin_factory("llama-3.2-1b"), twin_factory("pythia-410m")
    lay = llama.layout
    s = 4 * lay.n_heads * 2048**2  # one prompt's scores for one layer, float32
    assert forward_peak_bytes(llama, 1, 2048) - FIXED_BYTES == pytest.approx(2 * s + 2 * 4 * 2048**2, rel=0.05)
    assert forward_peak_bytes(llama, 4, 2048) - FIXED_BYTES == pytest.approx(4 * (forward_peak_bytes(llama, 1, 2048)
                                                                                  - FIXED_BYTES))
    big, small = forward_peak_bytes(llama, 1, 4096), forward_peak_bytes(llama, 1, 2048)
    assert (big - FIXED_BYTES) / (small - FIXED_BYTES) == pytest.approx(4, rel=0.05)
    # GPT-NeoX's bridge keeps every layer's pattern: (1 + n_layers) score tensors instead of 2
    p = pythia.layout
    ratio = (forward_peak_bytes(pythia, 1, 2048) - FIXED_BYTES) / (4 * p.n_heads * 2048**2)
    assert ratio == pytest.approx(1 + p.n_layers + 2 / p.n_heads, rel=0.05)


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
    with counting(), pytest.raises(CaptureError, match=r"batch of 6 prompt\(s\) of 2048 tokens .* pass --batch-size 2 "
                                                     r"\(or less\), or a lower --max-tokens"):
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
    check_capture_memory(m, [(4, 1024)])  # about 250 MiB: fits any machine that runs the tests
    with pytest.raises(CaptureError, match="needs about"):
        check_capture_memory(m, [(1, 10**6)])  # 10^6 tokens: 2·4·4·10^12 bytes of scores
