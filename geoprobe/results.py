"""Results files: the one :class:`Result` base, and how to read any results file back.

Every experiment's result is a frozen dataclass deriving :class:`Result`: class constants name
its ``KIND``, ``VERSION``, file and page; ``to_dict`` / ``from_dict`` come from
:class:`geoprobe.serial.Record` (driven by the fields); the envelope (kind, version, geoprobe
version), the damaged / other-version errors and the atomic, no-overwrite ``save`` are written
once, here. A results file names its ``kind`` (``"geoprobe.scan"``, ``"geoprobe.sula"``, …);
:data:`geoprobe.recipes.KINDS` maps each kind to its result class, and
:func:`geoprobe.recipes.load_result` reads any results file with it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

from geoprobe.errors import ResultsError
from geoprobe.serial import Record
from geoprobe.version import __version__

_FIX = "pass a results file that a geoprobe command wrote (results.json, sula.json, …) or its run directory"


def check_kind(d: object, *, kind: str, version: int, source: str, what: str, fix: str) -> dict:
    """``d`` as a dict after checking its ``kind`` and ``version``; a one-line ResultsError otherwise
    (``what``: e.g. "wind-tunnel results file"; ``fix``: what to pass or re-run)."""
    if not isinstance(d, dict) or d.get("kind") != kind:
        found = d.get("kind") if isinstance(d, dict) else None
        raise ResultsError(f"{source} is not a geoprobe {what} (kind {found!r}); {fix}")
    if d.get("version") != version:
        raise ResultsError(
            f"{source} has {what} version {d.get('version')!r} (written by geoprobe "
            f"{d.get('geoprobe')}); this geoprobe reads version {version}: {fix}"
        )
    return d


class Result(Record):
    """Base of every results file's class (a frozen dataclass declared ``eq=False``).

    Subclasses set ``KIND`` (``"geoprobe.<name>"``), ``VERSION`` (raise it when the stored shape
    changes), ``FILE`` (default name inside a run directory), ``PAGE`` (its HTML page's name, or
    None), ``WHAT`` (how errors name the file) and ``FIX`` (what to pass or re-run instead)."""

    KIND: ClassVar[str]
    VERSION: ClassVar[int] = 1
    FILE: ClassVar[str]
    PAGE: ClassVar[str | None] = None
    WHAT: ClassVar[str] = "results file"
    FIX: ClassVar[str] = _FIX

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, "version": self.VERSION, "geoprobe": __version__, **self.body()}

    def body(self) -> dict[str, Any]:
        """The stored fields, without the envelope (override where the stored shape differs)."""
        return Record.to_dict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "results"):  # -> Self
        """Read a ``to_dict()`` back; a file of another kind or version, or one whose fields do not
        hold what this class stores, is a one-line ResultsError naming ``source``."""
        d = check_kind(d, kind=cls.KIND, version=cls.VERSION, source=source, what=cls.WHAT, fix=cls.FIX)
        try:
            return cls.from_body(d)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); {cls.FIX}") from None

    @classmethod
    def from_body(cls, d: dict[str, Any]):  # -> Self
        """Build the result from the stored fields (override together with :meth:`body`)."""
        return cls(**cls.field_values(d))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result as strict JSON, atomically. An existing results file of the same kind
        that geoprobe wrote is replaced (the CLI asks for --force first); any other file there,
        results of another kind included, is refused, never overwritten."""
        from geoprobe.checks import path_arg
        from geoprobe.outputs import check_same_kind
        from geoprobe.paths import write_json

        p = path_arg(path, "path", f"a file path such as {self.FILE!r}", optional=False)
        check_same_kind(p, self.KIND)
        return write_json(p, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike):  # -> Self
        """Read a results file (or ``FILE`` inside a run directory)."""
        from geoprobe.paths import read_json

        d, source = read_json(path, default_name=cls.FILE, what=cls.WHAT, fix=cls.FIX)
        return cls.from_dict(d, source)

    @classmethod
    def file_name(cls) -> str:
        """The results file's default name inside a run directory (e.g. ``sula.json``)."""
        return cls.FILE

    @classmethod
    def page_name(cls) -> str | None:
        """The HTML page's default name beside the results file (e.g. ``sula.html``)."""
        return cls.PAGE
