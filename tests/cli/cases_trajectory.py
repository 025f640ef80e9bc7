"""Error cases of ``geoprobe trajectory`` (issue 30 part 4). Joined into the audit by
tests/cli/error_cases.py (docs/errors.md is generated from the joined list)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import Case, case, text

#: the settings of the trained trajectory the setup plants (all else default)
TINY = "--steps 2 --layers 2 --hidden-size 32 --heads 2 --vocab-size 300 --seq-len 16 --batch-size 2"


def _trained(d: Path) -> None:
    from geoprobe.trajectory import TrajectoryConfig, train_trajectory

    config = TrajectoryConfig(steps=2, layers=2, hidden_size=32, heads=2, vocab_size=300, seq_len=16, batch_size=2)
    docs = [" ".join(f"w{(7 * i + k) % 20}" for i in range(60)) for k in range(20)]
    train_trajectory(config, out=d / "traj", documents=docs, threads=1)


SETUPS: dict[str, Callable[[Path], None]] = {
    "trained_trajectory": _trained,
    "foreign_checkpoints": text("traj/checkpoints/notes.txt", "mine\n"),
}

CASES: tuple[Case, ...] = (
    case(
        "trajectory-heads-not-dividing",
        "trajectory --heads 3 --out traj",
        "a number of heads that does not divide the model's width",
        "hidden size 128 is not a multiple of 3 heads",
        "pass --hidden-size 126 or --heads dividing it",
    ),
    case(
        "trajectory-unknown-domain",
        "trajectory --domains math,poetry --out traj",
        "a corpus domain that does not exist",
        "unknown corpus domain 'poetry'",
        "pass --domains with some of encyclopedic, news",
    ),
    case(
        "trajectory-vocab-too-small",
        "trajectory --vocab-size 100 --out traj",
        "a BPE vocabulary smaller than its 256 bytes and 2 special tokens",
        "--vocab-size = 100 is below 258",
        "pass --vocab-size 258 or more",
    ),
    case(
        "trajectory-other-settings",
        f"trajectory --out traj {TINY} --seed 4",
        "a directory holding a trajectory trained with another seed (training is never discarded)",
        "holds a trajectory trained with other settings (seed 0 vs 4)",
        "pass --seed 0 to resume it, or another --out",
        setup=("trained_trajectory",),
    ),
    case(
        "trajectory-memory",
        "trajectory --layers 48 --hidden-size 2048 --heads 16 --out traj",
        "a model whose training needs ~80 GiB, 4 GiB available (figure planted): refused before the corpora are read",
        "training 48 layers of width 2048 on batches of 8 × 128 tokens",
        "needs about 79.4 GiB of memory, more than 3.6 GiB (90% of the 4.0 GiB set by GEOPROBE_MEMORY_AVAILABLE)",
        "pass --layers 1 or --hidden-size 224 (or less)",
        "lower several of --layers, --hidden-size, --batch-size, --seq-len, --vocab-size",
        env=(("GEOPROBE_MEMORY_AVAILABLE", "4GiB"),),
    ),
    case(
        "trajectory-foreign-checkpoints",
        "trajectory --out traj",
        "a checkpoints folder holding a file geoprobe did not write",
        "holds 'notes.txt', which geoprobe did not write",
        setup=("foreign_checkpoints",),
    ),
)
