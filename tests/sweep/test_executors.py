"""The Ray resources a cell asks for, read from its coordinates (no cluster needed)."""

from __future__ import annotations

from geoprobe.sweep.cell import CellTask
from geoprobe.sweep.executors import resources


def _task(threads: int = 1, **coordinates) -> CellTask:
    return CellTask(
        experiment="scan",
        tables={},
        sweep_file="s.toml",
        coordinates=coordinates,
        cell_id="c",
        directory=None,
        parent=None,
        arrays=False,
        threads=threads,
    )


def test_a_cuda_cell_asks_for_one_gpu_and_a_cpu_cell_for_none():
    assert resources(_task(device="cuda:1"), None) == {"num_cpus": 1, "num_gpus": 1}
    assert resources(_task(device="cpu"), None) == {"num_cpus": 1, "num_gpus": 0}
    assert resources(_task(), None) == {"num_cpus": 1, "num_gpus": 0}


def test_threads_are_its_cpus_and_the_estimate_its_memory():
    assert resources(_task(threads=4), 3 << 30) == {"num_cpus": 4, "num_gpus": 0, "memory": 3 << 30}
