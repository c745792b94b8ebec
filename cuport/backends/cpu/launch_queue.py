"""The launch queues: launches, copies and fills handed to the C worker pool, in order.

runtime.c keeps a FIFO of records per *lane* (a CUDA stream's, backend.py's use_lane) that
the lane's leader thread runs in order (a grid on the pool, the leader being worker 0), so
that a launch returns to the program at once instead of waiting for its grid, nothing needs
a Python thread to keep the order, and work of streams CUDA does not order runs at the
same time (a kernel spinning until another stream's kernel sets a flag ends). A lane
waits for another's records only where a WAIT record says so (`follow`: the legacy
stream's implicit synchronisation). This side owns the memory a lane's records point to:
a slot per record in flight (its LaunchCtx, a cooperative grid's workspace and the
parameters) and whatever the record's `keep` holds (larger parameters, the scratch buffers
it runs in), until the record has run. A slot is reused once the record SLOTS places
before it has finished, which runtime.c's capacity (QUEUE_CAP) guarantees.

A grid that fails leaves its error and its first worker's fault in runtime.c's failure
record (one for all lanes); `collect` turns it into the BackendError the launch would
have raised, kept (the first one only, as a GPU reports the first fault) until
`take_failure`. Kernels that launch kernels (device_launch.py) are `hooked`: the leader
calls back into Python before their grid (to open its launch queue) and after it (to run
the grids it launched).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import sys
import threading
import time
from collections.abc import Callable

from ..base import CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_UNKNOWN, BackendError
from . import faultaddr
from . import layout as L

SLOTS = 256  # runtime.c's QUEUE_CAP
SLOT_BYTES = 4096 + 256
# within a slot: the LaunchCtx, the record handed to runtime.c (copied there), a cooperative
# grid's workspace, the parameters
RECORD_AT, WORKSPACE_AT, PARAMS_AT = 104, 160, 256
PARAMS_MAX = SLOT_BYTES - PARAMS_AT
KERNEL, COPY, FILL, WAIT = 0, 1, 2, 3  # runtime.c's REC_*
MAX_LANES = 32  # runtime.c's
WAIT_MS = 50  # a wait returns this often, so that Python can run its signal handlers (^C)
STALL_S = 60.0  # a grid that may never end (Record.stall) is named after this long a wait

# runtime.c's struct record: kind, nworkers, hooked, pad, worker, ctx, count, value (a
# kernel's: the address of its name, for CUPORT_GRID_LOG)
RECORD = struct.Struct("<IIIIQQQQ")
# LaunchCtx's fields in order (layout.py; checked against it below), then the record
CTX = struct.Struct("<QIIIIQQQIIQQQIIQQ")
CTX_RECORD = struct.Struct("<QIIIIQQQIIQQQIIQQ" + "IIIIQQQQ")
ADDRESS = struct.Struct("<Q")
RECORD_END = CTX_RECORD.size
RECORD_CTX = 24  # the record's ctx field
WORKSPACE_FIELD = L.LaunchCtx.grid_workspace.offset
assert CTX.size == ctypes.sizeof(L.LaunchCtx) == RECORD_AT
assert L.LaunchCtx.params.offset == 0 and WORKSPACE_FIELD == CTX.size - 8
assert RECORD_AT + RECORD.size <= WORKSPACE_AT and CTX_RECORD.size == RECORD_AT + RECORD.size

HOOK = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32)


class Failure(ctypes.Structure):
    """runtime.c's struct failure: the first failed grid not yet taken."""

    _fields_ = [("seq", ctypes.c_uint64), ("error", ctypes.c_uint32),
                ("error_line", ctypes.c_uint32), ("error_block", ctypes.c_uint64),
                ("lane", ctypes.c_uint32), ("pad", ctypes.c_uint32),
                ("fault", faultaddr.WorkerFault)]


def declare(lib) -> None:
    """The queues' entry points in guard.py's library."""
    lib.cuport_queue_setup.restype = None
    lib.cuport_queue_setup.argtypes = [ctypes.c_uint32] * 5 + [HOOK]
    lib.cuport_lane_open.restype = ctypes.c_void_p
    lib.cuport_lane_open.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
    lib.cuport_queue_failures.restype = ctypes.c_void_p
    lib.cuport_queue_failure.restype = ctypes.c_void_p
    lib.cuport_lane_wait.restype = ctypes.c_uint64  # (releases the GIL while it waits)
    lib.cuport_lane_wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]
    lib.cuport_queue_cancel.restype = None
    lib.cuport_queue_cancel.argtypes = [ctypes.c_uint32]
    # never blocks: called without releasing the GIL (as pool.py's quick calls)
    lib.quick_lane_push = ctypes.PYFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p)(
        ctypes.cast(lib.cuport_lane_push, ctypes.c_void_p).value)


def stall_seconds() -> float:
    """STALL_S, or CUPORT_STALL_S seconds (tests)."""
    try:
        return float(os.environ.get("CUPORT_STALL_S", "") or STALL_S)
    except ValueError:
        return STALL_S


class Record:
    """What the Python side keeps of a record in flight."""

    __slots__ = ("what", "name", "grid", "keep", "hook", "stall")

    def __init__(self, what: str, name: str, grid: tuple, keep: object,
                 hook: Callable[[int], None] | None, stall: str = "") -> None:
        self.what, self.name, self.grid, self.keep, self.hook = what, name, grid, keep, hook
        self.stall = stall  # why the grid may never end, said once if a wait on it lasts STALL_S


class LaunchQueues:
    """runtime.c's lanes (MAX_LANES at most, opened as asked for) and what they share: the
    failure record, which holds the first failed grid of any lane, and the hook."""

    def __init__(self, lib, nworkers: int,
                 explain: Callable[[Record, int, int, int, dict], BackendError]) -> None:
        self.lib = lib
        self.nworkers = nworkers
        self._explain = explain  # (record, error kind, line, block, faults) -> its error
        self._hook = HOOK(self._on_hook)
        lib.cuport_queue_setup(L.LaunchCtx.error.offset, L.LaunchCtx.grid_x.offset,
                               L.LaunchCtx.nblocks.offset, L.ERR_ILLEGAL_ADDRESS,
                               L.ERR_MISALIGNED, self._hook)
        self.failures = ctypes.c_uint32.from_address(lib.cuport_queue_failures())
        self._failure = Failure.from_address(lib.cuport_queue_failure())
        self.seen_failures = 0  # (set once they are collected)
        self._fail_lock = threading.Lock()
        self._failed: tuple[LaunchQueue, int, str, BackendError] | None = None
        self.opened: list[LaunchQueue] = []  # by index
        self._open_lock = threading.Lock()

    def lane(self, index: int) -> LaunchQueue:
        """Lane `index`'s queue (opened the first time)."""
        with self._open_lock:
            while len(self.opened) <= index:
                self.opened.append(LaunchQueue(self, len(self.opened)))
            return self.opened[index]

    # -- failures ------------------------------------------------------------------------
    def collect(self) -> None:
        """Turn runtime.c's failure record into the launch's error (kept: take_failure). A
        lane reuses a slot only once this has run for the failures it saw (_next), so the
        failed record's slot still holds it."""
        with self._fail_lock:
            seen = self.failures.value
            f = self._failure
            if f.seq:
                n = f.seq - 1
                q = self.opened[f.lane]
                record = q.records[n & (SLOTS - 1)]
                faults: dict[int, int | None] = {}
                w = f.fault
                if w.sig in (11, 7):  # SIGSEGV, SIGBUS
                    if w.sig == 11 and w.code == faultaddr.SI_KERNEL:
                        faults[0] = faultaddr.decode(self.lib, list(w.regs),
                                                     bytes(w.fp[:w.fp_size]))
                    else:
                        faults[0] = w.where or 0
                error = self._explain(record, f.error, f.error_line, f.error_block, faults)
                f.seq = 0
                self._note(q, n, record.what, error)
            self.seen_failures = seen

    def _note(self, q: LaunchQueue, n: int, what: str, error: BackendError) -> None:
        # (the first: a lane's earlier record's, where one of the same lane is kept)
        if self._failed is None or (q is self._failed[0] and n < self._failed[1]):
            self._failed = (q, n, what, error)

    def note(self, q: LaunchQueue, n: int, what: str, error: BackendError) -> None:
        """A record's failure found outside runtime.c (a grid its kernel launched)."""
        with self._fail_lock:
            self._note(q, n, what, error)

    def take_failure(self) -> tuple[str, BackendError] | None:
        """The first failure of any lane since the last call, as (the launch, its error), or
        None (a GPU's fault is every later synchronising call's to report, whatever stream
        it names)."""
        if self.failures.value != self.seen_failures:
            self.collect()
        if self._failed is None:
            return None
        with self._fail_lock:
            failed, self._failed = self._failed, None
        return (failed[2], failed[3]) if failed else None

    def cancel(self, kind: int) -> None:
        """The records of every lane not started yet fail with `kind` instead of running."""
        self.lib.cuport_queue_cancel(kind)

    def _on_hook(self, lane: int, n: int, phase: int) -> None:
        """A lane's leader thread, before (phase 0) and after (1) a hooked record's grid."""
        q = self.opened[lane]
        record = q.records[n & (SLOTS - 1)]
        try:
            record.hook(phase)
        except BackendError as e:
            self.note(q, n, record.what, e)
        except BaseException as e:  # noqa: BLE001 - nothing may reach the leader thread
            self.note(q, n, record.what, BackendError(CUDA_ERROR_UNKNOWN, "internal error "
                                                      f"running {record.name}'s launches: {e!r}"))


class LaunchQueue:
    """One lane: runtime.c's FIFO of records that its leader runs in order, and the slots
    the records point to. `users`: the CUDA streams whose work goes here (backend.py's
    use_lane); `scratch`: the per-worker scratch its grids run in (no other lane's grids
    may use it meanwhile)."""

    def __init__(self, queues: LaunchQueues, index: int) -> None:
        self.queues = queues
        self.index = index
        lib = queues.lib
        # (an anonymous mapping: its pages are zeroed as the lane first touches them)
        self._raw = mmap.mmap(-1, SLOTS * SLOT_BYTES)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self._raw))
        self._view = memoryview(self._raw)
        self.records: list[Record | None] = [None] * SLOTS
        self._faults = (faultaddr.WorkerFault * queues.nworkers)()
        self.lane = lib.cuport_lane_open(index, self._faults)
        if not self.lane:
            raise BackendError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, f"no launch queue {index}")
        self._tail = ctypes.c_uint64.from_address(self.lane + 8)
        self._failures = queues.failures
        self._push_record = lib.quick_lane_push
        self._wait = lib.cuport_lane_wait
        self.submitted = 0  # records handed over (runtime.c's head: this is its one producer)
        self.lock = threading.Lock()  # one producer at a time
        self.users = 0
        self.scratch: object = None  # (backend.py's Scratch)

    # -- handing over -------------------------------------------------------------------
    def _next(self) -> int:
        """The next record's number, once its slot is free and runtime.c has room (lock
        held)."""
        n = self.submitted
        if n - self._tail.value >= SLOTS:
            self.wait(n - SLOTS + 1)
        if self._failures.value != self.queues.seen_failures:
            self.queues.collect()  # (before the failed record's slot can be reused)
        return n

    def _push(self, n: int) -> None:
        """Hand over the record in slot n's record area (lock held)."""
        if not self._push_record(self.lane, self._base + (n & (SLOTS - 1)) * SLOT_BYTES
                                 + RECORD_AT):
            raise BackendError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                               "cannot start the launch queue's thread")
        self.submitted = n + 1

    @staticmethod
    def template(worker: int, nworkers: int, grid: tuple[int, int, int], dyn_smem: int,
                 scratch: int, chunk: int, slot_bytes: int, hooked: bool, name: int = 0) -> bytes:
        """A kernel record's slot head (its LaunchCtx and record) but for the addresses of the
        slot it goes into: made once for launches of the same shape (CpuBackend.queue_launch)."""
        return CTX_RECORD.pack(0, grid[0], grid[1], grid[2], dyn_smem, grid[0] * grid[1] * grid[2],
                               0, scratch, 0, 0, 0, 0, 0, chunk, 0, slot_bytes, 0,
                               KERNEL, nworkers, hooked, 0, worker, 0, 0, name)

    def kernel(self, template: bytes, params: bytes, cooperative: bool, record: Record) -> None:
        """Hand over a kernel record made from `template` with these parameters. `record` may
        serve several records in flight: it is not changed here."""
        with self.lock:
            n = self.submitted
            if n - self._tail.value >= SLOTS or self._failures.value != self.queues.seen_failures:
                n = self._next()
            slot = n & (SLOTS - 1)
            off = slot * SLOT_BYTES
            at = self._base + off
            view = self._view
            view[off:off + RECORD_END] = template
            size = len(params)
            if size <= PARAMS_MAX:
                view[off + PARAMS_AT:off + PARAMS_AT + size] = params
                paddr = at + PARAMS_AT
            else:
                big = ctypes.create_string_buffer(params, size)
                record = Record(record.what, record.name, record.grid, (record.keep, big),
                                record.hook, record.stall)
                paddr = ctypes.addressof(big)
            ADDRESS.pack_into(view, off, paddr)  # LaunchCtx.params
            ADDRESS.pack_into(view, off + RECORD_AT + RECORD_CTX, at)  # the record's LaunchCtx
            if cooperative:
                struct.pack_into("<II", view, off + WORKSPACE_AT, 8, 0)  # {wsSize, barrier}
                ADDRESS.pack_into(view, off + WORKSPACE_FIELD, at + WORKSPACE_AT)
            self.records[slot] = record
            if not self._push_record(self.lane, at + RECORD_AT):
                raise BackendError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                   "cannot start the launch queue's thread")
            self.submitted = n + 1

    def copy(self, dst: int, src: int, n: int) -> None:
        with self.lock:
            k = self._next()
            RECORD.pack_into(self._view, (k & (SLOTS - 1)) * SLOT_BYTES + RECORD_AT,
                             COPY, 0, 0, 0, src, dst, n, 0)
            self._push(k)

    def fill(self, dst: int, value: int, n: int, width: int) -> None:
        with self.lock:
            k = self._next()
            RECORD.pack_into(self._view, (k & (SLOTS - 1)) * SLOT_BYTES + RECORD_AT,
                             FILL, width, 0, 0, 0, dst, n, value)
            self._push(k)

    def follow(self, other: LaunchQueue, count: int) -> None:
        """This lane's later records wait until `other` has finished its first `count` (the
        work CUDA orders after another stream's: the legacy stream's implicit
        synchronisation). The leader sleeps meanwhile (runtime.c's wait_tail)."""
        with self.lock:
            k = self._next()
            RECORD.pack_into(self._view, (k & (SLOTS - 1)) * SLOT_BYTES + RECORD_AT,
                             WAIT, other.index, 0, 0, 0, 0, count, 0)
            self._push(k)

    # -- finding out --------------------------------------------------------------------
    def pending(self) -> bool:
        return self._tail.value < self.submitted

    def wait(self, count: int) -> None:
        """Until `count` records have run (the GIL released; ^C raises KeyboardInterrupt)."""
        wait, lane = self._wait, self.lane
        tail = wait(lane, count, WAIT_MS)
        if tail >= count:
            return
        last, since = tail, time.monotonic()
        while tail < count:
            tail = wait(lane, count, WAIT_MS)
            if tail != last:
                last, since = tail, time.monotonic()
            elif time.monotonic() - since >= stall_seconds():
                self._say_stalled(tail)
                since = float("inf")

    def _say_stalled(self, tail: int) -> None:
        """A grid in flight this long whose blocks may wait for blocks that cannot start
        (Record.stall): say so once, instead of a silent hang."""
        rec = self.records[tail & (SLOTS - 1)]
        if rec is not None and rec.stall:
            print(f"cuport: {rec.stall}", file=sys.stderr, flush=True)
