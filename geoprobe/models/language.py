"""The language model of a multimodal checkpoint: the part geoprobe measures on text prompts.

A vision- or speech-language checkpoint (Gemma 3, Llama 3.2 Vision, Phi-4-multimodal, GIT,
GOT-OCR2, Fuyu, …) holds a language model beside encoders for the other modalities, and keeps the
language model's sizes in a sub-config (``text_config``). geoprobe feeds token ids only, so what it
measures is the language model's self-attention on text. This module finds it without a table of
type names:

* :func:`text_config`: the config holding the language model's sizes (``config.get_text_config()``:
  the config itself for a text-only model);
* :func:`towers`: the encoders of the other modalities, i.e. every sub-model (a ``PreTrainedModel``
  inside the model) whose config is neither the model's own nor the text config (a vision or audio
  config); their attention modules are not attention layers of the language model;
* :class:`LayersRun`: which attention modules sit in a layer (the element of a ``ModuleList``
  that holds them) the model skips on a text prompt (Llama 3.2 Vision's cross-attention layers,
  which need image features): those are not attention layers on text; a module in a layer that
  runs but whose attention never calls the attention function (BART's cross-attention) is kept,
  and ``inspect_model`` refuses it;
* :func:`owners`: the model classes that hold the language model's attention modules (where
  transformers says whether attention goes through ``AttentionInterface``).
"""

from __future__ import annotations

from typing import Any

import torch


def text_config(config: Any) -> Any:
    """The config that holds the language model's sizes (hidden_size, vocab_size, layers, …)."""
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def _sub_models(hf_model: Any) -> list[tuple[str, Any]]:
    from transformers import PreTrainedModel

    return [(n, m) for n, m in hf_model.named_modules() if n and isinstance(m, PreTrainedModel)]


def towers(hf_model: Any) -> list[tuple[str, Any]]:
    """(name, sub-model) of every encoder of another modality: a sub-model whose config is neither
    the model's own nor its text config (SigLIP in Gemma 3, the audio encoder of Phi-4-multimodal)."""
    own, text = hf_model.config, text_config(hf_model.config)
    return [
        (n, m)
        for n, m in _sub_models(hf_model)
        if m.config is not own and m.config is not text and type(m.config) not in (type(own), type(text))
    ]


def _within(name: str, prefixes: list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def language_modules(hf_model: Any, modules: list[Any]) -> list[Any]:
    """The modules of ``modules`` that are not inside an encoder of another modality."""
    outside = [n for n, _ in towers(hf_model)]
    if not outside:
        return list(modules)
    names = {id(m): n for n, m in hf_model.named_modules()}
    return [m for m in modules if not _within(names.get(id(m), ""), outside)]


def tower_names(hf_model: Any) -> list[str]:
    """The class names of the encoders of other modalities (outermost only), for messages."""
    found = towers(hf_model)
    outer = [n for n, _ in found if not _within(n.rsplit(".", 1)[0], [p for p, _ in found if p != n])]
    kinds = {n: type(m).__name__ for n, m in found}
    return sorted({kinds[n] for n in outer})


def layers_of(hf_model: Any, modules: list[Any]) -> dict[int, Any]:
    """{id(module): its layer}: the nearest enclosing element of a ``ModuleList`` (the module itself
    where none encloses it)."""
    parents: dict[str, Any] = dict(hf_model.named_modules())
    wanted = {id(m) for m in modules}
    out = {}
    for name, m in parents.items():
        if id(m) not in wanted:
            continue
        layer, parts = m, name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = parents.get(".".join(parts[:i]))
            if isinstance(parent, torch.nn.ModuleList):
                layer = parents[".".join(parts[: i + 1])]
                break
        out[id(m)] = layer
    return out


class LayersRun:
    """A context manager recording, during one forward pass, which layers of ``modules`` run."""

    def __init__(self, hf_model: Any, modules: list[Any]) -> None:
        self.modules = list(modules)
        self.layer_of = layers_of(hf_model, self.modules)
        self.ran: set[int] = set()
        self.handles: list[Any] = []

    def __enter__(self) -> "LayersRun":
        for layer in {id(x): x for x in self.layer_of.values()}.values():
            self.handles.append(layer.register_forward_pre_hook(lambda mod, args: self.ran.add(id(mod))))
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []

    def split(self) -> tuple[list[Any], list[Any]]:
        """(modules whose layer ran, modules whose layer the model skipped); where no layer ran at all,
        every module counts as run (the attention-call check then says what is wrong)."""
        skipped = [m for m in self.modules if id(self.layer_of[id(m)]) not in self.ran]
        if len(skipped) == len(self.modules):
            return self.modules, []
        return [m for m in self.modules if id(self.layer_of[id(m)]) in self.ran], skipped


def language_notes(hf_model: Any, skipped: list[Any]) -> list[str]:
    """What a multimodal model's architecture notes say: the encoders and skipped layers not measured."""
    notes = []
    towers = tower_names(hf_model)
    if towers:
        notes.append(
            f"the language model's attention layers are measured on text prompts; {', '.join(towers)} "
            "(encoders of other modalities) are not"
        )
    if skipped:
        numbers = sorted(getattr(m, "layer_idx", -1) for m in skipped)
        which = f"layers {numbers}" if min(numbers) >= 0 else f"{len(skipped)} layers"
        notes.append(
            f"{which} ({type(skipped[0]).__name__}) do not run on a text prompt (the model skips them without "
            "image or audio input): they are not measured"
        )
    return notes


def owners(hf_model: Any, modules: list[Any]) -> set[type]:
    """The classes of the innermost model (``PreTrainedModel``) holding each of ``modules``."""
    subs = sorted(_sub_models(hf_model), key=lambda nm: -len(nm[0]))
    names = {id(m): n for n, m in hf_model.named_modules()}
    found: set[type] = set()
    for m in modules:
        name = names.get(id(m), "")
        found.add(next((type(s) for n, s in subs if _within(name, [n])), type(hf_model)))
    return found


def build_causal_lm(cfg: Any, **kwargs: Any) -> Any:
    """``AutoModelForCausalLM.from_config(cfg, **kwargs)``, also where the causal-LM class takes one of
    ``cfg``'s sub-configs (MusicGen's decoder) and for the text config of a multimodal type, which the
    auto class maps from the full config only (Llama 3.2 Vision's ``MllamaTextConfig`` builds
    ``MllamaForCausalLM``): then the causal-LM class that takes that config, named by
    ``cfg.architectures`` or by the auto mapping of the config's own model package."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        mapped = MODEL_FOR_CAUSAL_LM_MAPPING[type(cfg)]
    except KeyError:
        mapped = None
    wants = getattr(mapped, "config_class", None)
    if wants is not None and not isinstance(cfg, wants):
        subs = [getattr(cfg, k, None) for k in getattr(cfg, "sub_configs", {})]
        subs = [c for c in subs if isinstance(c, wants)]
        if len(subs) == 1:
            return mapped._from_config(subs[0], **kwargs)
    try:
        return transformers.AutoModelForCausalLM.from_config(cfg, **kwargs)
    except ValueError:
        package = type(cfg).__module__.split(".")[-2]
        names = [*(getattr(cfg, "architectures", None) or ())]
        names += [v for k, v in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items() if k.replace("-", "_") == package]
        for name in names:
            cls = getattr(transformers, name, None)
            if cls is not None and getattr(cls, "config_class", None) is type(cfg):
                return cls._from_config(cfg, **kwargs)
        raise
