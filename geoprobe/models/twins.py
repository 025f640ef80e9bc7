"""Architecture twins: random-init models built from the families' real configs.

``twin:ALIAS[:tiny|full][@SEED]`` names one (``twin:gpt2``, ``twin:pythia-410m:full``, ``twin:gpt2@3``,
``twin:gpt2:tiny@3``): SEED is the weight seed (default 0; ``--weight-seed N``, LoadOptions.weight_seed, says
the same), recorded in the provenance as ``weight_seed`` and ``weights = "random-init seed=N"``, with the
sha256 of the weights built (``weights_sha256``).

``twin("pythia-410m", scale="full")`` is Pythia-410M's exact architecture (24 layers, d_model
1024, 16 heads, parallel residual, 25 % rotary) with the library's own random
initialisation; ``scale="tiny"`` keeps every family feature (fused QKV, GQA ratio, partial
rotary, sliding window, MoE routing, q/k norms) at a size that runs in milliseconds.

Twins carry the embedded SmolLM2 tokenizer (no tokenizer of the real family is available
offline); where the real vocabulary is smaller than that tokenizer's (Mistral's 32 000) the
twin's vocabulary is enlarged to fit, and the layout records the size used.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.checks import check_seed, name_arg
from geoprobe.errors import GeoprobeError
from geoprobe.models.fingerprint import tensors_sha256
from geoprobe.models.gguf import embedded_gguf_path
from geoprobe.models.init_weights import init_key_weights as init
from geoprobe.models.loaded import LoadedModel, boot, torch_dtype
from geoprobe.models.options import TwinName, parse_twin, twin_seed  # noqa: F401  (their home is options: no torch)
from geoprobe.models.registry import ALIASES, closest_aliases, load_config_dict
from geoprobe.models.tiny import tiny_model
from geoprobe.paths import cache_dir
from geoprobe.provenance import Provenance

Scale = Literal["tiny", "full"]

# tiny: 3 layers, d_model 64, 4 query heads of 16 dims, GQA families keep a 2:1 ratio
_TINY = dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128)


#: GPT-2-style configs name these fields differently (transformers maps them through attribute_map)
_OTHER_NAMES = {
    "hidden_size": "n_embd",
    "num_hidden_layers": "n_layer",
    "num_attention_heads": "n_head",
    "intermediate_size": "n_inner",
}


def tiny_config(cfg: dict) -> dict:
    out = dict(cfg)
    for key, value in _TINY.items():
        out[_OTHER_NAMES[key] if _OTHER_NAMES[key] in cfg and key not in cfg else key] = value
    n_h = cfg.get("num_attention_heads") or cfg["n_head"]
    n_kv = cfg.get("num_key_value_heads") or n_h
    if "num_key_value_heads" in cfg:
        out["num_key_value_heads"] = 4 if n_kv == n_h else 2
    if "head_dim" in cfg:
        out["head_dim"] = 16
    if cfg.get("sliding_window"):
        out["sliding_window"] = 6  # short enough that test prompts cross the window
    if "num_local_experts" in cfg:
        out["num_local_experts"] = 4
    if cfg.get("model_type") == "gemma3_text":
        out["layer_types"] = ["sliding_attention", "sliding_attention", "full_attention"]
    return out


def embedded_tokenizer() -> Any:
    """The SmolLM2 tokenizer from the offline package, cached as a plain tokenizer directory."""
    from transformers import AutoTokenizer

    target = cache_dir() / "tokenizers" / "smollm2-135m"
    if (target / "DONE").exists():
        return AutoTokenizer.from_pretrained(target)
    spec = ALIASES["smollm2-135m"]
    assert spec.package and spec.gguf_file
    path = embedded_gguf_path(spec.package, spec.gguf_file)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    tok.save_pretrained(tmp)
    (tmp / "DONE").write_text("")
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    return tok


def twin_config(alias: str, scale: Scale = "tiny", vocab_size: int | None = None) -> Any:
    from transformers import AutoConfig

    spec = ALIASES.get(alias)
    if spec is None:
        near = closest_aliases(alias)
        raise GeoprobeError(f"no twin for {alias!r}; closest aliases: {', '.join(near) or 'see geoprobe models'}")
    if scale not in ("tiny", "full"):
        raise GeoprobeError(f"twin scale {scale!r} is not 'tiny' or 'full'; pass --scale tiny|full")
    d = dict(load_config_dict(spec.config))
    if scale == "tiny":
        d = tiny_config(d)
    if vocab_size is not None:
        d["vocab_size"] = vocab_size if scale == "tiny" else max(d["vocab_size"], vocab_size)
        for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
            if isinstance(d.get(key), int) and d[key] >= d["vocab_size"]:
                d[key] = None  # the family's special ids lie outside the twin's tokenizer
    arch = d.pop("architectures")
    d.pop("auto_map", None)  # remote-code pointers (Phi-3's hub config): a twin never runs remote code
    cfg = AutoConfig.for_model(**d)
    cfg.architectures = arch
    return cfg


def twin(alias: str, scale: Scale = "tiny", seed: int = 0, dtype: str = "float32", device: str = "cpu") -> LoadedModel:
    """A random-init model with the architecture of ``alias`` (see module docstring)."""
    from transformers import AutoModelForCausalLM

    alias = name_arg(alias, "alias", "a twin alias such as 'llama-3.2-1b' (geoprobe models lists them)")
    seed = check_seed(seed, "seed (the twin's weight seed)")
    if alias not in ALIASES and is_model_type(alias):
        return type_twin(alias, scale, seed, dtype, device)
    if alias not in ALIASES:  # refused before the tokenizer loads (a tenth of a second)
        twin_config(alias, scale)
    tok = embedded_tokenizer()
    cfg = twin_config(alias, scale, vocab_size=len(tok))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype(dtype)).to(device)
    return boot(model, tok, twin_provenance(f"twin:{alias}:{scale}", model, seed, dtype), ALIASES[alias])


def twin_provenance(model_id: str, model: Any, seed: int, dtype: str) -> Provenance:
    """A twin's provenance: its weight seed (``weights``, ``weight_seed``; ``seed`` too until prompts are
    attached) and the sha256 of the weights it was built with."""
    return Provenance(
        model_id=model_id,
        source="twin",
        weights=f"random-init seed={seed}",
        tokenizer="smollm2-135m (embedded)",
        dtype=dtype,
        seed=seed,
        weight_seed=seed,
        weights_sha256=tensors_sha256(model),
    )


def is_model_type(name: str) -> bool:
    from transformers import CONFIG_MAPPING

    return name in CONFIG_MAPPING


def type_twin(
    model_type: str, scale: Scale = "tiny", seed: int = 0, dtype: str = "float32", device: str = "cpu"
) -> LoadedModel:
    """``twin:MODEL_TYPE``: the tiny twin of any transformers model type (``geoprobe.models.tiny``),
    with the embedded SmolLM2 tokenizer's vocabulary."""
    if scale != "tiny":
        raise GeoprobeError(
            f"twin:{model_type}:{scale}: a twin named by its model type has only the tiny scale "
            "(no real config to copy); pass twin:{model_type} or an alias with a full config"
        )
    tok = embedded_tokenizer()
    model = tiny_model(model_type, seed=seed, vocab_size=len(tok)).to(dtype=torch_dtype(dtype), device=device)
    return boot(model, tok, twin_provenance(f"twin:{model_type}:tiny", model, seed, dtype), None)


def init_key_weights(cfg: Any, seed: int = 0, arch: Any = None) -> Float[np.ndarray, "L Hkv D d"]:
    """W_K of every layer at the architecture's random init ``seed``, (L, Hkv, d_model, d_head): the
    twin baseline of key orthogonality, for any architecture (see :mod:`geoprobe.models.init_weights`)."""
    return init(cfg, seed, arch)
