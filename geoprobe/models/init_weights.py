"""W_K of an architecture's own random initialisation, for any config (the key-orthogonality baseline).

:func:`init_key_weights` builds the model from its config exactly as a twin is built
(``torch.manual_seed(seed)`` then ``AutoModelForCausalLM.from_config(cfg, dtype=float32)``) and
reads W_K through the architecture probe (:func:`geoprobe.models.architecture.inspect_model`),
so the baseline *is* the W_K of a freshly built same-seed model, whatever the layout (separate
``k_proj``, fused ``[q|k|v]``, per-head interleave, legacy modules).

Cost (measured on 2 CPU cores, ``twin:pythia-410m:full`` loaded): Pythia-410M's full config
builds and yields W_K in 5.3 s with a peak 1.6 GiB above the process (the float32 model, freed
after), 5.7 s when no :class:`Architecture` is passed and the fresh model is probed (``geoprobe
scan`` passes the scanned model's, whose projection descriptions fit the fresh model too).
Above ``max_bytes`` of float32 parameters (default 2 GiB, i.e. ~540M parameters) the full build
is not affordable: the model is then built on the meta device and only each layer's key
projection is materialised and passed through the model class's ``_init_weights`` (same
initialiser and shapes, different random draws than a full build; 0.7 s and 0.37 GiB for
Pythia-410M, memory of the key projections only). That path needs the ``arch`` of a loaded model of the
same config to know where W_K lives. Multi-head latent attention has no W_K: the
:class:`UnsupportedArchitectureError` says why.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models.architecture import Architecture, attention_modules, inspect_model
from geoprobe.models.attention import layer_index
from geoprobe.models.language import build_causal_lm, language_modules

MAX_BYTES = 2 * 2**30


def parameter_bytes(cfg: Any) -> int:
    """Float32 bytes of every parameter of the model ``cfg`` describes (built on the meta device)."""
    return 4 * sum(p.numel() for p in _meta_model(cfg).parameters())


def _meta_model(cfg: Any) -> Any:
    with torch.device("meta"):
        return build_causal_lm(copy.deepcopy(cfg))


def _stack(views: list[torch.Tensor]) -> np.ndarray:
    return np.stack([v.detach().float().cpu().numpy() for v in views])


def _fresh_views(model: Any, arch: Architecture) -> list[torch.Tensor]:
    """W_K of ``model`` read with the projection descriptions of ``arch`` (a model of the same config)."""
    reason = arch.key_weights_reason
    if reason:
        raise UnsupportedArchitectureError(reason)
    by_layer = fresh_modules(model, arch)
    return [arch.k_specs[layer].weight(by_layer[layer]) for layer in arch.layout.model_layers]


def _number(module: Any) -> int | None:
    try:
        return layer_index(module)
    except UnsupportedArchitectureError:
        return None


def fresh_modules(model: Any, arch: Architecture) -> dict[int, Any]:
    """{model layer: attention module} of ``model`` for the layers ``arch`` measures: the language
    model's attention modules (not a vision or audio encoder's), by their layer number where each
    has one (a layer skipped on text prompts has its own number), else in order."""
    mods = language_modules(model, attention_modules(model))
    layers = sorted(arch.modules)
    numbered = {n: m for m in mods if (n := _number(m)) is not None}
    if len(numbered) == len(mods) and set(layers) <= set(numbered):
        return {layer: numbered[layer] for layer in layers}
    if len(mods) != len(layers):
        raise GeoprobeError(
            f"{arch.name}: the config builds {len(mods)} attention modules but the loaded model "
            f"has {len(layers)}; no random-init baseline"
        )
    return dict(zip(layers, mods))


def init_key_weights(
    cfg: Any, seed: int = 0, arch: Architecture | None = None, max_bytes: int = MAX_BYTES
) -> Float[np.ndarray, "L Hkv D d"]:
    """W_K (layer, kv_head, d_model, d_head), float32, of ``cfg``'s architecture at random init ``seed``.

    Equal to the W_K of ``torch.manual_seed(seed); AutoModelForCausalLM.from_config(cfg)``
    when the model fits ``max_bytes``; above it, the key projections alone (module docstring)."""
    if parameter_bytes(cfg) > max_bytes:
        if arch is None:
            raise GeoprobeError(
                f"{getattr(cfg, 'model_type', '?')}: the full model is over {max_bytes / 2**30:.1f} GiB "
                "to build; pass the loaded model's architecture (arch=) to initialise W_K alone"
            )
        return _key_projections_only(cfg, seed, arch)
    rng = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = build_causal_lm(copy.deepcopy(cfg), dtype=torch.float32).eval()
    finally:
        torch.random.set_rng_state(rng)
    if arch is None:
        arch = inspect_model(model)
    with torch.no_grad():
        return _stack(_fresh_views(model, arch))


def _key_projections_only(cfg: Any, seed: int, arch: Architecture) -> np.ndarray:
    """Build on meta, materialise and initialise each layer's key projection only."""
    reason = arch.key_weights_reason
    if reason:
        raise UnsupportedArchitectureError(reason)
    model = _meta_model(cfg)
    mods = fresh_modules(model, arch)
    rng = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        for layer in arch.layout.model_layers:
            linear = arch.k_specs[layer].linear(mods[layer])
            linear.to_empty(device="cpu")
            model._init_weights(linear)
        with torch.no_grad():
            return _stack(_fresh_views(model, arch))
    finally:
        torch.random.set_rng_state(rng)
