"""What geoprobe wrote, and of which kind: every file and directory geoprobe writes carries a marker
that names its kind, and ``--force`` replaces a file only with one of the same kind (issue 27).

**Files**, recognised by their suffix and content (:func:`file_kind`):

* ``*.json``: a JSON object whose ``"kind"`` starts with ``geoprobe`` — a results file
  (``geoprobe.scan``, ``geoprobe.sula``, …), capture metadata (``geoprobe.capture``; capture.json of
  0.1.0 is recognised by its fields), a run record (``geoprobe.run``), a figure list, a checkpoint
  manifest, a wind-tunnel training run (``geoprobe.windtunnel.run``);
* ``*.html`` / ``*.htm``: a page (:data:`PAGE_KIND`) carrying
  ``<meta name="generator" content="geoprobe">`` (pages of 0.1.0: a ``<title>geoprobe …`` title);
* ``*.jsonl``: prompt lines written by ``geoprobe sample`` / ``compare-domains``
  (:data:`PROMPTS_KIND`: every line an object with ``set`` and ``prompt``);
* ``*.parquet``: a sweep's table (:data:`TABLE_KIND`, named in the schema's metadata).

**Directories** geoprobe writes are recognised by the marker file inside them
(:func:`directory_kind`): a run directory by its run record ``.geoprobe-run.json`` (a scan of
0.1.0 by its ``results.json``), a capture by ``capture.json``, an unfinished capture by its
checkpoint ``manifest.json``, a wind-tunnel learner by ``run.json``, a figures folder by its
manifest, a sweep by ``.geoprobe-sweep.json`` (one written before sweeps had a marker, by its ``sweep.json``). A sweep's
cell is a run directory inside it that also holds ``.geoprobe-cell.json`` (written before the cell's run
starts: its sweep's id, its coordinates and its status), which is how the sweep knows the cell is its own.
A run directory tolerates other files beside its outputs; the others are written whole and hold nothing
but their writer's files; a sweep directory holds its own files and its cells, and geoprobe writes no
other output into it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

#: the generator tag every HTML page geoprobe writes carries
GENERATOR = "geoprobe"
GENERATOR_META = f'<meta name="generator" content="{GENERATOR}">'
PAGE_KIND = "geoprobe.page"
PROMPTS_KIND = "geoprobe.prompts"
RECORD = ".geoprobe-run.json"  #: a run directory's record: which request wrote its results file
RECORD_KIND = "geoprobe.run"
CAPTURE_KIND = "geoprobe.capture"
CHECKPOINT_KIND = "geoprobe-capture-checkpoint"
LEARNER_KIND = "geoprobe.windtunnel.run"
FIGURES_MANIFEST = ".geoprobe-figures.json"
FIGURES_KIND = "geoprobe.figures"
SWEEP_MARK = ".geoprobe-sweep.json"  #: a sweep directory's marker: its id, experiment and settings digest
SWEEP_MARK_KIND = "geoprobe.sweep.mark"
SWEEP_KIND = "geoprobe.sweep"  #: a sweep's manifest (sweep.json), derived from its cells
CELL_MARK = ".geoprobe-cell.json"  #: a sweep cell's record: its sweep, coordinates and status
CELL_MARK_KIND = "geoprobe.sweep.cell"
TABLE_KIND = "geoprobe.sweep.table"  #: a sweep's tidy table (sweep.parquet): its schema's metadata names the kind
PAGE_SUFFIXES = (".html", ".htm")

#: the marker file of each kind of directory geoprobe writes, its kind, and the directory in words
DIRECTORY_MARKERS: tuple[tuple[str, str, str], ...] = (
    (RECORD, RECORD_KIND, "a run directory"),
    ("capture.json", CAPTURE_KIND, "a capture directory"),
    ("manifest.json", CHECKPOINT_KIND, "an unfinished capture (its checkpoints)"),
    ("run.json", LEARNER_KIND, "a wind-tunnel training run"),
    (FIGURES_MANIFEST, FIGURES_KIND, "a figures folder"),
    (SWEEP_MARK, SWEEP_MARK_KIND, "a sweep directory"),
    ("sweep.json", SWEEP_KIND, "a sweep directory"),  # a sweep written before sweeps had a marker
)
#: the kinds of marker that make a directory a sweep
SWEEP_KINDS = (SWEEP_MARK_KIND, SWEEP_KIND)
#: a file's kind in words (results files: "a <name> results file")
_FILE_WORDS = {
    PAGE_KIND: "an HTML page",
    PROMPTS_KIND: "a prompt file",
    RECORD_KIND: "a run record",
    CAPTURE_KIND: "capture metadata",
    CHECKPOINT_KIND: "a checkpoint manifest",
    LEARNER_KIND: "a wind-tunnel training record",
    FIGURES_KIND: "a figure list",
    SWEEP_MARK_KIND: "a sweep marker",
    SWEEP_KIND: "a sweep manifest",
    CELL_MARK_KIND: "a sweep cell's record",
    TABLE_KIND: "a sweep's table",
}


def _head(path: Path, n: int = 8192) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def json_kind(path: str | os.PathLike) -> str | None:
    """The ``"kind"`` a JSON file names (capture.json of 0.1.0: ``geoprobe.capture``), or None."""
    try:
        with open(path, "rb") as f:
            d = json.loads(f.read())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict):
        return None
    kind = d.get("kind")
    if kind is None and {"format_version", "layout", "provenance"} <= d.keys():
        return CAPTURE_KIND  # capture.json of geoprobe 0.1.0, written before captures named their kind
    return kind if isinstance(kind, str) else None


def _is_prompt_lines(path: Path) -> bool:
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return bool(lines) and all(
            isinstance(d := json.loads(line), dict) and "set" in d and "prompt" in d for line in lines
        )
    except (OSError, ValueError):
        return False


def file_kind(path: str | os.PathLike) -> str | None:
    """The kind of geoprobe file ``path`` is (module docs), or None when it is not a regular file
    geoprobe wrote (a symbolic link never is: replacing it would write where it points)."""
    p = Path(path)
    if p.is_symlink() or not p.is_file():
        return None
    suffix = p.suffix.lower()
    if suffix == ".json":
        kind = json_kind(p)
        return kind if kind is not None and kind.startswith("geoprobe") else None
    if suffix in PAGE_SUFFIXES:
        head = _head(p)
        return PAGE_KIND if GENERATOR_META.encode() in head or b"<title>geoprobe " in head else None
    if suffix == ".jsonl":
        return PROMPTS_KIND if _is_prompt_lines(p) else None
    if suffix == ".parquet":
        return TABLE_KIND if _is_sweep_table(p) else None
    return None


def _is_sweep_table(path: Path) -> bool:
    """A Parquet file whose footer (its last bytes: the schema and its key-value metadata) names the sweep
    table's kind, as geoprobe.sweep.table writes it."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PAR1":
                return False
            f.seek(max(0, os.fstat(f.fileno()).st_size - (1 << 16)))
            return TABLE_KIND.encode() in f.read()
    except OSError:
        return False


def describe_file(kind: str | None) -> str:
    """A file kind in words: "an HTML page", "a sula results file", … ("a file" for None)."""
    if kind is None:
        return "a file"
    if kind in _FILE_WORDS:
        return _FILE_WORDS[kind]
    return f"a {kind.removeprefix('geoprobe.')} results file"


@dataclass(frozen=True)
class DirectoryKind:
    """A directory geoprobe wrote: its ``kind`` (a marker's kind), the ``marker`` file that says so,
    the directory in ``words``, and for a run directory the ``result`` file its record names."""

    kind: str
    marker: Path
    words: str
    result: str | None = None

    @property
    def is_run(self) -> bool:
        return self.kind == RECORD_KIND

    @property
    def is_sweep(self) -> bool:
        return self.kind in SWEEP_KINDS

    def describe(self) -> str:
        if self.is_run and self.result:
            return f"{self.words} of geoprobe's (its results: {self.result})"
        return f"{self.words} of geoprobe's"


def directory_kind(directory: str | os.PathLike) -> DirectoryKind | None:
    """Which kind of directory geoprobe wrote ``directory`` as (module docs), or None."""
    d = Path(directory)
    try:
        if not d.is_dir():
            return None
    except OSError:
        return None
    for name, kind, words in DIRECTORY_MARKERS:
        marker = d / name
        if marker.is_file() and not marker.is_symlink() and json_kind(marker) == kind:
            result = None
            if kind == RECORD_KIND:
                try:
                    result = json.loads(marker.read_text(encoding="utf-8")).get("result")
                except (OSError, ValueError, AttributeError):
                    result = None
            return DirectoryKind(kind, marker, words, result if isinstance(result, str) else None)
    legacy = d / "results.json"  # a scan run of 0.1.0, written before runs had records
    if (found := file_kind(legacy)) is not None and found not in _FILE_WORDS:
        return DirectoryKind(RECORD_KIND, legacy, "a run directory", "results.json")
    return None


__all__ = [
    "CAPTURE_KIND",
    "CELL_MARK",
    "CELL_MARK_KIND",
    "CHECKPOINT_KIND",
    "DIRECTORY_MARKERS",
    "FIGURES_KIND",
    "FIGURES_MANIFEST",
    "GENERATOR_META",
    "LEARNER_KIND",
    "PAGE_KIND",
    "PAGE_SUFFIXES",
    "PROMPTS_KIND",
    "RECORD",
    "RECORD_KIND",
    "SWEEP_KIND",
    "SWEEP_KINDS",
    "TABLE_KIND",
    "SWEEP_MARK",
    "SWEEP_MARK_KIND",
    "DirectoryKind",
    "describe_file",
    "directory_kind",
    "file_kind",
    "json_kind",
]
