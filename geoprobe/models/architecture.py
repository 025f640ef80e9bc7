"""What geoprobe knows about a model's attention, derived from the model itself at load time.

:func:`inspect_model` replaces per-family adapters. A first 7-token forward pass finds the
attention layers from what the model does (``layers.py``: modules calling the attention
function, linear-attention layers left out, encoder-decoders, differential and looped attention
refused). It refuses in one line what cannot be measured (no attention layers, or modules named
*Attention* that make no softmax call, RWKV's; attention computed inline, outside transformers'
``AttentionInterface``, and not one of the exceptions ``legacy.py`` describes), then runs two
7-token forward passes through geoprobe's attention function with any q/k norms swapped for
identities:

* every attention module must call the function exactly once per forward pass, else the
  architecture is refused naming the modules that did not;
* heads, KV heads, d_head and sliding windows are read from what the function receives (the
  config is not trusted to describe them), the rotary width from the dims the model's own
  rotary function turns (``rotary.py``; GPT-J's cos/sin are half its rotated width);
* at position 0, where rotary is the identity, the key, value and query each layer receives
  are matched against every description of its projections (``projections.py``); the one
  that reproduces them (relative error < 1e-4) is kept: W_K and W_V need no table;
* at the final position the recorded key, rotated back with the model's own rotary, must
  equal x·W_K (+ b): where it does, geoprobe reports pre-rotary q/k, as it always has;
  where it does not (multi-head latent attention; Llama 4's weightless L2 norm after rotary) the
  layer keeps what the scores use, and ``keys.py`` says what its keys were found to be.

Hybrid models (attention + state-space layers) are measured on their attention layers only;
``Layout.layer_ids`` records which model layers those are. Multimodal checkpoints are measured on
their language model (``language.py``): the attention modules of vision and audio encoders are not
attention layers, nor are layers the model skips on a text prompt (Llama 3.2 Vision's
cross-attention layers); sizes are read from the text config.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import torch
from jaxtyping import Float

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models import attention as A
from geoprobe.models import layers as L
from geoprobe.models.keys import no_linear_map_reason, rescaled_fit, rescaled_reason
from geoprobe.models.language import LayersRun, language_modules, language_notes, owners, text_config
from geoprobe.models.layout import Heads, Layout
from geoprobe.models.legacy import (
    INLINE,
    INLINE_SDPA_TYPES,
    inline_layers,
    inline_sdpa,
    legacy_hooks,
    legacy_windows,
    refuse_unsupported,
)
from geoprobe.models.projections import ProjSpec, best_fit, candidates, qk_norms_off, rel_err
from geoprobe.models.rotary import rotation_tolerance, unrotate
from geoprobe.models.verify import FORWARD_ERRORS, forward_fails, probe_ids
from geoprobe.models.where import architecture_name, input_device


@dataclass
class Architecture:
    """A model's attention as geoprobe found it: the mechanism, the layout, where W_K/W_V live."""

    name: str  # the architecture (class name)
    model_type: str
    mechanism: str  # "interface" (AttentionInterface), "inline-sdpa" (Falcon) or "legacy" (legacy.INLINE)
    layout: Layout
    modules: dict[int, Any]  # model layer number -> attention module
    k_specs: dict[int, ProjSpec | None]
    v_specs: dict[int, ProjSpec | None]
    q_specs: dict[int, ProjSpec | None]
    qk_norms: tuple[str, ...] = ()
    post_rotary_layers: frozenset[int] = frozenset()
    sinks: bool = False
    notes: list[str] = field(default_factory=list)
    #: the model's own number for its first position (``verify.position_offset``; None: unknown, never passed)
    position_offset: int | None = 0
    #: {padding side: how far padding moves the model's own output} where it does (``verify.padding_dependence``):
    #: a capture with that side batches prompts of one length only, so each is computed as it is alone
    padding_dependent: dict[str, float] = field(default_factory=dict)

    #: what geoprobe found where a layer has no W_K (``keys.py``), for messages; '' where every layer has one
    key_weights_found: str = ""

    @property
    def NO_KEY_WEIGHTS(self) -> str:  # noqa: N802 (the name callers have always read)
        """What a missing W_K means here: what geoprobe found the keys to be."""
        return self.key_weights_found or "keys here are not x·W_K, so there is no W_K to measure"

    @property
    def key_weights_reason(self) -> str:
        """Why W_K is not available ('' when it is)."""
        missing = [layer for layer, s in self.k_specs.items() if s is None]
        if not missing:
            return ""
        mod = self.modules[missing[0]]
        children = ", ".join(n for n, _ in mod.named_children())
        return f"{self.name} ({type(mod).__name__}: {children}): {self.NO_KEY_WEIGHTS}"

    def key_weight_view(self, model_layer: int) -> Float[torch.Tensor, "kv_head d_model d_head"]:
        """W_K of one attention layer (its number in the model) as (kv_head, d_model, d_head)."""
        reason = self.key_weights_reason
        if reason:
            raise UnsupportedArchitectureError(f"{reason}; capture with CaptureConfig(key_weights=False)")
        return self.k_specs[model_layer].weight(self.modules[model_layer]).detach()

    def key_weight_views(self) -> list[Float[torch.Tensor, "kv_head d_model d_head"]]:
        """W_K of each attention layer (in layout order) as (kv_head, d_model, d_head): k = x @ W_K + b."""
        return [self.key_weight_view(layer) for layer in self.layout.model_layers]


def attention_modules(hf_model: Any) -> list[Any]:
    """Modules that are a self-attention block: 'Attention' in the class name and a linear child of
    their own (wrappers that only hold the real module are skipped)."""
    from transformers.pytorch_utils import Conv1D

    return [
        m
        for m in hf_model.modules()
        if "Attention" in type(m).__name__ and any(isinstance(c, (torch.nn.Linear, Conv1D)) for c in m.children())
    ]


def _refuse_without_attention(hf_model: Any) -> None:
    name = architecture_name(hf_model)
    mixers = sorted(
        {
            type(m).__name__
            for m in hf_model.modules()
            if "Mixer" in type(m).__name__ or "Mamba" in type(m).__name__ or "Rwkv" in type(m).__name__
        }
    )
    what = f": its layers are {', '.join(mixers[:3])}, a state-space or recurrent model" if mixers else ""
    raise UnsupportedArchitectureError(
        f"{name}: geoprobe finds no attention layers in the model (no module calls transformers' attention "
        f"function or is an attention module with its own projections){what}; geoprobe measures softmax "
        "attention; pass a transformer to --model",
        reason="no-attention",
    )


def _probe_ids(hf_model: Any, batch: int = 2) -> torch.Tensor:
    return probe_ids(hf_model, batch)


def _device(hf_model: Any) -> torch.device:
    return input_device(hf_model)


def inspect_model(hf_model: Any) -> Architecture:
    """Derive the :class:`Architecture` of a Hugging Face causal LM, or refuse it in one line."""
    name = architecture_name(hf_model)
    mt = getattr(hf_model.config, "model_type", "?")
    mods = attention_modules(hf_model)
    if hf_model.training:
        hf_model.eval()
    mods = language_modules(hf_model, mods) or mods  # not the encoders of other modalities
    # asked of the model that holds the attention (a multimodal checkpoint's language model)
    settable = all(cls._can_set_attn_implementation() for cls in owners(hf_model, mods)) if mods else True
    legacy = mt in INLINE and not settable
    ids = _probe_ids(hf_model).to(_device(hf_model))
    try:
        seen = L.survey(hf_model, mods, ids, interface=settable and not legacy and mt not in INLINE_SDPA_TYPES)
    except FORWARD_ERRORS as exc:
        raise forward_fails(name, exc) from exc
    L.refuse_encoder_decoder(hf_model, name, seen, ids)
    if mt in INLINE and mods and not seen.calls:
        legacy = True  # the class can set an implementation (GIT: for its vision encoder); its text attention is inline
    if not mods and not seen.calls:
        _refuse_without_attention(hf_model)
    if legacy:
        # transformers moves these to AttentionInterface one by one (GPT-J in 5.24); once moved, the
        # derived layout reads them like any other architecture
        return _legacy(hf_model, name, mt, mods)
    if mt in INLINE_SDPA_TYPES:
        impl = hf_model.config._attn_implementation
        if impl != "sdpa":
            raise UnsupportedArchitectureError(
                f"{name}: with attn_implementation={impl!r} its attention is computed inline, where geoprobe cannot "
                "read it; load it with attn_implementation='sdpa' (transformers' default)",
                reason="inline",
            )
        return _interface(hf_model, name, mt, mods, "inline-sdpa")
    if not settable:
        L.refuse_without_softmax(hf_model, name, mods, ids)
        kind = type(mods[0]).__name__
        raise UnsupportedArchitectureError(
            f"{name}: its attention ({kind}) is computed inline, not through transformers' AttentionInterface, "
            f"and is not one of geoprobe's exceptions ({', '.join(INLINE)}); geoprobe cannot read it",
            reason="inline",
        )
    found = L.attention_layers(hf_model, name, seen, ids)
    arch = _interface(hf_model, name, mt, [*found.modules.values(), *found.undecided], layer_of=L.lookup(found.modules))
    arch.notes.extend(found.notes)
    return arch


@contextmanager
def _pre_hooks(modules: dict[int, Any], hook: Callable[[int, tuple, dict], None]) -> Iterator[None]:
    """A forward pre-hook on each module, called as ``hook(layer, args, kwargs)``; removed on exit."""
    handles = [
        m.register_forward_pre_hook(
            lambda mod, args, kwargs, _layer=layer: hook(_layer, args, kwargs), with_kwargs=True
        )
        for layer, m in modules.items()
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _input_hooks(modules: dict[int, Any], at: dict[int, torch.Tensor], pos: int) -> Any:
    """Keep each layer's attention input at position ``pos`` in ``at``."""

    def keep(layer: int, args: tuple, kwargs: dict) -> None:
        x = args[0] if args else kwargs["hidden_states"]
        at[layer] = x[:, pos].detach().float()

    return _pre_hooks(modules, keep)


def _activated(hf_model: Any, mechanism: str, modules: Iterable[Any], probe: A.Probe) -> Any:
    """The context in which ``probe`` records: the registered attention function, or Falcon's inline SDPA."""
    if mechanism == "inline-sdpa":
        return inline_sdpa(modules, probe)
    return A.active(hf_model, probe)


def _interface(
    hf_model: Any,
    name: str,
    mt: str,
    mods: list[Any],
    mechanism: str = "interface",
    layer_of: Callable[[Any], int | None] = A.layer_index,
) -> Architecture:
    ids = _probe_ids(hf_model).to(_device(hf_model))
    B, T = ids.shape
    by_layer: dict[int, Any] = {}
    probe0 = A.Probe(attn_out=False, attention=False, pre_rotary=False, layer_of=layer_of)
    probe0.new_batch(torch.zeros(B, dtype=torch.long))
    x0: dict[int, torch.Tensor] = {}
    seen: dict[int, Any] = {}
    rot: dict[int, int] = {}
    layers_run = LayersRun(hf_model, mods)

    def keep(mod: Any, args: tuple, kwargs: dict) -> None:
        layer = layer_of(mod)
        if layer is None:
            return  # named like attention but never called the function: refused below
        seen[layer] = mod
        pe = kwargs.get("position_embeddings")
        # the pair's width; measured with the rotary function below where the layer has one
        rot[layer] = int(pe[0].shape[-1]) if isinstance(pe, tuple) and len(pe) == 2 else 0

    with ExitStack() as stack:
        norms = stack.enter_context(qk_norms_off(mods))
        for m in mods:
            h = m.register_forward_pre_hook(keep, with_kwargs=True)
            stack.callback(h.remove)
        stack.enter_context(layers_run)
        stack.enter_context(_activated(hf_model, mechanism, mods, probe0))
        with torch.no_grad():
            hf_model(ids, use_cache=False)
    mods, skipped = layers_run.split()  # layers the model skips on text prompts are not measured
    by_layer = dict(sorted(seen.items()))
    called = {id(by_layer[layer]) for layer in probe0.calls}
    silent = [type(m).__name__ for m in mods if id(m) not in called]
    if silent or len(probe0.calls) != len(mods):
        what = (
            f"{len(silent)} of {len(mods)} attention modules ({silent[0]}) never called it"
            if silent
            else f"{len(mods)} attention modules made {len(probe0.calls)} calls"
        )
        raise UnsupportedArchitectureError(
            f"{name}: its attention does not go through transformers' AttentionInterface once per layer "
            f"({what}); geoprobe cannot capture it",
            reason="interface-calls",
        )
    # second pass, same ids: inputs at position 0 and at the final position, keys there as received
    probe1 = A.Probe(attn_out=False, attention=False, pre_rotary=False, layer_of=layer_of)
    probe1.new_batch(torch.full((B,), T - 1, dtype=torch.long))
    x_last: dict[int, torch.Tensor] = {}
    with ExitStack() as stack:
        stack.enter_context(qk_norms_off(mods))
        stack.enter_context(_input_hooks(by_layer, x0, 0))
        stack.enter_context(_input_hooks(by_layer, x_last, T - 1))
        stack.enter_context(rotary_hooks(by_layer, probe1))
        stack.enter_context(_activated(hf_model, mechanism, mods, probe1))
        with torch.no_grad():
            hf_model(ids, use_cache=False)
    text = text_config(hf_model.config)
    d_model = int(text.hidden_size)
    k_specs: dict[int, ProjSpec | None] = {}
    v_specs: dict[int, ProjSpec | None] = {}
    q_specs: dict[int, ProjSpec | None] = {}
    post: set[int] = set()
    found: dict[int, str] = {}  # why a layer has no W_K (keys.py)
    unrotated: set[int] = set()  # given cos/sin but no rotary applied (Falcon with ALiBi): keys kept as received
    for layer, m in by_layer.items():
        r0 = probe0.records[layer]
        Hq, dq = r0.q.shape[1:]
        Hkv, dv = r0.v.shape[1:]
        k_specs[layer], _ = best_fit(candidates(m, d_model, Hq, Hkv, dq, "k"), m, x0[layer], r0.k, scaled=True)
        v_specs[layer], _ = best_fit(candidates(m, d_model, Hq, Hkv, dv, "v"), m, x0[layer], r0.v, scaled=False)
        q_specs[layer], _ = best_fit(candidates(m, d_model, Hq, Hkv, dq, "q"), m, x0[layer], r0.q, scaled=True)
        spec = k_specs[layer]
        k = probe1.records[layer].k
        k_back = k
        if layer in probe1.rotary:
            pair, rf = probe1.rotary[layer], probe1.rotary_functions[layer]
            if rf.width(pair, dq):  # else it cannot be turned back: the layer keeps what the scores use
                k_back = unrotate(rf, k.to(pair[0].device), pair).float().cpu()
                rot[layer] = rf.rotated_dims(pair, dq)
        if spec is None:
            ks = candidates(m, d_model, Hq, Hkv, dq, "k")
            scaled = rescaled_fit(ks, m, x0[layer], r0.k)
            # at the final position too, where geoprobe can turn the model's rotary back
            if scaled is not None and (k_back is k or rescaled_fit([scaled], m, x_last[layer], k_back)):
                found[layer] = rescaled_reason(layer, scaled, m, checked_last=k_back is not k)
            else:
                found[layer] = no_linear_map_reason(layer, dq, dv)
        expected = None if spec is None else spec.project(m, x_last[layer]).float().cpu()
        tol = rotation_tolerance(spec.linear(m).weight.dtype if spec is not None else torch.float32)
        if expected is None or rel_err(expected, k_back) > tol:
            if expected is not None and rel_err(expected, k) <= tol:
                unrotated.add(layer)
                rot[layer] = 0
            else:
                post.add(layer)
    layers = list(by_layer)
    heads = []
    for ly in layers:
        r = probe0.records[ly]
        heads.append(Heads(int(r.q.shape[1]), int(r.v.shape[1]), int(r.v.shape[2]), int(r.q.shape[2])))
        if heads[-1].n_heads % heads[-1].n_kv_heads:
            raise UnsupportedArchitectureError(
                f"{name}: layer {ly}'s {heads[-1].n_heads} query heads do not divide into "
                f"{heads[-1].n_kv_heads} key/value heads",
                reason="heads",
            )
    n_layers_model = int(getattr(text, "num_hidden_layers", 0) or 0)
    layout = Layout.of_layers(
        heads,
        n_layers=len(layers),
        d_model=d_model,
        vocab_size=int(text.vocab_size),
        rotary_dim=max(rot.values(), default=0),
        sliding_window=tuple(probe0.records[ly].window for ly in layers),
        layer_ids=None if layers == list(range(n_layers_model)) else tuple(layers),
    )
    if not layout.uniform:
        arch_notes = [f"attention layers differ in head layout ({L.head_layouts(layers, heads)})"]
    else:
        arch_notes = []
    arch = Architecture(
        name,
        mt,
        mechanism,
        layout,
        by_layer,
        k_specs,
        v_specs,
        q_specs,
        tuple(norms),
        frozenset(post | unrotated),
        sinks=hasattr(by_layer[layers[0]], "sinks"),
        key_weights_found=found[min(found)] if found else "",
    )
    arch.notes += arch_notes + language_notes(hf_model, skipped)
    if post:
        arch.notes.append(
            f"q/k of layers {sorted(post)} are as the scores use them (after rotary): "
            "no linear map from the layer input gives the pre-rotary keys"
        )
    return arch


def _legacy(hf_model: Any, name: str, mt: str, mods: list[Any]) -> Architecture:
    """An architecture of ``legacy.INLINE``: layers and heads from one forward pass, q/k/v from its description."""
    cfg, described = text_config(hf_model.config), INLINE[mt]
    for m in mods:
        refuse_unsupported(described, m, name)
    by_layer, H = inline_layers(hf_model, mods, _probe_ids(hf_model).to(_device(hf_model)), name)
    specs = described.specs(by_layer[0], H)
    d = specs[2].d_head
    n = len(by_layer)
    layout = Layout(
        n_layers=n,
        n_heads=H,
        n_kv_heads=H,
        d_head=d,
        d_model=int(cfg.hidden_size),
        vocab_size=int(cfg.vocab_size),
        rotary_dim=described.rotary_dim(by_layer[0], specs[1].d_head),
        sliding_window=legacy_windows(cfg, n),
        d_key=None if specs[1].d_head == d else specs[1].d_head,
    )
    return Architecture(
        name,
        mt,
        "legacy",
        layout,
        by_layer,
        dict.fromkeys(range(n), specs[1]),
        dict.fromkeys(range(n), specs[2]),
        dict.fromkeys(range(n), specs[0]),
    )


def rotary_hooks(modules: dict[int, Any], probe: A.Probe) -> Any:
    """Keep, per layer, the cos/sin pair of each row's final position (``position_embeddings`` as the
    module received them: (sin, cos) for GPT-J) and the layer's rotary function (``rotary.py``)."""
    rotating = {}
    for layer, m in modules.items():
        fn = A.rotary_function(m)
        if fn is not None:
            probe.rotary_functions[layer] = fn
            rotating[layer] = m

    def keep(layer: int, args: tuple, kwargs: dict) -> None:
        pe = kwargs.get("position_embeddings")
        if not (isinstance(pe, tuple) and len(pe) == 2):
            return
        a = pe[0]
        B = (args[0] if args else kwargs["hidden_states"]).shape[0]
        key = (id(pe[0]), id(pe[1]))
        if key not in probe.pairs:  # once per batch for the layers that share position_embeddings
            last = probe.final_positions(B, a.shape[-2], a.device)
            rows = (
                torch.arange(B, device=a.device)
                if a.shape[0] == B
                else torch.zeros(B, dtype=torch.long, device=a.device)
            )
            probe.pairs[key] = ((pe[0][rows, last], pe[1][rows, last]), pe)  # pe kept: its id stays its own
        probe.rotary[layer] = probe.pairs[key][0]  # in the order the module received them

    return _pre_hooks(rotating, keep)


@contextmanager
def probing(hf_model: Any, arch: Architecture, probe: A.Probe) -> Iterator[A.Probe]:
    """Run forward passes of ``hf_model`` inside the block with ``probe`` recording every attention layer."""
    if arch.mechanism == "legacy":
        with (
            legacy_hooks(
                arch.model_type, arch.modules, probe, (arch.q_specs[0], arch.k_specs[0], arch.v_specs[0])
            ) as p,
            A.current_set(p),
        ):
            yield p
        return
    probe.post_rotary_layers = arch.post_rotary_layers
    probe.layer_of = L.lookup(arch.modules)
    with rotary_hooks(arch.modules, probe), _activated(hf_model, arch.mechanism, arch.modules.values(), probe) as p:
        yield p


@contextmanager
def editing(
    hf_model: Any,
    arch: Architecture,
    edits: dict[int, A.ValueEdit] | None = None,
    out_edits: dict[int, A.OutEdit] | None = None,
) -> Iterator[A.Probe]:
    """Apply value edits and out-edits ({model layer: fn}) to every forward pass of ``hf_model``
    inside the block. Inside an active probe (``probing``) they are added to it for the block,
    so what it records is what attention read; otherwise a probe that records nothing is
    switched on. Yields the probe that carries them."""
    edits, out_edits = dict(edits or {}), dict(out_edits or {})
    outer = A.current()
    if outer is None:
        probe = A.Probe(
            queries=False, keys=False, values=False, attn_out=False, attention=False, edits=edits, out_edits=out_edits
        )
        with probing(hf_model, arch, probe) as p:
            yield p
        return
    clash = sorted((set(edits) & set(outer.edits)) | (set(out_edits) & set(outer.out_edits)))
    if clash:
        raise GeoprobeError(f"layer(s) {clash} are already edited by an enclosing block; one edit per layer")
    outer.edits.update(edits)
    outer.out_edits.update(out_edits)
    try:
        yield outer
    finally:
        for layer in edits:
            outer.edits.pop(layer, None)
        for layer in out_edits:
            outer.out_edits.pop(layer, None)
