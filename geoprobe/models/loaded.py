"""The loaded model: :class:`LoadedModel` (a plain Hugging Face model and what capture needs to know
about it) and :func:`boot`, which makes one from any Hugging Face causal LM. Every way in (the
loaders of ``loading.py``, twins, ``wrap``) ends in :func:`boot`; this module imports none of them."""

from __future__ import annotations

import copy
import itertools
import logging
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models.architecture import Architecture, architecture_name, input_device, inspect_model, probing
from geoprobe.models.attention import Probe
from geoprobe.models.bridge import unwrap_bridge
from geoprobe.models.heads import check_heads
from geoprobe.models.language import text_config
from geoprobe.models.layout import Layout
from geoprobe.models.registry import ModelSpec
from geoprobe.models.verify import check_causal, check_same_model, own_logits, padding_dependence, position_offset
from geoprobe.provenance import Provenance

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    """A loaded model and everything capture needs to know about it."""

    hf_model: Any
    tokenizer: Any
    arch: Architecture
    layout: Layout
    provenance: Provenance
    context_length: int
    spec: ModelSpec | None = None
    _bridge: Any = field(default=None, repr=False)
    #: seconds its load took, where geoprobe timed it (:func:`timed`: a run's or a sweep cell's load); None for
    #: a model loaded elsewhere and passed in (``load_model``, ``twin`` or ``wrap`` called by the user)
    load_s: float | None = field(default=None, compare=False)

    @property
    def bridge(self) -> Any:
        """A TransformerBridge over a weight-sharing copy of ``hf_model``, booted on first use."""
        if self._bridge is None:
            self._bridge = boot_bridge(self.hf_model, self.tokenizer, self.provenance.model_id)
        return self._bridge

    @property
    def model_id(self) -> str:
        return self.provenance.model_id

    @property
    def device(self) -> torch.device:
        return input_device(self.hf_model)


def timed(load: Callable[[], LoadedModel]) -> LoadedModel:
    """``load()``'s model with the seconds the call took as its ``load_s`` (what a scan records as its load
    time: the model is loaded before the scan starts, so the scan cannot time it itself)."""
    import time

    t = time.perf_counter()
    model = load()
    model.load_s = time.perf_counter() - t
    return model


def torch_dtype(name: str) -> torch.dtype:
    if name not in _DTYPES:
        raise GeoprobeError(f"dtype {name!r} is not one of {sorted(_DTYPES)}; pass --dtype float32|bfloat16|float16")
    return _DTYPES[name]


def quiet_libraries() -> None:
    """Silence transformers', huggingface_hub's and TransformerLens's logging, progress bars and warnings."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    hf_logging.disable_progress_bar()
    logging.getLogger("root").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module="transformer_lens")
    warnings.filterwarnings("ignore", message=".*generation flags.*")


def context_length(cfg: Any) -> int:
    """The model's context window, from its (language model's) config; 2048 where none says."""
    for c in (text_config(cfg), cfg):
        for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
            v = getattr(c, key, None)
            if isinstance(v, int) and v > 0:
                return v
    return 2048


def prepare_tokenizer(tok: Any) -> Any:
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    return tok


def boot(
    hf_model: Any,
    tokenizer: Any,
    provenance: Provenance,
    spec: ModelSpec | None = None,
) -> LoadedModel:
    """Inspect a Hugging Face causal LM's attention (refusing, in one line, what geoprobe cannot read)."""
    quiet_libraries()
    hf_model = unwrap_bridge(hf_model)
    hf_model.eval()
    check_heads(hf_model.config.to_dict(), provenance.model_id)
    own = own_logits(hf_model)  # the reference of the three load-time checks (verify.py)
    check_causal(hf_model, architecture_name(hf_model), own)
    arch = inspect_model(hf_model)
    arch.position_offset = position_offset(hf_model, own)
    arch.padding_dependent = padding_dependence(hf_model, arch.position_offset)
    check_same_model(hf_model, arch.name, lambda: probing(hf_model, arch, Probe.silent()), own)
    hf_model.config.architectures = [arch.name]
    return LoadedModel(
        hf_model=hf_model,
        tokenizer=prepare_tokenizer(tokenizer),
        arch=arch,
        layout=arch.layout,
        provenance=provenance,
        context_length=context_length(hf_model.config),
        spec=spec,
    )


def boot_bridge(hf_model: Any, tokenizer: Any, model_id: str) -> Any:
    """TransformerLens's TransformerBridge over a structural copy of ``hf_model`` that shares its
    parameters and buffers (booting wraps modules in place and switches to eager attention)."""
    from transformer_lens.model_bridge import TransformerBridge

    shared = {id(t): t for t in itertools.chain(hf_model.parameters(), hf_model.buffers())}
    clone = copy.deepcopy(hf_model, shared)
    device = next(hf_model.parameters()).device
    try:
        bridge = TransformerBridge.boot_transformers(
            model_id,
            hf_model=clone,
            tokenizer=tokenizer,
            device=None if getattr(hf_model, "hf_device_map", None) else str(device),
            dtype=next(hf_model.parameters()).dtype,
        )
    except (ValueError, KeyError, NotImplementedError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UnsupportedArchitectureError(
            f"TransformerLens cannot wrap {hf_model.config.architectures[0]!r} in a TransformerBridge ({first}); "
            "geoprobe's own commands do not need one"
        ) from exc
    bridge.eval()
    return bridge
