"""The inline exceptions: architectures whose attention bypasses ``AttentionInterface``.

Falcon calls ``torch.nn.functional.scaled_dot_product_attention`` itself. While geoprobe
probes it (:func:`inline_sdpa`), that function is replaced by one that, only inside a Falcon
attention module (a pre-hook marks which one runs), hands the call's q, k, v, mask (ALiBi is
folded into it) and output to the same :class:`Probe` the interface function uses, then calls
torch's own. Its q/k/v layout and W_K are then identified like any interface architecture's.

The types of :data:`INLINE` compute attention inside the module (eager only) and return
their attention probabilities as the second item of its output: GPT-Neo, Bloom and GPT-J
before transformers 5.24, MPT, XGLM, OpenAI GPT and GPT-NeoX-Japanese (CPM-Ant is described
too, and refused below). transformers moves such types to ``AttentionInterface`` one by one
(GPT-J and CodeGen in 5.24): a type of ``INLINE`` whose model class can set its attention
implementation is read through the interface like any other (``architecture.inspect_model``).
A forward hook on each attention module reads the final query row of those probabilities: the
model's own computation, its ALiBi (Bloom, MPT), local windows (GPT-Neo) and rotary (GPT-J,
GPT-NeoX-Japanese) included. A module whose ``forward`` takes ``output_attentions`` (OpenAI
GPT) returns them only when asked, so a pre-hook asks; the caller, which did not, never reads
them. GIT's text self-attention (BERT-style) returns them always and its attention output z, its
output projection sitting in a sibling module; its model class can set an implementation (for the
vision encoder), so a described type whose attention modules make no interface call on the
load-time pass is read here too. At load :func:`inline_layers` runs two forward passes and requires every attention
module to return, once per pass, a (batch, head, query, key) tensor whose rows sum to 1, else
the architecture is refused in one line.

Where q/k/v live is data (:class:`InlineLayout`, one line per type, read from its modeling
file): the linear children holding them (three separate, ``[q | k | v]`` concatenated, or
per-head interleaved), the output projection (its input is z, the attention output per head)
and the module attribute holding the rotated width; the head count is the probabilities'.
q, k and v are then x·W (+ b) at the final token, pre-rotary. Value edits (``Probe.edits``)
run on the output of the V projection, split by its description (fused projections included),
and out-edits (``Probe.out_edits``) on the input of the output projection.

The load-time pass also changes the final token of its prompts: where what any attention layer
reads at an earlier position changes with it, the model is not causal and is refused
(``bidirectional``). CPM-Ant is: transformers runs its whole input as CPM-Ant's bidirectional
context (``context = 1`` everywhere in ``CpmAntModel.forward``). A setting that transforms q, k
and v after their projection (MPT's ``clip_qkv``, ``InlineLayout.refuse_if``) is refused too.

An inline type that is not described is refused; ``layers.refuse_without_softmax`` first tells
softmax attention from a module that is only named *Attention*: RWKV's ``RwkvSelfAttention`` (a
linear recurrence) makes no softmax call, so that model is refused as having no softmax attention.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import torch

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.attention import LayerRecord, Probe, current_set
from geoprobe.models.projections import ProjSpec

#: architectures that call torch's SDPA inline (probed by :func:`inline_sdpa`)
INLINE_SDPA_TYPES = ("falcon",)


@dataclass(frozen=True)
class InlineLayout:
    """Where an inline attention module keeps q, k, v and its output projection (module docstring)."""

    projections: tuple[str, ...]  # (q, k, v) linear children, or the one fused child
    out: str  # the output projection: its input is z ('': z is the module's own first output, as in GIT)
    fused: str = ""  # "" (three children), "concat" ([q | k | v], all heads each) or "per-head" ([q, k, v] per head)
    rotary: str = ""  # module attribute holding the rotated width (None there: the whole head); '' no rotary
    refuse_if: tuple[str, ...] = ()  # module attributes that, when set, make q/k/v more than x·W

    def specs(self, module: Any, n_heads: int) -> tuple[ProjSpec, ProjSpec, ProjSpec]:
        """(W_Q, W_K, W_V) descriptions of ``module`` with ``n_heads`` heads."""
        from transformers.pytorch_utils import Conv1D

        def child(name: str) -> tuple[int, bool]:
            lin = getattr(module, name)
            conv = isinstance(lin, Conv1D)
            return (lin.weight.shape[1] if conv else lin.out_features), conv

        H = n_heads
        if not self.fused:
            out = []
            for name in self.projections:
                width, conv = child(name)
                out.append(ProjSpec(name, 1, (H,), 0, width // H, conv))
            return tuple(out)  # type: ignore[return-value]
        name = self.projections[0]
        width, conv = child(name)
        d = width // (3 * H)
        groups, parts = (1, (H, H, H)) if self.fused == "concat" else (H, (1, 1, 1))
        return tuple(ProjSpec(name, groups, parts, i, d, conv) for i in range(3))  # type: ignore[return-value]

    def rotary_dim(self, module: Any, d_head: int) -> int:
        if not self.rotary:
            return 0
        return int(getattr(module, self.rotary) or d_head)


_SEPARATE = ("q_proj", "k_proj", "v_proj")
#: the types read from their modules' returned probabilities, each described from its modeling file
INLINE: dict[str, InlineLayout] = {
    "gpt_neo": InlineLayout(_SEPARATE, "out_proj"),
    "gptj": InlineLayout(_SEPARATE, "out_proj", rotary="rotary_dim"),  # before transformers 5.24
    "bloom": InlineLayout(("query_key_value",), "dense", "per-head"),  # BloomAttention._reshape
    "mpt": InlineLayout(("Wqkv",), "out_proj", "concat", refuse_if=("clip_qkv",)),  # Wqkv(x).chunk(3)
    "xglm": InlineLayout(_SEPARATE, "out_proj"),
    "openai-gpt": InlineLayout(("c_attn",), "c_proj", "concat"),  # Conv1D, c_attn(x).split(n_embd)
    "gpt_neox_japanese": InlineLayout(("query_key_value",), "dense", "per-head", rotary="rotary_ndims"),
    "cpmant": InlineLayout(("project_q", "project_k", "project_v"), "attention_out"),
    # GitSelfAttention: BERT-style, returns (z, probs); its output projection is in the sibling GitSelfOutput
    "git": InlineLayout(("query", "key", "value"), ""),
}


def legacy_windows(cfg: Any, n_layers: int) -> tuple[int | None, ...]:
    if cfg.model_type == "gpt_neo":
        return tuple(cfg.window_size if t == "local" else None for t in cfg.attention_layers)
    return (None,) * n_layers


def _asking(module: Any) -> inspect.Signature | None:
    """The signature of ``module.forward`` where it takes ``output_attentions`` (else None)."""
    sig = inspect.signature(module.forward)
    return sig if "output_attentions" in sig.parameters else None


def _ask(sig: inspect.Signature | None, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """(args, kwargs) with ``output_attentions=True`` (None where the module does not take it)."""
    if sig is None:
        return None
    bound = sig.bind_partial(*args, **kwargs)
    bound.arguments["output_attentions"] = True
    return bound.args, bound.kwargs


def _input(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


def inline_layers(hf_model: Any, mods: list[Any], ids: torch.Tensor, name: str) -> tuple[dict[int, Any], int]:
    """Two forward passes, of ``ids`` and of ``ids`` with another final token, every module asked for
    its probabilities: ({layer: module} in the order they ran, head count). Refuses in one line a
    module not called exactly once per pass, one whose output's second item is not a (batch, head,
    query, key) tensor of distributions, and a model whose attention inputs before the final
    position change with the final token (not causal: a position sees the tokens after it)."""
    order: list[Any] = []
    heads: set[int] = set()
    bad: list[str] = []
    early: list[torch.Tensor] = []  # each module's input before the final position, in call order
    handles = []

    for m in mods:
        sig = _asking(m)

        def pre(mod: Any, args: tuple, kwargs: dict, _sig: inspect.Signature | None = sig) -> Any:
            early.append(_input(args, kwargs)[:, :-1].detach().float())
            return _ask(_sig, args, kwargs)

        def post(mod: Any, args: tuple, kwargs: dict, output: Any) -> None:
            order.append(mod)
            p = output[1] if isinstance(output, (tuple, list)) and len(output) > 1 else None
            if not (isinstance(p, torch.Tensor) and p.dim() == 4):
                bad.append(f"{type(mod).__name__} returned no (batch, head, query, key) probabilities")
            elif float((p.float().sum(-1) - 1).abs().max()) > max(1e-3, 8 * torch.finfo(p.dtype).eps):
                bad.append(f"{type(mod).__name__} returned rows that do not sum to 1")
            else:
                heads.add(int(p.shape[1]))

        handles.append(m.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(m.register_forward_hook(post, with_kwargs=True))
    other = ids.clone()
    other[:, -1] = torch.where(ids[:, -1] == ids.min(), ids.max(), ids.min())
    try:
        with torch.no_grad():
            hf_model(ids, use_cache=False)
            hf_model(other, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    n = len(mods)
    once = len(order) == 2 * n and {id(m) for m in order[:n]} == {id(m) for m in mods}
    if bad or not once or len(heads) != 1:
        what = bad[0] if bad else "the attention modules did not each run once" if not once else f"heads {heads}"
        raise UnsupportedArchitectureError(
            f"{name}: its inline attention cannot be read from what its modules return ({what})", reason="inline"
        )
    for i, (a, b) in enumerate(zip(early[:n], early[n:])):
        if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
            raise UnsupportedArchitectureError(
                f"{name}: its attention is not causal (what attention layer {i} reads at earlier positions changes "
                "with the final token), so a position sees the tokens after it; geoprobe measures causal decoders",
                reason="bidirectional",
            )
    return dict(enumerate(order[:n])), heads.pop()


def refuse_unsupported(layout: InlineLayout, module: Any, name: str) -> None:
    """Refuse in one line a module whose settings make q/k/v more than the described x·W."""
    for attr in layout.refuse_if:
        value = getattr(module, attr, None)
        if value:
            raise UnsupportedArchitectureError(
                f"{name}: {attr}={value} transforms q, k and v inside {type(module).__name__} after their "
                "projection, so they are not x·W; geoprobe cannot read them",
                reason="inline",
            )


@contextmanager
def legacy_hooks(
    model_type: str,
    modules: dict[int, Any],
    probe: Probe,
    specs: tuple[ProjSpec, ProjSpec, ProjSpec],
) -> Iterator[Probe]:
    """Record into ``probe`` from the attention modules' returned probabilities and projections."""
    q_spec, k_spec, v_spec = specs
    handles = []
    inputs: dict[int, torch.Tensor] = {}
    edited_v: dict[int, torch.Tensor] = {}
    final = probe.final_positions

    for layer, module in modules.items():
        sig = _asking(module)

        def pre(mod: Any, args: tuple, kwargs: dict, _layer: int = layer, _sig: Any = sig) -> Any:
            x = _input(args, kwargs)
            B, T = x.shape[:2]
            inputs[_layer] = x[torch.arange(B, device=x.device), final(B, T, x.device)]
            return _ask(_sig, args, kwargs)

        def post(mod: Any, args: tuple, kwargs: dict, output: Any, _layer: int = layer) -> Any:
            probs = output[1]
            probe.calls.append(_layer)
            rec = probe.records.setdefault(_layer, LayerRecord(_layer))
            rec.calls += 1
            B, _, T, _ = probs.shape
            with torch.no_grad():
                x = inputs.pop(_layer)
                if probe.attention:
                    probe.keep_distribution(
                        rec, probs[torch.arange(B, device=probs.device), :, final(B, T, probs.device)].float()
                    )
                for on, spec, name in (
                    (probe.queries, q_spec, "q"),
                    (probe.keys, k_spec, "k"),
                    (probe.values, v_spec, "v"),
                ):
                    if on:
                        setattr(rec, name, spec.project(mod, x).float().cpu())
                if probe.values and _layer in edited_v:  # what attention read: the edited values
                    rec.v = edited_v.pop(_layer)
            if INLINE[model_type].out:
                return None
            z = z_pre(mod, (output[0],), _layer)  # z is the module's own output (GIT)
            return None if z is None else (z[0], *output[1:])

        def v_post(lin: Any, args: tuple, output: torch.Tensor, _layer: int = layer) -> torch.Tensor | None:
            fn = probe.edits.get(_layer)
            if fn is None:
                return None
            probe.edited[_layer] = probe.edited.get(_layer, 0) + 1
            y = v_spec.edit_output(output, fn)
            if probe.values:
                B, T = y.shape[:2]
                rows = torch.arange(B, device=y.device)
                edited_v[_layer] = v_spec.part(y)[rows, final(B, T, y.device)].detach().float().cpu()
            return y

        def z_pre(mod: Any, args: tuple, _layer: int = layer) -> tuple | None:
            z = args[0]
            B, T = z.shape[:2]
            edit = probe.out_edits.get(_layer)
            if edit is not None:
                z = edit(z.reshape(B, T, q_spec.n_heads, -1)).reshape(z.shape).to(z.dtype)
            if probe.attn_out:
                sl = z[torch.arange(B, device=z.device), final(B, T, z.device)]
                rec = probe.records.setdefault(_layer, LayerRecord(_layer))
                rec.z = sl.reshape(B, q_spec.n_heads, -1).detach().float().cpu()
            return None if edit is None else (z, *args[1:])

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True))
        if INLINE[model_type].out:
            handles.append(getattr(module, INLINE[model_type].out).register_forward_pre_hook(z_pre))
        handles.append(v_spec.linear(module).register_forward_hook(v_post))
    try:
        yield probe
    finally:
        for h in handles:
            h.remove()


@contextmanager
def inline_sdpa(modules: Iterable[Any], probe: Probe) -> Iterator[Probe]:
    """Probe attention modules that call ``torch.nn.functional.scaled_dot_product_attention``
    themselves (Falcon). Keys and values that the module broadcast to every query head
    (Falcon's new decoder architecture) are recorded and edited once per KV head
    (``module.num_kv_heads``). Not thread-safe: the torch function is replaced for the block."""
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    running: list[Any] = []
    handles = []

    def enter(mod: Any, args: tuple) -> None:
        running.append(mod)

    def leave(mod: Any, args: tuple, out: Any) -> None:
        running.pop()

    for m in modules:
        handles.append(m.register_forward_pre_hook(enter))
        handles.append(m.register_forward_hook(leave))

    def sdpa(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        **kw: Any,
    ) -> torch.Tensor:
        if not running:
            return original(
                query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kw
            )
        module = running[-1]
        n_kv = int(getattr(module, "num_kv_heads", key.shape[1]))
        g = query.shape[1] // n_kv if key.shape[1] == query.shape[1] and n_kv < query.shape[1] else 1
        if probe.edits:
            edited = probe.edit_values(module, value[:, ::g])
            value = edited.repeat_interleave(g, dim=1) if g > 1 else edited
        out = original(
            query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kw
        )
        if probe.out_edits:
            out = probe.edit_output(module, out.transpose(1, 2)).transpose(1, 2)
        probe.record(module, query, key[:, ::g], value[:, ::g], attn_mask, out.transpose(1, 2), scale)
        return out

    F.scaled_dot_product_attention = sdpa
    try:
        with current_set(probe):
            yield probe
    finally:
        F.scaled_dot_product_attention = original
        for h in handles:
            h.remove()
