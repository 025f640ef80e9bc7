"""Results files: the one :class:`Result` base, and how to read any results file back.

Every experiment's result is a frozen dataclass deriving :class:`Result`: class constants name
its ``KIND``, ``VERSION``, file and page; ``to_dict`` / ``from_dict`` come from
:class:`geoprobe.serial.Record` (driven by the fields); the envelope (kind, version, geoprobe
version), the damaged / other-version errors and the atomic, no-overwrite ``save`` are written
once, here. A results file names its ``kind`` (``"geoprobe.scan"``, ``"geoprobe.sula"``, …);
:data:`KINDS` maps each kind to its result class (imported when first needed), so that
``geoprobe report`` and a run being finished can rebuild any page from its JSON without knowing
the experiment.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, ClassVar

from geoprobe.errors import ResultsError
from geoprobe.serial import Record

#: results kind -> "module:Class" of the frozen result dataclass that reads it
KINDS: dict[str, str] = {
    "geoprobe.scan": "geoprobe.scan.result:ScanResult",
    "geoprobe.domains": "geoprobe.analysis.domains:DomainComparison",
    "geoprobe.compare": "geoprobe.compare.result:ModelComparison",
    "geoprobe.sula": "geoprobe.sula.result:SulaResult",
    "geoprobe.intervene": "geoprobe.intervene.result:InterventionResult",
    "geoprobe.positional": "geoprobe.positional.result:PositionalResult",
    "geoprobe.positional.windtunnel": "geoprobe.positional.result:TunnelLengthCurve",
    "geoprobe.denoise": "geoprobe.denoise.result:DenoiseResult",
    "geoprobe.windtunnel": "geoprobe.windtunnel.result:WindTunnelResult",
}

_FIX = "pass a results file that a geoprobe command wrote (results.json, sula.json, …) or its run directory"


def result_class(kind: str) -> type:
    """The result class that reads files of ``kind``."""
    module, _, name = KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def result_files() -> tuple[str, ...]:
    """The default results file names, one per kind (``results.json``, ``sula.json``, …)."""
    return tuple(dict.fromkeys(result_class(k).file_name() for k in KINDS))


def find_results(path: str | os.PathLike) -> Path:
    """``path`` itself if it is a file; inside a directory, the one results file it holds
    (a one-line error when there is none or there are several)."""
    p = Path(path)
    if not p.is_dir():
        if not p.exists():
            raise ResultsError(f"results file {str(p)!r} does not exist; {_FIX}")
        return p
    found = [p / name for name in result_files() if (p / name).is_file()]
    if not found:
        raise ResultsError(f"{str(p)!r} holds no geoprobe results file ({', '.join(result_files())}); {_FIX}")
    if len(found) > 1:
        raise ResultsError(f"{str(p)!r} holds several results files ({', '.join(f.name for f in found)}); "
                           "pass the one to use")
    return found[0]


def load_result(path: str | os.PathLike) -> Any:
    """Read any geoprobe results file (or the one inside a run directory) with its own class."""
    from geoprobe.paths import read_json

    p = find_results(path)
    d, source = read_json(p, default_name=None, what="results file", fix=_FIX)
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind not in KINDS:
        raise ResultsError(f"{source} is not a geoprobe results file that has a report (kind {kind!r}); {_FIX}")
    return result_class(kind).from_dict(d, source)


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
        from geoprobe import __version__

        return {"kind": self.KIND, "version": self.VERSION, "geoprobe": __version__, **self.body()}

    def body(self) -> dict[str, Any]:
        """The stored fields, without the envelope (override where the stored shape differs)."""
        return Record.to_dict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "results"):  # -> Self
        """Read a ``to_dict()`` back; a file of another kind or version, or one whose fields do not
        hold what this class stores, is a one-line ResultsError naming ``source``."""
        from geoprobe.paths import check_results_kind

        d = check_results_kind(d, kind=cls.KIND, version=cls.VERSION, source=source, what=cls.WHAT, fix=cls.FIX)
        try:
            return cls.from_body(d)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); {cls.FIX}") from None

    @classmethod
    def from_body(cls, d: dict[str, Any]):  # -> Self
        """Build the result from the stored fields (override together with :meth:`body`)."""
        return cls(**cls.field_values(d))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result as strict JSON, atomically. An existing geoprobe results file is replaced
        (the CLI asks for --force first); any other file there is refused, never overwritten."""
        from geoprobe.outputs import is_geoprobe_file, refuse_foreign
        from geoprobe.paths import write_json

        p = Path(path)
        if (p.exists() or p.is_symlink()) and not is_geoprobe_file(p):
            refuse_foreign(p)
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
