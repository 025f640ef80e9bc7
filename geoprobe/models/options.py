"""How to load a model, without loading anything: :class:`LoadOptions` (every loading setting, its flag and
help), its cheap checks, what ``--model`` names (:func:`model_kind`, a twin's name and weight seed). No torch or
transformers here (they come with :func:`geoprobe.models.loading.load_model`): reading a recipe, a sweep file
or ``geoprobe sweep status`` checks loading settings without them (issue 39 case 7)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from geoprobe.checks import SEED_MAX, bool_arg, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.models.device_map import parse_device_map
from geoprobe.models.partial import FLAG as PARTIAL_FLAG
from geoprobe.models.registry import ALIASES, DEFAULT_MODEL, find_spec_by_hf_id

if TYPE_CHECKING:
    from geoprobe.models.loaded import LoadedModel

DType = Literal["float32", "bfloat16", "float16"]
#: the dtypes a model is loaded in (--dtype)
DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")


def check_dtype(name: str) -> str:
    """``name`` if it is one of :data:`DTYPES` (the torch dtype: geoprobe.models.loaded.torch_dtype)."""
    if name not in DTYPES:
        raise GeoprobeError(f"dtype {name!r} is not one of {sorted(DTYPES)}; pass --dtype float32|bfloat16|float16")
    return name


def is_loaded_model(value: Any) -> bool:
    """Whether ``value`` is a :class:`~geoprobe.models.loaded.LoadedModel`, without importing torch: none
    exists before geoprobe.models.loaded is imported."""
    loaded = sys.modules.get("geoprobe.models.loaded")
    return loaded is not None and isinstance(value, loaded.LoadedModel)


#: the torch device types geoprobe computes on (a model, its activations and the analyses' inputs)
DEVICE_TYPES = ("cpu", "cuda")


def check_device(name: str) -> str:
    """``name`` if geoprobe can compute there: the CPU, or a CUDA device this machine has. Anything else
    torch accepts as a device (``meta``, which holds shapes and no data; ``mps``, ``xla``, …; ``cuda:N``
    past the devices present) is a one-line error naming --device and the devices that exist here."""
    if name == "cpu":  # the default: no need to import torch to know it
        return name
    import torch

    try:
        dev = torch.device(name)
    except RuntimeError:
        raise GeoprobeError(f"--device {name!r} is not a torch device; pass cpu, cuda or cuda:N") from None
    if dev.type == "meta":
        raise GeoprobeError(
            f"--device {name!r} holds tensor shapes and no data, so nothing can be measured on it; pass "
            "--device cpu, cuda or cuda:N"
        )
    if dev.type not in DEVICE_TYPES:
        raise GeoprobeError(
            f"--device {name!r}: geoprobe computes on cpu or cuda (cuda:N) only, not on {dev.type!r} devices; "
            "pass --device cpu, cuda or cuda:N"
        )
    if dev.type == "cpu":
        if dev.index not in (None, 0):
            raise GeoprobeError(f"--device {name!r}: torch has one CPU device, cpu (cpu:0); pass --device cpu")
        return name
    if not torch.cuda.is_available():
        raise GeoprobeError(f"--device {name!r}: no CUDA device is available here; pass --device cpu")
    n = torch.cuda.device_count()
    if dev.index is not None and dev.index >= n:
        have = "cuda:0" if n == 1 else f"cuda:0 to cuda:{n - 1}"
        raise GeoprobeError(
            f"--device {name!r}: this machine has {n} CUDA device{'s' if n != 1 else ''} ({have}); pass one "
            "of them, cuda, or --device cpu"
        )
    return name


def model_kind(name: str) -> Literal["twin", "gguf", "embedded", "local", "hub"]:
    """What ``--model name`` names, decided without loading anything: a twin, a .gguf file, an alias
    whose weights ship offline as GGUF, a local directory, or a Hub model (alias or owner/name)."""
    if name.startswith("twin:"):
        return "twin"
    if name.lower().endswith(".gguf"):
        return "gguf"
    if Path(os.path.expanduser(name)).is_dir():
        return "local"
    spec = ALIASES.get(name.lower()) or (find_spec_by_hf_id(name) if "/" in name else None)
    return "embedded" if spec is not None and spec.source == "embedded" else "hub"


_NO_REVISIONS = {
    "twin": "a random-init twin has no revisions",
    "gguf": "a .gguf file holds one set of weights",
    "embedded": "its weights ship offline as one GGUF file",
    "local": "a local directory holds one set of weights (pass the Hub id for another revision)",
}


_NOT_A_CHECKPOINT = {
    "twin": "geoprobe builds a twin in memory with every weight (no checkpoint is read)",
    "gguf": "a .gguf file is not a Hugging Face checkpoint",
    "embedded": "its weights ship offline as one GGUF file",
}

MODEL_HELP = "alias (geoprobe models), Hub id, local dir, .gguf file, or twin:ALIAS[:tiny|full][@SEED]"


def _flag(flag: str, help: str, short: str | None = None) -> dict[str, Any]:
    return {"flag": flag, "help": help, **({"short": short} if short else {})}


def load_fields() -> tuple[Any, ...]:
    """The loading settings (dataclass fields of :class:`LoadOptions`), each with its ``flag`` and ``help``
    in ``metadata``."""
    return fields(LoadOptions)


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model; every command that loads one takes exactly these (``--model``,
    ``--revision``, ``--dtype``, ``--device``, ``--device-map``, ``--trust-remote-code``,
    ``--allow-pickle``, ``--allow-partial-weights``, ``--weight-seed``). A setting that cannot apply to the
    model named is refused, never ignored (``--weight-seed`` for anything but a twin: real weights have no seed).

    Each field's ``flag`` and ``help`` are the one place its command-line flag is written: the
    commands' options (geoprobe.cli.options), ``geoprobe run``, a recipe's ``[load]`` table and
    :func:`geoprobe.run` all read them from here (:func:`load_fields`)."""

    model: str = field(default=DEFAULT_MODEL, metadata=_flag("--model", MODEL_HELP, short="-m"))
    revision: str | None = field(
        default=None, metadata=_flag("--revision", "Hub revision, e.g. step0 … step143000 for Pythia (Hub models only)")
    )
    dtype: DType = field(default="float32", metadata=_flag("--dtype", "float32|bfloat16|float16"))
    device: str = field(default="cpu", metadata=_flag("--device", "cpu | cuda | cuda:N"))
    device_map: str | dict | None = field(
        default=None, metadata=_flag("--device-map", "accelerate device map for Hub/local models, e.g. auto")
    )
    trust_remote_code: bool = field(
        default=False, metadata=_flag("--trust-remote-code", "run model code shipped with the model (off by default)")
    )
    allow_pickle: bool = field(
        default=False, metadata=_flag("--allow-pickle", "accept non-safetensors weights (weights_only load)")
    )
    allow_partial_weights: bool = field(
        default=False,
        metadata=_flag(
            PARTIAL_FLAG,
            "load weights that do not match config.json (tensors missing, unexpected or mis-shaped: "
            "transformers initialises the missing ones at random); recorded in the provenance",
        ),
    )
    weight_seed: int | None = field(
        default=None,
        metadata=_flag("--weight-seed", "a random-init twin's weight seed (default 0; also twin:ALIAS@N; twins only)"),
    )

    def check(self) -> "LoadOptions":
        """Cheap checks before any work: the switches are bools (``"false"`` would switch remote code on), the
        dtype, the device, and flags that do not apply."""
        for name in ("trust_remote_code", "allow_pickle", "allow_partial_weights"):
            bool_arg(getattr(self, name), name)
        check_dtype(self.dtype)
        check_device(self.device)
        kind = model_kind(self.model)
        what = f"--model {self.model!r}"
        if kind == "twin":
            twin_seed(self.model, self.weight_seed)
        elif self.weight_seed is not None:
            raise GeoprobeError(
                f"--weight-seed {self.weight_seed!r} does not apply to {what}: real weights have no seed (only a "
                "random-init twin, twin:ALIAS, is built from one); drop --weight-seed"
            )
        if self.revision is not None and kind in _NO_REVISIONS:
            raise GeoprobeError(
                f"--revision {self.revision!r} does not apply to {what}: {_NO_REVISIONS[kind]}; drop --revision"
            )
        if kind in ("twin", "gguf", "embedded"):
            for flag, on in (
                ("--device-map", self.device_map is not None),
                ("--trust-remote-code", self.trust_remote_code),
                ("--allow-pickle", self.allow_pickle),
            ):
                if on:
                    raise GeoprobeError(
                        f"{flag} does not apply to {what}: geoprobe builds it in memory (no Hugging "
                        f"Face weights to dispatch, no model code, no pickle); drop {flag}"
                    )
        if self.allow_partial_weights and kind in _NOT_A_CHECKPOINT:
            raise GeoprobeError(
                f"{PARTIAL_FLAG} does not apply to {what}: {_NOT_A_CHECKPOINT[kind]}; the flag is for Hub models "
                f"and local directories whose weights may not match their config.json; drop {PARTIAL_FLAG}"
            )
        if self.device_map is not None:
            parse_device_map(self.device_map)
        if self.device_map is not None and self.device != "cpu":
            raise GeoprobeError(
                f"--device-map {self.device_map!r} places the layers itself; drop --device "
                f"{self.device!r} or --device-map"
            )
        return self

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`load_model` (everything but ``model``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "model"}

    def load(self) -> LoadedModel:
        import importlib

        # geoprobe.models.loading (torch) imports this module: its load_model is reached at call time only
        return importlib.import_module("geoprobe.models.loading").load_model(self.model, **self.kwargs())


@dataclass(frozen=True)
class TwinName:
    """``twin:ALIAS[:tiny|full][@SEED]`` read: the alias (or transformers model type), the scale as written
    (None: not written, i.e. tiny) and the weight seed as written (None: not written, i.e. 0)."""

    alias: str
    scale: str | None
    seed: int | None

    @property
    def model_id(self) -> str:
        """The twin's ``model_id`` (its architecture: ``twin:ALIAS:SCALE``; the seed is in ``weight_seed``)."""
        return f"twin:{self.alias}:{self.scale or 'tiny'}"


def parse_twin(name: str) -> TwinName:
    """Read ``twin:ALIAS[:tiny|full][@SEED]``; a seed that is not an integer in [0, 2**32 - 1] is one line."""
    body = name.removeprefix("twin:")
    head, at, text = body.partition("@")
    seed = None
    if at:
        if not text.isdigit() or not text.isascii() or int(text) > SEED_MAX:
            raise GeoprobeError(
                f"twin seed {'@' + text!r} of --model {name!r} is not an integer in [0, {SEED_MAX}]; write "
                "twin:ALIAS@N (e.g. twin:gpt2@3, twin:gpt2:tiny@3) or pass --weight-seed N"
            )
        seed = int(text)
    alias, _, scale = head.partition(":")
    return TwinName(alias, scale or None, seed)


def twin_seed(name: str, weight_seed: Any) -> int:
    """The weight seed of the twin ``name`` loaded with ``--weight-seed`` ``weight_seed`` (None: not given):
    the one given (in the name or the flag, 0 where neither); both given and different is one line."""
    written = parse_twin(name).seed
    if weight_seed is None:
        return 0 if written is None else written
    check_seed(weight_seed, "--weight-seed (weight_seed)")
    if written is not None and written != weight_seed:
        raise GeoprobeError(
            f"--weight-seed {weight_seed} and the seed @{written} in --model {name!r} differ; give the twin's "
            "weight seed once (twin:ALIAS@N or --weight-seed N)"
        )
    return weight_seed
