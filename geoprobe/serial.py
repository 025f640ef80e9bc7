"""Serialisation written once: frozen dataclasses to strict JSON and back, driven by their fields.

A :class:`Record` is a frozen dataclass whose ``to_dict`` / ``from_dict`` walk
``dataclasses.fields()`` (after SAELens's field-driven config serialisation): each field is
encoded by its value and decoded by its type annotation. The rules, the same for every record:

==========================  =================================  ==================================
value / annotation           written as                         read back as
==========================  =================================  ==================================
nested ``Record``            its ``to_dict()``                  ``Type.from_dict``
float NaN / ±Inf             ``null`` (strict JSON)             ``float`` → NaN; ``float | None`` → None
numpy array                  nested lists (NaN → ``null``)      ``np.ndarray`` (NaN for ``null``)
tuple / list                 list                               ``tuple[...]`` / ``list[...]``
dict with int keys           object, keys as strings, sorted    ``dict[int, ...]`` with int keys
numpy scalar                 the Python number                  —
==========================  =================================  ==================================

A field with ``metadata={"stored": False}`` is not written (and is not read back: it must have a
default). A class whose stored shape really differs from its fields overrides ``to_dict`` /
``from_dict`` itself; everything else inherits them. Two records are equal when their
``to_dict()`` are (NaN == NaN), which is what "the same result" means for a saved file.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from pathlib import PurePath
from typing import Any, ClassVar, Union

import numpy as np

__all__ = ["Record", "decode", "encode", "json_float", "from_json_float"]


def json_float(x: float) -> float | None:
    """A float for JSON: NaN/Inf become None."""
    x = float(x)
    return x if math.isfinite(x) else None


def from_json_float(x: float | None) -> float:
    """The float a JSON value stands for: None is NaN."""
    return math.nan if x is None else float(x)


def encode(x: Any) -> Any:
    """``x`` as strict-JSON data (see the module's table)."""
    if isinstance(x, Record):
        return x.to_dict()
    if isinstance(x, bool) or x is None or isinstance(x, (str, int)):
        return x
    if isinstance(x, float):
        return json_float(x)
    if isinstance(x, np.ndarray):
        return encode(x.tolist())
    if isinstance(x, np.generic):
        return encode(x.item())
    if isinstance(x, (list, tuple)):
        return [encode(v) for v in x]
    if isinstance(x, dict):
        items = list(x.items())
        if items and all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k, _ in items):
            items.sort()
        return {str(k): encode(v) for k, v in items}
    if isinstance(x, enum.Enum):
        return encode(x.value)
    if isinstance(x, PurePath):
        return str(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: encode(getattr(x, f.name)) for f in dataclasses.fields(x)}
    raise TypeError(f"cannot store a {type(x).__name__} in a results file")


def _is_array_type(t: Any) -> bool:
    return t is np.ndarray or getattr(t, "array_type", None) is np.ndarray


def _array(t: Any, v: Any) -> np.ndarray:
    dtypes = getattr(t, "dtypes", None)
    if dtypes is not None and "float32" not in dtypes and "float64" not in dtypes:
        return np.asarray(v)  # Int / Bool arrays: never hold null
    return np.asarray(_nan_for_none(v), dtype=float)


def _nan_for_none(v: Any) -> Any:
    if v is None:
        return math.nan
    if isinstance(v, list):
        return [_nan_for_none(e) for e in v]
    return v


def decode(t: Any, v: Any) -> Any:
    """The value of annotation ``t`` that the JSON data ``v`` stands for."""
    if t is Any or t is object:
        return v
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        return decode(rest[0], v) if len(rest) == 1 else v
    if origin is typing.Literal:
        return v
    if isinstance(t, type) and issubclass(t, Record):
        return t.from_dict(v)
    if _is_array_type(t):
        return _array(t, v)
    if t is float:
        return from_json_float(v)
    if t in (int, str, bool):
        if v is None or isinstance(v, (dict, list)):
            raise TypeError(f"expected {t.__name__}, found {type(v).__name__}")
        return t(v)
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return t(v)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], e) for e in v)
        if args:
            if len(args) != len(v):
                raise ValueError(f"expected {len(args)} items, found {len(v)}")
            return tuple(decode(a, e) for a, e in zip(args, v))
        return tuple(v)
    if origin is list:
        return [decode(args[0], e) for e in v] if args else list(v)
    if origin is dict:
        kt, vt = args if args else (Any, Any)
        if not isinstance(v, dict):
            raise TypeError(f"expected an object, found {type(v).__name__}")
        return {decode(kt, k): decode(vt, e) for k, e in v.items()}
    if t in (tuple, list, dict):
        return t(v)
    return v


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


class Record:
    """Field-driven ``to_dict`` / ``from_dict`` / ``==`` for frozen dataclasses (declare them
    ``eq=False``); see the module docstring for the rules."""

    #: fields written under another key (old files' names): {field name: stored key}
    STORED_AS: ClassVar[dict[str, str]] = {}

    def to_dict(self) -> dict[str, Any]:
        names, out = self.STORED_AS, {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if not f.metadata.get("stored", True) or (value is None and f.metadata.get("omit_none")):
                continue
            if f.metadata.get("omit_default") and value == f.default:  # files from before the field re-encode as read
                continue
            out[names.get(f.name, f.name)] = encode(value)
        return out

    @classmethod
    def field_values(cls, d: dict[str, Any]) -> dict[str, Any]:
        """The constructor's keyword arguments that ``d`` (a ``to_dict()``) stands for; a field with
        a default may be missing from ``d`` (files written before it existed)."""
        if not isinstance(d, dict):
            raise TypeError(f"expected an object for {cls.__name__}, found {type(d).__name__}")
        hints, names, out = _hints(cls), cls.STORED_AS, {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if not f.metadata.get("stored", True) or not f.init:
                continue
            key = names.get(f.name, f.name)
            if key not in d:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise KeyError(key)
                continue
            out[f.name] = decode(hints[f.name], d[key])
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]):  # -> Self
        return cls(**cls.field_values(d))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]
