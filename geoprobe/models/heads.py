"""Refuse, in one line, configs whose attention heads do not divide (before transformers fails opaquely).

``hidden_size 64`` with ``num_attention_heads 5`` (and no explicit ``head_dim``) has no whole
head width; ``num_attention_heads 4`` with ``num_key_value_heads 3`` cannot share each KV head
among a whole number of query heads. transformers refuses the first when it validates the
config (a ``StrictDataclassClassValidationError`` with a multi-line message) and builds the
second, failing later in a forward pass with a tensor-size ``RuntimeError``. geoprobe checks the
config first (``config.json`` of a local directory, the config of any model it boots; the
``text_config`` of a multimodal one too) and says which architecture and which numbers, as an
:class:`UnsupportedArchitectureError` (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from geoprobe.errors import UnsupportedArchitectureError

_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
_KV = ("num_key_value_heads", "num_kv_heads", "n_kv_heads")


def _first(cfg: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, int] | None:
    for n in names:
        v = cfg.get(n)
        if isinstance(v, int) and not isinstance(v, bool):
            return n, v
    return None


def head_problem(cfg: Mapping[str, Any]) -> str | None:
    """What is wrong with the head counts of a config dict (None when they divide)."""
    hidden, heads, kv = _first(cfg, _HIDDEN), _first(cfg, _HEADS), _first(cfg, _KV)
    if heads is None:
        return None
    if heads[1] <= 0:
        return f"{heads[0]} is {heads[1]}; it must be a positive number of attention heads"
    explicit_width = isinstance(cfg.get("head_dim"), int) and cfg.get("head_dim")
    if hidden is not None and not explicit_width and hidden[1] % heads[1]:
        return (
            f"{hidden[0]} {hidden[1]} does not divide into {heads[0]} {heads[1]} "
            f"({hidden[1]} / {heads[1]} is not a whole head width) and no head_dim is given"
        )
    if kv is not None and (kv[1] <= 0 or heads[1] % kv[1]):
        return (
            f"{heads[0]} {heads[1]} does not divide into {kv[0]} {kv[1]} "
            "(each key/value head must serve a whole number of query heads)"
        )
    return None


def check_heads(cfg: Mapping[str, Any], where: str) -> None:
    """Raise the one-line refusal for ``cfg`` (a config dict, its ``text_config`` included: a multimodal
    checkpoint keeps its language model's sizes there); ``where`` names the model."""
    why = head_problem(cfg)
    text = cfg.get("text_config")
    if why is None and isinstance(text, Mapping) and (why := head_problem(text)) is not None:
        why = f"text_config: {why}"
    if why is None:
        return
    arch = (cfg.get("architectures") or [cfg.get("model_type") or "?"])[0]
    raise UnsupportedArchitectureError(f"{arch} ({where}): {why}; fix config.json or pass another --model")
