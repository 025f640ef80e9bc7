"""Every kind of results file geoprobe writes, and how to read any of them back.

A results file names its ``kind`` (``"geoprobe.scan"``, ``"geoprobe.sula"``, …); :data:`KINDS`
maps each kind to its result class (imported when first needed), so that ``geoprobe report`` and
a run being finished can rebuild any page from its JSON without knowing the experiment.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from geoprobe.errors import ResultsError

#: results kind -> "module:Class" of the frozen result dataclass that reads it
KINDS: dict[str, str] = {
    "geoprobe.scan": "geoprobe.scan.result:ScanResult",
    "geoprobe.domains": "geoprobe.analysis.domains:DomainComparison",
    "geoprobe.compare": "geoprobe.compare.result:ModelComparison",
    "geoprobe.sula": "geoprobe.sula.result:SulaResult",
    "geoprobe.intervene": "geoprobe.intervene.experiment:InterventionResult",
    "geoprobe.positional": "geoprobe.positional.result:PositionalResult",
    "geoprobe.positional.windtunnel": "geoprobe.positional.tunnel:TunnelLengthCurve",
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
