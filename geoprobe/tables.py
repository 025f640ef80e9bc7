"""Probe recipes as tables: how a config reads its settings from a recipe's TOML tables and writes them back.

A recipe (``probes/*.toml``) is a ``[probe]`` table naming the command, an optional ``[load]`` table (how
to load the model: the fields of :class:`geoprobe.models.loading.LoadOptions`, read by
:mod:`geoprobe.recipes`) and the experiment's own tables. Each experiment's config class reads and
writes its own tables (``from_tables(doc, path)`` / ``to_tables()``); the helpers here are what they
share: :class:`FlatTables` for a config whose one ``[<command>]`` table holds its fields,
:func:`entries` and :func:`typed` for configs with several tables, and :func:`dumps`, the TOML writer
(the standard library reads TOML but does not write it).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, ClassVar, Iterator, Mapping

from geoprobe.checks import check_fields, check_limits
from geoprobe.errors import GeoprobeError, ProbeError


def entries(doc: Mapping[str, Any], sections: Mapping[str, Mapping[str, str]], p: Path) -> Iterator[tuple]:
    """(section, key, field, value) of every recipe entry; an unknown section or key is a
    one-line ProbeError naming the file and what is known."""
    for section, table in doc.items():
        allowed = sections.get(section)
        if allowed is None or not isinstance(table, dict):
            raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {', '.join(sections)}")
        for key, value in table.items():
            if key not in allowed:
                raise ProbeError(f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(allowed)}")
            yield section, key, allowed[key], value


def typed(cls: type, values: dict[str, Any], p: Path, keys: Mapping[str, str]) -> None:
    """Each recipe value fits its config field's type and stays within the field's upper limit (the
    class's ``LIMITS``), or a one-line ProbeError naming ``section.key``."""
    try:
        check_fields(cls, values, lambda f: f"probe {str(p)!r}: {keys.get(f, f)}")
    except GeoprobeError as exc:
        raise ProbeError(f"{exc}; fix it in the recipe") from None
    try:
        check_limits(values, getattr(cls, "LIMITS", {}), lambda f: keys.get(f, f))
    except GeoprobeError as exc:
        raise ProbeError(f"probe {str(p)!r}: {exc} in the recipe") from None


def tupled(value: Any) -> Any:
    """A TOML list as the tuple a config field holds (a list of lists as a tuple of tuples)."""
    if isinstance(value, list):
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return value


def changed_fields(config: Any) -> dict[str, Any]:
    """The fields of a dataclass ``config`` that differ from their defaults (a recipe need not repeat a default)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if default is dataclasses.MISSING or value != default:
            out[f.name] = value
    return out


class FlatTables:
    """Recipe tables of a config whose ``[TABLE]`` table (and ``[analyses]``, for the seed and resampling
    settings) holds its fields, one key per field: ``geoprobe sula --help`` names them."""

    TABLE: ClassVar[str]

    @classmethod
    def from_tables(cls, doc: Mapping[str, Any], p: Path) -> Any:
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for section, table in doc.items():
            if section not in (cls.TABLE, "analyses") or not isinstance(table, dict):
                raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {cls.TABLE}, analyses")
            for key, value in table.items():
                if key not in known:
                    raise ProbeError(
                        f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(sorted(known))}"
                    )
                keys[key] = f"{section}.{key}"
                values[key] = tupled(value)
        typed(cls, values, p, keys)
        return cls(**values)

    def to_tables(self) -> dict[str, dict[str, Any]]:
        return {self.TABLE: changed_fields(self)}


# -- writing TOML ----------------------------------------------------------------------------------------
def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable() or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def value_text(value: Any, where: str) -> str:
    """One TOML value: a string, boolean, integer, float or a (nested) list of them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v, where) for v in value) + "]"
    if isinstance(value, Path):
        return _string(str(value))
    if value is None:
        raise ProbeError(f"{where} = None cannot be written to a recipe (TOML has no null); set it in Python")
    raise ProbeError(f"{where} = {value!r} cannot be written to a recipe (TOML has no {type(value).__name__})")


def dumps(tables: Mapping[str, Mapping[str, Any]]) -> str:
    """TOML text of ``{table: {key: value}}``. TOML has no null: a setting that is None where its default is
    not (written by :func:`changed_fields`) cannot be written, and says so."""
    lines: list[str] = []
    for name, table in tables.items():
        if lines:
            lines.append("")
        lines.append(f"[{name}]")
        for key, value in table.items():
            lines.append(f"{key} = {value_text(value, f'{name}.{key}')}")
    return "\n".join(lines) + "\n"
