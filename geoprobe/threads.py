"""torch's CPU thread count for one block of work, put back afterwards.

Float reductions on the CPU depend on the thread count, so bitwise equality between two runs holds for one
count: code that changes it for its own work must not leave it changed for the caller (a notebook, a test
session, the next cell of a sweep)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` torch CPU threads (None or 0: leave the count as it is); yields the count
    in force and restores the caller's on exit, also on an exception or Ctrl-C."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(int(n))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
