"""Which modules of a model are its softmax-attention layers, found from what the model does.

:func:`survey` runs one short forward pass with transformers' attention function replaced by
geoprobe's and notes every call (the module that made it, its query and key) and every
module named like an attention module that ran. :func:`attention_layers` reads the layers
from that, never from a table of class names:

* an attention layer is a module that calls the attention function once per forward pass
  with one query per token (whatever its class is called: Longcat's ``LongcatFlashMLA``,
  Moshi's attention with its own linear maps); calls whose queries are not one per token
  (Inkling 2's attention over the outputs of earlier blocks, a depth mixer) are not layers;
* a module that calls it twice with the same queries and keys and other values combines two
  results per head (differential attention, DiffLlama): refused as ``differential``; one
  that calls it several times with different queries runs at several depths of one pass
  (looped layers, a block shared between layers): refused as ``looped``;
* a module named like attention that runs but never calls the function is left out as a
  linear-attention layer (MiniMax's lightning attention, Kimi's and Bailing's delta rule)
  only when both the model and its config say so: no softmax is computed inside it (no
  ``softmax`` or ``scaled_dot_product_attention`` call, watched with a ``TorchFunctionMode``)
  and the config's per-layer kinds (``layer_types`` and the like) give its layer a kind that
  no calling layer has; otherwise it stays, and the architecture probe refuses it;
* a layer's number is the module's own ``layer_idx`` (``layer_id``, ``layer_number``) or,
  where it has none (Zamba's shared-weight blocks), the index of the model layer it sits in;
* a model whose modules named like attention all run, compute no softmax and never call the
  function (RWKV), or with no call over the tokens at all, is refused as ``no-attention``; layers
  that read more keys than tokens (DeepSeek-V4's compressed keys) are noted.

:func:`refuse_encoder_decoder` runs first: attention modules that stay idle on tokens alone
and run once the model is given an encoder's output (``encoder_hidden_states`` or
``encoder_outputs``) are cross-attention, and the model is the decoder of an encoder-decoder.
"""

from __future__ import annotations

import inspect
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from jaxtyping import Int
from torch.overrides import TorchFunctionMode

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models import attention as A
from geoprobe.models.layout import Heads

#: attribute names a module may keep its layer number under
LAYER_ATTRIBUTES = ("layer_idx", "layer_id", "layer_number")


@dataclass
class Call:
    """One call of the attention function: the module that made it, its query and key (B, H, T, d)."""

    module: Any
    query: torch.Tensor
    key: torch.Tensor


@dataclass
class Recorder(A.Probe):
    """A probe that keeps every call as it came (module, query, key) and nothing else."""

    seen: list[Call] = field(default_factory=list)

    def record(self, module: Any, query: torch.Tensor, key: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        self.seen.append(Call(module, query.detach(), key.detach()))


@dataclass
class Survey:
    """What one forward pass of ``tokens`` tokens showed: the calls, and which named modules ran."""

    tokens: int
    calls: list[Call]
    named: list[Any]  # modules named like attention (``architecture.attention_modules``)
    ran: set[int]  # ids of the named modules that ran


def _run_hooks(modules: list[Any], ran: set[int]) -> ExitStack:
    stack = ExitStack()
    for m in modules:
        h = m.register_forward_pre_hook(lambda mod, args: ran.add(id(mod)) and None)
        stack.callback(h.remove)
    return stack


def survey(hf_model: Any, named: list[Any], ids: Int[torch.Tensor, "batch pos"], interface: bool) -> Survey:
    """One forward pass of ``ids``, through geoprobe's attention function where ``interface``."""
    ran: set[int] = set()
    rec = Recorder(queries=False, keys=False, values=False, attn_out=False, attention=False)
    with ExitStack() as stack, torch.no_grad():
        stack.enter_context(_run_hooks(named, ran))
        if interface:
            stack.enter_context(A.active(hf_model, rec))
        hf_model(ids, use_cache=False)
    return Survey(int(ids.shape[1]), rec.seen, named, ran)


class _SoftmaxWatch(TorchFunctionMode):
    """Marks every module on ``stack`` (entered, not yet left) when a softmax is computed."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[int] = []
        self.hit: set[int] = set()

    def enter(self, module: Any) -> None:
        self.stack.append(id(module))

    def leave(self) -> None:  # returns None: a forward hook's return value would replace the output
        self.stack.pop()

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = getattr(func, "__name__", "")
        if self.stack and ("softmax" in name or "scaled_dot_product" in name):
            self.hit.update(self.stack)
        return func(*args, **(kwargs or {}))


def computing_softmax(hf_model: Any, modules: list[Any], ids: Int[torch.Tensor, "batch pos"]) -> set[int]:
    """Ids of the ``modules`` inside whose forward a softmax (or SDPA) is computed, in one pass of ``ids``."""
    watch = _SoftmaxWatch()
    with ExitStack() as stack, torch.no_grad():
        for m in modules:
            h1 = m.register_forward_pre_hook(lambda mod, args: watch.enter(mod))
            h2 = m.register_forward_hook(lambda mod, args, out: watch.leave())
            stack.callback(h1.remove)
            stack.callback(h2.remove)
        stack.enter_context(watch)
        hf_model(ids, use_cache=False)
    return watch.hit


def _names(modules: list[Any]) -> str:
    return ", ".join(sorted({type(m).__name__ for m in modules}))


# -- encoder-decoders --------------------------------------------------------------------------
def refuse_encoder_decoder(hf_model: Any, name: str, seen: Survey, ids: Int[torch.Tensor, "batch pos"]) -> None:
    """Refuse the decoder of an encoder-decoder: attention modules idle on tokens alone that run
    once the model is given an encoder's output (cross-attention)."""
    idle = [m for m in seen.named if id(m) not in seen.ran]
    if not idle:
        return
    params = inspect.signature(hf_model.forward).parameters
    cfg = hf_model.config.get_text_config()
    width = next(
        (
            int(v)
            for k in ("cross_attention_hidden_size", "encoder_hidden_size")
            if isinstance(v := getattr(cfg, k, None), int)
        ),
        int(cfg.hidden_size),
    )
    enc = torch.randn(ids.shape[0], 5, width, generator=torch.Generator().manual_seed(0))
    enc = enc.to(device=ids.device, dtype=hf_model.get_input_embeddings().weight.dtype)
    if "encoder_hidden_states" in params:
        given = {"encoder_hidden_states": enc}
    elif "encoder_outputs" in params:
        given = {"encoder_outputs": (enc,)}
    else:
        return
    ran: set[int] = set()
    try:
        with _run_hooks(idle, ran), torch.no_grad():
            hf_model(ids, use_cache=False, **given)
    except Exception:  # noqa: BLE001 - a model that does not take an encoder's output has no cross-attention
        return
    cross = [m for m in idle if id(m) in ran]
    if cross:
        raise UnsupportedArchitectureError(
            f"{name}: the decoder of an encoder-decoder model: {len(cross)} of its {len(seen.named)} attention "
            f"modules ({_names(cross)}) attend to an encoder's output (cross-attention) and stay idle on a text "
            "prompt alone; geoprobe measures decoder-only self-attention",
            reason="encoder-decoder",
        )


def refuse_without_softmax(hf_model: Any, name: str, named: list[Any], ids: Int[torch.Tensor, "batch pos"]) -> None:
    """Refuse as having no softmax attention a model whose modules named like attention all run and
    compute no softmax (RWKV's time mixing: a recurrence, not softmax attention)."""
    ran: set[int] = set()
    with _run_hooks(named, ran):
        softmax = computing_softmax(hf_model, named, ids)
    if named and not softmax and len(ran) == len(named):
        raise UnsupportedArchitectureError(
            f"{name}: its attention modules ({_names(named)}) compute no softmax (linear attention or a "
            "recurrence); geoprobe measures softmax attention; pass a transformer to --model",
            reason="no-attention",
        )


# -- layer numbers -----------------------------------------------------------------------------
def _own_number(module: Any) -> int | None:
    for attr in LAYER_ATTRIBUTES:
        v = getattr(module, attr, None)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


def _layer_lists(hf_model: Any) -> list[torch.nn.ModuleList]:
    n = getattr(hf_model.config.get_text_config(), "num_hidden_layers", None)
    return [m for m in hf_model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n]


def layer_numbers(hf_model: Any, modules: list[Any]) -> dict[int, int | None]:
    """{id(module): its model layer}: its own ``layer_idx`` (or ``layer_id``, ``layer_number``), else
    the index of the model layer (an entry of the model's list of ``num_hidden_layers`` layers) that
    holds it; None where neither says."""
    out: dict[int, int | None] = {}
    lists = None
    for m in modules:
        own = _own_number(m)
        if own is None:
            lists = _layer_lists(hf_model) if lists is None else lists
            holders = {i for lst in lists for i, block in enumerate(lst) if any(c is m for c in block.modules())}
            own = holders.pop() if len(holders) == 1 else None
        out[id(m)] = own
    return out


def lookup(modules: dict[int, Any]) -> Callable[[Any], int | None]:
    """The layer of a module from ``{layer: module}``; None for any other module."""
    by_id = {id(m): layer for layer, m in modules.items()}
    return lambda module: by_id.get(id(module))


# -- the layers --------------------------------------------------------------------------------
def _per_layer_kinds(hf_model: Any) -> list[list[str]]:
    """The config's per-layer lists (``layer_types``, ``layers_block_type``, ...): every public list
    as long as the layer count (not a string: "eager" is no pattern of five layers)."""
    cfg = hf_model.config.get_text_config()
    n = getattr(cfg, "num_hidden_layers", None)
    if not isinstance(n, int) or n < 2:
        return []
    return [
        [str(x) for x in v]
        for k, v in vars(cfg).items()
        if not k.startswith("_") and isinstance(v, (list, tuple)) and len(v) == n
    ]


@dataclass
class Layers:
    """The attention layers found, what else stays for the probe to judge, and what was left out."""

    modules: dict[int, Any]  # model layer -> module calling the attention function once, one query per token
    undecided: list[Any]  # modules named like attention that are none of the above (the probe refuses them)
    notes: list[str]


def _repeated(name: str, module: Any, calls: list[Call]) -> UnsupportedArchitectureError:
    same = all(
        c.query.shape == calls[0].query.shape
        and c.key.shape == calls[0].key.shape
        and torch.equal(c.query, calls[0].query)
        and torch.equal(c.key, calls[0].key)
        for c in calls[1:]
    )
    what = type(module).__name__
    if same:
        return UnsupportedArchitectureError(
            f"{name}: each {what} calls the attention function {len(calls)} times per forward pass with the same "
            "queries and keys and different values, and its output combines the results (differential "
            "attention: two softmax maps per head); geoprobe measures one map per head",
            reason="differential",
        )
    return UnsupportedArchitectureError(
        f"{name}: one {what} calls the attention function {len(calls)} times per forward pass on different "
        "inputs: the same attention weights run at several depths (looped layers, or one block shared by "
        "several layers); geoprobe needs one attention module per layer",
        reason="looped",
    )


def _same_number(hf_model: Any, name: str, modules: list[Any], number: int) -> UnsupportedArchitectureError:
    """Several attention modules say they are layer ``number``: where they sit (the stacks of layers,
    each numbering from 0, as in BLT's patcher, local encoder and decoder), in one line."""
    paths = {id(m): p for p, m in hf_model.named_modules()}
    stacks: list[str] = []
    for m in modules:
        parts = paths.get(id(m), "?").split(".")
        stack = ".".join(parts[: next((i for i, q in enumerate(parts) if q.isdigit()), len(parts))])
        if stack not in stacks:
            stacks.append(stack)
    where = (
        f"they sit in {len(stacks)} separate stacks of layers ({', '.join(stacks)}), each numbering its own layers"
        if len(stacks) > 1
        else f"all in {stacks[0]}"
    )
    return UnsupportedArchitectureError(
        f"{name}: {len(modules)} attention modules with one query per token say they are layer {number}: {where}; "
        "geoprobe cannot order them into one stack of layers",
        reason="no-layer-index",
    )


def attention_layers(hf_model: Any, name: str, seen: Survey, ids: Int[torch.Tensor, "batch pos"]) -> Layers:
    """The model's attention layers from a :func:`survey`, or a one-line refusal (module docstring)."""
    notes: list[str] = []
    token_calls = [c for c in seen.calls if c.query.shape[2] == seen.tokens]
    other = [c.module for c in seen.calls if c.query.shape[2] != seen.tokens]
    if other:
        notes.append(
            f"{_names(other)} also call the attention function, with queries that are not one per token "
            "(not attention over the tokens): not measured"
        )
    per_module: dict[int, list[Call]] = {}
    for c in token_calls:
        per_module.setdefault(id(c.module), []).append(c)
    for calls in per_module.values():
        if len(calls) > 1:
            raise _repeated(name, calls[0].module, calls)
    if not per_module:
        refuse_without_softmax(hf_model, name, seen.named, ids)
        if not seen.named:
            raise UnsupportedArchitectureError(
                f"{name}: geoprobe finds no attention over the tokens: only {_names(other)} call the attention "
                "function, with queries that are not one per token; geoprobe measures softmax attention",
                reason="no-attention",
            )
    calling = [calls[0].module for calls in per_module.values()]
    numbers = layer_numbers(hf_model, calling)
    unnumbered = [m for m in calling if numbers[id(m)] is None]
    if unnumbered:
        raise UnsupportedArchitectureError(
            f"{name}: attention module {type(unnumbered[0]).__name__} has no layer number (no "
            f"{'/'.join(LAYER_ATTRIBUTES)}) and sits in no single one of the model's layers; geoprobe cannot "
            "tell which layer it is",
            reason="no-layer-index",
        )
    twice = [layer for layer, k in Counter(numbers.values()).items() if k > 1]
    if twice:
        raise _same_number(hf_model, name, [m for m in calling if numbers[id(m)] == twice[0]], twice[0])
    modules = {numbers[id(m)]: m for m in calling}
    extra = sorted(numbers[id(c.module)] for c in token_calls if c.key.shape[2] > seen.tokens)
    if extra:
        notes.append(
            f"layers {extra} attend to more keys than tokens (entries built from the tokens, such as compressed "
            "keys): attention entropy is over every key, a saved attention pattern holds the token positions only"
        )
    called = {id(c.module) for c in seen.calls}
    silent = [m for m in seen.named if id(m) not in called]
    linear = _linear_attention(hf_model, [m for m in silent if id(m) in seen.ran], modules, ids)
    if linear:
        kinds = sorted({kind for _, kind in linear.values()})
        notes.append(
            f"layers {sorted(linear)} ({_names([m for m, _ in linear.values()])}) compute no softmax and are "
            f"{'/'.join(kinds)} layers by the config: linear attention, not measured"
        )
    left_out = {id(m) for m, _ in linear.values()}
    undecided = [m for m in silent if id(m) not in left_out]
    return Layers(dict(sorted(modules.items())), undecided, notes)


def _linear_attention(
    hf_model: Any, silent: list[Any], calling: dict[int, Any], ids: Int[torch.Tensor, "batch pos"]
) -> dict[int, tuple[Any, str]]:
    """{layer: (module, its kind)} of the silent modules that are linear attention (module docstring)."""
    if not silent or not calling:
        return {}
    numbers = layer_numbers(hf_model, silent)
    top = max([*calling, *(n for n in numbers.values() if n is not None)])
    lists = [kinds for kinds in _per_layer_kinds(hf_model) if len(kinds) > top]
    softmax = computing_softmax(hf_model, silent, ids)
    out = {}
    for m in silent:
        layer = numbers[id(m)]
        if layer is None or id(m) in softmax or layer in calling:
            continue
        kind = next((kinds[layer] for kinds in lists if kinds[layer] not in {kinds[c] for c in calling}), None)
        if kind is not None:
            out[layer] = (m, kind)
    return out


def head_layouts(layers: Sequence[int], heads: Sequence[Heads]) -> str:
    """Which layers have which head layout: "layers [0, 2]: 4 query heads and 2 key/value heads of width
    16; layers [1]: ..." (``heads[i]`` is layer ``layers[i]``'s)."""
    groups: dict[Heads, list[int]] = {}
    for layer, h in zip(layers, heads):
        groups.setdefault(h, []).append(int(layer))

    def one(h: Heads) -> str:
        widths = f"of width {h.d_qk}" if h.d_qk == h.d_head else f"of width {h.d_qk} (values {h.d_head})"
        return f"{h.n_heads} query heads and {h.n_kv_heads} key/value heads {widths}"

    return "; ".join(f"layers {ly}: {one(h)}" for h, ly in groups.items())
