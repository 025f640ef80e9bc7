"""One-layer attention denoisers (arXiv 2502.05164), torch. X: context (B, L, n); q: noisy query (B, n).

* linear attention: f(X, x̃) = W_PV (XᵀX/L) W_KQ x̃ (XᵀX/L is the n×n context second moment);
* softmax attention: f(X, x̃) = W_PV Σ_i x_i softmax_i(x_iᵀ W_KQ x̃) (no 1/√d scaling).

The query is not part of the context the attention reads."""

from __future__ import annotations

import copy
from typing import Literal

import numpy as np
import torch
from jaxtyping import Float
from torch import nn

from geoprobe.errors import GeoprobeError

ModelKind = Literal["softmax", "linear"]
MODELS: tuple[str, ...] = ("softmax", "linear")


class _Attention(nn.Module):
    def __init__(self, n: int, init_scale: float = 0.01, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.n = n
        self.W_KQ = nn.Parameter(init_scale * torch.randn(n, n, generator=generator))
        self.W_PV = nn.Parameter(init_scale * torch.randn(n, n, generator=generator))

    def matrices(self) -> dict[str, np.ndarray]:
        kq = self.W_KQ.detach().double().cpu().numpy()
        pv = self.W_PV.detach().double().cpu().numpy()
        return {"W_KQ": kq, "W_PV": pv, "W_PV·W_KQ": pv @ kq}


class LinearAttention(_Attention):
    """f = W_PV (XᵀX/L) W_KQ x̃."""

    kind = "linear"

    def forward(self, X: Float[torch.Tensor, "B L n"], q: Float[torch.Tensor, "B n"]) -> Float[torch.Tensor, "B n"]:
        k = q @ self.W_KQ.T  # W_KQ x̃
        u = torch.einsum("bln,bl->bn", X, torch.einsum("bln,bn->bl", X, k)) / X.shape[1]
        return u @ self.W_PV.T


class SoftmaxAttention(_Attention):
    """f = W_PV X softmax(Xᵀ W_KQ x̃)."""

    kind = "softmax"

    def attention(self, X: Float[torch.Tensor, "B L n"], q: Float[torch.Tensor, "B n"]) -> Float[torch.Tensor, "B L"]:
        return torch.softmax(torch.einsum("bln,bn->bl", X, q @ self.W_KQ.T), dim=-1)

    def forward(self, X: Float[torch.Tensor, "B L n"], q: Float[torch.Tensor, "B n"]) -> Float[torch.Tensor, "B n"]:
        return torch.einsum("bln,bl->bn", X, self.attention(X, q)) @ self.W_PV.T


def make_model(kind: str, n: int, generator: torch.Generator | None = None, init_scale: float = 0.01) -> _Attention:
    if kind == "softmax":
        return SoftmaxAttention(n, init_scale, generator)
    if kind == "linear":
        return LinearAttention(n, init_scale, generator)
    raise GeoprobeError(f"unknown model {kind!r}; pass softmax or linear")


@torch.no_grad()
def predict(
    model: nn.Module, context: Float[np.ndarray, "B L n"], noisy: Float[np.ndarray, "B n"], chunk: int = 256
) -> Float[np.ndarray, "B n"]:
    """The model's outputs in float64 (a float64 copy of the weights), in chunks of prompts."""
    m = copy.deepcopy(model).double()
    outs = [
        m(
            torch.from_numpy(np.ascontiguousarray(context[i : i + chunk])),
            torch.from_numpy(np.ascontiguousarray(noisy[i : i + chunk])),
        ).numpy()
        for i in range(0, len(noisy), chunk)
    ]
    return np.concatenate(outs, axis=0)


def weight_fit(W: Float[np.ndarray, "n n"], structure: Float[np.ndarray, "n n"] | None = None) -> tuple[float, float]:
    """(c, residual): the least-squares scalar c with W ≈ c·S (S = I by default, then c = tr(W)/n) and the relative
    residual ‖W − cS‖_F / ‖W‖_F (0 = exactly the structure, 1 = orthogonal to it)."""
    S = np.eye(W.shape[0]) if structure is None else structure
    c = float(np.sum(W * S) / np.sum(S * S))
    norm = float(np.linalg.norm(W))
    return c, float(np.linalg.norm(W - c * S) / norm) if norm > 0 else float("nan")
