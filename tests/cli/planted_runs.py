"""Scan run directories written without a model (results.json and capture/ from planted values, as
tests/compare/_build.py makes them), for the error cases and CLI tests that need finished runs:
``compare`` with a swapped capture, model names that hold control characters, FIFOs in a run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

#: a model name as a hostile results.json could carry it: an OSC title, clear-screen, a C1 CSI, rich markup
EVIL_MODEL = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m[bold]x[/bold]\rname"
#: how the terminal shows it (geoprobe.text.inert: each control character as repr writes it)
EVIL_SHOWN = r"evil\x1b]0;pwned\x07\x1b[2J\x9b31m[bold]x[/bold]\rname"


def scan_run(d: Path, name: str, model: str, *, tag: str = "shared", seed: int = 1, set_name: str = "mixed") -> Path:
    """``d/name``: results.json and capture/ of a scan of ``model`` on 30 planted prompts (``tag``
    names the prompts' texts, ``set_name`` the prompt set its config records); returns the run directory."""
    from tests.compare._build import entropy, make_capture, planted_values, prompts, write_scan

    ent = entropy()
    cap, init = make_capture(model, planted_values(ent, 16, seed), prompts(tag=tag), ent, seed=seed)
    return write_scan(d, name, cap, init, prompts_name=set_name).parent


def two_runs(d: Path) -> None:
    """Runs ``a`` (model-a) and ``b`` (model-b) on the same prompts."""
    scan_run(d, "a", "model-a", seed=1)
    scan_run(d, "b", "model-b", seed=2)


def swapped_capture(d: Path) -> None:
    """Run ``a`` whose capture/ was replaced by run ``b``'s (another model's arrays and metadata)."""
    two_runs(d)
    shutil.rmtree(d / "a" / "capture")
    shutil.copytree(d / "b" / "capture", d / "a" / "capture")


def edited_capture_prompts(d: Path) -> None:
    """Run ``a`` whose capture.json keeps its provenance but holds other prompts."""
    two_runs(d)
    meta_path = d / "a" / "capture" / "capture.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["prompts"][0] = "a prompt the results were not computed on"
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")


def fifo_at(rel: str) -> Callable[[Path], None]:
    """Runs ``a`` and ``b`` with ``a/<rel>`` replaced by a FIFO (a named pipe nobody writes to)."""

    def make(d: Path) -> None:
        two_runs(d)
        target = d / "a" / rel
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(target)

    return make


def evil_run_twice(d: Path) -> None:
    """A run of a model whose name holds control characters, and a copy of it."""
    scan_run(d, "evil", EVIL_MODEL)
    shutil.copytree(d / "evil", d / "copy")
