"""Where the Q/K/V projection weights live, as data: one description for every layout seen.

Every Q/K/V projection of the decoder architectures transformers ships is one linear map
(``nn.Linear``, or GPT-2's ``Conv1D`` stored transposed) whose output rows, viewed as
``(groups, sum(parts), d_head)``, hold ``parts[i]`` heads of part ``i`` in every group:

* separate ``k_proj`` (Llama, Mistral, Qwen, Gemma, OLMo, ...): ``1 × (Hkv,)``, part 0;
* concatenated ``[q | k | v]`` (Phi-3 ``qkv_proj``, GPT-2 ``c_attn``, GPT-BigCode MQA):
  ``1 × (Hq, Hkv, Hkv)``, part 1 for K;
* per-head interleave (GPT-NeoX, Bloom, GPT-BigCode MHA): ``Hq × (1, 1, 1)``, part 1;
* per-KV-group interleave (Falcon's new decoder): ``Hkv × (G, 1, 1)``, part 1;
* multi-head, fused in g groups of three equal parts in some order, for every g dividing the
  heads (CodeGen's ``qkv_proj``: 4 groups of ``[q | v | k]``, so K is part 2): ``g × (H/g,)*3``.

Nothing here is written per architecture: :func:`candidates` lists every description whose
shape fits a module's linear children, and the architecture probe keeps the one that
reproduces what the attention function actually receives (see ``architecture.py``).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch
from jaxtyping import Float

NORM_NAME = re.compile(r"^(q|k|query|key)_?(norm|layernorm|layer_norm|ln)$")


@dataclass(frozen=True)
class ProjSpec:
    """Part ``index`` of the linear child ``module`` of an attention module (see module docstring)."""

    module: str
    groups: int
    parts: tuple[int, ...]
    index: int
    d_head: int
    transposed: bool = False  # Conv1D keeps its weight as (in, out)

    @property
    def n_heads(self) -> int:
        return self.groups * self.parts[self.index]

    def describe(self) -> str:
        t = "ᵀ" if self.transposed else ""
        return f"{self.module}{t}[{self.groups}x{self.parts}]#{self.index}"

    def linear(self, attn: Any) -> Any:
        m = attn
        for part in self.module.split("."):
            m = getattr(m, part)
        return m

    def _rows(self, t: torch.Tensor) -> torch.Tensor:
        """(out, ...) -> this part's rows as (n_heads, d_head, ...)."""
        rest = t.shape[1:]
        v = t.reshape(self.groups, sum(self.parts), self.d_head, *rest)
        off = sum(self.parts[: self.index])
        return v[:, off : off + self.parts[self.index]].reshape(self.n_heads, self.d_head, *rest)

    def _params(self, attn: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(weight as (out, in), bias); weights offloaded by accelerate (meta) are read through its hook."""
        mod = self.linear(attn)
        if mod.weight.device.type == "meta":
            from accelerate.utils import align_module_device

            with align_module_device(mod, torch.device("cpu")):
                w = mod.weight.detach().clone()
                b = None if getattr(mod, "bias", None) is None else mod.bias.detach().clone()
        else:
            w, b = mod.weight, getattr(mod, "bias", None)
        return (w.t() if self.transposed else w), b

    def weight(self, attn: Any) -> Float[torch.Tensor, "head d_model d_head"]:
        """W per head as (d_model, d_head), so that the projection is x @ W (+ b)."""
        w, _ = self._params(attn)
        return self._rows(w).transpose(1, 2)

    def bias(self, attn: Any) -> Float[torch.Tensor, "head d_head"] | None:
        _, b = self._params(attn)
        return None if b is None else self._rows(b)

    def part(self, y: Float[torch.Tensor, "batch pos out"]) -> Float[torch.Tensor, "batch pos head d_head"]:
        """This part's heads of the linear child's output ``y`` (a view where possible)."""
        B, T = y.shape[:2]
        v = y.reshape(B, T, self.groups, sum(self.parts), self.d_head)
        off, n = sum(self.parts[: self.index]), self.parts[self.index]
        return v[:, :, :, off : off + n].reshape(B, T, self.n_heads, self.d_head)

    def edit_output(self, y: Float[torch.Tensor, "batch pos out"], fn: Any) -> Float[torch.Tensor, "batch pos out"]:
        """The linear child's output ``y`` with this part's heads replaced by ``fn`` of them:
        ``fn`` maps (batch, pos, n_heads, d_head) to the same shape; the other parts of a fused
        projection are left as they are. Returns a new tensor."""
        B, T = y.shape[:2]
        off, n = sum(self.parts[: self.index]), self.parts[self.index]
        new = fn(self.part(y)).to(y.dtype).reshape(B, T, self.groups, n, self.d_head)
        out = y.reshape(B, T, self.groups, sum(self.parts), self.d_head).clone()
        out[:, :, :, off : off + n] = new
        return out.reshape(y.shape)

    def row_index(self) -> torch.Tensor:
        """(n_heads, d_head) indices of this part's rows in the (out, in) weight."""
        total = self.groups * sum(self.parts) * self.d_head
        return self._rows(torch.arange(total))

    def set_weight(self, attn: Any, w: Float[torch.Tensor, "head d_model d_head"]) -> None:
        """Write W per head (d_model, d_head) into this part of the linear map, in place (the other
        parts of a fused projection are untouched): afterwards ``weight(attn)`` returns ``w``."""
        mod = self.linear(attn)
        full = mod.weight.data
        rows = full.t() if self.transposed else full  # (out, in) view of the stored weight
        idx = self.row_index()
        if tuple(w.shape) != (*idx.shape[:1], rows.shape[1], self.d_head):
            raise ValueError(
                f"{self.describe()}: weight of shape {tuple(w.shape)} for "
                f"({idx.shape[0]}, {rows.shape[1]}, {self.d_head})"
            )
        with torch.no_grad():
            rows[idx.reshape(-1).to(rows.device)] = w.transpose(1, 2).reshape(-1, rows.shape[1]).to(full)

    def project(self, attn: Any, x: Float[torch.Tensor, "n d_model"]) -> Float[torch.Tensor, "n head d_head"]:
        """x @ W (+ b) per head, from the described weights."""
        w = self.weight(attn)
        y = torch.einsum("nm,hmd->nhd", x.to(w.dtype), w)
        b = self.bias(attn)
        return y if b is None else y + b


def linear_children(attn: Any, d_model: int) -> list[tuple[str, int, bool]]:
    """(name, n_out, transposed) of the Linear/Conv1D children (one level deep) that read d_model."""
    from transformers.pytorch_utils import Conv1D

    out = []
    for name, m in attn.named_modules():
        if not name or name.count(".") > 1:
            continue
        if isinstance(m, Conv1D) and m.weight.shape[0] == d_model:
            out.append((name, m.weight.shape[1], True))
        elif isinstance(m, torch.nn.Linear) and m.in_features == d_model:
            out.append((name, m.out_features, False))
    return out


def candidates(attn: Any, d_model: int, n_heads: int, n_kv_heads: int, d_head: int, which: str) -> list[ProjSpec]:
    """Every description of ``which`` (q, k or v) that the shapes of ``attn``'s children allow."""
    part = {"q": 0, "k": 1, "v": 2}[which]
    G = n_heads // n_kv_heads
    out = []
    for name, n_out, tr in linear_children(attn, d_model):
        if n_out % d_head:
            continue
        n = n_out // d_head
        if which == "q" and n == n_heads:
            out.append(ProjSpec(name, 1, (n_heads,), 0, d_head, tr))
        if which != "q" and n == n_kv_heads:
            out.append(ProjSpec(name, 1, (n_kv_heads,), 0, d_head, tr))
        if n == n_heads + 2 * n_kv_heads:
            out.append(ProjSpec(name, 1, (n_heads, n_kv_heads, n_kv_heads), part, d_head, tr))
            out.append(ProjSpec(name, n_kv_heads, (G, 1, 1), part, d_head, tr))
        if n == 3 * n_heads and G == 1:  # fused MHA in g groups of three parts in any order (CodeGen)
            for g in (g for g in range(1, n_heads + 1) if n_heads % g == 0):
                out.extend(ProjSpec(name, g, (n_heads // g,) * 3, i, d_head, tr) for i in range(3))
        if which == "q" and n == 2 * n_heads:  # q and an output gate per head (Qwen3-Next)
            out.append(ProjSpec(name, n_heads, (1, 1), 0, d_head, tr))
            out.append(ProjSpec(name, 1, (n_heads, n_heads), 0, d_head, tr))
        if which != "q" and n == 2 * n_kv_heads:  # fused [k | v]
            out.append(ProjSpec(name, 1, (n_kv_heads, n_kv_heads), part - 1, d_head, tr))
            out.append(ProjSpec(name, n_kv_heads, (1, 1), part - 1, d_head, tr))
    return list(dict.fromkeys(out))


@contextmanager
def qk_norms_off(attention_modules: list[Any]) -> Iterator[list[str]]:
    """Swap children named like q_norm / k_layernorm for identities while the block runs."""
    swapped: list[tuple[Any, str, Any]] = []
    for a in attention_modules:
        for name, child in list(a.named_children()):
            if NORM_NAME.match(name):
                swapped.append((a, name, child))
                setattr(a, name, torch.nn.Identity())
    try:
        yield sorted({n for _, n, _ in swapped})
    finally:
        for a, name, child in swapped:
            setattr(a, name, child)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def best_fit(
    specs: list[ProjSpec], attn: Any, x: torch.Tensor, target: torch.Tensor, scaled: bool, tol: float = 1e-4
) -> tuple[ProjSpec | None, float]:
    """The first description reproducing ``target`` (n, head, d) from ``x`` (n, d_model), and the
    fitted scalar (1.0 unless ``scaled``: rotary attention factors scale k at position 0)."""
    for spec in specs:
        if spec.linear(attn).weight.shape[0 if spec.transposed else 1] != x.shape[-1]:
            continue  # the layer reads a wider input than the residual stream (Zamba: [h | embedding])
        with torch.no_grad():
            y = spec.project(attn, x).float().cpu()  # the probe's records are in host memory
        target = target.float().cpu()
        if y.shape != target.shape:
            continue
        alpha = float((y * target).sum() / (y * y).sum().clamp_min(1e-12)) if scaled else 1.0
        if rel_err(alpha * y, target) < tol:
            return spec, alpha
    return None, 1.0
