"""Checks of settings that many configs share, each failing with geoprobe's one-line error, and the
arguments of the public Python API (:func:`prompts_arg`, :func:`model_arg`, :func:`config_arg`,
:func:`name_arg`, :func:`bool_arg`, :func:`path_arg`, :func:`optional_str_arg`, :func:`callable_arg`):
every entry point of ``geoprobe.PUBLIC`` checks its arguments with these, before any work, and a wrong one
is an :class:`~geoprobe.errors.ArgumentError` (a ``TypeError``) naming the argument and what it got."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geoprobe.errors import ArgumentError, GeoprobeError

#: seeds every consumer takes: numpy's Generator and RandomState, torch.manual_seed, scikit-learn
SEED_MAX = 2**32 - 1


def check_seed(seed: Any, where: str = "--seed") -> int:
    """``seed`` if it is an integer in [0, 2**32 - 1] (what numpy's RandomState, scikit-learn and
    torch all accept), else a one-line error naming ``where`` it was set."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise GeoprobeError(f"seed {seed!r} is not an integer; pass {where} between 0 and {SEED_MAX}")
    if not 0 <= seed <= SEED_MAX:
        raise GeoprobeError(
            f"seed {seed} is outside [0, {SEED_MAX}] (the range numpy, torch and scikit-learn all take); "
            f"pass {where} between 0 and {SEED_MAX}"
        )
    return seed


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as TOML/JSON gives it: lists for tuples) fits the type annotation ``hint``:
    int, float, bool, str, None, Literal, unions, tuple[X, ...] / tuple[X, Y], dict, dataclasses."""
    import dataclasses
    import types
    from typing import Literal, Union, get_args, get_origin

    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if hint is type(None) or hint is None:
        return value is None
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args))
    if origin in (dict,) or hint is dict:
        return isinstance(value, dict)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, (dict, hint))
    return True  # a type these recipes do not use: left to the config's own checks


def describe(hint: Any) -> str:
    """``hint`` in words, for an error message ("an integer", "a list of integers", "one of 'a', 'b'")."""
    import types
    from typing import Literal, Union, get_args, get_origin

    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return " or ".join(describe(a) for a in kept) + (" (or left out)" if len(kept) < len(args) else "")
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            inner = describe(args[0])
            return "a list of " + {
                "an integer": "integers",
                "a number": "numbers",
                "a string": "strings",
                "true or false": "booleans",
            }.get(inner, f"({inner})")
        return f"a list of {len(args)} values"
    return {int: "an integer", float: "a number", bool: "true or false", str: "a string", dict: "a table"}.get(
        hint, getattr(hint, "__name__", str(hint))
    )


def check_fields(cls: type, values: dict[str, Any], name: Any = None) -> None:
    """Every ``values[field]`` fits ``cls``'s annotation of that field, or a one-line error that names
    the setting (``name(field)``, default the field) and what it should be."""
    from typing import get_type_hints

    hints = get_type_hints(cls)
    for field, value in values.items():
        if field in hints and not conforms(value, hints[field]):
            where = name(field) if name else field
            raise GeoprobeError(f"{where} = {value!r} is not {describe(hints[field])}")


def _bool_for_int(value: Any, hint: Any) -> bool:
    """Whether ``value`` holds ``True``/``False`` where ``hint`` wants an integer (alone, or inside a
    tuple or list): Python counts True as 1, so ``layers=[True]`` would silently be layer 1."""
    import types
    from collections.abc import Sequence
    from typing import Union, get_args, get_origin

    origin, args = get_origin(hint), get_args(hint)
    if hint is int:
        return isinstance(value, bool)
    if origin in (Union, types.UnionType):
        return bool not in args and any(_bool_for_int(value, a) for a in args if a is not type(None))
    if origin in (tuple, list, Sequence) and isinstance(value, (tuple, list)):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return any(_bool_for_int(v, a) for v, a in zip(value, args))
        return bool(args) and any(_bool_for_int(v, args[0]) for v in value)
    return False


def check_no_bools(config: Any, what: str) -> None:
    """A one-line error when a field of dataclass ``config`` that takes integers (a count, a layer, a
    list of layers) holds ``True`` or ``False``; ``what`` names the config in the message. Called first
    in every config's ``__post_init__``, before any ``int(...)`` would turn True into 1."""
    import dataclasses
    from typing import get_type_hints

    hints = get_type_hints(type(config))
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in hints and _bool_for_int(value, hints[f.name]):
            raise GeoprobeError(
                f"{what} setting {f.name} = {value!r} is not {describe(hints[f.name])}: true/false is no "
                f"integer (Python would count True as 1); pass integers"
            )


# ---------------------------------------------------------------- arguments of the public Python API
#: what a LoadedModel has (geoprobe.models.loaded; read by attribute, so this layer needs no model code)
MODEL_ATTRIBUTES = ("hf_model", "tokenizer", "layout", "provenance")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def strings_arg(values: Any, name: str, what: str = "strings", *, paths: bool = False) -> list[Any]:
    """``values`` as a list: a list, tuple or any other iterable (a generator is read once, here) whose
    items are strings (with ``paths``, also ``os.PathLike``). A bare string or bytes (which would be
    one item per character), a mapping, an open file, ``None`` or an item of another type is an
    :class:`ArgumentError` naming ``name``."""
    import io
    from collections.abc import Iterable as IterableABC
    from collections.abc import Mapping

    if isinstance(values, (str, bytes, os.PathLike)):
        raise ArgumentError(
            f"{name} is a single {type(values).__name__} ({_shown(values)}), not a list of {what}: pass "
            f"[{_shown(values)}] for one"
        )
    if isinstance(values, io.IOBase):
        raise ArgumentError(
            f"{name} is an open file; pass its {what} as a list (geoprobe.prompts.read_prompts(path) reads a "
            "prompt file)"
        )
    if isinstance(values, Mapping) or not isinstance(values, IterableABC):
        raise ArgumentError(f"{name} is {type(values).__name__} ({_shown(values)}); pass a list of {what}")
    items = list(values)
    ok = (str, os.PathLike) if paths else (str,)
    for i, v in enumerate(items):
        if not isinstance(v, ok):
            raise ArgumentError(f"{name}[{i}] is {type(v).__name__} ({_shown(v)}), not a string; pass a list of {what}")
    return items


def prompts_arg(prompts: Any, name: str = "prompts") -> list[str]:
    """The prompts of an API call as a list of strings (:func:`strings_arg`; a generator is accepted and
    read once)."""
    return strings_arg(prompts, name, "prompt strings")


def name_arg(value: Any, name: str, example: str) -> str:
    """``value`` if it is a string (an ``os.PathLike`` is turned into one), else an :class:`ArgumentError`
    naming ``name`` with an ``example`` of what to pass."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise ArgumentError(f"{name} is {type(value).__name__} ({_shown(value)}), not a string; pass {example}")
    return value


def model_arg(model: Any, name: str = "model", *, names: bool = False) -> Any:
    """``model`` if it is a LoadedModel (from ``geoprobe.load_model``, ``geoprobe.twin`` or
    ``geoprobe.wrap``) or, with ``names``, a model name to load; else an :class:`ArgumentError`."""
    if names and isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if all(hasattr(model, a) for a in MODEL_ATTRIBUTES):
        return model
    what = "a model name such as 'smollm2-135m' or " if names else ""
    raise ArgumentError(
        f"{name} is {type(model).__name__} ({_shown(model)}); pass {what}a LoadedModel from geoprobe.load_model, "
        "geoprobe.twin or geoprobe.wrap"
    )


def _refuse(name: str, value: Any, wanted: str, fix: str) -> ArgumentError:
    """The one message of every wrong argument: "NAME is TYPE (VALUE), not WANTED; FIX"."""
    return ArgumentError(f"{name} is {type(value).__name__} ({_shown(value)}), not {wanted}; {fix}")


def bool_arg(value: Any, name: str) -> bool:
    """``value`` if it is ``True`` or ``False``; anything else (``"false"``, ``1``, ``None``) is an
    :class:`ArgumentError`: ``bool("false")`` is True, so a string would silently switch the setting on."""
    if isinstance(value, bool):
        return value
    raise _refuse(name, value, "a bool", f"pass {name}=True or {name}=False")


def path_arg(value: Any, name: str, example: str, *, optional: bool = True) -> Path | None:
    """``value`` as a :class:`~pathlib.Path` if it is a str or ``os.PathLike`` (``None`` stays None where
    ``optional``); else an :class:`ArgumentError` naming ``name`` with an ``example`` of what to pass."""
    if value is None and optional:
        return None
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise _refuse(name, value, "a path", f"pass {example} (a str or os.PathLike){', or None' if optional else ''}")


def optional_str_arg(value: Any, name: str, example: str) -> str | None:
    """``value`` if it is a string or ``None``; else an :class:`ArgumentError` naming ``name``."""
    if value is None or isinstance(value, str):
        return value
    raise _refuse(name, value, "a string", f"pass {example}, or None")


def callable_arg(value: Any, name: str, signature: str) -> Any:
    """``value`` if it is callable or ``None``; else an :class:`ArgumentError` naming ``name`` and the
    ``signature`` it is called with."""
    if value is None or callable(value):
        return value
    raise _refuse(name, value, "a callable", f"pass a function {signature}, or None")


def config_arg(config: Any, cls: type, name: str = "config") -> Any:
    """``config`` if it is a ``cls``; a dict (or anything else) is an :class:`ArgumentError` saying how to
    make one (``cls(**d)``; a recipe's settings: ``geoprobe.recipes.load_probe``)."""
    if isinstance(config, cls):
        return config
    hint = f"{cls.__name__}(**{name})" if isinstance(config, dict) else f"{cls.__name__}(...)"
    article = "an" if cls.__name__[:1] in "AEIOU" else "a"
    raise ArgumentError(
        f"{name} is {type(config).__name__} ({_shown(config)}), not {article} {cls.__name__}; pass {hint}"
    )


# -- sizes: every count a flag or a recipe sets has a documented upper limit (issue 27) -----------
#: bootstrap resamples, permutations and null draws: 100× the default of 1,000 (the papers use 1,000 to
#: 10,000); at 10^5 the Monte Carlo error of a 95 % percentile bound is a fraction of a percent of the
#: interval and a permutation p-value resolves 1e-5, while every resample loop keeps one number per draw
RESAMPLES_MAX = 100_000
RESAMPLES_WHY = "100× the default; the papers use 1,000 to 10,000 and more draws no longer change a CI"
#: optimiser steps of the training commands (windtunnel, denoise, dynamics): 10× the longest the papers run
#: (the wind tunnel's 100,000 steps); only time grows with them (one loss per step is kept)
STEPS_MAX = 1_000_000
STEPS_WHY = "10× the wind tunnel paper's 100,000 steps, the longest training any of the papers runs"
#: prompts per forward batch: far above what helps on any device (the forward-pass memory estimate,
#: geoprobe.capture.memory, refuses a batch that does not fit well before this)
BATCH_MAX = 4096
BATCH_WHY = "far above what speeds up a forward pass on any device; memory is estimated as well"


@dataclass(frozen=True)
class Limit:
    """The range of one size setting: at most ``high`` (``why``: the reason, said in the error and the
    docs), at least ``low`` where no other check says more; ``flag`` is the command-line flag (or, where
    there is none, the recipe key) that sets it."""

    high: int
    why: str
    flag: str | None = None
    low: int | None = None

    @classmethod
    def resamples(cls, flag: str) -> Limit:
        """Bootstrap resamples, permutations or null draws (:data:`RESAMPLES_MAX`)."""
        return cls(RESAMPLES_MAX, RESAMPLES_WHY, flag)

    @classmethod
    def batch(cls, flag: str) -> Limit:
        """Prompts per forward batch (:data:`BATCH_MAX`)."""
        return cls(BATCH_MAX, BATCH_WHY, flag)

    @classmethod
    def steps(cls, flag: str, low: int | None = None) -> Limit:
        """Optimiser steps of a training command (:data:`STEPS_MAX`)."""
        return cls(STEPS_MAX, STEPS_WHY, flag, low)


def check_range(value: Any, *, high: int, where: str, why: str = "", low: int | None = None) -> Any:
    """``value`` (a number, or each number of a list) if it lies in [``low``, ``high``]; else a one-line
    error naming ``where`` (a flag such as ``--n-resamples`` or a recipe key such as
    ``analyses.n_resamples``), the limit, why it is there, and the largest (or smallest) value that fits.
    Values of another type are left to :func:`check_fields` and the config's own checks."""
    many = isinstance(value, (tuple, list))
    what, verb = (f"{where} holds", ",") if many else (f"{where} =", " is")
    for v in value if many else (value,):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if low is not None and v < low:
            raise GeoprobeError(f"{what} {v}{verb} below {low}; {_fix(where, low, 'or more', many)}")
        if v > high:
            reason = f" ({why})" if why else ""
            raise GeoprobeError(
                f"{what} {v}{verb} above the limit of {high}{reason}; {_fix(where, high, 'or less', many)}"
            )
    return value


def _fix(where: str, value: int, side: str, many: bool) -> str:
    value_s = f"values of {value}" if many else str(value)
    return f"pass {where} {value_s} {side}" if where.startswith("--") else f"set {where} to {value_s} {side}"


def check_limits(values: Any, limits: dict[str, Limit], name: Any = None) -> None:
    """Every setting of ``values`` (a mapping, or an object with those attributes) that ``limits`` bounds
    lies in its range (:func:`check_range`); ``name(field)`` says where it was set (default: the limit's
    flag, else the field)."""
    for field, lim in limits.items():
        value = values.get(field) if isinstance(values, dict) else getattr(values, field, None)
        if value is not None:
            where = name(field) if name else (lim.flag or field)
            check_range(value, high=lim.high, low=lim.low, where=where, why=lim.why)
