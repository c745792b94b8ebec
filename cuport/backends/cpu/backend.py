"""The CPU backend: PTX modules compiled to native code and run on every core.

A loaded module parses its PTX once and allocates its `.global`/`.const` variables in host
memory. A kernel is compiled lazily, once per block shape it is launched with (the warp
code is specialised for it), through the disk cache.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import signal
import threading
import time
from collections.abc import Iterable

from ... import __version__
from ...ptx import ir
from ...ptx.errors import UnsupportedError
from .. import cache, device_heap, facts, host_pages
from ..base import (
    CUDA_ERROR_ASSERT,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
    CUDA_ERROR_HARDWARE_STACK_ERROR,
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_ILLEGAL_INSTRUCTION,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_LAUNCH_FAILED,
    CUDA_ERROR_MISALIGNED_ADDRESS,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_OUT_OF_MEMORY,
    BackendError,
    PtxModule,
)
from ..device_launch import function_token
from ..facts import calls_malloc, kernel_info, pack_init
from . import compile_pool, device_launch, faultaddr, guard, hostcalls, jit, launch_queue
from . import layout as L
from .layout import MAX_RESIDENT_SLOTS, RESIDENT_SLOTS, CompiledKernelInfo
from .pool import get_pool


class HostBuffer:
    """Aligned host memory owned by Python (zeroed).

    From MAPPED_FROM bytes on it is an anonymous mapping, whose pages the kernel zeroes when
    they are first touched (by the worker that uses them), not a buffer zeroed here: the
    per-worker scratch grows with the kernels a program launches, and on 16 workers
    thrust_cub.cu's four growths wrote ~100 MB of zeros on the launching thread (44 ms for
    the last, most of it for resident slots a worker never uses)."""

    MAPPED_FROM = 1 << 16

    def __init__(self, size: int, align: int = 4096) -> None:
        self.size = size
        if size + align >= self.MAPPED_FROM:
            self._raw = mmap.mmap(-1, size + (align if align > mmap.PAGESIZE else 0))
            base = ctypes.addressof(ctypes.c_char.from_buffer(self._raw))
        else:
            self._raw = ctypes.create_string_buffer(size + align)
            base = ctypes.addressof(self._raw)
        self.address = (base + align - 1) // align * align


class Scratch:
    """A scratch area per worker (`size` bytes each) and the array of their addresses that a
    LaunchCtx points to."""

    def __init__(self, n: int, size: int) -> None:
        self.size = size
        self.buffers = [HostBuffer(max(size, 1 << 16), 4096) for _ in range(n)] if size else []
        self._ptrs = (ctypes.c_void_p * n)(*(b.address for b in self.buffers))
        self.pointers = ctypes.addressof(self._ptrs)


def grab_size(nblocks: int, workers: int, ck: CompiledKernelInfo, cooperative: bool) -> int:
    """Blocks a worker takes from the launch's counter at once (LaunchCtx.chunk).

    Several per grab spare the counter's cache line, but a worker runs its grab's blocks in
    order: where blocks wait for earlier ones (CUB's decoupled look-back: block i spins on
    flags blocks i - 1, i - 2, ... publish) the first blocks of a grab wait for the other
    workers' whole grabs before them (tests/driver/c/lookback_scan.cu's static scan, 3073
    blocks on 2 workers, grabs of 64: 13.4-14.2 ms and ~100 waits against 9.9-10.5 ms and
    0-10 one block at a time). Such kernels (spin loops with yield points) and cooperative
    grids (every block must be running for grid.sync) take one block at a time, so blocks
    start in order across the workers."""
    if cooperative or ck.waits_on_others:
        return 1
    if _GRAB:  # CUPORT_GRAB=N: another grab size, to measure what the order of blocks costs
        return _GRAB
    return max(1, min(64, nblocks // (workers * 8)))


_GRAB = int(os.environ.get("CUPORT_GRAB", "0") or 0)


class Spec:
    """A kernel's code for one block shape, and what its launches need of it."""

    __slots__ = ("linked", "ck", "scratch_base", "hooked")

    def __init__(self, linked: jit.Linked, ck: CompiledKernelInfo) -> None:
        self.linked, self.ck = linked, ck
        self.scratch_base = ck.scratch_bytes(0)  # (+ the launch's dynamic shared memory)
        # kernels that launch kernels: their grids' launches run after them (device_launch.py)
        self.hooked = any(s.startswith("cuport_cnpv2_") for s in ck.host_symbols)


class CpuKernel:
    def __init__(self, module: CpuModule, fn: ir.Function) -> None:
        self.module = module
        self.fn = fn
        self.info = kernel_info(module.ptx, fn)
        self._specs: dict[tuple, Spec] = {}
        self._lock = threading.Lock()
        self.compile_seconds = 0.0
        # per lane, the last queued launch's (spec, grid, shared, what, cooperative), scratch,
        # record template and Record (CpuBackend.queue_launch)
        self.last_queued: dict = {}
        # calls malloc/free: the context's heap is bound before it runs (driver/device_heap.py)
        self.uses_device_heap = calls_malloc(module.ptx, fn)
        # its name for runtime.c's grid log (CUPORT_GRID_LOG), which queued records point to
        self.c_name = ctypes.create_string_buffer(fn.name.encode())

    def specialization(self, block: tuple[int, int, int], resident: int = RESIDENT_SLOTS) -> Spec:
        spec = self._specs.get((block, resident))
        if spec is not None:
            return spec
        with self._lock:
            spec = self._specs.get((block, resident))
            if spec is None:
                spec = Spec(*self.module.backend.compile(self.module, self.fn.name, block, resident))
                self._specs[(block, resident)] = spec
            return spec

    def prepare(self, block: tuple[int, int, int]) -> None:
        """Compile (or load from the cache) the code for this block shape ahead of a launch."""
        self.specialization(block if block.__class__ is tuple else tuple(int(x) for x in block))

    def _spec(self, grid, block, cooperative: bool) -> Spec:
        if min(grid) < 1 or min(block) < 1:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"grid {grid} / block {block} has a zero dimension")
        nthreads = block[0] * block[1] * block[2]
        if nthreads > self.info.max_threads_per_block:
            raise BackendError(
                CUDA_ERROR_INVALID_VALUE,
                f"{nthreads} threads per block asked for, at most {self.info.max_threads_per_block} allowed",
            )
        nblocks = grid[0] * grid[1] * grid[2]
        backend = self.module.backend
        if cooperative:
            return self.specialization(block, backend.cooperative_slots(nblocks))
        spec = self.specialization(block, RESIDENT_SLOTS)
        # blocks that may wait on other blocks (spin loops with yield points): where the whole
        # grid fits, every block is held at once, as a GPU holds such a grid (HeCBench's mis:
        # 24 blocks each waiting for the others' decisions hung on 2 workers of 4 slots)
        if spec.ck.waits_on_others and RESIDENT_SLOTS * backend.pool.n < nblocks <= MAX_RESIDENT_SLOTS * backend.pool.n:
            spec = self.specialization(block, backend.resident_slots(nblocks))
        return spec

    def launch(self, grid, block, dynamic_shared_bytes: int, params: bytes,
               cooperative: bool = False, depth: int = 0) -> None:
        """Run the grid and return when it is done (after the launches queued before it on
        the calling thread's lane: wait_queued).
        A cooperative launch (grid-wide sync) keeps all its blocks resident at once: each
        worker may hold as many blocks as the grid needs, and waiting blocks step aside for
        the others. Then the grids it launched from device code (device_launch.py; `depth`:
        how deep this grid is nested)."""
        grid = tuple(int(x) for x in grid)
        block = tuple(int(x) for x in block)
        spec = self._spec(grid, block, cooperative)
        backend = self.module.backend
        backend.wait_queued()
        launches = backend.run(spec.linked, spec.ck, grid, dynamic_shared_bytes, params,
                               self.fn.name, cooperative, self.module, depth)
        if launches:
            device_launch.run_children(self.module, launches, depth)

    def launch_queued(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                      dynamic_shared_bytes: int, params: bytes, what: str = "cuLaunchKernel",
                      cooperative: bool = False) -> None:
        """Queue the launch and return (the driver's launches): it runs after everything
        queued before it; its failure is the next drain's. `what` names the launch then."""
        backend = self.module.backend
        if backend.queue is None:  # (no C pool: run now)
            self.launch(grid, block, dynamic_shared_bytes, params, cooperative)
            return
        spec = None if cooperative else self._specs.get((block, RESIDENT_SLOTS))
        if spec is None or spec.ck.waits_on_others or grid[0] < 1 or grid[1] < 1 or grid[2] < 1:
            spec = self._spec(grid, block, cooperative)
        backend.queue_launch(self, spec, grid, dynamic_shared_bytes, params, what, cooperative)


class CpuModule(PtxModule):
    def __init__(self, backend: CpuBackend, ptx_texts: list[str]) -> None:
        self.backend = backend
        self.ptx = facts.load_ptx(ptx_texts)  # parsed, checked as ptxas would, linked
        self.texts = list(ptx_texts)
        self.text_key = cache.make_key(*ptx_texts)
        self._buffers: list[HostBuffer] = []
        self.globals: dict[str, tuple[int, int]] = {}
        self._allocate_globals()
        self._kernels: dict[str, CpuKernel] = {}
        # the kernels launched in this run and earlier ones (kept in the cache where the
        # module has kernels to compile ahead: CpuBackend.compile_ahead)
        self.launched: set[str] | None = None
        backend.compile_ahead(self)

    def _allocate_globals(self) -> None:
        vars_ = [v for v in self.ptx.variables if v.space in ("global", "const")]
        for v in vars_:
            if v.linkage == "extern" and v.init is None and v.size == 0:
                continue
            buf = HostBuffer(max(v.size, 1), max(v.alignment, 256))
            self._buffers.append(buf)
            self.globals[v.name] = (buf.address, v.size)

        def resolve(name: str) -> int:
            if name in self.globals:
                return self.globals[name][0]
            if name in self.ptx.functions:
                return function_token(self.ptx, name)
            raise UnsupportedError(f"an initialiser refers to {name}, which is not a global variable")

        for v in vars_:
            if v.init and v.name in self.globals:
                data = pack_init(v, resolve)
                ctypes.memmove(self.globals[v.name][0], data, len(data))
        # the device heap's address, for kernels calling malloc/free (0 until bound)
        cell = HostBuffer(8, 8)
        self._buffers.append(cell)
        self.globals[hostcalls.HEAP_CELL] = (cell.address, 8)

    @staticmethod
    def device_heap_bytes(limit: int) -> int:
        return device_heap.heap_bytes(limit)

    def init_device_heap(self, address: int, limit: int) -> None:
        """Lay out a fresh (zeroed) heap: its header (backends/device_heap.py)."""
        data = device_heap.header(limit)
        ctypes.memmove(address, data, len(data))

    def bind_device_heap(self, address: int) -> None:
        """Give the module's kernels the context's malloc heap: the cell they link to."""
        ctypes.c_uint64.from_address(self.globals[hostcalls.HEAP_CELL][0]).value = address

    def _make_kernel(self, fn: ir.Function) -> CpuKernel:
        return CpuKernel(self, fn)


class CpuBackend:
    name = "cpu"

    def __init__(self) -> None:
        self.pool = get_pool()
        self._scratch = Scratch(self.pool.n, 0)
        self._launch_lock = threading.Lock()
        # what run() fills for every launch (under the lock)
        self._ctx = L.LaunchCtx()
        self._ctx_addr = ctypes.addressof(self._ctx)
        self._ctx_bytes = memoryview(self._ctx).cast("B")
        self._ctx_zero = bytes(len(self._ctx_bytes))
        self._params_len = 4096
        self._params = ctypes.create_string_buffer(self._params_len)
        self._params_addr = ctypes.addressof(self._params)
        self._faults = (faultaddr.WorkerFault * self.pool.n)()  # runtime.c fills them
        self.stats = {"compiles": 0, "cache_hits": 0, "compile_seconds": 0.0}
        # Launches, copies and fills of device memory run in the order they are handed over
        # (launch_queue.py), so the driver needs no thread of its own to order them (driver/
        # stream.py submit_device). Each CUDA stream's go to a queue of its own, a *lane*
        # (0: the legacy stream's and the backend's own), so that streams run at the same
        # time as on a GPU; the driver says which lane a thread's work goes to (use_lane) and
        # what it follows there (the legacy stream's implicit synchronisation). Without the C
        # pool (no compiler) launches run where they are made, and the driver's stream
        # threads keep the order.
        self.queue: launch_queue.LaunchQueue | None = None  # lane 0
        self.queues: launch_queue.LaunchQueues | None = None
        self._lanes: dict[int, launch_queue.LaunchQueue] = {}  # CUDA stream (lane key) -> lane
        self._free_lanes = list(range(launch_queue.MAX_LANES - 1, 0, -1))
        self._dropped: list[launch_queue.LaunchQueue] = []  # their streams gone
        self._followed: dict[tuple, int] = {}  # (lane, other): other's records it waits for
        self._lanes_lock = threading.Lock()
        self._local = _LaneState()
        if self.pool.native is not None:
            launch_queue.declare(self.pool.native)
            self.queues = launch_queue.LaunchQueues(self.pool.native, self.pool.n, self._explain)
            self.queue = self._lanes[0] = self.queues.lane(0)
            self.queue.users = 1
        self.queues_launches = self.queue is not None

    def load_module(self, ptx_texts: list[str]) -> CpuModule:
        return CpuModule(self, ptx_texts)

    # ------------------------------------------------------------ memory: host pages
    def allocate(self, size: int, kind: str = "device") -> int:
        return host_pages.allocate(size, kind)

    def free(self, address: int, size: int) -> None:
        host_pages.free(address, size)

    def shareable(self, address: int) -> bool:
        return host_pages.shareable(address)

    def share(self, address: int, size: int) -> tuple[int, bytes]:
        """Make an allocation mappable by other processes (IPC): its memory file and description."""
        return host_pages.share(address, size)

    def map_shared(self, fd: int, description: bytes, size: int) -> int:
        """Map another process's allocation (a memory file from share); consumes fd."""
        return host_pages.map_shared(fd, description, size)

    # ------------------------------------------------------------ compile
    def cooperative_slots(self, nblocks: int) -> int:
        """Resident blocks per worker that keep a cooperative grid of nblocks all running."""
        if nblocks > MAX_RESIDENT_SLOTS * self.pool.n:
            raise BackendError(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                               f"a cooperative grid of {nblocks} blocks: at most "
                               f"{MAX_RESIDENT_SLOTS * self.pool.n} can run at once "
                               f"({MAX_RESIDENT_SLOTS} per worker, {self.pool.n} workers)")
        return self.resident_slots(nblocks)

    def resident_slots(self, nblocks: int) -> int:
        """Slots per worker (a power of two, at least RESIDENT_SLOTS) that hold nblocks at once."""
        per_worker = -(-nblocks // self.pool.n)
        slots = RESIDENT_SLOTS
        while slots < per_worker:
            slots *= 2
        return slots

    def _key(self, module: CpuModule, kernel: str, block: tuple[int, int, int], resident: int) -> str:
        return cache.make_key(module.text_key, kernel, repr(block), str(resident), __version__,
                              cache.code_fingerprint(), jit.host_description(), str(self.pool.n),
                              *(os.environ.get(k, "") for k in compile_pool.CODE_ENV))

    def compile_ahead(self, module: CpuModule) -> None:
        """Queue the module's kernels whose block shape the PTX declares for the compile
        workers (compile_pool.py), unless cached already; where earlier runs said which of
        them they launched (_launched_before), only those."""
        ahead = [f for f in module.ptx.kernels() if f.is_definition and (f.reqntid or f.maxntid)]
        if not ahead:
            return
        known = self._launched_before(module)
        module.launched = set(known or ())
        if known is not None:
            ahead = [f for f in ahead if f.name in known]
        if not ahead or len(ahead) > compile_pool.AHEAD_MAX_KERNELS or compile_pool.worker_count() == 0:
            return
        pool = compile_pool.get_compile_pool()
        pool.on_result = self._store_ahead
        for f in ahead:
            block = tuple((list(f.reqntid or f.maxntid) + [1, 1])[:3])
            if block[0] * block[1] * block[2] > 1024:
                continue
            key = self._key(module, f.name, block, RESIDENT_SLOTS)
            if cache.contains(key):
                continue
            pool.submit(key, module.text_key, module.texts, f.name, block, RESIDENT_SLOTS,
                        self.pool.n, len(f.body or ()))

    @staticmethod
    def _launched_key(module: CpuModule) -> str:
        return cache.make_key("launched kernels", module.text_key)

    def _launched_before(self, module: CpuModule) -> set[str] | None:
        """The kernels of this module that earlier runs launched, or None where no run has
        said. A program uses the same few of a library's kernels run after run (Thrust's
        module has 45, a sort and some reductions use 23): compiling the others ahead in
        every run, the cached ones included, only takes cores from the launches."""
        hit = cache.load(self._launched_key(module))
        if hit is None:
            return None
        try:
            names = json.loads(hit[0])
        except ValueError:
            return None
        return set(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else None

    def _note_launched(self, module: CpuModule, kernel: str) -> None:
        launched = module.launched
        if launched is None or kernel in launched:
            return
        launched.add(kernel)
        cache.store(self._launched_key(module), json.dumps(sorted(launched)).encode(),
                    {"launched kernels": True})

    def _store_ahead(self, job, reply) -> bool:
        """A compile worker's result into the disk cache; True when it went there."""
        if reply[0] != "done":
            return False
        _, _, obj, info, seconds = reply
        self.stats["compiles"] += 1
        self.stats["compile_seconds"] += seconds
        if not cache.enabled():
            return False
        cache.store(job.key, obj, {"info": info, "seconds": seconds})
        return True

    def compile(self, module: CpuModule, kernel: str, block: tuple[int, int, int],
                resident: int = RESIDENT_SLOTS):
        self._note_launched(module, kernel)
        key = self._key(module, kernel, block, resident)
        hit = cache.load(key)
        if hit is None:
            # compiled ahead by a worker, or under way there: take its result
            ahead = compile_pool.get_compile_pool().claim(key)
            reply = ahead.result() if ahead is not None else None
            if reply is not None and reply[0] == "done":
                hit = reply[2], {"info": reply[3]}
            else:
                hit = cache.load(key)  # (a worker may have stored it meanwhile)
        if hit is not None:
            obj, meta = hit
            info = CompiledKernelInfo(**meta["info"])
            self.stats["cache_hits"] += 1
        else:
            from .compiler import compile_object  # (a run whose kernels are all cached needs none)

            t0 = time.perf_counter()
            try:
                obj, info = compile_object(module.ptx, kernel, block, nsm=self.pool.n,
                                           resident=resident)
            except UnsupportedError as e:
                raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"kernel {kernel}: {e}") from None
            dt = time.perf_counter() - t0
            self.stats["compiles"] += 1
            self.stats["compile_seconds"] += dt
            cache.store(key, obj, {"info": info.__dict__, "seconds": dt})
        symbols = {}
        for sym, var in info.global_symbols.items():
            if var not in module.globals:
                raise BackendError(CUDA_ERROR_NOT_FOUND, f"kernel {kernel}: the variable {var} is declared but never defined")
            symbols[sym] = module.globals[var][0]
        for sym in info.host_symbols:
            symbols[sym] = hostcalls.address_of(sym)
        return jit.link(obj, symbols), info

    # ------------------------------------------------------------ launch
    def _scratch_for(self, need: int) -> Scratch:
        """The per-worker scratch of the grids run at once, grown to `need` bytes each."""
        self._scratch = self._grown(self._scratch, need)
        return self._scratch

    def _grown(self, scratch: Scratch | None, need: int) -> Scratch:
        """`scratch`, or where it is smaller than `need` bytes per worker, a new set (records
        queued before keep the old one alive until they have run). Grids that run at the same
        time (other lanes', those run at once) each have a set of their own."""
        if scratch is not None and need <= scratch.size:
            return scratch
        try:
            return Scratch(self.pool.n, need)
        except MemoryError:
            raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, f"{need} bytes of per-worker scratch") from None

    def queue_launch(self, kernel: CpuKernel, spec: Spec, grid: tuple[int, int, int],
                     dyn_smem: int, params: bytes, what: str, cooperative: bool) -> None:
        """Hand a launch to the queue (launch_queue.py). What a launch of the same kernel,
        shape and scratch as the kernel's last one needs beside its parameters is kept
        (kernel.last_queued): a program launches the same grid again and again."""
        q = self._local.lane or self.queue
        last = kernel.last_queued.get(q)
        if last is not None and last[0] == (spec, grid, dyn_smem, what, cooperative) \
                and last[1] is q.scratch:
            q.kernel(last[2], params, cooperative, last[3])
            return
        nblocks = grid[0] * grid[1] * grid[2]
        workers = min(self.pool.n, nblocks)
        slot = (spec.scratch_base + dyn_smem + 4095) & ~4095
        scratch = q.scratch = self._grown(q.scratch, slot * spec.ck.resident_slots)
        chunk = grab_size(nblocks, workers, spec.ck, cooperative)
        hook = None
        if spec.hooked:
            module = kernel.module

            def hook(phase: int) -> None:
                # (device_launch.py keeps the launches of one grid at a time: a hooked grid
                # holds the launch lock as the grids run at once do, whatever lane it is on)
                if phase == 0:
                    self._launch_lock.acquire()
                    device_launch.begin(module, 0)
                    return
                try:
                    launches = device_launch.end()
                finally:
                    self._launch_lock.release()
                if launches:
                    _on_leader.active = True
                    try:
                        device_launch.run_children(module, launches, 0)
                    finally:
                        _on_leader.active = False

        stall = ""
        held = spec.ck.resident_slots * workers
        if spec.ck.waits_on_others and nblocks > held:
            stall = (f"kernel {kernel.fn.name} (grid {grid}, {nblocks} blocks) has not ended after "
                     f"{launch_queue.stall_seconds():g} s. Its blocks may wait for other blocks (spin "
                     f"loops), and the CPU device holds {held} of them at once "
                     f"({spec.ck.resident_slots} per worker, {workers} worker{'s' * (workers != 1)}): a block waiting "
                     f"for one that has not started waits forever, where a GPU that holds the "
                     f"whole grid runs it (CUPORT_THREADS sets the workers)")
        record = launch_queue.Record(what, kernel.fn.name, grid, (scratch, spec, kernel.c_name), hook,
                                     stall)
        template = q.template(spec.linked.worker_addr, workers, grid, dyn_smem,
                                       scratch.pointers, chunk, slot, hook is not None,
                                       ctypes.addressof(kernel.c_name))
        if hook is None:  # (a hooked kernel's record holds its module: made each time)
            kernel.last_queued[q] = ((spec, grid, dyn_smem, what, cooperative), scratch,
                                     template, record)
        q.kernel(template, params, cooperative, record)

    # ------------------------------------------------------------ lanes (CUDA streams)
    def use_lane(self, key: int | None, after: Iterable[int] = ()) -> None:
        """Device work handed over on this thread from now on goes to CUDA stream `key`'s lane
        (None: back to lane 0), after the work handed over so far to the lanes `after` (the
        legacy stream's implicit synchronisation: the driver's model, driver/stream.py)."""
        if not key and not after or self.queue is None:  # (None; lane 0: the default)
            self._local.lane = None
            return
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._new_lane(key)
        for k in after:
            other = self._lanes.get(k)
            if other is not None and other is not lane:
                count = other.submitted
                if other.pending() and self._followed.get((lane, other), -1) < count:
                    lane.follow(other, count)
                    self._followed[(lane, other)] = count
        self._local.lane = lane

    def _new_lane(self, key: int) -> launch_queue.LaunchQueue:
        """A lane for CUDA stream `key`: a free one (a gone stream's once its work has run),
        else, all MAX_LANES taken, one that other streams use too (their work then runs in
        the order it is handed over, as streams sharing a GPU's hardware queue do)."""
        with self._lanes_lock:
            lane = self._lanes.get(key)
            if lane is not None:
                return lane
            if not self._free_lanes:
                idle = [x for x in self._dropped if not x.users and not x.pending()]
                self._dropped = [x for x in self._dropped if x not in idle]
                self._free_lanes.extend(x.index for x in idle)
            if self._free_lanes:
                lane = self.queues.lane(self._free_lanes.pop())
            else:
                lane = self.queues.lane(1 + key % (launch_queue.MAX_LANES - 1))
            lane.users += 1
            self._lanes[key] = lane
            return lane

    def drop_lane(self, key: int) -> None:
        """CUDA stream `key` is gone and its work handed over: its lane is free for another
        stream once that work has run."""
        if key == 0:
            return
        with self._lanes_lock:
            lane = self._lanes.pop(key, None)
            if lane is not None:
                lane.users -= 1
                if not lane.users:
                    self._dropped.append(lane)

    def _lanes_of(self, keys: Iterable[int] | None) -> list[launch_queue.LaunchQueue]:
        """The lanes of the CUDA streams `keys`; None: every lane (a gone stream's too)."""
        if self.queues is None:
            return []
        if keys is None:
            return list(self.queues.opened)
        get = self._lanes.get
        return [q for k in keys if (q := get(k)) is not None]

    def pending(self, lanes: Iterable[int] | None = None) -> bool:
        """Whether work handed over to the lanes of the CUDA streams `lanes` (None: to any)
        has not finished yet."""
        if lanes is None:
            if self.queues is not None:
                for q in self.queues.opened:  # (a loop, not any(): on every copy's path)
                    if q.pending():
                        return True
            return False
        get = self._lanes.get
        for k in lanes:
            q = get(k)
            if q is not None and q.pending():
                return True
        return False

    def drain(self, lanes: Iterable[int] | None = None) -> tuple[str, BackendError] | None:
        """Wait (the GIL released) until everything handed over to the lanes of the CUDA
        streams `lanes` (None: all) has run, and no other lane's work; print the kernels'
        printf output; the first failure of any lane's grids so far, as (the launch, its
        error), if any (a GPU's fault is every later synchronisation's to report)."""
        queues = self.queues
        if queues is None:
            return None
        for q in self._lanes_of(lanes):
            if q.pending():
                q.wait(q.submitted)
        if hostcalls.output_pending():
            hostcalls.flush_output()
        return queues.take_failure()

    def wait_queued(self) -> None:
        """Before a launch that runs at once: let what was queued before it on the calling
        thread's lane run (every lane's where the thread has none; not on a leader thread,
        whose grid is what the launch follows)."""
        if self.queue is None or getattr(_on_leader, "active", False):
            return
        lane = self._local.lane
        for q in (lane,) if lane is not None else self._lanes_of(None):
            if q.pending():
                q.wait(q.submitted)

    def fill_queued(self, dst: int, value: int, n: int, width: int = 1) -> None:
        """A fill of device memory after the work queued before it on the calling thread's
        lane: done now when nothing is queued there, else queued itself."""
        q = self._local.lane or self.queue
        if q is not None and q.pending():
            q.fill(dst, value, n, width)
        elif width == 1:
            ctypes.memset(dst, value & 0xFF, n)
        else:
            import numpy as np  # (here: importing NumPy is a tenth of a second of start-up)

            dtype = {2: np.uint16, 4: np.uint32}[width]
            np.frombuffer((ctypes.c_char * (n * width)).from_address(dst), dtype=dtype).fill(
                value & ((1 << (8 * width)) - 1))

    def copy_queued(self, dst: int, src: int, n: int) -> None:
        """A device-to-device copy after the work queued before it (as fill_queued)."""
        q = self._local.lane or self.queue
        if q is not None and q.pending():
            q.copy(dst, src, n)
        else:
            ctypes.memmove(dst, src, n)

    def run(self, linked: jit.Linked, ck: CompiledKernelInfo, grid, dyn_smem: int, params: bytes,
            name: str, cooperative: bool = False, module: CpuModule | None = None,
            depth: int = 0) -> list:
        """Run one grid to its end on this thread (worker 0); returns the launches its threads
        made (device_launch.py). On Python's main thread, while ^C means KeyboardInterrupt,
        ^C also stops the launch (guard.c's cuport_interruptible): the exception, pending
        from Python's own handler, is raised as soon as the launch has returned."""
        lib = guard.library()
        interruptible = lib is not None \
            and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if not interruptible:
            return self._run(linked, ck, grid, dyn_smem, params, name, cooperative, module, depth)
        lib.quick_interruptible(L.ERR_INTERRUPTED)
        try:
            return self._run(linked, ck, grid, dyn_smem, params, name, cooperative, module, depth)
        finally:
            lib.quick_interruptible(0)

    def cancel_launches(self, kind: int = L.ERR_INTERRUPTED, timeout: float = 2.0) -> bool:
        """Stop every launch in flight, the queued ones included: each fails with `kind`.
        True when all stopped."""
        lib = guard.library()
        if lib is None:
            return False
        if self.queues is not None:
            self.queues.cancel(kind)
        try:
            deadline = time.monotonic() + timeout
            while lib.cuport_cancel(kind):  # (sends each running worker a SIGSEGV)
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.005)
            return True
        finally:
            lib.cuport_cancel(0)

    def _run(self, linked: jit.Linked, ck: CompiledKernelInfo, grid, dyn_smem: int,
             params: bytes, name: str, cooperative: bool = False,
             module: CpuModule | None = None, depth: int = 0) -> list:
        nblocks = grid[0] * grid[1] * grid[2]
        with self._launch_lock:
            workers = min(self.pool.n, nblocks)
            slot = (ck.scratch_bytes(dyn_smem) + 4095) & ~4095
            scratch = self._scratch_for(slot * ck.resident_slots)
            if len(params) > self._params_len:
                self._params_len = max(len(params), 2 * self._params_len)
                self._params = ctypes.create_string_buffer(self._params_len)
                self._params_addr = ctypes.addressof(self._params)
            # (slice assignments, not ctypes.memmove/memset: those release the GIL, and each
            # release can hand it to the launching thread for a switch interval)
            self._params[:len(params)] = params
            ctx = self._ctx  # one launch at a time: the same record serves every launch
            self._ctx_bytes[:] = self._ctx_zero
            ctx.params = self._params_addr
            ctx.grid_x, ctx.grid_y, ctx.grid_z = grid
            ctx.dyn_smem = dyn_smem
            ctx.nblocks = nblocks
            ctx.scratch = scratch.pointers
            ctx.chunk = grab_size(nblocks, workers, ck, cooperative)
            workspace = None
            if cooperative:
                workspace = (ctypes.c_uint32 * 2)(8, 0)  # {wsSize, barrier}
                ctx.grid_workspace = ctypes.addressof(workspace)
            ctx.slot_bytes = slot
            faults: dict[int, int | None] = {}
            native = self.pool.native
            device_launch.begin(module, depth)
            try:
                if native is not None:
                    native.quick_guard_install()
                    native.cuport_pool_run(linked.worker_addr, self._ctx_addr, workers, 1,
                                           self._ctx_addr + L.LaunchCtx.error.offset,
                                           L.ERR_ILLEGAL_ADDRESS, L.ERR_MISALIGNED,
                                           self._faults)
                    if ctx.error:
                        self._native_faults(native, workers, faults)
                else:
                    call = self._guarded(linked, self._ctx_addr, faults)
                    if workers == 1:
                        call(0)
                    else:
                        self.pool.run(call, workers)
            finally:
                launches = device_launch.end()
            hostcalls.flush_output()
            del workspace  # (kept alive until every worker is done)
            if ctx.error:
                raise self._error(name, grid, ctx.error, ctx.error_line, ctx.error_block, faults)
        return launches

    def _native_faults(self, lib, workers: int, faults: dict[int, int | None]) -> None:
        """The faults the pool's workers recorded (runtime.c), as _guarded's call does."""
        for i in range(workers):
            f = self._faults[i]
            if f.sig in (signal.SIGSEGV, signal.SIGBUS):
                if f.sig == signal.SIGSEGV and f.code == faultaddr.SI_KERNEL:
                    faults[i] = faultaddr.decode(lib, list(f.regs), bytes(f.fp[:f.fp_size]))
                else:
                    faults[i] = f.where or 0
            f.sig = 0

    @staticmethod
    def _guarded(linked: jit.Linked, ctx_addr: int, faults: dict[int, int | None]):
        """worker(ctx, i) for each worker i, with memory faults turned into launch errors."""
        lib = guard.library()
        if lib is None:
            return lambda i: linked.worker(ctx_addr, i)
        lib.cuport_guard_install()
        error_word = ctx_addr + L.LaunchCtx.error.offset

        def call(i: int) -> None:
            where = ctypes.c_void_p()
            sig = lib.cuport_guarded_call(linked.worker_addr, ctx_addr, i, error_word,
                                          L.ERR_ILLEGAL_ADDRESS, L.ERR_MISALIGNED,
                                          ctypes.byref(where))
            if sig in (signal.SIGSEGV, signal.SIGBUS):
                # a general-protection fault (non-canonical address) comes without its
                # address: decoded from the faulting instruction (faultaddr.py)
                if sig == signal.SIGSEGV and not faultaddr.reported(lib):
                    faults[i] = faultaddr.address(lib)  # (None: not decodable)
                else:
                    faults[i] = where.value or 0

        return call

    def _explain(self, record: launch_queue.Record, kind: int, line: int, block: int,
                 faults: dict[int, int | None]) -> BackendError:
        """A queued grid's failure (launch_queue.py), as its launch would have raised it."""
        return self._error(record.name, record.grid, kind, line, block, faults)

    @staticmethod
    def _error(name: str, grid, kind: int, line: int, lin: int,
               faults: dict[int, int | None]) -> BackendError:
        """The error of a grid that failed with error `kind` at PTX line `line` in linear
        block `lin` (LaunchCtx's error fields); `faults`: worker -> faulting address."""
        bx = lin % grid[0]
        by = (lin // grid[0]) % grid[1]
        bz = lin // (grid[0] * grid[1])
        what = L.ERROR_NAMES.get(kind, f"error {kind}")
        if kind == L.ERR_INTERRUPTED:
            msg = f"kernel {name}: {what}"
        elif faults and line == 0:  # a memory fault caught by the guard
            address = next(iter(faults.values()))
            if address is None:
                fault = ("a load or store faulted at an address the OS does not report (a "
                         "general-protection fault: beyond the 47-bit address space)")
            else:
                why = ("an address beyond the 47-bit address space"
                       if not faultaddr.canonical(address)
                       else "memory the program never allocated, or freed")
                fault = f"a load or store at {address:#x} faulted ({why})"
            msg = f"kernel {name}: {what}: {fault}; PTX line and block unknown"
        else:
            msg = f"kernel {name}: {what} (PTX line {line}, block ({bx},{by},{bz}))"
        code = {
            L.ERR_ASSERT: CUDA_ERROR_ASSERT,
            L.ERR_STACK: CUDA_ERROR_HARDWARE_STACK_ERROR,
            L.ERR_ILLEGAL_ADDRESS: CUDA_ERROR_ILLEGAL_ADDRESS,
            L.ERR_MISALIGNED: CUDA_ERROR_MISALIGNED_ADDRESS,
            L.ERR_ILLEGAL_INSTRUCTION: CUDA_ERROR_ILLEGAL_INSTRUCTION,
        }.get(kind, CUDA_ERROR_LAUNCH_FAILED)
        return BackendError(code, msg)


# the leader thread while it runs the grids a queued grid launched (launch_queue.py's hooks)
_on_leader = threading.local()


class _LaneState(threading.local):
    """The lane the calling thread's device work goes to (use_lane; None: lane 0). (A class
    default: a thread-local's missing attribute would raise inside every getattr.)"""

    lane: launch_queue.LaunchQueue | None = None


_backend: CpuBackend | None = None
_blk = threading.Lock()


def get_cpu_backend() -> CpuBackend:
    global _backend
    with _blk:
        if _backend is None:
            _backend = CpuBackend()
        return _backend
