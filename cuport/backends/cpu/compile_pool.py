"""Compiling a module's kernels ahead of their launches, on the other cores.

When a module is loaded, the kernels whose block shape the PTX declares (`.reqntid`, or
`.maxntid` as CUB and Thrust write their launch bounds) are queued, biggest first, for
worker processes (compile_worker.py; processes because llvmlite serialises LLVM behind one
lock). A launch never waits for a kernel it does not use: the kernel it needs is compiled
right away on the launching thread, as without this pool, unless a worker has it under
way already, in which case the launch takes the worker's result. Results go to the disk
cache like any compile. A module that declares more than AHEAD_MAX_KERNELS kernels is
left to its launches.

Workers: CUPORT_COMPILE_WORKERS (default one per core but one, at least one; 0 turns ahead
compiling off), started when first needed, each a Python running this cuport (the
interpreter named by CUPORT_PYTHON, which `cuport run` sets, else this process's), at a
lower priority (nice 10). They exit when the launching process closes their pipes or
exits, even in the middle of a compile, so they never outlive it.
"""

from __future__ import annotations

import heapq
import itertools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from . import compile_worker

if TYPE_CHECKING:
    from concurrent.futures import Future

#: a module declaring more kernels than this is not compiled ahead: a library's module of
#: template instantiations (CuPy's CUB: 336, some taking minutes each) would keep a core
#: busy for hours with kernels a program mostly never launches; a Thrust program has ~40
AHEAD_MAX_KERNELS = 64

#: environment variables that change the code a compile makes (sent with each job)
CODE_ENV = ("CUPORT_CHECK_CONVERGENCE", "CUPORT_NO_YIELDS", "CUPORT_NO_OPT", "CUPORT_NO_FORMS",
            "CUPORT_NO_REGION_LOOPS", "CUPORT_NO_INTERLEAVE", "CUPORT_NO_PREDICATE",
            "CUPORT_NO_PREFETCH")


def worker_count() -> int:
    env = os.environ.get("CUPORT_COMPILE_WORKERS")
    if env is not None:
        try:
            return max(0, int(env))
        except ValueError:
            return 0
    from .pool import default_workers

    return max(1, default_workers() - 1)


def python_executable() -> str | None:
    """A Python interpreter that runs this cuport (an embedding C program is not one)."""
    for cand in (os.environ.get("CUPORT_PYTHON"), sys.executable, getattr(sys, "_base_executable", None)):
        if cand and os.path.basename(cand).startswith("python") and os.access(cand, os.X_OK):
            return cand
    return None


class _Worker:
    def __init__(self, python: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        import subprocess

        self.proc = subprocess.Popen(
            [python, "-m", "cuport.backends.cpu.compile_worker", str(os.getpid())], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, cwd=str(Path(__file__).resolve().parents[3]),
            close_fds=True)
        self.modules: set[str] = set()

    def run(self, job) -> tuple:
        key = job.module_key
        texts = None if key in self.modules else job.texts
        compile_worker.write_message(self.proc.stdin, (
            job.seq, key, texts, job.kernel, job.block, job.resident, job.nsm, job.env))
        reply = compile_worker.read_message(self.proc.stdout)
        if reply is None:
            raise OSError("the compile worker exited")
        self.modules.add(key)
        return reply


class _Job:
    def __init__(self, seq, key, module_key, texts, kernel, block, resident, nsm, size) -> None:
        self.seq, self.key, self.module_key, self.texts = seq, key, module_key, texts
        self.kernel, self.block, self.resident, self.nsm, self.size = kernel, block, resident, nsm, size
        self.env = {k: os.environ.get(k) for k in CODE_ENV}
        from concurrent.futures import Future  # (here: a run that compiles nothing needs none)

        self.future: Future = Future()
        self.started = False


class CompilePool:
    """Queued ahead-of-launch compiles; `claim` hands a launch the one it needs."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._queue: list[tuple[int, int, _Job]] = []
        self._jobs: dict[str, _Job] = {}
        self._threads: list[threading.Thread] = []
        self._seq = itertools.count()
        self._python = python_executable()
        self._cv = threading.Condition(self._lock)
        # called with each reply; True when it went to the disk cache (then the pool keeps
        # no copy: a launch finds it there)
        self.on_result: Callable[[_Job, tuple], bool] | None = None

    def submit(self, key: str, module_key: str, texts: list[str], kernel: str, block, resident: int,
               nsm: int, size: int) -> None:
        """Queue a compile (bigger ones first); nothing when it is queued or done already."""
        if self.n == 0 or self._python is None:
            return
        with self._lock:
            if key in self._jobs:
                return
            job = _Job(next(self._seq), key, module_key, texts, kernel, block, resident, nsm, size)
            self._jobs[key] = job
            heapq.heappush(self._queue, (-size, job.seq, job))
            if len(self._threads) < self.n:
                t = threading.Thread(target=self._serve, name=f"cuport-compile-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
            self._cv.notify()

    def claim(self, key: str) -> Future | None:
        """The compile of `key` under way or done (its future, whose result is the worker's
        reply), or None: then it is not started, and it is taken off the queue (the
        launching thread compiles it itself). Either way the pool forgets it."""
        with self._lock:
            job = self._jobs.pop(key, None)
            if job is None:
                return None
            if job.started:
                return job.future
            job.started = True  # (left in the heap; skipped when popped)
            job.future.cancel()
            return None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every queued compile has ended (tests, and `cuport` tools that want the
        cache filled); True when none is left."""
        from concurrent.futures import CancelledError
        from concurrent.futures import TimeoutError as FutureTimeout

        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            try:
                job.future.result(timeout)
            except CancelledError:
                pass
            except FutureTimeout:
                return False
        return True

    def _serve(self) -> None:
        worker = None
        while True:
            with self._lock:
                while not self._queue:
                    self._cv.wait()
                _, _, job = heapq.heappop(self._queue)
                if job.started:
                    continue
                job.started = True
            try:
                if worker is None:
                    worker = _Worker(self._python)
                reply = worker.run(job)
            except (OSError, EOFError, ValueError) as e:
                worker = None
                job.future.set_result(("error", job.seq, "internal", str(e)))
                continue
            stored = False
            if self.on_result is not None:
                try:
                    stored = self.on_result(job, reply)
                except Exception:  # noqa: BLE001 - a cache write that failed only costs speed
                    pass
            if stored:
                with self._lock:
                    if self._jobs.get(job.key) is job:
                        del self._jobs[job.key]
            job.future.set_result(reply)


_pool: CompilePool | None = None
_pool_lock = threading.Lock()


def get_compile_pool() -> CompilePool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():  # (not a forked child's copy)
            _pool = CompilePool(worker_count())
        return _pool
