"""geoprobe.analysis.workers: a worker pool stops its running tasks when the main thread is interrupted
(issue 27: Ctrl-C during a scan's value-manifold bootstrap waited for every resample to finish)."""

from __future__ import annotations

import threading
import time

import pytest

from geoprobe.analysis import workers
from geoprobe.analysis.workers import Stopped, check_stop, worker_pool


def _long_task(started: threading.Event, units: list[int]) -> None:
    started.set()
    for _ in range(10_000):  # 100 s of work if nothing stops it
        check_stop()
        time.sleep(0.01)
        units.append(1)


def test_an_interrupt_in_the_main_thread_stops_the_running_tasks_and_cancels_the_queued_ones():
    started, units = threading.Event(), []
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            futures = [pool.submit(_long_task, started, units) for _ in range(5)]
            assert started.wait(10)
            raise KeyboardInterrupt  # what SIGINT (or the CLI's SIGTERM handler) raises here
    assert time.monotonic() - t0 < 5, "the pool waited for its tasks to finish"
    assert sum(f.cancelled() for f in futures) == 3  # two were running: the other three never started
    assert all(isinstance(f.exception(), Stopped) for f in futures if not f.cancelled())
    assert len(units) < 1000
    assert not workers._STOP.is_set(), "the next pool must run normally"
    with worker_pool(2) as pool:  # and it does
        assert list(pool.map(lambda x: x * 2, range(4))) == [0, 2, 4, 6]


def test_nested_pools_in_worker_threads_stop_too():
    """A layer's task that runs its own pool (spectrum_se inside value_manifold): the inner pool's tasks
    stop as well, so leaving the outer pool does not wait for the inner one's work."""
    started, units = threading.Event(), []

    def layer(_: int) -> None:
        with worker_pool(2) as inner:
            list(inner.map(lambda _: _long_task(started, units), range(4)))

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with worker_pool(2) as pool:
            pool.submit(layer, 0)
            pool.submit(layer, 1)
            assert started.wait(10)
            raise KeyboardInterrupt
    assert time.monotonic() - t0 < 5
    assert not workers._STOP.is_set()


def test_a_task_error_reaches_the_caller_and_stops_its_siblings():
    started, units = threading.Event(), []

    def boom() -> None:
        assert started.wait(10)
        raise ValueError("bad layer")

    t0 = time.monotonic()
    with pytest.raises(ValueError, match="bad layer"):
        with worker_pool(2) as pool:
            pool.submit(_long_task, started, units)
            pool.submit(boom).result()
    assert time.monotonic() - t0 < 5
