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
