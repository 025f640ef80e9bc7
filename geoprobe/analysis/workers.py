"""Thread pools that stop at Ctrl-C and SIGTERM (issue 27).

A ``KeyboardInterrupt`` (Ctrl-C, or SIGTERM, which the CLI turns into one) reaches only the main
thread. Leaving ``with ThreadPoolExecutor()`` then waits for every task already submitted, and a
task that runs its own pool (a layer's bootstrap of 10^5 resamples) runs it to the end: the
interrupt was honoured only when the analysis was done. :func:`worker_pool` cancels the tasks not
yet started and sets a flag that the running ones check between units of work
(:func:`check_stop`), so they end at once and the interrupt goes on up.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

_STOP = threading.Event()


class Stopped(Exception):
    """Raised inside a worker's task when the pool it runs in is being abandoned."""


def check_stop() -> None:
    """Raise :class:`Stopped` if a pool is being abandoned (call it between units of a task's work)."""
    if _STOP.is_set():
        raise Stopped("the analysis was interrupted")


@contextmanager
def worker_pool(workers: int) -> Iterator[ThreadPoolExecutor]:
    """A ``ThreadPoolExecutor(workers)`` that, when the block raises (an interrupt, or a task's error),
    cancels the tasks not started, stops the running ones at their next :func:`check_stop` and waits
    only for that before the exception goes on."""
    pool = ThreadPoolExecutor(workers)
    try:
        yield pool
    except BaseException:
        _STOP.set()
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            if threading.current_thread() is threading.main_thread():
                _STOP.clear()  # every pool below the main thread has ended
        raise
    pool.shutdown(wait=True)
