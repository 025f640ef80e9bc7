"""Names a package imports on first use (PEP 562), written once for every package that wants them.

A package whose ``__init__`` would otherwise import heavy modules (torch, scipy, plotly) lists its public
names as ``"module:attribute"`` (or ``"module"`` for a submodule) and binds the two module-level hooks::

    __getattr__, __dir__ = lazy_names(__name__, {"scan": "geoprobe.scan.run:scan", ...})

so ``import geoprobe.scan.config`` stays cheap (issue 39 case 7) and ``geoprobe.scan.scan`` still works. A name
is resolved once, then stored in the package's namespace. This module imports only the standard library."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def resolve(target: str) -> Any:
    """``"module:attribute"`` (or ``"module"``) imported and looked up."""
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attr) if attr else value


def lazy_names(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``table`` (name -> target)."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = resolve(target)
        setattr(sys.modules[package], name, value)  # resolved once
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__


__all__ = ["lazy_names", "resolve"]
