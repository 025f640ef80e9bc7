"""geoprobe.models.rotary on planted rotations: a known vector turned by known angles with each form
of transformers' apply_rotary_pos_emb (two tensors, Llama; one tensor, Gemma 3n; one tensor with sin
first and half-width sin/cos, GPT-J), checked against 2-D rotations written out here, then rotated
back by unrotate to 1e-6."""

from __future__ import annotations

import math

import pytest
import torch

from geoprobe.errors import GeoprobeError
from geoprobe.models.rotary import RotaryCall, rotated_width, unrotate

B, H, D = 2, 3, 8
GEN = torch.Generator().manual_seed(0)
X = torch.randn(B, H, D, generator=GEN, dtype=torch.float64)
THETA = torch.rand(B, D // 2, generator=GEN, dtype=torch.float64) * 2 * math.pi  # one angle per pair and row


def llama_fn():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    return apply_rotary_pos_emb


def gemma3n_fn():
    from transformers.models.gemma3n.modeling_gemma3n import apply_rotary_pos_emb

    return apply_rotary_pos_emb


def gptj_fn():
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb

    return apply_rotary_pos_emb


def turned_by_hand(x: torch.Tensor, theta: torch.Tensor, pairs: list[tuple[int, int]], scale: float = 1.0):
    """Rows of x (N, D): each (i, j) of ``pairs`` rotated in its plane by theta[:, n] (times ``scale``),
    the rest kept."""
    out = x.clone()
    for n, (i, j) in enumerate(pairs):
        c, s = torch.cos(theta[:, n]), torch.sin(theta[:, n])
        out[..., i] = scale * (x[..., i] * c - x[..., j] * s)
        out[..., j] = scale * (x[..., i] * s + x[..., j] * c)
    return out


def halves(r: int) -> list[tuple[int, int]]:  # rotate_half: dim i pairs with i + r/2
    return [(i, i + r // 2) for i in range(r // 2)]


def neighbours(r: int) -> list[tuple[int, int]]:  # rotate_every_two (GPT-J): 2i pairs with 2i + 1
    return [(2 * i, 2 * i + 1) for i in range(r // 2)]


def llama_pair(theta: torch.Tensor, scale: float = 1.0):  # (cos, sin), each (B, r): the angles twice
    ang = torch.cat([theta, theta], dim=-1)
    return scale * torch.cos(ang), scale * torch.sin(ang)


def gptj_pair(theta: torch.Tensor):  # (sin, cos), each (B, r/2): the function repeat-interleaves them
    return torch.sin(theta), torch.cos(theta)


def turn(call: RotaryCall, x: torch.Tensor, pair, r: int) -> torch.Tensor:
    p = (pair[0][:, None, :], pair[1][:, None, :])
    out = call.turn(x[:, :, None, :r], p, 1.0)[:, :, 0]
    return torch.cat([out, x[..., r:]], dim=-1)


@pytest.mark.parametrize(
    "fn, pair_of, pairs, n_tensors, sine",
    [
        (llama_fn, llama_pair, halves, 2, 1),
        (gemma3n_fn, llama_pair, halves, 1, 1),
        (gptj_fn, gptj_pair, neighbours, 1, 0),
    ],
    ids=["llama", "gemma3n", "gptj"],
)
@pytest.mark.parametrize("r", [D, D // 2], ids=["full", "partial"])
def test_each_signature_turns_as_written_out_and_unrotate_undoes_it(fn, pair_of, pairs, n_tensors, sine, r):
    call = RotaryCall.of(fn())
    assert (call.n_tensors, call.sine) == (n_tensors, sine)
    theta = THETA[:, : r // 2]
    pair = pair_of(theta)
    assert rotated_width(call, D, (pair[0][:, None, :], pair[1][:, None, :])) == r
    rotated = turn(call, X, pair, r)
    want = turned_by_hand(X.reshape(B * H, D), theta.repeat_interleave(H, dim=0), pairs(r))
    torch.testing.assert_close(rotated.reshape(B * H, D), want, rtol=0, atol=1e-12)
    torch.testing.assert_close(unrotate(call, rotated, pair), X, rtol=0, atol=1e-6)


def test_a_scaled_rotation_yarn_attention_factor_is_divided_out():
    """YaRN multiplies cos and sin by m: turning back by -θ leaves m² on each dim, which unrotate
    measures and divides out."""
    call = RotaryCall.of(llama_fn())
    m = 1.3
    pair = llama_pair(THETA, scale=m)
    rotated = turn(call, X, pair, D)
    want = turned_by_hand(X.reshape(B * H, D), THETA.repeat_interleave(H, dim=0), halves(D), scale=m)
    torch.testing.assert_close(rotated.reshape(B * H, D), want, rtol=0, atol=1e-12)
    torch.testing.assert_close(unrotate(call, rotated, pair), X, rtol=0, atol=1e-6)


def test_a_function_geoprobe_cannot_read_is_refused_in_one_line():
    def apply_rotary_pos_emb(q, k, v, cos, sin_or_what):  # no parameter named sin among the pair
        return q, k

    with pytest.raises(GeoprobeError, match=r"cannot tell how to rotate back") as e:
        RotaryCall.of(apply_rotary_pos_emb)
    assert "\n" not in str(e.value)


def test_a_function_that_passes_the_unrotated_dims_through_itself_reports_the_rotated_width():
    """GPT-NeoX (Pythia) hands its function the whole head with a cos/sin of the rotated width only;
    the width is the dims that move (was reported as the whole head, 16 where Pythia's twin rotates 4)."""
    from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

    call = RotaryCall.of(apply_rotary_pos_emb)
    r = D // 4
    theta = THETA[:, : r // 2]
    pair = llama_pair(theta)
    p = (pair[0][:, None, :], pair[1][:, None, :])
    assert rotated_width(call, D, p) == r
    rotated = call.turn(X[:, :, None, :], p, 1.0)[:, :, 0]  # the whole head, as GPT-NeoX calls it
    want = turned_by_hand(X.reshape(B * H, D), theta.repeat_interleave(H, dim=0), halves(r))
    torch.testing.assert_close(rotated.reshape(B * H, D), want, rtol=0, atol=1e-12)
    torch.testing.assert_close(unrotate(call, rotated, pair), X, rtol=0, atol=1e-6)
