"""geoprobe.cli.main: Ctrl-C and SIGTERM at start-up (importing torch, typer, transformers, building the
model) end in geoprobe's one ``interrupted`` line and exit 128 + signal, never a traceback.

Each case is a real signal from this process to a ``python -m geoprobe capture`` subprocess, sent at a
chosen moment: a ``sitecustomize`` module in the child (run before geoprobe) prints ``importing NAME``
when NAME starts to import and then waits there, inside an ``exec`` of a string as dataclasses build
their methods at import, so the signal lands inside that import.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_HOOK = """
import importlib.abc, os, sys, time

class Pause(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == os.environ.get("GEOPROBE_TEST_PAUSE_AT"):
            sys.meta_path.remove(self)
            print("importing " + name, flush=True)
            exec("deadline = time.monotonic() + 60\\nwhile time.monotonic() < deadline: time.sleep(0.01)",
                 {"time": time})
        return None

sys.meta_path.insert(0, Pause())
"""


def _interrupt_while_importing(target: str, signum: int, cwd: Path) -> tuple[int, str, str]:
    hook = cwd.parent / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOOK, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=path, GEOPROBE_TEST_PAUSE_AT=target)
    proc = subprocess.Popen(
        [sys.executable, "-m", "geoprobe", "capture", "--model", "twin:llama-3.2-1b", "--out", "cap"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell's background jobs inherit SIGINT ignored, and Python then installs no handler: restore it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = proc.stdout.readline()
        if line.strip() != f"importing {target}":
            proc.kill()
            pytest.fail(f"the child never imported {target}: {line!r} {proc.communicate()[1][-2000:]}")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


@pytest.mark.parametrize(
    "target, starting, signum, name",
    [
        ("typer", True, signal.SIGINT, "Ctrl-C"),  # the first import main() makes
        ("torch", True, signal.SIGINT, "Ctrl-C"),  # the commands' imports: seconds
        ("torch", True, signal.SIGTERM, "SIGTERM"),
        ("transformers.models.llama.modeling_llama", False, signal.SIGINT, "Ctrl-C"),  # loading the model
    ],
)
def test_an_interrupt_at_start_up_is_one_line_and_exit_128_plus_signal(tmp_path, target, starting, signum, name):
    """Was (SIGINT while torch imported): a KeyboardInterrupt traceback from inside torch, exit -2
    (killed by SIGINT)."""
    work = tmp_path / "work"
    work.mkdir()
    code, out, err = _interrupt_while_importing(target, signum, work)
    assert code == 128 + signum, (code, err[-3000:])
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    tail = (
        "while starting, before any work; nothing was written: rerun the command"
        if starting
        else "nothing unfinished was kept (the outputs are written at the end): rerun the command"
    )
    assert lines[0] == f"interrupted ({name}); {tail}"
    assert out == "" and list(work.iterdir()) == []  # nothing on stdout after the marker, nothing written


def test_the_interrupt_line_of_geoprobe_run_is_the_recipes_commands(tmp_path):
    """Was: `geoprobe run scan.toml` interrupted said "nothing unfinished was kept" although the scan
    keeps its finished capture batches in <run>/capture.partial and resumes from them."""
    from geoprobe.cli.main import RESUMES, command_of

    def recipe(name: str, text: str) -> str:
        (tmp_path / name).write_text(text)
        return str(tmp_path / name)

    assert command_of(["run", recipe("s.toml", '[probe]\ncommand = "scan"\n'), "--out", "r"]) == "scan"
    assert command_of(["run", recipe("w.toml", '[probe]\ncommand = "windtunnel"\n')]) == "windtunnel run"
    assert command_of(["run", recipe("d.toml", '[probe]\ncommand = "denoise"\n')]) == "denoise"
    assert "scan" in RESUMES and "windtunnel run" in RESUMES and "denoise" in RESUMES  # every experiment resumes
    assert "compare" not in RESUMES and "windtunnel eval" not in RESUMES
    assert command_of(["run", recipe("bad.toml", "not [toml")]) == "run"  # its work never started
    assert command_of(["run", recipe("arr.toml", "probe = [1]\n")]) == "run"
    assert command_of(["run", str(tmp_path / "missing.toml")]) == "run"
    os.mkfifo(tmp_path / "fifo.toml")
    assert command_of(["run", str(tmp_path / "fifo.toml")]) == "run"  # never waits on it
    assert command_of(["windtunnel", "train", "--scale", "tiny"]) == "windtunnel train"


@pytest.mark.parametrize(
    "exc",
    [
        MemoryError("Unable to allocate 477. GiB for an array with shape (1000000000, 64) and data type float64"),
        RuntimeError(
            "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to "
            "allocate 4000000000000 bytes."
        ),
    ],
    ids=["numpy", "torch-cpu"],
)
def test_an_allocation_that_fails_is_one_line_saying_out_of_memory(exc, tmp_path, capsys, monkeypatch):
    """Was: "error: unexpected MemoryError: …" (exit 1), as if geoprobe had a bug; the estimates before the
    work catch what they foresee (docs/outputs.md), and what they do not still ends in one line that says
    what happened and what to lower."""
    from geoprobe.capture import run as capture_run
    from tests.cli.test_cli import run_cli

    def fails(*args, **kwargs):
        raise exc

    (tmp_path / "p.txt").write_text("The cat sat on the\nOnce upon a time\n")
    monkeypatch.setattr(capture_run, "tokenize", fails)
    args = ["capture", "--model", "twin:llama-3.2-1b", "--prompts", str(tmp_path / "p.txt")]
    code, out, err = run_cli([*args, "--out", str(tmp_path / "c")], capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: out of memory ({type(exc).__name__}: ") and "lower --batch-size" in lines[0]
    assert not (tmp_path / "c").exists()
    monkeypatch.setattr(capture_run, "tokenize", lambda *a, **k: (_ for _ in ()).throw(ValueError("other")))
    code, _, err = run_cli([*args, "--out", str(tmp_path / "c")], capsys, monkeypatch)
    assert code == 1 and err.startswith("error: unexpected ValueError: other")  # anything else stays unexpected
