"""One worker per core: the threads that run a launch's blocks.

A launch calls the compiled `worker(ctx, id)` entry on every worker at once; each worker
takes blocks from the launch's shared counter until the grid is done. The calling thread
serves as worker 0. The workers are C threads (runtime.c, in guard.py's library) woken by
a futex, so a launch costs one call from Python (`Pool.native.cuport_pool_run`); the grids
of several launch queues (CUDA streams' lanes) run at once there, idle workers joining
whichever has room. Without a C compiler they are Python threads that call the worker
through ctypes (`Pool.run`), one launch at a time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def default_workers() -> int:
    env = os.environ.get("CUPORT_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS
        return max(1, os.cpu_count() or 1)


class Pool:
    def __init__(self, n: int | None = None) -> None:
        self.n = n or default_workers()
        self._lock = threading.Lock()  # one launch at a time uses the pool
        self._work: list[Callable[[int], None] | None] = [None] * self.n
        self._go = [threading.Event() for _ in range(self.n)]
        self._done = threading.Semaphore(0)
        self._errors: list[BaseException] = []
        self._threads = []
        self.native = None
        from . import guard

        lib = guard.library()
        if lib is not None and lib.cuport_pool_start(self.n) >= self.n:
            self.native = lib
            return
        for i in range(1, self.n):
            t = threading.Thread(target=self._loop, args=(i,), name=f"cuport-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _loop(self, i: int) -> None:
        while True:
            self._go[i].wait()
            self._go[i].clear()
            fn = self._work[i]
            try:
                if fn is not None:
                    fn(i)
            except BaseException as e:  # reported to the launcher
                self._errors.append(e)
            finally:
                self._done.release()

    def run(self, fn: Callable[[int], None], workers: int | None = None) -> None:
        """Call fn(i) for i in range(workers) concurrently; return when all are done."""
        k = min(self.n, workers or self.n)
        with self._lock:
            self._errors.clear()
            for i in range(1, k):
                self._work[i] = fn
                self._go[i].set()
            try:
                fn(0)
            finally:
                for _ in range(1, k):
                    self._done.acquire()
            if self._errors:
                raise self._errors[0]


_pool: Pool | None = None
_pool_lock = threading.Lock()


def get_pool() -> Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool()
        return _pool
