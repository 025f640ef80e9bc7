"""Independent reference computations for ``test_consistency.py``.

Everything here runs a *plain* Hugging Face model (eager attention, no TransformerBridge) built
independently of the geoprobe model under test, and reads the raw projections with ordinary
torch forward hooks, mirroring each family's ``modeling_*.py`` attention code:

* GPT-NeoX: the fused ``query_key_value`` output is ``view(B, T, heads, 3 * d_head)`` and
  ``chunk(3, dim=-1)`` gives q, k, v of each head (``GPTNeoXAttention.forward``).
* Phi, Llama, Mistral, Mixtral, Gemma-3: ``q_proj``/``k_proj``/``v_proj`` outputs viewed as
  ``(B, T, heads, d_head)``; for Gemma-3 q and k are taken after ``q_norm``/``k_norm``, which
  run on ``(B, heads, T, d_head)``.
* z: the input of the output projection (``dense`` for NeoX/Phi, ``o_proj`` otherwise).
* ln1: the output of the layer's ``input_layernorm``.
* pattern: ``output_attentions=True`` (eager attention), final query row.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


def plain_twin(alias: str, vocab_size: int, seed: int = 0) -> Any:
    """The twin's HF model rebuilt from scratch: same config, same seed, eager attention."""
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import twin_config

    cfg = twin_config(alias, "tiny", vocab_size=vocab_size)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32, attn_implementation="eager")
    return model.eval()


def plain_pretrained(directory: str) -> Any:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager", use_safetensors=True
    )
    return model.eval()


def stripped_state_dict(hf_model: Any) -> dict[str, torch.Tensor]:
    """State dict of a bridge-wrapped HF model under the plain HF parameter names."""
    return {k.replace("._original_component", ""): v for k, v in hf_model.state_dict().items()}


def family(plain: Any) -> str:
    return plain.config.model_type


def decoder_layers(plain: Any) -> list[Any]:
    return list(plain.base_model.layers)


def attention(layer: Any) -> Any:
    return layer.attention if hasattr(layer, "attention") else layer.self_attn


def head_dim(plain: Any) -> int:
    cfg = plain.config
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


@dataclass
class FinalToken:
    """Reference activations at the final token of one unpadded prompt; lists are per layer."""

    q: list[np.ndarray]  # (H, d)
    k: list[np.ndarray]  # (Hkv, d)
    v: list[np.ndarray]  # (Hkv, d)
    z: list[np.ndarray]  # (H, d)
    pattern: list[np.ndarray]  # (H, T)
    ln1: list[np.ndarray]  # (d_model,)
    logits: np.ndarray  # (vocab,) final position, float64


def run_final_token(plain: Any, ids: list[int]) -> FinalToken:
    """One unpadded forward pass of ``plain`` on ``ids`` (on the model's device); returns the final token's
    activations in host memory."""
    fam = family(plain)
    d = head_dim(plain)
    store: dict[tuple[int, str], torch.Tensor] = {}
    handles = []

    def out_hook(layer: int, name: str, head_major: bool = False):
        def fn(module, args, out):
            x = out[0] if isinstance(out, tuple) else out
            if head_major:  # (B, H, T, d)
                store[(layer, name)] = x[0, :, -1].detach().clone()
            else:  # (B, T, H*d)
                store[(layer, name)] = x[0, -1].detach().reshape(-1, d).clone()

        return fn

    def qkv_hook(layer: int):
        def fn(module, args, out):
            t = out.shape[1]
            qkv = out.view(1, t, -1, 3 * d)  # exactly GPTNeoXAttention: (B, T, heads, 3*d_head)
            q, k, v = qkv.chunk(3, dim=-1)
            store[(layer, "q")], store[(layer, "k")], store[(layer, "v")] = (
                q[0, -1].detach().clone(),
                k[0, -1].detach().clone(),
                v[0, -1].detach().clone(),
            )

        return fn

    def z_hook(layer: int):
        def fn(module, args):
            store[(layer, "z")] = args[0][0, -1].detach().reshape(-1, d).clone()

        return fn

    def ln_hook(layer: int):
        def fn(module, args, out):
            store[(layer, "ln1")] = out[0, -1].detach().clone()

        return fn

    try:
        for i, layer in enumerate(decoder_layers(plain)):
            attn = attention(layer)
            handles.append(layer.input_layernorm.register_forward_hook(ln_hook(i)))
            if fam == "gpt_neox":
                handles.append(attn.query_key_value.register_forward_hook(qkv_hook(i)))
                handles.append(attn.dense.register_forward_pre_hook(z_hook(i)))
                continue
            if fam == "phi":
                assert not attn.qk_layernorm, "phi with qk_layernorm: q/k would have to be read after the norms"
            if fam == "gemma3_text":
                handles.append(attn.q_norm.register_forward_hook(out_hook(i, "q", head_major=True)))
                handles.append(attn.k_norm.register_forward_hook(out_hook(i, "k", head_major=True)))
            else:
                handles.append(attn.q_proj.register_forward_hook(out_hook(i, "q")))
                handles.append(attn.k_proj.register_forward_hook(out_hook(i, "k")))
            handles.append(attn.v_proj.register_forward_hook(out_hook(i, "v")))
            out_proj = attn.dense if fam == "phi" else attn.o_proj
            handles.append(out_proj.register_forward_pre_hook(z_hook(i)))
        with torch.inference_mode():
            out = plain(torch.tensor([ids], device=plain.device), output_attentions=True, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    n_layers = len(decoder_layers(plain))
    assert len(out.attentions) == n_layers

    def per_layer(name: str) -> list[np.ndarray]:
        return [store[(i, name)].float().cpu().numpy() for i in range(n_layers)]

    return FinalToken(
        q=per_layer("q"),
        k=per_layer("k"),
        v=per_layer("v"),
        z=per_layer("z"),
        ln1=per_layer("ln1"),
        pattern=[a[0, :, -1, :].float().cpu().numpy() for a in out.attentions],
        logits=out.logits[0, -1].double().cpu().numpy(),
    )


# -- rotary + attention from captured q/k/v -------------------------------------------------
def modeling_module(plain: Any) -> Any:
    return sys.modules[type(plain).__module__]


def rotary_cos_sin(plain: Any, layer: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (n, rotary_dim) for positions 0..n-1 from the model's own rotary module."""
    rotary = plain.base_model.rotary_emb
    pos = torch.arange(n)[None]
    dummy = torch.zeros(1, n, 1, dtype=torch.float32)
    if family(plain) == "gemma3_text":  # one rotary table per layer type (local / global theta)
        cos, sin = rotary(dummy, pos, plain.config.layer_types[layer])
    else:
        cos, sin = rotary(dummy, pos)
    return cos[0], sin[0]


def apply_rotary(plain: Any, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` (heads, n, d_head) at positions 0..n-1 with the family's own function.

    GPT-NeoX's ``apply_rotary_pos_emb`` rotates the first ``cos.shape[-1]`` dims itself; Phi's
    attention slices ``[..., :rotary_ndims]`` before calling it and concatenates the rest back;
    the other families rotate every dim.
    """
    apply = modeling_module(plain).apply_rotary_pos_emb
    c, s = cos[None], sin[None]  # (1, n, rot): unsqueeze_dim=1 in apply makes it (1, 1, n, rot)
    x4 = x[None]
    if family(plain) == "phi":
        rot = cos.shape[-1]
        xr, _ = apply(x4[..., :rot], x4[..., :rot], c, s)
        out = torch.cat((xr, x4[..., rot:]), dim=-1)
    else:
        out, _ = apply(x4, x4, c, s)
    return out[0]


def scaling(plain: Any, layer: int) -> float:
    return float(attention(decoder_layers(plain)[layer]).scaling)


def sliding_window(plain: Any, layer: int) -> int | None:
    """The window HF's mask uses for ``layer`` (key kept iff kv_idx > q_idx - window), or None."""
    fam = family(plain)
    if fam == "gemma3_text":  # per layer: Gemma3Attention.sliding_window (None on full layers)
        return attention(decoder_layers(plain)[layer]).sliding_window
    if fam in ("mistral", "mixtral"):  # create_sliding_window_causal_mask when config.sliding_window
        return getattr(plain.config, "sliding_window", None)
    return None  # NeoX, Phi, Llama: plain causal mask


def n_kv_groups(plain: Any) -> int:
    cfg = plain.config
    return cfg.num_attention_heads // (getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads)


def key_bias(plain: Any, layer: int) -> np.ndarray | None:
    """Key bias per KV head (Hkv, d) laid out as the family's forward reads it, or None."""
    attn = attention(decoder_layers(plain)[layer])
    d = head_dim(plain)
    if family(plain) == "gpt_neox":
        b = attn.query_key_value.bias
        return None if b is None else b.detach().view(-1, 3 * d).chunk(3, dim=-1)[1].float().numpy()
    b = attn.k_proj.bias
    return None if b is None else b.detach().view(-1, d).float().numpy()
