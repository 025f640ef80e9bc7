"""Progress on stderr (geoprobe.cli.progress, issue 27): where stderr is not a terminal (a log file, a
pipe, a batch job), plain lines with counts and an ETA, while the command runs; a quick command prints
none. End to end: a 1,200-line prompt file captured on the tiny twin shows its progress as it goes."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from geoprobe.cli.progress import EVERY_ENV, LineProgress, clock, every_seconds
from geoprobe.errors import GeoprobeError

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _lines(buf: io.StringIO) -> list[str]:
    return [ln for ln in buf.getvalue().splitlines() if ln]


def test_plain_lines_every_interval_with_counts_elapsed_time_and_the_time_left():
    buf, now = io.StringIO(), Clock()
    p = LineProgress(Console(file=buf, width=200), every=10, now=now)
    for t, done in ((0, 0), (5, 100), (10, 250), (15, 400), (20, 500)):
        now.t = t
        p.update("capture", "capturing", done, 1000)
    assert _lines(buf) == [
        "capturing: 250/1,000 (25 %), 0:00:10 elapsed, about 0:00:30 left",  # 10 s for 25 %: 30 s for the rest
        "capturing: 500/1,000 (50 %), 0:00:20 elapsed, about 0:00:20 left",
    ]


def test_a_quick_command_prints_nothing_and_a_new_stage_gets_its_line():
    buf, now = io.StringIO(), Clock()
    p = LineProgress(Console(file=buf, width=200), every=10, now=now)
    p.update("analyse", "manifold", 0, 4)
    now.t = 3
    p.update("analyse", "alignment", 1, 4)
    assert _lines(buf) == []  # all within the first 10 s
    now.t = 12
    p.update("analyse", "orthogonality", 2, 4)  # a new stage: said at once
    now.t = 13
    p.update("analyse", "orthogonality", 2, 4)  # the same stage a second later: nothing
    assert _lines(buf) == ["orthogonality: 2/4 (50 %), 0:00:12 elapsed, about 0:00:12 left"]


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(EVERY_ENV, raising=False)
    assert every_seconds() == 10.0
    monkeypatch.setenv(EVERY_ENV, "0.5")
    assert every_seconds() == 0.5
    monkeypatch.setenv(EVERY_ENV, "soon")
    with pytest.raises(GeoprobeError, match=f"{EVERY_ENV}='soon' is not a number of seconds"):
        every_seconds()
    assert clock(3725) == "1:02:05"


def test_a_long_prompt_file_shows_its_progress_on_stderr_while_it_is_captured(tmp_path):
    """Was: silence until the end (rich draws nothing where stderr is not a terminal); now progress lines
    arrive while the capture runs, their counts growing."""
    prompts = tmp_path / "many.txt"
    prompts.write_text("".join(f"Prompt {i} says the weather in city {7 * i} is\n" for i in range(1200)))
    env = dict(os.environ, HF_HUB_OFFLINE="1", **{EVERY_ENV: "0.2"})
    cmd = [sys.executable, "-m", "geoprobe.cli", "capture", "--model", "twin:llama-3.2-1b", "--prompts", str(prompts)]
    cmd += ["--max-tokens", "8", "--batch-size", "4", "--out", str(tmp_path / "cap")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[int] = []
    while_running = False
    deadline = time.monotonic() + 240
    try:
        for line in proc.stderr:
            if line.startswith("capturing: "):
                seen.append(int(line.split()[1].split("/")[0].replace(",", "")))
                assert line.rstrip().endswith("left") and "/1,200 (" in line, line
                if proc.poll() is None and len(seen) >= 2:
                    while_running = True  # two lines while it still runs: shown as it goes, not at the end
                    break
            assert time.monotonic() < deadline, "no progress within 240 s"
        assert while_running, f"the capture ended before two progress lines came: {seen}"
        proc.stderr.read()
        assert proc.wait(timeout=240) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
        proc.stdout.close()
    assert len(seen) >= 2 and seen == sorted(seen) and seen[0] < seen[-1] < 1200, seen
    assert (tmp_path / "cap" / "capture.json").is_file()
