"""Print the sweep file of benchmarks/trajectory_seeds/run.sh: every checkpoint of every seed under OUT as a
``revision`` of one series (``model = "traj-2.2m"``), the shared prompts, attention distributions kept, and
training runs declared replicates."""

from __future__ import annotations

import sys
from pathlib import Path

from geoprobe.trajectory import TrajectoryResult


def main(out: str) -> str:
    revisions = []
    for run in sorted(Path(out).glob("seed*/trajectory.json")):
        t = TrajectoryResult.load(run.parent)
        revisions += [str(t.directory(f"step{s}", run.parent)) for s in t.steps]
    lines = [
        "[sweep]",
        'experiment = "scan"',
        'replicates = ["run"]',
        "[grid]",
        'model = ["traj-2.2m"]',
        "revision = [",
        *[f'  "{r}",' for r in revisions],
        "]",
        "[prompts]",
        'file = "shared-prompts.jsonl"',
        "[capture]",
        'attention = "distribution"',
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main(sys.argv[1]))
