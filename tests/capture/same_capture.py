"""Shared by the data-parallel capture tests (tests/capture/test_parallel.py, tests/cli/test_executor_cli.py):
torch on one thread, and the one comparison of two captures."""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np
import torch

from geoprobe.capture.result import ARRAYS


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread, as each Ray worker of ``DataParallel(threads=1)`` runs: a float32 reduction then
    sums in the same order in both, and the arrays are equal bit for bit (a run on two threads differs
    from one on one thread in the last bit: 1.9e-6 on an entropy of ~17 bits, 2e-7 on a value)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def assert_same_capture(got, ref, *, loaded_apart: bool = False) -> None:
    """Every array within 1e-6 (absolute, or relative: float32's resolution at the entropies' ~17 bits) and
    in fact equal bit for bit; the same prompts in the same order, layers, config, extra and provenance
    (all but its creation time where the two models were ``loaded_apart``)."""
    assert got.prompts == ref.prompts and got.layers == ref.layers and got.config == ref.config
    assert got.extra == ref.extra
    for name in ARRAYS:
        a, b = getattr(got, name), getattr(ref, name)
        assert (a is None) == (b is None), name
        if a is None:
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, name
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=name)
        assert np.array_equal(a, b, equal_nan=True), name
    mine, theirs = got.provenance.to_dict(), ref.provenance.to_dict()
    if loaded_apart:
        mine.pop("created"), theirs.pop("created")
    assert mine == theirs
