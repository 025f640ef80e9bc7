"""A run directory's life: claimed before any work, finished when a run stopped between writes.

Every command that writes a run directory (scan, compare-domains, compare, sula, intervene,
positional, denoise, windtunnel) declares its :class:`RunOutputs`: the results JSON, the HTML page
built from it, and the data written before the JSON (a capture, prompt lines). It writes them in
that order: data, JSON, page, figures. A run directory holds one command's run. :func:`claim_run`,
before any model loads,

1. checks the location (:func:`geoprobe.outputs.check_location`), including that the directory is
   no other output's and lies inside none (a run never inside another run, a capture or a
   training run, but for the run it is declared part of);
2. takes the output lock (a second process on the same ``--out`` is refused at once);
3. checks that every output already there was written by geoprobe as the same kind of file (the
   results of this command, a page, prompt lines; anything else is never replaced, ``--force``
   or not);
4. decides: a fresh run; a run to *finish* — the same command with the same settings (the
   request recorded beside the JSON, ``.geoprobe-run.json``, and the JSON's sha256 both match)
   whose page or requested figures are missing, which are then rebuilt from the JSON without
   recomputing; or an existing run, refused without ``--force``.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from geoprobe.errors import OutputExistsError
from geoprobe.kinds import CAPTURE_KIND, PAGE_KIND, PROMPTS_KIND, RECORD, RECORD_KIND
from geoprobe.outputs import (
    CAPTURE_FILES,
    MIN_FREE_BYTES,
    OutputLock,
    check_location,
    check_replaceable_dir,
    check_same_kind,
    figures_dir,
    owned_figures,
    refuse_foreign,
)
from geoprobe.paths import read_regular, write_json


@dataclass(frozen=True)
class RunOutputs:
    """What a command writes into its run directory: ``result`` (the JSON, of results ``kind``),
    ``page`` (HTML built from it), ``data`` (written before the JSON: name -> the checker of an
    existing entry, or the kind of geoprobe file it must be)."""

    result: str
    page: str | None
    data: Mapping[str, Callable[[Path], None] | str] = None  # type: ignore[assignment]
    partial: str | None = None  # resumable state: while it exists, data outputs without the JSON are the run's own
    kind: str | None = None  # the results kind of ``result`` (None: any geoprobe results file)

    @classmethod
    def of(
        cls, result: Any, data: Mapping[str, Callable[[Path], None] | str] | None = None, partial: str | None = None
    ) -> "RunOutputs":
        """The outputs of a :class:`geoprobe.results.Result` class: its ``FILE``, ``PAGE`` and ``KIND``."""
        return cls(result=result.FILE, page=result.PAGE, data=data, partial=partial, kind=result.KIND)

    @property
    def names(self) -> tuple[str, ...]:
        return (*(self.data or {}), self.result, *((self.page,) if self.page else ()))


def check_capture_dir(path: Path) -> None:
    """A capture directory geoprobe wrote: capture.json (its marker) and arrays.safetensors only."""
    check_replaceable_dir(path, CAPTURE_FILES, "capture.json", marker_kind=CAPTURE_KIND)


def _check_entry(path: Path, checker: Callable[[Path], None] | str | None) -> None:
    if callable(checker):
        checker(path)
    elif checker is None:  # a results file of any kind: only one that geoprobe wrote
        check_same_kind(path, _kind_of(path))
    else:
        check_same_kind(path, checker)


def _kind_of(path: Path) -> str:
    from geoprobe.kinds import file_kind

    found = file_kind(path)
    if found is None or found in (PAGE_KIND, PROMPTS_KIND) or not found.startswith("geoprobe."):
        refuse_foreign(path)
    return found  # type: ignore[return-value]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _normal(request: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(request, default=str))


@dataclass
class Run:
    """A claimed run directory. ``finishing``: the JSON is there for this very request and only the
    page or figures are missing; ``missing`` names them."""

    dir: Path
    outputs: RunOutputs
    request: Mapping[str, Any]
    finishing: bool = False
    missing: tuple[str, ...] = ()

    @property
    def result_path(self) -> Path:
        return self.dir / self.outputs.result

    @property
    def page_path(self) -> Path | None:
        return None if self.outputs.page is None else self.dir / self.outputs.page

    def record(self) -> Path:
        """Note, beside the results JSON just written, which request made it (and its sha256)."""
        return write_json(
            self.dir / RECORD,
            {
                "kind": RECORD_KIND,
                "version": 1,
                "result": self.outputs.result,
                "sha256": _sha256(self.result_path),
                "request": _normal(self.request),
            },
        )


def recorded_request(run_dir: Path, result: str) -> Mapping[str, Any] | None:
    """The request recorded for ``run_dir/result`` if the record matches that file's bytes."""
    p = run_dir / RECORD
    try:
        d = json.loads(read_regular(p, ValueError))  # a FIFO in its place is no record, never waited on
        if d.get("kind") != RECORD_KIND or d.get("result") != result:
            return None
        return d.get("request") if d.get("sha256") == _sha256(run_dir / result) else None
    except (OSError, ValueError, AttributeError):
        return None


@contextmanager
def claim_run(
    target: str | os.PathLike,
    outputs: RunOutputs,
    *,
    request: Mapping[str, Any],
    force: bool,
    figures: str | None = None,
    need_bytes: int = MIN_FREE_BYTES,
    parent: str | os.PathLike | None = None,
    in_place: bool = False,
) -> Iterator[Run]:
    """Check, lock and classify the run directory ``target`` (module docs); the lock is held while
    the ``with`` body runs. ``figures``: the static-figure format the run will also write (its files in
    ``target/figures`` must be geoprobe's; a finished run without them is finishable). ``parent``: the
    run directory this run is part of (a seed of ``windtunnel run --seeds``, a scan of
    ``compare-models``); any other directory geoprobe wrote around ``target`` is refused. ``in_place``: the
    command writes into the run it reads (``windtunnel eval``), so the messages do not offer another --out."""
    t = Path(target)
    elsewhere = "" if in_place else " or choose another --out"
    check_location(t, need_bytes=need_bytes, writes="run", result=outputs.result, parent=parent)
    with OutputLock(t):
        for name, checker in {
            **(outputs.data or {}),
            outputs.result: outputs.kind,
            **({outputs.page: PAGE_KIND} if outputs.page else {}),
        }.items():
            p = t / name
            if p.exists() or p.is_symlink():
                _check_entry(p, checker)
        figs = sorted(figures_dir(t).glob(f"*.{figures}")) if figures else []
        owned = owned_figures(figures_dir(t)) if figs else set()
        for f in figs:
            if f.name not in owned or f.is_symlink() or not f.is_file():
                refuse_foreign(f, "a figure file it did not write")
        run = Run(dir=t, outputs=outputs, request=request)
        if run.result_path.exists() and not force:
            missing = tuple(n for n in ((outputs.page,) if outputs.page else ()) if not (t / n).exists())
            if figures and not figs:
                missing += (f"figures/*.{figures}",)
            recorded = recorded_request(t, outputs.result)
            same = recorded == _normal(request)
            if not (missing and same):
                hint = " (made with other settings than these)" if missing and recorded is not None and not same else ""
                raise OutputExistsError(
                    f"{str(run.result_path)!r} already exists{hint}; pass --force to replace this run{elsewhere}"
                )
            run.finishing, run.missing = True, missing
        elif not force:
            resuming = outputs.partial is not None and (t / outputs.partial).exists()
            earlier = [t / n for n in (outputs.data or {}) if (t / n).exists() and not resuming] + figs
            if earlier:
                raise OutputExistsError(f"{str(earlier[0])!r} already exists; pass --force to replace it{elsewhere}")
        yield run
