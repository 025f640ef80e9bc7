"""The Pythia-shaped GPT-NeoX of a trajectory: its transformers config and its initialisation.

GPT-NeoX (EleutherAI's ``megatron/model/init_functions.py``) initialises every weight matrix with
``small_init`` (normal, σ = √(2 / (5·d)), "Transformers without Tears") except the two projections
that write into the residual stream in each layer (the attention output ``dense`` and the MLP's
``dense_4h_to_h``), which take ``wang_init`` (σ = 2 / (L·√d)); biases start at 0, LayerNorms at
(1, 0). Pythia used these (``init_method: small_init``, ``output_layer_init_method: wang_init``).
transformers' own GPTNeoX init (normal σ = 0.02 everywhere) is replaced here, from a generator seeded
by the run's seed, so step 0 is the model Pythia's recipe would start from at this size.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from geoprobe.trajectory.config import TrajectoryConfig

#: the residual-output projections that take wang_init
OUTPUT_PROJECTIONS = ("attention.dense.weight", "mlp.dense_4h_to_h.weight")


def neox_config(config: TrajectoryConfig, tokenizer: Any) -> Any:
    """The transformers ``GPTNeoXConfig`` of ``config`` (Pythia's choices; module docs)."""
    from transformers import GPTNeoXConfig

    eos = tokenizer.eos_token_id
    return GPTNeoXConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        num_hidden_layers=config.layers,
        num_attention_heads=config.heads,
        intermediate_size=config.intermediate_size,
        hidden_act="gelu",
        rope_parameters={
            "rope_type": "default",
            "rope_theta": float(config.rotary_base),
            "partial_rotary_factor": float(config.rotary_pct),
        },
        attention_dropout=0.0,
        hidden_dropout=0.0,
        classifier_dropout=0.1,
        max_position_embeddings=config.max_positions,
        initializer_range=0.02,
        layer_norm_eps=1e-5,
        use_cache=True,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        use_parallel_residual=True,
        attention_bias=True,
        architectures=["GPTNeoXForCausalLM"],
    )


def init_std(name: str, config: TrajectoryConfig) -> float | None:
    """The σ of parameter ``name`` at initialisation; None for a bias or a LayerNorm (set to 0 / 1)."""
    if not name.endswith(".weight") or "layernorm" in name or "layer_norm" in name:
        return None
    d = config.hidden_size
    if name.endswith(OUTPUT_PROJECTIONS):
        return 2.0 / (config.layers * math.sqrt(d))
    return math.sqrt(2.0 / (5.0 * d))


@torch.no_grad()
def build_model(config: TrajectoryConfig, tokenizer: Any) -> Any:
    """A fresh ``GPTNeoXForCausalLM`` with Pythia's initialisation drawn from a generator seeded by
    ``config.seed`` (parameters in their registration order)."""
    from transformers import GPTNeoXForCausalLM

    from geoprobe.models.loaded import quiet_libraries

    quiet_libraries()
    model = GPTNeoXForCausalLM(neox_config(config, tokenizer))
    g = torch.Generator().manual_seed(config.seed)
    for name, p in model.named_parameters():
        std = init_std(name, config)
        if std is not None:
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
        elif "norm" in name and name.endswith(".weight"):
            p.fill_(1.0)
        else:
            p.zero_()
    return model


def n_params(model: Any) -> tuple[int, int]:
    """(all parameters, those of the two embedding matrices)."""
    total = sum(p.numel() for p in model.parameters())
    emb = model.get_input_embeddings().weight.numel() + model.get_output_embeddings().weight.numel()
    return total, emb
