"""Saved twin directories, and the same directories with weights that do not match their config.json
(tests/models/test_partial_weights.py, tests/cli/test_partial_weights_cli.py and the error audit's
tests/cli/cases_weights.py plant them).

Each breaker edits a saved directory in place and returns what transformers then reports for it,
``{"missing": n, "unexpected": n, "mismatched": n, "first": the first name geoprobe names}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

ALIAS = "llama-3.2-1b"  # tiny: 3 layers, d_model 64, lm_head tied to the input embedding, 29 tensors saved
LAYERS = 3
RESHAPED = "model.layers.0.mlp.down_proj.weight"
REMOVED = "model.layers.0.mlp.gate_proj.weight"


def saved_twin(d: Path, alias: str = ALIAS, name: str = "ck") -> Path:
    """``d/name``: the tiny twin of ``alias`` saved as a Hugging Face directory (config.json, tokenizer,
    model.safetensors), built without booting it (a second or two)."""
    import torch
    from transformers import AutoModelForCausalLM

    from geoprobe.models.twins import embedded_tokenizer, twin_config

    target = d / name
    target.mkdir(parents=True, exist_ok=True)
    tok = embedded_tokenizer()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(twin_config(alias, "tiny", vocab_size=len(tok)))
    model.save_pretrained(target, safe_serialization=True)
    tok.save_pretrained(target)
    return target


def _edit_weights(target: Path, edit: Callable[[dict], dict]) -> None:
    from safetensors.torch import load_file, save_file

    path = target / "model.safetensors"
    save_file(edit(load_file(path)), path, metadata={"format": "pt"})


def renamed(target: Path) -> dict:
    """Every tensor under another name: 100 % random weights (29 unexpected; 30 missing, lm_head with
    the embedding it is tied to)."""
    _edit_weights(target, lambda sd: {f"foo.{k}": v for k, v in sd.items()})
    return {"missing": 30, "unexpected": 29, "mismatched": 0, "first": "lm_head.weight"}


def removed(target: Path) -> dict:
    """One tensor left out."""
    _edit_weights(target, lambda sd: {k: v for k, v in sd.items() if k != REMOVED})
    return {"missing": 1, "unexpected": 0, "mismatched": 0, "first": REMOVED}


def more_layers(target: Path) -> dict:
    """config.json asks for a layer more than the weights hold (the 9 tensors of layer 3 missing)."""
    cfg = json.loads((target / "config.json").read_text())
    cfg["num_hidden_layers"] = LAYERS + 1
    (target / "config.json").write_text(json.dumps(cfg))
    return {"missing": 9, "unexpected": 0, "mismatched": 0, "first": f"model.layers.{LAYERS}.input_layernorm.weight"}


def wrong_shape(target: Path) -> dict:
    """One tensor with a row less than the config's shape."""

    def edit(sd: dict) -> dict:
        sd[RESHAPED] = sd[RESHAPED][:-1].clone()
        return sd

    _edit_weights(target, edit)
    return {"missing": 0, "unexpected": 0, "mismatched": 1, "first": RESHAPED}


BREAKERS: dict[str, Callable[[Path], dict]] = {
    "renamed": renamed,
    "removed": removed,
    "more-layers": more_layers,
    "wrong-shape": wrong_shape,
}


def broken_twin(d: Path, how: str, name: str = "ck") -> tuple[Path, dict]:
    """A saved twin directory broken by ``BREAKERS[how]``, and what it expects."""
    target = saved_twin(d, name=name)
    return target, BREAKERS[how](target)
