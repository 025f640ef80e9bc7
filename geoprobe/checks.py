"""Checks of settings that many configs share, each failing with geoprobe's one-line error."""

from __future__ import annotations

from typing import Any

from geoprobe.errors import GeoprobeError

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
