"""The default cap on prompt tokens and how over-long prompts are cut (issue 17)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from geoprobe.capture import CaptureConfig, capture
from geoprobe.capture.run import DEFAULT_MAX_TOKENS, tokenize
from geoprobe.errors import CaptureError


def _long_prompt(m, n_tokens: int) -> str:
    """A prompt of at least ``n_tokens`` tokens (and not many more)."""
    words = [f"word{i % 89}" for i in range(n_tokens)]
    k = next(k for k in range(1, n_tokens + 1) if len(m.tokenizer(" ".join(words[: k * 64]))["input_ids"]) >= n_tokens)
    return " ".join(words[: k * 64])


def test_the_default_cap_is_2048_tokens_and_cuts_with_a_counted_warning(twin_factory):
    m = twin_factory("llama-3.2-1b")  # context window 131072: before the cap a prompt was cut only there
    assert CaptureConfig().max_tokens == DEFAULT_MAX_TOKENS == 2048
    long = _long_prompt(m, 2300)
    n_long = len(m.tokenizer(long)["input_ids"])
    with pytest.warns(UserWarning) as rec:
        ids, cut = tokenize(m, [long, "short one", long], CaptureConfig().max_tokens)
    msg = str(rec[0].message)
    dropped = n_long - 2048
    assert msg == (
        f"2 of 3 prompt(s) longer than 2048 tokens were cut to their final 2048 tokens ({2 * dropped} tokens "
        f"dropped in all, up to {dropped} from one prompt); the cap is --max-tokens 2048 (default 2048); "
        "raise it, up to the model's context window of 131072 tokens, to keep more"
    )
    assert [len(s) for s in ids] == [2048, len(ids[1]), 2048] and cut.tolist() == [dropped, 0, dropped]
    assert ids[0] == m.tokenizer(long)["input_ids"][-2048:]  # the final tokens are kept


def test_max_tokens_lifts_the_cap_up_to_the_context_window(twin_factory):
    m = twin_factory("llama-3.2-1b")
    long = _long_prompt(m, 2100)
    n_long = len(m.tokenizer(long)["input_ids"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids, cut = tokenize(m, [long], n_long + 1)
    assert len(ids[0]) == n_long > DEFAULT_MAX_TOKENS and cut[0] == 0
    pythia = twin_factory("pythia-410m")  # context window 2048
    long = _long_prompt(pythia, 2100)
    with pytest.warns(
        UserWarning,
        match=r"1 of 1 prompt\(s\) longer than 2048 tokens .*; 2048 tokens is the model's "
        r"context window, the most it reads",
    ):
        ids, _ = tokenize(pythia, [long], 100_000)
    assert len(ids[0]) == 2048


def test_prompts_under_the_cap_give_the_same_numbers(twin_factory, prompts):
    m = twin_factory("mistral-7b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is cut
        capped = capture(m, prompts, CaptureConfig(batch_size=3))
    uncapped = capture(m, prompts, CaptureConfig(batch_size=3, max_tokens=None))
    for name in ("values", "keys", "attn_entropy", "next_entropy", "next_top_probs", "n_tokens"):
        np.testing.assert_array_equal(getattr(capped, name), getattr(uncapped, name), err_msg=name)
    assert capped.n_truncated.sum() == 0 and capped.config["max_tokens"] == 2048


def test_max_tokens_below_one_is_refused():
    with pytest.raises(CaptureError, match="max tokens 0 must be at least 1; pass --max-tokens"):
        CaptureConfig(max_tokens=0)


def test_scan_caps_prompts_by_default_and_checks_the_flag_before_loading(monkeypatch, twin_factory):
    from geoprobe.capture import run as capture_run
    from geoprobe.errors import ProbeError
    from geoprobe.scan import ScanConfig, scan

    assert ScanConfig().max_tokens == DEFAULT_MAX_TOKENS
    with pytest.raises(ProbeError, match="max tokens 0 must be at least 1; pass --max-tokens"):
        ScanConfig(max_tokens=0)
    seen = {}

    class Stop(Exception):
        pass

    def fake_capture(model, texts, config, **kw):
        seen["max_tokens"] = config.max_tokens
        raise Stop

    monkeypatch.setattr(capture_run, "capture", fake_capture)
    with pytest.raises(Stop):
        scan(twin_factory("llama-3.2-1b"), [f"prompt {i} is about" for i in range(12)], ScanConfig())
    assert seen["max_tokens"] == 2048
