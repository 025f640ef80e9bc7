"""geoprobe.threads: the count is set for the block and the caller's is back afterwards, also on errors."""

from __future__ import annotations

import pytest
import torch

from geoprobe.threads import torch_threads


def test_sets_the_count_for_the_block_and_restores_it():
    before = torch.get_num_threads()
    with torch_threads(1) as n:
        assert n == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before


def test_none_leaves_the_count_and_an_exception_still_restores():
    before = torch.get_num_threads()
    with torch_threads(None) as n:
        assert n == before
    with pytest.raises(RuntimeError, match="boom"):
        with torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before
