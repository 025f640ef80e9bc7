"""Distance profiles from capture against Hugging Face's own attention weights; exact-length prompts."""

import numpy as np
import pytest
import torch

from geoprobe.errors import GeoprobeError
from geoprobe.positional.profile import distance_windows, token_windows


@pytest.fixture(scope="module")
def eager_twin():
    """A private tiny Llama twin (not the shared cached one: its attention backend is switched)."""
    from geoprobe.models import twin

    return twin("llama-3.2-1b", "tiny", seed=3)


def test_token_windows_have_exact_lengths(eager_twin):
    tok = eager_twin.tokenizer
    for T in (5, 17, 40):
        prompts, record = token_windows(tok, T, 6, seed=1)
        assert len(set(prompts)) == 6 and record["length"] == T
        assert all(len(tok(p, add_special_tokens=True)["input_ids"]) == T for p in prompts)
    assert token_windows(tok, 17, 6, seed=1)[0] == token_windows(tok, 17, 6, seed=1)[0]  # seeded


def test_profile_from_capture_equals_hf_eager_attention(eager_twin):
    """window[l, i, h, Δ] = HF's attentions[l][i, h, T-1, T-1-Δ] (float32; tolerance 1e-5)."""
    from geoprobe.capture import CaptureConfig, capture

    m = eager_twin
    prompts = token_windows(m.tokenizer, 20, 4, seed=0)[0] + token_windows(m.tokenizer, 26, 3, seed=0)[0]
    cap = capture(m, prompts, CaptureConfig(attention="distribution", batch_size=3))
    win = distance_windows(cap.attn_pattern, cap.n_tokens, max_distance=15, exclude_first=2)
    m.hf_model.set_attn_implementation("eager")
    for i, p in enumerate(prompts):
        ids = m.tokenizer(p, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            att = m.hf_model(ids, output_attentions=True).attentions  # L × (1, H, T, T)
        T = ids.shape[1]
        for layer, a in enumerate(att):
            row = a[0, :, T - 1].double().numpy()  # (H, T): the final query's row
            np.testing.assert_allclose(win.window[layer, i], row[:, T - 1 - np.arange(16)], atol=1e-5)
            np.testing.assert_allclose(win.sink[layer, i], row[:, :2].sum(-1), atol=1e-5)
    prof = win.profile()
    assert prof.shape == (3, 4, 16) and np.allclose(prof.sum(-1), 1.0)


def test_too_short_prompts_name_the_limit_and_the_flag():
    att = np.full((1, 2, 1, 10), 0.1)
    with pytest.raises(GeoprobeError, match=r"--max-distance 10 .*needs 12 tokens.*--max-distance 8 or less"):
        distance_windows(att, np.array([10, 10]), max_distance=10, exclude_first=1)
