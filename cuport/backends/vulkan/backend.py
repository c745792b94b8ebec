"""The Vulkan backend: PTX kernels as SPIR-V compute shaders on a Vulkan device.

A loaded module parses and links its PTX once and places its `.global`/`.const` variables
in device memory, with a table of their addresses that kernels read (layout.py). A kernel
is compiled per block shape and dynamic shared-memory size (workgroup sizes and workgroup
arrays are fixed in SPIR-V), and per what the texture objects its parameters hold are
(`textures`: their samples then take the objects' formats and modes as constants), into a
compute pipeline. A launch writes its parameters into a
device buffer, dispatches, and reports the status record's failure (trap, assert, bad
address) as the launch error, after printing the kernel's printf output. A kernel that
launches kernels is waited for, and the launches it made are dispatched (device_launch.py).

Device memory: the driver sees one address space. Allocations are made by the runtime
(buffer device addresses); where the device gives host-visible memory at its own device
address (lavapipe, and managed memory through host-mapping aliases on discrete GPUs), the
driver's host-side code uses it directly.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dataclasses
import functools
import math
import os
import struct
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...isa.texture_layout import Sampling
from ...passes.call_stack import DEFAULT_STACK_BYTES, recursive_functions
from ...passes.texture_params import texture_params
from ...ptx import ir
from ...ptx.callgraph import reachable_functions
from ...ptx.errors import UnsupportedError
from .. import cache, device_heap, facts
from .. import device_launch as device_launch_rules
from ..base import (
    CUDA_ERROR_ASSERT,
    CUDA_ERROR_HARDWARE_STACK_ERROR,
    CUDA_ERROR_ILLEGAL_ADDRESS,
    CUDA_ERROR_ILLEGAL_INSTRUCTION,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_LAUNCH_FAILED,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
    CUDA_ERROR_MISALIGNED_ADDRESS,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_OUT_OF_MEMORY,
    BackendError,
    PtxModule,
)
from ..facts import calls_malloc, kernel_info, pack_init
from ..printf import format_printf
from . import clock, device_launch, slices, validate
from . import cooperative as cooperative_
from . import layout as V
from .compiler import compile_kernel
from .lower import DeviceCaps

if TYPE_CHECKING:
    from .runtime.stream import Stream

_CODES = {V.ERR_ASSERT: CUDA_ERROR_ASSERT, V.ERR_ILLEGAL_ADDRESS: CUDA_ERROR_ILLEGAL_ADDRESS,
          V.ERR_MISALIGNED: CUDA_ERROR_MISALIGNED_ADDRESS,
          V.ERR_STACK: CUDA_ERROR_HARDWARE_STACK_ERROR,
          V.ERR_ILLEGAL_INSTRUCTION: CUDA_ERROR_ILLEGAL_INSTRUCTION}
_libc = ctypes.CDLL(None)
try:
    _c_stdout = ctypes.c_void_p.in_dll(_libc, "stdout")
except ValueError:  # macOS
    _c_stdout = ctypes.c_void_p.in_dll(_libc, "__stdoutp")
_libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
_libc.fflush.argtypes = [ctypes.c_void_p]


def caps_of(info) -> DeviceCaps:
    f = info.features
    warp = info.warp_subgroups()
    nvidia = info.driver_id.startswith("NVIDIA")
    return DeviceCaps(
        subgroup_size=32 if warp else info.subgroup_size,
        float32_atomic_add=bool(f.get("shaderBufferFloat32AtomicAdd")),
        float64_atomic_add=bool(f.get("shaderBufferFloat64AtomicAdd")),
        atomic_add_flushes_f32=nvidia,  # the same instruction as CUDA's red.global.add.f32
        shader_clock=bool(f.get("shaderSubgroupClock")),
        device_clock=bool(f.get("shaderDeviceClock")),
        float64=bool(f.get("shaderFloat64")),
        int64_shared_atomics=bool(f.get("shaderSharedInt64Atomics")),
        int64_buffer_atomics=bool(f.get("shaderBufferInt64Atomics")),
        divergent_barriers=nvidia,  # bar.sync counts arrivals in hardware, as under CUDA
        independent_threads=nvidia,  # Volta's independent thread scheduling
        signed_zero_inf_nan=tuple(w for w in (16, 32, 64)
                                  if info.float_controls.get(f"shaderSignedZeroInfNanPreserveFloat{w}")),
        simd_width=info.subgroup_size if info.driver_id == "MESA_LLVMPIPE" else 0,
        checked_arrays=info.device_type == "cpu",  # (a GPU faults on a wild index by itself)
        single_access128=info.driver_id != "MESA_LLVMPIPE",  # (measured: tests/vulkan/test_tile_status.py)
        workgroup_memory=workgroup_memory(info),
        private_memory=int(os.environ.get("CUPORT_VK_PRIVATE_BYTES") or DeviceCaps.private_memory),
        push_params=push_params(info),
    )


def push_params(info) -> int:
    """Bytes of kernel parameters passed as push constants too (DeviceCaps.push_params):
    what the device's push-constant block holds beyond layout.PUSH, at most 128 (NVIDIA
    offers 256 bytes in all, lavapipe 128: none there). CUPORT_VK_PUSH_PARAMS=0 reads every
    parameter from device memory instead (measurements)."""
    if os.environ.get("CUPORT_VK_PUSH_PARAMS", "") == "0":
        return 0
    return max(0, min(info.limits.max_push_constants, 256) - V.PUSH_BYTES) & ~3


def workgroup_memory(info) -> int:
    """The workgroup memory kernels may use; a kernel that needs more keeps its shared memory
    in device memory (slices.py). CUPORT_VK_WORKGROUP_MEMORY=N uses at most N bytes (tests
    and measurements: 0 puts every kernel's shared memory in device memory)."""
    limit = info.limits.max_shared_memory
    env = os.environ.get("CUPORT_VK_WORKGROUP_MEMORY")
    return min(limit, int(env)) if env else limit


_FMA_PROBE = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry probe(.param .u64 out)
{
    .reg .f32 %f<5>;
    .reg .f64 %d<5>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.global.f32 %f1, [%rd1];
    ld.global.f32 %f2, [%rd1+4];
    fma.rn.f32 %f3, %f1, %f1, %f2;
    st.global.f32 [%rd1+32], %f3;
    ld.global.f64 %d1, [%rd1+8];
    ld.global.f64 %d2, [%rd1+16];
    fma.rn.f64 %d3, %d1, %d1, %d2;
    st.global.f64 [%rd1+40], %d3;
    ret;
}
"""


_NO_STATUS = bytes(V.STATUS_BYTES)  # a launch's status record, cleared
_RING_EMPTY = struct.pack("<II", 0, V.RING_BYTES - V.RING_DATA)  # the printf ring's head, empty
_U32 = struct.Struct("<I")

#: variants of a kernel, per launch shape, for different texture objects; launches with yet
#: other objects take the variant that reads their descriptors (a program cycling through
#: many formats compiles no more than this)
TEXTURE_VARIANTS = 8


def texture_variants() -> int:
    """TEXTURE_VARIANTS, or CUPORT_VK_TEXTURE_VARIANTS=N (0: every launch samples through
    the descriptor, as before the variants: measurements)."""
    env = os.environ.get("CUPORT_VK_TEXTURE_VARIANTS", "")
    return int(env) if env.isdigit() else TEXTURE_VARIANTS

Textures = tuple[tuple[str, Sampling], ...]  # (kernel parameter, its object's facts)


def _view(address: int, size: int) -> memoryview:
    """`size` bytes of host memory at `address` as a writable memoryview."""
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


class LaunchPlan:
    """What every launch of one kernel and shape (grid, block, dynamic shared memory) on the
    plain path shares (VulkanBackend.plan): its pipeline, its push constants after a launch's
    own head (packed for the device memory's span when made), how many parameter bytes the
    pipeline takes from its push constants and whether it reads them from memory as well.
    A launch by a plan packs only its slot's head and its parameters (run_planned)."""

    __slots__ = ("kernel", "pipe", "grid", "dyn_smem", "name", "pushed", "in_memory", "tail",
                 "lowest", "highest")

    def __init__(self, kernel: VulkanKernel, pipe, grid: tuple[int, int, int], dyn_smem: int) -> None:
        self.kernel, self.pipe, self.grid, self.dyn_smem = kernel, pipe, grid, dyn_smem
        self.name = kernel.fn.name
        self.pushed = pipe.push_size - V.PUSH_BYTES
        self.in_memory = pipe not in kernel.pushed_only
        self.tail = b""
        self.lowest = self.highest = 0


_NO_PLAN = "no plan"  # (a shape whose launches _dispatch must take, VulkanBackend.plan)
PLANS_KEPT = 64  # shapes planned per kernel; past it the plans are made anew


class VulkanKernel:
    def __init__(self, module: VulkanModule, fn: ir.Function) -> None:
        self.module = module
        self.fn = fn
        self.info = kernel_info(module.ptx, fn)
        self._specs: dict[tuple, object] = {}  # (block, dyn_smem, stack, textures) -> pipeline
        self._plans: dict[tuple, LaunchPlan | str] = {}  # (grid, block, dyn_smem) -> its plan
        self._slices: dict[tuple, int] = {}  # (block, dyn_smem, stack) -> slice bytes (slices.py)
        # pipelines that read every parameter from push constants (KernelPlan.params_in_memory)
        self.pushed_only: set = set()
        self._lock = threading.Lock()

    @functools.cached_property
    def texture_params(self) -> tuple[tuple[str, int], ...]:
        """(name, byte offset) of the parameters that texture operands of the kernel sample
        through (passes/texture_params.py): a launch passes what objects they hold
        (`textures`), and gets a variant of the kernel made for them."""
        offsets = {p.name: p.offset for p in self.info.params}
        return tuple((n, offsets[n]) for n in texture_params(self.fn) if n in offsets)

    @functools.cached_property
    def may_launch(self) -> bool:
        """Whether the kernel may launch kernels (or otherwise use the launch area)."""
        return device_launch.may_launch(self.module, self.fn)

    @functools.cached_property
    def uses_device_heap(self) -> bool:
        """Whether the kernel calls malloc or free: its context's heap is bound to the module
        before it runs (driver/device_heap.py)."""
        return calls_malloc(self.module.ptx, self.fn)

    @functools.cached_property
    def needs_stack_limit(self) -> bool:
        """Whether the kernel calls recursive functions: its stack (passes/call_stack.py) is
        the context's cudaLimitStackSize, compiled in, so prepare and launch take it."""
        return bool(recursive_functions(reachable_functions(self.module.ptx, self.fn)))

    def stack_for(self, stack_bytes: int) -> int:
        """The stack this kernel is compiled with for a stack limit of `stack_bytes`: none
        without recursion. (A stack past DeviceCaps.private_memory is in device memory:
        lavapipe turns every access to a dynamically indexed Function array into code that
        grows with the array, so there a 64 KiB private stack took 22 s and 0.7 GB to
        compile, 768 KiB past 5 minutes; in device memory a 256 KiB one takes under 1 s.)"""
        return int(stack_bytes) if self.needs_stack_limit else 0

    def specialization(self, block: tuple[int, int, int], dyn_smem: int,
                       stack_bytes: int = DEFAULT_STACK_BYTES, textures: Textures = ()):
        stack_bytes = self.stack_for(stack_bytes)
        key = (block, dyn_smem, stack_bytes, textures)
        pipe = self._specs.get(key)  # (made once: asked again by every launch, without the lock)
        if pipe is not None:
            return pipe
        with self._lock:
            if textures and key not in self._specs and sum(
                    1 for k in self._specs if k[:3] == key[:3] and k[3]) >= texture_variants():
                textures = ()
                key = (block, dyn_smem, stack_bytes, textures)
            pipe = self._specs.get(key)
            if pipe is None:
                from . import runtime

                be = self.module.backend
                try:
                    caps = be.caps_for(self.fn)  # (may calibrate the clock, or refuse it)
                except UnsupportedError as e:
                    raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"kernel {self.fn.name}: {e}") from None
                spirv, local_size, in_memory, params_in_memory = self._spirv(block, dyn_smem, caps,
                                                                             stack_bytes, textures)
                try:
                    pipe = be.dev.pipeline(spirv, "main", local_size, V.PUSH_BYTES + caps.push_params,
                                           32 if be.caps.subgroup_size == 32 and
                                           be.info.min_subgroup_size != be.info.max_subgroup_size else None)
                except runtime.VulkanError as e:
                    raise self._refused(e, block, stack_bytes) from None
                self._slices[key[:3]] = in_memory
                if not params_in_memory:
                    self.pushed_only.add(pipe)
                self._specs[key] = pipe  # (last: a launch finding it reads the two above unlocked)
            return pipe

    def _refused(self, e: Exception, block: tuple[int, int, int], stack_bytes: int) -> BackendError:
        """The launch's error when the driver cannot make the kernel's pipeline: what CUDA
        answers for a launch beyond the device's resources, naming the kernel, the driver's
        answer and, for a kernel with a call stack, the stack (private memory per
        invocation: NVIDIA's driver 580 refuses a 32 KiB one with VK_ERROR_UNKNOWN)."""
        why = f"kernel {self.fn.name} (block {block}): the Vulkan driver could not create its pipeline: {e}"
        if stack_bytes:
            why += (f"; the kernel keeps a call stack of {stack_bytes} bytes per thread "
                    "(cudaLimitStackSize) in private memory: a smaller limit may fit")
        return BackendError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, why)

    def install(self, c) -> None:
        """Use the Compilation `c` (compiler.py, made with caps of one's own: the clock's
        calibration, tests) for launches of its block shape and dynamic shared memory."""
        be = self.module.backend
        key = (tuple(c.block), c.dyn_smem, self.stack_for(c.stack_bytes), tuple(c.textures))
        with self._lock:
            pipe = be.dev.pipeline(c.shader.spirv, "main", tuple(c.plan.local_size),
                                   V.PUSH_BYTES + c.caps.push_params, None)
            self._slices[key[:3]] = c.plan.slice_bytes
            if not c.plan.params_in_memory:
                self.pushed_only.add(pipe)
            self._specs[key] = pipe

    def slice_bytes(self, block: tuple[int, int, int], dyn_smem: int,
                    stack_bytes: int = DEFAULT_STACK_BYTES) -> int:
        """The bytes of a block's slice of device memory (0: its shared memory is workgroup
        memory), once the specialization exists."""
        return self._slices.get((block, dyn_smem, self.stack_for(stack_bytes)), 0)

    def _spirv(self, block: tuple[int, int, int], dyn_smem: int, caps: DeviceCaps, stack_bytes: int,
               textures: Textures = ()) -> tuple[bytes, tuple[int, int, int], int, bool]:
        """(SPIR-V, local size, slice bytes: 0 where the shared memory is workgroup memory,
        whether it reads its parameters' copy in memory) of the kernel for this launch shape:
        from the
        kernel cache (backends/cache.py: its owner's only, verified before use) or compiled
        and stored there. The SPIR-V holds no address of this run (the zero and sink pages are
        push constants), so the key is the PTX, the kernel, the shape, the stack size (0 for
        a kernel without recursion), the texture facts the variant takes as constants (every
        field of each), cuport's code and the device's capabilities; a kernel reading %globaltimer holds this run's clock
        calibration, which the key then includes (it is compiled again in the next run).
        CUPORT_SPIRV_VALIDATE=1 reads nothing from the cache, so that spirv-val sees all."""
        key = None
        if cache.enabled() and not validate.enabled():  # (validating: every module is made anew)
            flags = dataclasses.replace(caps, zero_page=int(bool(caps.zero_page)),
                                        sink_page=int(bool(caps.sink_page)))
            key = cache.make_key("vulkan-spirv", cache.code_fingerprint(), self.module.source_hash,
                                 self.fn.name, repr(tuple(block)), str(dyn_smem), repr(flags),
                                 str(stack_bytes), repr(textures))
            hit = cache.load(key)
            if hit is not None:
                spirv, meta = hit
                try:
                    local = tuple(int(x) for x in meta["local_size"])
                    if len(local) == 3 and len(spirv) % 4 == 0:
                        return (spirv, local, int(meta["slice_bytes"]),
                                bool(meta.get("params_in_memory", True)))
                except (KeyError, TypeError, ValueError):
                    pass  # (an authentic entry of another layout: compiled anew)
        try:
            c = compile_kernel(self.module.ptx, self.fn.name, block, dyn_smem, caps,
                               stack_bytes=stack_bytes or DEFAULT_STACK_BYTES, textures=textures)
        except UnsupportedError as e:
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"kernel {self.fn.name}: {e}") from None
        local_size = tuple(c.plan.local_size)
        in_memory = c.plan.slice_bytes
        if key is not None:
            cache.store(key, bytes(c.shader.spirv), {"local_size": list(local_size),
                                                      "slice_bytes": in_memory,
                                                      "params_in_memory": c.plan.params_in_memory})
        return c.shader.spirv, local_size, in_memory, c.plan.params_in_memory

    def prepare(self, block: tuple[int, int, int], stack_bytes: int = DEFAULT_STACK_BYTES,
                textures: Textures = ()) -> None:
        self.specialization(block if block.__class__ is tuple else tuple(int(x) for x in block),
                            0, stack_bytes, textures)

    def blocks_per_multiprocessor(self, threads: int, dynamic_shared: int) -> int | None:
        """The occupancy calculator's answer on this device (driver/launch.py)."""
        return cooperative_.occupancy(self, threads, dynamic_shared)

    def launch(self, grid, block, dynamic_shared_bytes: int, params: bytes,
               cooperative: bool = False, stack_bytes: int = DEFAULT_STACK_BYTES,
               textures: Textures = ()) -> None:
        if grid.__class__ is not tuple:  # (the driver's are tuples of ints already)
            grid = tuple(int(x) for x in grid)
        if block.__class__ is not tuple:
            block = tuple(int(x) for x in block)
        if min(grid) < 1 or min(block) < 1:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"grid {grid} / block {block} has a zero dimension")
        dyn = int(dynamic_shared_bytes)
        if cooperative:
            cooperative_.check(self, grid, block, dyn)
        pipe = self.specialization(block, dyn, stack_bytes, textures)
        self.module.backend.run(self, pipe, grid, dyn, params if params.__class__ is bytes else bytes(params),
                                cooperative, self.slice_bytes(block, dyn, stack_bytes), stack_bytes)

    def launch_queued(self, grid: tuple[int, int, int], block: tuple[int, int, int],
                      dynamic_shared_bytes: int, params: bytes, what: str = "cuLaunchKernel",
                      cooperative: bool = False) -> None:
        """The driver's launch where it passes no options (no stack limit compiled in, no
        texture objects to make a variant for: driver/launch.py enqueue): after the first
        launch of a shape, the backend records it by the shape's plan (run_planned); a
        cooperative launch, parameters over a slot's bytes and shapes without a plan take
        `launch`."""
        plan = self._plans.get((grid, block, dynamic_shared_bytes))
        if plan is None:
            plan = self._plan(grid, block, dynamic_shared_bytes)
        if plan is _NO_PLAN or cooperative or len(params) > VulkanBackend.PARAMS:
            self.launch(grid, block, dynamic_shared_bytes, params, cooperative)
            return
        self.module.backend.run_planned(plan, params)

    def _plan(self, grid, block, dyn_smem: int) -> LaunchPlan | str:
        """The plan of launches of this shape (made once; _NO_PLAN where `launch` must take
        them, the shape's errors included)."""
        if grid.__class__ is not tuple or block.__class__ is not tuple or min(grid) < 1 \
                or min(block) < 1 or dyn_smem.__class__ is not int:
            return _NO_PLAN
        plan = self.module.backend.plan(self, self.specialization(block, dyn_smem), grid, block,
                                        dyn_smem) or _NO_PLAN
        if len(self._plans) >= PLANS_KEPT:
            self._plans.clear()
        self._plans[(grid, block, dyn_smem)] = plan
        return plan


class VulkanModule(PtxModule):
    def __init__(self, backend: VulkanBackend, ptx_texts: list[str]) -> None:
        self.backend = backend
        self.ptx = facts.load_ptx(ptx_texts)  # parsed, checked as ptxas would, linked
        self._texts = ptx_texts
        self.globals: dict[str, tuple[int, int]] = {}
        self._buffers: list = []
        self._allocate_globals()
        self._kernels: dict[str, VulkanKernel] = {}
        self._launch_table: int | None = None

    def _allocate_globals(self) -> None:
        be = self.backend
        vars_ = [v for v in self.ptx.variables if v.space in ("global", "const")]
        # the variables' addresses, then the device heap's (device_heap.py; 0 until bound)
        table = bytearray(8 * (len(vars_) + 1))
        for i, v in enumerate(vars_):
            if v.linkage == "extern" and v.init is None and v.size == 0:
                continue
            # a __managed__ variable is written by the host at its address (the runtime
            # registers it and the program assigns it): managed memory, one address for both
            buf = be.allocate_managed_buffer(max(v.size, 1)) if v.managed else be.allocate_buffer(max(v.size, 1))
            self._buffers.append(buf)
            self.globals[v.name] = (buf.address, v.size)
            struct.pack_into("<Q", table, 8 * i, buf.address)

        def resolve(name: str) -> int:
            if name in self.globals:
                return self.globals[name][0]
            if name in self.ptx.functions:
                # a function's address (libcudadevrt's tables): its token, as in code (a
                # kernel's launches; a call through it is refused where a kernel makes one)
                return device_launch_rules.function_token(self.ptx, name)
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"an initialiser refers to {name}, which is "
                                                         "neither a global variable nor a function")

        for v in vars_:
            if v.name in self.globals:
                data = pack_init(v, resolve) if v.init else bytes(max(v.size, 1))
                be.write(self.globals[v.name][0], data)
        self.table_bytes = bytes(table)
        self.table = be.allocate_buffer(len(table))
        self._buffers.append(self.table)
        be.write(self.table.address, bytes(table))

    @staticmethod
    def device_heap_bytes(limit: int) -> int:
        return device_heap.heap_bytes(limit)

    def init_device_heap(self, address: int, limit: int) -> None:
        """Lay out a fresh (zeroed) heap: its header (device_heap.py)."""
        self.backend.write(address, device_heap.header(limit))

    def bind_device_heap(self, address: int) -> None:
        """Give the module's kernels the context's malloc heap (device_heap.py): the table's
        last slot. Written once, before the first launch that reads it."""
        self.backend.write(self.table.address + len(self.table_bytes) - 8, address.to_bytes(8, "little"))

    def launch_table(self) -> int:
        """The device address of the module's kernel table (device_launch.py), made once."""
        if self._launch_table is None:
            data = device_launch.kernel_table(self)
            buf = self.backend.allocate_buffer(len(data))
            self._buffers.append(buf)
            self.backend.write(buf.address, data)
            self._launch_table = buf.address
        return self._launch_table

    @functools.cached_property
    def source_hash(self) -> str:
        """The PTX texts' part of the kernel cache's key (hashed once, when first needed)."""
        return cache.make_key(*self._texts)

    def _make_kernel(self, fn: ir.Function) -> VulkanKernel:
        return VulkanKernel(self, fn)


class VulkanBackend:
    name = "vulkan"
    # Launches, fills and device-to-device copies are recorded on one GPU command stream in
    # the order they are handed over, so the driver needs no thread of its own to order them
    # (driver/stream.py submit_device, driver/memory.py queued_backend).
    queues_launches = True

    def __init__(self, index: int = 0) -> None:
        from . import runtime

        infos = runtime.devices()
        if not infos:
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"no Vulkan device: {runtime.unavailable_reason()}")
        if index >= len(infos):
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"vulkan:{index}: there are {len(infos)} Vulkan devices")
        self.info = infos[index]
        try:
            self.dev = runtime.open(index)
        except runtime.Unsupported as e:  # (a setting the device cannot follow)
            raise BackendError(CUDA_ERROR_INVALID_VALUE, str(e)) from None
        self.caps = caps_of(self.info)
        # Each CUDA stream's device work goes to a runtime stream of its own, a *lane* (0: the
        # legacy stream and the backend's own work), so that streams run concurrently as on a
        # GPU; the driver says which lane a thread's work goes to (use_lane) and what it must
        # follow there (the legacy stream's implicit synchronisation, events). New memory's
        # zero fill and printf's strings go to a lane of their own (_sync), waited for at once:
        # they follow nothing, and no stream's kernels hold them back.
        self._default = self.dev.stream()
        self._lanes: dict[int, Stream] = {0: self._default}
        self._local = threading.local()
        self._sync_lane: Stream | None = None
        self._followed: dict[tuple[Stream, Stream], int] = {}  # (lane, other): ticket followed
        self._dropped: list[Stream] = []  # lanes of destroyed CUDA streams, until their work ran
        # the watched marks of each lane not known to be reached, in ticket order: (ticket,
        # reached, called); whoever learns first that the device is past them calls them, in
        # this order (_reach), so an event's time never precedes an earlier one's
        self._marks: dict[Stream, collections.deque] = {}
        self._reaching = threading.Lock()  # (held while _reach calls them: one order)
        # shared buffers that kernels of two lanes must not use at once (slices, the grid
        # workspace): the lane and ticket of the last dispatch that used each
        self._exclusive: dict[str, tuple[Stream, int]] = {}
        # (reentrant: a child kernel compiled while its parent's launches run may calibrate
        # the clock, which launches a kernel of its own)
        self._lock = threading.RLock()
        self._launch_area: device_launch.LaunchArea | None = None
        self._owned: dict[int, object] = {}
        self._host_only: dict[int, int] = {}
        # CUPORT_VK_COPIES=1: treat device memory as a discrete GPU's even where the host could
        # use it (lavapipe), so that the copy paths a discrete GPU takes are tested everywhere
        self.copies_only = os.environ.get("CUPORT_VK_COPIES") == "1"
        self.launch_buf = self.allocate_buffer(V.STATUS_BYTES + 64 * 1024, "host")
        self.ring = self.allocate_buffer(V.RING_BYTES, "host")
        self._ring_head = _view(self.ring.host_ptr, len(_RING_EMPTY))  # (read at every retire)
        self._ring_head[:] = _RING_EMPTY
        self.slots = self.allocate_buffer(self.SLOT * self.SLOTS, "host")
        self.shared_pool = slices.Pool(self)  # shared memory beyond the workgroup memory
        # Parameters in device memory: every invocation reads them, and from host memory
        # each read crossed the bus (H200: a memory-bound kernel took ~100 us longer, its
        # waves waiting on the parameter loads). Written from the host where the memory is
        # mapped (resizable BAR, UMA), else by vkCmdUpdateBuffer before the dispatch.
        self.param_slots = self.allocate_buffer(self.PARAMS * self.SLOTS)
        # the slots' host memory as views: a launch writes them by slice assignment (a ctypes
        # memset/memmove costs microseconds of call overhead each, every launch)
        self._slots_view = _view(self.slots.host_ptr, self.SLOT * self.SLOTS)
        self._params_view = (_view(self.param_slots.host_ptr, self.PARAMS * self.SLOTS)
                             if self.param_slots.host_ptr is not None and not self.copies_only else None)
        self._free_slots = list(range(self.SLOTS - 1, -1, -1))
        # per slot: its status record's host address, and the push constants' head (the device
        # addresses of its parameters and status record), made once
        self._slot_hosts = [self.slots.host_ptr + n * self.SLOT for n in range(self.SLOTS)]
        self._slot_heads = [V.push_head(self.param_slots.address + n * self.PARAMS,
                                        self.slots.address + n * self.SLOT)
                            for n in range(self.SLOTS)]
        # (name, record, slot, lane, ticket): launches whose records are still to be read
        self._inflight: list[tuple[str, int, int | None, Stream, int]] = []
        self.sync_launches = os.environ.get("CUPORT_VK_SYNC") == "1"
        self.pinned_in_queue = os.environ.get("CUPORT_VK_PINNED_QUEUE") != "0"
        if os.environ.get("CUPORT_VK_EVENT_MARKS") == "0":  # events recorded as stream ops
            self.when_reached = None  # (driver/stream.py submit_mark: measurements)
        from . import profile

        # (profiling times every launch on the default lane's timestamps: one lane for all)
        self.profile = profile.Profile(self._default) if profile.enabled() else None
        # CUPORT_VK_LANES=0: every CUDA stream's work on the default lane, as before lanes
        # (a fallback; a stream's host operations then wait for every stream's kernels)
        self.lanes_on = self.profile is None and os.environ.get("CUPORT_VK_LANES") != "0"
        from . import quirks
        from .lower_texture import ZERO_PAGE_BYTES

        self.zero_page = self.allocate_buffer(ZERO_PAGE_BYTES)
        self.fill(self.zero_page.address, 0, ZERO_PAGE_BYTES, 1, self._sync())  # (every lane reads it)
        self.sink_page = self.allocate_buffer(ZERO_PAGE_BYTES)  # stores to wild addresses land here
        self.pages = (self.zero_page.address, self.sink_page.address)  # (push constants)
        # CUPORT_VK_ADDRESS_CHECK=0: no range check of global addresses (README: faster; a
        # wild pointer then faults the GPU instead of failing the launch by name)
        checked = os.environ.get("CUPORT_VK_ADDRESS_CHECK", "1") != "0"
        self.caps = dataclasses.replace(self.caps, zero_page=self.zero_page.address,
                                        sink_page=self.sink_page.address if checked else 0,
                                        **quirks.probe(self))
        if not self._probe_fma():
            self.caps = dataclasses.replace(self.caps, fused_fma=False)
        self.caps = dataclasses.replace(self.caps, **self._subnormal_modes())
        if (self.caps.simulate_flush32 or self.caps.simulate_fma32) and self.caps.float64:
            # a simulated NVIDIA Fma is fused (FloatModes.simulate_flush32), so the kernels
            # take NVIDIA's path: the device's Fma behind subnormal.fma's guard
            self.caps = dataclasses.replace(self.caps, fused_fma=True)

    # ------------------------------------------------------------ lanes (CUDA streams)
    @property
    def stream(self) -> Stream:
        """The lane the calling thread's device work goes to (use_lane; else the default).
        (Read through the thread's __dict__: getattr of a threading.local attribute a thread
        never set raises inside, 0.7 us of every launch on the legacy stream.)"""
        lane = self._local.__dict__.get("lane")
        return self._default if lane is None else lane

    def use_lane(self, key: int | None, after: Iterable[int] = ()) -> None:
        """Device work handed over on this thread from now on goes to CUDA stream `key`'s lane
        (None: back to the default), after the work handed over so far to the lanes `after`
        (the legacy stream's implicit synchronisation: the driver's model, driver/stream.py)."""
        if key is None or not self.lanes_on:
            self._local.lane = None
            return
        lane = self._lanes.get(key)
        if lane is None:
            with self._lock:
                lane = self._lanes.get(key)
                if lane is None:
                    lane = self._lanes[key] = self.dev.stream()
        for k in after:
            other = self._lanes.get(k)
            if other is not None and other is not lane:
                ticket = other.mark()
                if self._followed.get((lane, other), -1) < ticket:  # (new work there since)
                    lane.wait_for(other, ticket)
                    self._followed[(lane, other)] = ticket
        self._local.lane = lane

    def drop_lane(self, key: int) -> None:
        """CUDA stream `key` is gone and its work handed over: its lane goes once that work
        has run (runtime Stream.close)."""
        if key == 0:
            return
        with self._lock:
            lane = self._lanes.pop(key, None)
            if lane is not None:
                self._marks.pop(lane, None)  # (its watcher still calls them)
                self._dropped = [x for x in self._dropped if not x.destroyed] + [lane]
                self._followed = {k: t for k, t in self._followed.items() if lane not in k}
        if lane is not None:
            lane.close()

    def _lanes_of(self, keys: Iterable[int] | None) -> list[Stream]:
        """The lanes of the CUDA streams `keys`; None: every lane with work (a dropped one's
        too, until its work has run)."""
        if keys is None:  # (every synchronisation of a context asks: no generators)
            every = list(self._lanes.values())
            if self._dropped or self._inflight:
                seen = set(every)
                for lane in [x for x in self._dropped if not x.destroyed] + [x[3] for x in self._inflight]:
                    if lane not in seen:
                        seen.add(lane)
                        every.append(lane)
            return every
        on = self.lanes_on
        return list(dict.fromkeys(lane for k in keys if (lane := self._lanes.get(k if on else 0)) is not None))

    def _sync(self) -> Stream:
        """The lane of synchronous copies and fills (made when first needed)."""
        if self._sync_lane is None:
            with self._lock:
                if self._sync_lane is None:
                    self._sync_lane = self.dev.stream()
        return self._sync_lane

    @contextlib.contextmanager
    def apart(self):
        """The calling thread's launches and drain_here go to the lane of synchronous work
        meanwhile: a measurement of the backend's own (clock.py's clock rate) neither waits
        behind a stream's kernels nor takes a failure of theirs as its own."""
        before = self._local.__dict__.get("lane")
        self._local.lane = self._sync()
        try:
            yield
        finally:
            self._local.lane = before

    def _follow(self, name: str) -> None:
        """Before a dispatch that uses the shared buffer `name`: its lane waits for the last
        dispatch of another lane that used it (lock held)."""
        lane = self.stream
        last = self._exclusive.get(name)
        if last is not None and last[0] is not lane and not last[0].destroyed:
            lane.wait_for(*last)

    def _subnormal_modes(self) -> dict:
        """DeviceCaps' subnormal fields (spirv/probe.py subnormal_modes: the policy)."""
        from .spirv.probe import subnormal_modes

        return subnormal_modes(self.dev.info.float_controls, os.environ.get("CUPORT_VK_FLUSH32", ""),
                               self._probe_subnormals, os.environ.get("CUPORT_VK_FMA32", ""),
                               self._probe_contract)

    def _probe_contract(self) -> str:
        """Where the driver fuses fma's multiply-and-add pair into an fma that keeps
        subnormals, the FloatModes.fma32 variant that relies on it (spirv/probe.py
        contract_probe_variant: "contract" or "contract-alone"); "" where it does not or
        refuses the probe's pipeline."""
        from .runtime import VulkanError
        from .spirv import contract_probe_push, contract_probe_shader, contract_probe_variant

        try:
            return contract_probe_variant(self._probe(contract_probe_shader(), contract_probe_push, 20))
        except VulkanError:
            return ""

    def _probe_subnormals(self, preserve: bool) -> tuple[bool, bool, bool]:
        """(f32 arithmetic flushes, f32 Fma flushes, f32 min/max flush) on this device, with or
        without the DenormPreserve mode declared; a device that refuses the probe's pipeline
        with the mode flushes."""
        from .runtime import VulkanError
        from .spirv import subnormal_probe_flushes, subnormal_probe_push, subnormal_probe_shader

        try:
            return subnormal_probe_flushes(self._probe(subnormal_probe_shader(preserve),
                                                       subnormal_probe_push, 48))
        except VulkanError:
            if not preserve:
                raise
            return True, True, True

    def _probe(self, sh, push, nbytes: int) -> bytes:
        """The first `nbytes` that a one-invocation probe shader (spirv/probe.py; `push(out
        address)` its push constants) writes on this device, kept in the kernel cache per
        device, driver, shader and inputs as a verified entry (a number, never run), so that
        only a device's first process pays for the probes' pipelines. VulkanError where the
        device refuses the pipeline (not kept)."""
        spirv = bytes(sh.spirv)

        def measure() -> int:
            buf = self.allocate_buffer(64, "host")
            try:
                pipe = self.dev.pipeline(sh.spirv, sh.entry, sh.local_size, sh.push_size)
                self.stream.dispatch(pipe, (1, 1, 1), push(buf.address))
                self.stream.synchronize()
                return 1 + int.from_bytes(ctypes.string_at(buf.host_ptr, nbytes), "little")
            finally:
                self.dev.free(buf)

        value = self.measured("vulkan probe", (spirv.hex(), push(0).hex(), str(nbytes)), measure)
        return (value - 1).to_bytes(nbytes, "little")

    def measured(self, what: str, parts: tuple[str, ...], measure) -> int:
        """cache.measured for a figure of this device and driver (the probes: `parts` name
        the probe and its inputs): a verified number, measured by the device's first process."""
        info = self.info
        key = cache.make_key(what, info.name, str(info.driver_id), str(info.driver_version),
                             bytes(info.uuid).hex(), *parts)
        return cache.measured(key, what, measure)

    def _probe_fma(self) -> bool:
        """Whether the device's GLSL Fma is fused: (1+2^-12)^2 - 1 keeps its 2^-24 only when
        the product is not rounded first (and likewise for f64). Inputs come from memory, so
        no compiler folds them. Kept in the kernel cache as _probe's answers are (per device,
        driver and cuport's code, which compiles the probe)."""
        def measure() -> int:
            buf = self.allocate_buffer(64, "host")
            try:
                struct.pack_into("<IIQQ", (ctypes.c_char * 24).from_address(buf.host_ptr), 0,
                                 0x3F800800, 0xBF800000, 0x3FF0000000400000, 0xBFF0000000000000)
                mod = VulkanModule(self, [_FMA_PROBE])
                mod.kernel("probe").launch((1, 1, 1), (1, 1, 1), 0, struct.pack("<Q", buf.address))
                failed = self.drain()
                if failed is not None:
                    raise failed[1]
                f32, _, f64 = struct.unpack("<IIQ", ctypes.string_at(buf.host_ptr + 32, 16))
            finally:
                self.dev.free(buf)
            return 2 if f32 == 0x3A000400 and f64 == 0x3E20000000200000 else 1

        return self.measured("vulkan fma probe", (cache.code_fingerprint(), _FMA_PROBE), measure) == 2

    def caps_for(self, fn: ir.Function) -> DeviceCaps:
        """The caps a kernel compiles with: a kernel reading %globaltimer needs the device
        clock calibrated (clock.py, once per backend)."""
        if self.caps.device_clock and self.caps.globaltimer is None and clock.uses_globaltimer(fn):
            with clock.LOCK:
                if self.caps.globaltimer is None:
                    self.caps = dataclasses.replace(self.caps, globaltimer=clock.calibrate(self))
        return self.caps

    # ------------------------------------------------------------ memory
    def allocate_buffer(self, size: int, kind: str = "device"):
        """A runtime buffer: "device" memory (device-local where the device has it: on a
        discrete GPU the host reaches it only through copies), or "host" memory, which the
        host reads and writes through `host_ptr` (launch records, printf)."""
        from . import runtime

        try:
            return self.dev.alloc(size, runtime.HOST if kind == "host" else runtime.DEVICE)
        except runtime.OutOfDeviceMemory as e:
            raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, str(e)) from None

    def allocate_managed_buffer(self, size: int):
        """A buffer of managed memory (one address for host and kernels), or NOT_SUPPORTED."""
        from . import runtime

        try:
            return self.dev.alloc(size, runtime.MANAGED)
        except runtime.Unsupported as e:
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, f"managed memory: {e}") from None
        except runtime.OutOfDeviceMemory as e:
            raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, str(e)) from None

    def allocate(self, size: int, kind: str = "device") -> int:
        """Memory for the driver. Device memory starts zeroed, as the CPU backend's does.
        Pinned host memory (cuMemHostAlloc) is host memory at one address for host and
        kernels where the device allows it, else plain host memory that only copies use (the
        device then reports CAN_MAP_HOST_MEMORY 0); managed memory needs one address."""

        if kind == "managed":
            buf = self.allocate_managed_buffer(size)
        elif kind == "host":
            buf = self.allocate_buffer(size, "host")
            if not buf.same_address:
                self.dev.free(buf)
                from .. import host_pages

                address = host_pages.allocate(size)
                self._host_only[address] = size
                return address
        else:
            buf = self.allocate_buffer(size)
        self._owned[buf.address] = buf
        if self.host_accessible(buf.address):
            ctypes.memset(buf.address, 0, size)
        else:
            self.fill(buf.address, 0, size, 1, self._sync())  # (waited for: any lane may use it)
        return buf.address

    def free(self, address: int, size: int) -> None:
        if address in self._host_only:
            from .. import host_pages

            host_pages.free(address, self._host_only.pop(address))
            return
        buf = self._owned.pop(address, None)
        if buf is not None:
            self.dev.free(buf)  # (the runtime reuses the memory only after queued work ran)

    def shareable(self, address: int) -> bool:
        """Whether cuIpcGetMemHandle can export this device memory (exportable blocks)."""
        buf = self._owned.get(address)
        return buf is not None and buf.block.exportable

    def share(self, address: int, size: int) -> tuple[int, bytes]:
        """A descriptor of the device memory at `address` and its description, for another
        process's map_shared (driver/ipc.py)."""
        from . import runtime

        buf = self._owned.get(address)
        if buf is None:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"0x{address:x} is not device memory "
                                                         "of this backend")
        try:
            return self.dev.export_memory(buf)
        except runtime.Unsupported as e:
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, str(e)) from None

    def map_shared(self, fd: int, description: bytes, size: int) -> int:
        """Another process's device memory (share there) at an address of this process's;
        the descriptor is consumed."""
        from . import runtime

        try:
            buf = self.dev.import_memory(fd, description)
        except ValueError as e:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, str(e)) from None
        except runtime.Unsupported as e:
            raise BackendError(CUDA_ERROR_NOT_SUPPORTED, str(e)) from None
        except runtime.OutOfDeviceMemory as e:
            raise BackendError(CUDA_ERROR_OUT_OF_MEMORY, str(e)) from None
        if buf.size != size:
            self.dev.free(buf)
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"the shared memory holds {buf.size} "
                                                         f"bytes, its handle says {size}")
        self._owned[buf.address] = buf
        return buf.address

    def host_accessible(self, address: int) -> bool:
        """Whether the host may use [address...] directly (else: copy_* and fill)."""
        if address in self._host_only:
            return True
        from . import runtime

        try:
            buf = self.dev.find(address)
            if self.copies_only and buf.kind in (runtime.DEVICE, runtime.IMPORTED):
                return False
            return buf.same_address
        except runtime.BadAddress:
            return True  # not device memory: host memory

    # Synchronous copies and fills run on the calling thread's lane (the driver's host
    # operation on a CUDA stream selects that stream's: use_lane), after its work.
    def copy_htod(self, dst: int, src: int, n: int) -> None:
        self.stream.copy_to_device(dst, src, n)
        self.stream.synchronize()

    def copy_dtoh(self, dst: int, src: int, n: int, lane: Stream | None = None) -> None:
        lane = lane or self.stream
        lane.copy_to_host(dst, src, n)
        lane.synchronize()

    def copy_dtod(self, dst: int, src: int, n: int) -> None:
        self.stream.copy(dst, src, n)
        self.stream.synchronize()

    def fill(self, dst: int, value: int, n: int, width: int = 1, lane: Stream | None = None) -> None:
        lane = lane or self.stream
        lane.fill(dst, value, n, width)
        lane.synchronize()

    def fill_queued(self, dst: int, value: int, n: int, width: int = 1) -> None:
        """A fill of device memory after the work handed over before it, not waited for."""
        self.stream.fill(dst, value, n, width)

    def copy_queued(self, dst: int, src: int, n: int) -> None:
        """A copy between device memory and pinned memory of this device's (either way, or
        device to device) after the work handed over before it, not waited for."""
        self.stream.copy(dst, src, n)

    def queues_host_memory(self, address: int) -> bool:
        """Whether the allocation of page-locked host memory at `address` is a buffer of the
        device's, which copy_queued reaches (not plain host pages: host_only).
        CUPORT_VK_PINNED_QUEUE=0: never (such copies are stream ops, measurements)."""
        return self.pinned_in_queue and address in self._owned

    def string_at(self, address: int, limit: int = 1 << 16) -> bytes:
        """A NUL-terminated string in device or host memory (printf formats, %s, asserts)."""
        if V.SHARED_WINDOW <= address < V.LOCAL_WINDOW + V.WINDOW_BYTES:
            # a thread's local or a block's shared memory, which only the kernel could read
            raise ValueError(f"the string at {address:#x} is in a kernel's local or shared memory")
        if self.host_accessible(address):
            return ctypes.string_at(address)
        out = b""
        chunk = ctypes.create_string_buffer(256)
        while len(out) < limit:
            buf = self.dev.find(address + len(out))
            n = min(256, buf.address + buf.size - (address + len(out)))
            if n <= 0:
                break
            # (the sync lane: printed while retiring launches, on whichever thread does)
            self.copy_dtoh(ctypes.addressof(chunk), address + len(out), n, self._sync())
            part = chunk.raw[:n]
            if b"\0" in part:
                return out + part[:part.index(b"\0")]
            out += part
        return out

    def write(self, address: int, data: bytes) -> None:
        """Bytes into device memory (module variables' initial values)."""
        if not data:
            return
        if self.host_accessible(address):
            ctypes.memmove(address, data, len(data))
        else:
            self.copy_htod(address, ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value, len(data))

    def load_module(self, ptx_texts: list[str]) -> VulkanModule:
        return VulkanModule(self, ptx_texts)

    # ------------------------------------------------------------ launch
    # Launch records: a slot (status record + parameters) per launch in flight, so that
    # launches queue on the GPU without waiting for each other; the printf ring is shared
    # (its head is atomic) and emptied when nothing is in flight.
    SLOT = V.STATUS_BYTES + 4096
    SLOTS = 256
    PARAMS = 4096  # bytes of a launch's parameters in param_slots (CUDA allows 32764: bigger
    #                ones go to launch_buf, in host memory)

    def run(self, k: VulkanKernel, pipe, grid, dyn_smem: int, params: bytes,
            cooperative: bool = False, slice_bytes: int = 0,
            stack_bytes: int = DEFAULT_STACK_BYTES) -> None:
        """Queue the launch; it completes on the GPU (drain finds out how it went). With
        CUPORT_VK_SYNC=1 every launch is waited for, and so is a kernel that may launch
        kernels: its children are dispatched when it is done (device_launch.py). A kernel
        whose shared memory is in device memory (`slice_bytes` a block) is dispatched in
        chunks (slices.py). `stack_bytes`: the stack limit, its children's too."""
        if len(params) > 64 * 1024:
            raise BackendError(CUDA_ERROR_INVALID_VALUE, f"{len(params)} bytes of kernel parameters")
        with self._lock:
            failed = self._dispatch(k, pipe, grid, dyn_smem, params, cooperative, 0, slice_bytes,
                                    stack_bytes)
        if failed is not None:
            raise failed[1]

    def _dispatch(self, k: VulkanKernel, pipe, grid, dyn_smem: int, params: bytes,
                  cooperative: bool, depth: int, slice_bytes: int,
                  stack_bytes: int = DEFAULT_STACK_BYTES) -> tuple[str, BackendError] | None:
        """Record one grid (under the lock; `depth`: how deep it is nested in device-side
        launches), and for a kernel that may launch, wait for it and run its children; the
        first failure found meanwhile."""
        lane = self.stream
        if slice_bytes:
            nslices = slices.slots(self.info, math.prod(pipe.local_size), slice_bytes,
                                   math.prod(grid), cooperative)
            pool = self.shared_pool.address(nslices * slice_bytes)
            self._follow("slices")
        if cooperative:
            self._follow("workspace")
        workspace = cooperative_.workspace(self) if cooperative else 0
        slot, host, head, failed = self._slot_for(lane, params, pipe not in k.pushed_only)
        area = self.launch_area().reset(k.module, depth) if k.may_launch else 0
        memory = self.dev.memory

        # the parameters the pipeline reads from its push constants (DeviceCaps.push_params)
        pushed = params[:pipe.push_size - V.PUSH_BYTES] if params else b""

        def push(shared: tuple[int, int] = (0, 0)) -> bytes:
            return head + V.push_tail(k.module.table.address, self.ring.address, grid, (0, 0, 0),
                                      dyn_smem, workspace, (memory.lowest, memory.highest),
                                      self.pages, shared, area) + pushed

        profile = self.profile
        start = profile.before() if profile is not None else None
        if not slice_bytes:
            ticket = lane.dispatch(pipe, grid, push())
        else:
            for base, size, first in slices.chunks(grid, nslices):
                ticket = lane.dispatch(pipe, size, push((pool, first)), base)
        if start is not None:
            profile.after(k.fn.name, start)
            ticket = lane.mark()  # (past the closing timestamp)
        self._inflight.append((k.fn.name, host, slot, lane, ticket))
        if slice_bytes:
            self._exclusive["slices"] = (lane, ticket)
        if cooperative:
            self._exclusive["workspace"] = (lane, ticket)
        if slot is None or self.sync_launches or area:
            failed = failed or self._retire([lane])
        if area and failed is None:
            failed = self._run_children(k.module, self._launch_area.read(k.module), depth,
                                        stack_bytes)
        return failed

    def _slot_for(self, lane: Stream, params: bytes, in_memory: bool
                  ) -> tuple[int | None, int, bytes, tuple[str, BackendError] | None]:
        """Where a launch's status record and parameters go (lock held): (its slot, None for
        parameters over PARAMS bytes, which go to the big buffer and whose launch is then
        waited for; the record's host address; the push constants' head, the device
        addresses of both; the failure found while waiting for a free slot). The record is
        cleared and the parameters copied (`in_memory`: the pipeline reads them there; one
        reading them all from its push constants needs no copy, and where the slots are not
        mapped a launch then records no vkCmdUpdateBuffer)."""
        if len(params) > self.PARAMS:  # (the big buffer is free: its last launch was waited for)
            host = self.launch_buf.host_ptr
            ctypes.memset(host, 0, V.STATUS_BYTES)
            ctypes.memmove(host + V.STATUS_BYTES, params, len(params))
            dev = self.launch_buf.address
            return None, host, V.push_head(dev + V.STATUS_BYTES, dev), None
        slot, failed = self._take_slot(lane, params, in_memory)
        return slot, self._slot_hosts[slot], self._slot_heads[slot], failed

    def _take_slot(self, lane: Stream, params: bytes, in_memory: bool
                   ) -> tuple[int, tuple[str, BackendError] | None]:
        """A free launch slot (lock held; waiting for `lane`'s oldest launch where none is
        free: the failure found then), its status record cleared and `params` copied where
        the pipeline reads them from memory (`in_memory`): _slot_for's and run_planned's."""
        failed = None if self._free_slots else self._free_a_slot(lane)
        slot = self._free_slots.pop()
        at = slot * self.SLOT
        self._slots_view[at:at + V.STATUS_BYTES] = _NO_STATUS
        if params and in_memory:
            if self._params_view is not None:
                at = slot * self.PARAMS
                self._params_view[at:at + len(params)] = params
            else:
                lane.update(self.param_slots.address + slot * self.PARAMS, params)
        return slot, failed

    def run_planned(self, plan: LaunchPlan, params: bytes) -> None:
        """A launch by its kernel's plan for its shape (VulkanKernel.launch_queued, which sends
        parameters over PARAMS bytes to `launch`): what _dispatch does for it, with what
        launches of the shape share made once."""
        with self._lock:
            lane = self.stream
            slot, failed = self._take_slot(lane, params, plan.in_memory)
            memory = self.dev.memory
            if memory.highest != plan.highest or memory.lowest != plan.lowest:
                self._retail(plan)  # (memory was allocated at new addresses since)
            if plan.pushed and params:
                push = self._slot_heads[slot] + plan.tail + params[:plan.pushed]
                if len(push) & 3:
                    push += bytes(4 - (len(push) & 3))
            else:
                push = self._slot_heads[slot] + plan.tail
            gx, gy, gz = plan.grid
            ticket = lane.dispatch_planned(plan.pipe, gx, gy, gz, push)
            self._inflight.append((plan.name, self._slot_hosts[slot], slot, lane, ticket))
        if failed is not None:
            raise failed[1]

    def plan(self, k: VulkanKernel, pipe, grid: tuple[int, int, int], block: tuple[int, int, int],
             dyn_smem: int) -> LaunchPlan | None:
        """The plan of k's launches of this shape where a plain launch of it is what _dispatch
        would record (a dispatch on the calling thread's lane, nothing waited for); None
        where _dispatch must take it: profiling, CUPORT_VK_SYNC=1, shared memory in device
        memory, a kernel that may launch kernels, a grid past one vkCmdDispatch."""
        if (self.profile is not None or self.sync_launches or k.may_launch
                or k.slice_bytes(block, dyn_smem) or not self._default.fits(grid)):
            return None
        plan = LaunchPlan(k, pipe, grid, dyn_smem)
        self._retail(plan)
        return plan

    def _retail(self, plan: LaunchPlan) -> None:
        """(Re)pack the plan's push constants after the head, for the device memory's span now."""
        memory = self.dev.memory
        plan.lowest, plan.highest = memory.lowest, memory.highest
        plan.tail = V.push_tail(plan.kernel.module.table.address, self.ring.address, plan.grid,
                                (0, 0, 0), plan.dyn_smem, 0, (plan.lowest, plan.highest),
                                self.pages)

    def _free_a_slot(self, lane: Stream) -> tuple[str, BackendError] | None:
        """Every slot is in flight: read the finished launches' records, else wait for a
        launch of `lane` (its own order), else of any lane, an eighth of the slots from the
        oldest, and read them then."""
        failed = self._retire_finished()
        while not self._free_slots:
            slotted = [x for x in self._inflight if x[2] is not None]
            own = [x for x in slotted if x[3] is lane] or slotted
            # (not the oldest alone: a GPU behind the host then freed one slot a launch, and
            # each launch read all 256 records' places; an eighth of the lane's, the GPU
            # still has the rest queued)
            oldest = own[min(len(own), self.SLOTS // 8) - 1]
            oldest[3].wait(oldest[4])
            failed = failed or self._retire_finished()
        return failed

    def launch_area(self) -> device_launch.LaunchArea:
        if self._launch_area is None:
            self._launch_area = device_launch.LaunchArea(self, device_launch.queue_records())
        return self._launch_area

    def _run_children(self, module: VulkanModule, launches: list, depth: int,
                      stack_bytes: int = DEFAULT_STACK_BYTES) -> tuple[str, BackendError] | None:
        """Dispatch a completed grid's launches by the shared rules (a child that may launch
        is waited for, with its own children, before the next); the first failure."""
        failed = None

        def launch(x, child_depth: int) -> None:
            nonlocal failed
            if failed is None:
                child = module.kernel(x.kernel)
                pipe = child.specialization(x.block, x.shared, stack_bytes)
                failed = self._dispatch(child, pipe, x.grid, x.shared, x.params, False, child_depth,
                                        child.slice_bytes(x.block, x.shared, stack_bytes), stack_bytes)

        device_launch_rules.run_children(launches, depth, launch)
        return failed

    def pending(self, lanes: Iterable[int] | None = None) -> bool:
        """Work handed over and not finished (launches, fills, copies, a wait for another
        lane's event) on the lanes of the CUDA streams `lanes` (None: on any)."""
        if lanes is None:
            return any(not x.known_idle() and not x.is_done(x.mark()) for x in self._lanes_of(None))
        get = self._lanes.get
        on = self.lanes_on
        for k in lanes:  # (a loop, not any(): this is on every idle check's path)
            lane = get(k if on else 0)
            if lane is not None and not lane.known_idle() and not lane.is_done(lane.mark()):
                return True
        return False

    def drain(self, lanes: Iterable[int] | None = None) -> tuple[str, BackendError] | None:
        """Wait for the work handed over to the lanes of the CUDA streams `lanes` (None: all)
        and no other's: launches, and the fills and copies (pinned memory the host reads
        next); print the printf output once nothing is in flight; the first failure among
        the launches that have finished, as (the launch, its error), if any."""
        chosen = self._lanes_of(lanes)
        for lane in chosen:
            if not lane.known_idle():
                lane.synchronize()
        if self._marks:  # (the events before the host operation that drains are reached first)
            for lane in chosen:
                if lane in self._marks:
                    self._reach(lane)
        if not self._inflight:
            return None
        with self._lock:
            return self._retire_finished()

    def _reach(self, lane: Stream, upto: int | None = None) -> None:
        """Call the watched marks of `lane` (when_reached) the device is past, up to the ticket
        `upto` (None: all it is past), in their order, where the lane's watcher thread has not
        yet: the host learnt it first (a drain, an event's synchronisation), and a mark timed
        after a later one would make cuEventElapsedTime negative (simpleMultiCopy)."""
        marks = self._marks.get(lane)
        if not marks:
            return
        with self._reaching:
            while marks:
                ticket, reached, _ = marks[0]
                if upto is not None and ticket > upto or not lane.is_done(ticket):
                    return
                marks.popleft()
                reached(None)

    def drain_here(self) -> tuple[str, BackendError] | None:
        """drain() for the calling thread's lane alone (the backend's own launches made in a
        launch of a CUDA stream's, e.g. the clock's calibration, wait for no other stream)."""
        with self._lock:
            return self._retire([self.stream]) if self._inflight else None

    def _retire(self, chosen: list[Stream] | None = None) -> tuple[str, BackendError] | None:
        """Wait for the lanes `chosen` (None: every lane), then read the records of every
        launch that has finished (lock held); the ring is printed and emptied once none is
        in flight, as kernels still running may write to it."""
        if not self._inflight:
            return None
        for lane in self._lanes_of(None) if chosen is None else chosen:
            lane.synchronize()
        return self._retire_finished()

    def _retire_finished(self) -> tuple[str, BackendError] | None:
        """Read the records of the launches that have finished (lock held); print the ring
        when none is left in flight."""
        done: list = []
        left: list = []
        reached: dict = {}  # lane -> its last ticket known complete (the GPU asked once a lane)
        for x in self._inflight:
            lane = x[3]
            if x[4] <= lane._done:  # (known without asking: after a wait for it)
                done.append(x)
                continue
            upto = reached.get(lane)
            if upto is None:
                upto = reached[lane] = lane.reached()
            (done if x[4] <= upto else left).append(x)
        if not done:
            return None
        self._inflight = left
        if not left:
            if _U32.unpack_from(self._ring_head)[0]:  # (its head moves at every record)
                self._print(self.ring.host_ptr)
            self._ring_head[:] = _RING_EMPTY
        return self._check_records(done)

    def _check_records(self, launches: list) -> tuple[str, BackendError] | None:
        """The first failure in the status records of finished launches; their slots freed."""
        failed = None
        view, size = self._slots_view, self.SLOT
        for name, host, slot, _, _ in launches:
            kind = (ctypes.c_uint32.from_address(host).value if slot is None
                    else _U32.unpack_from(view, slot * size)[0])
            if kind and failed is None:
                try:
                    self._raise(name, host, kind)
                except BackendError as e:
                    failed = (f"cuLaunchKernel({name})", e)
            if slot is not None:
                self._free_slots.append(slot)
        return failed

    def when_reached(self, fn, watch: bool = True):
        """Call fn(failure) once the work handed over so far on the calling thread's lane has
        run (an event's record: driver/stream.py DeviceMark), without holding back what is
        handed over later; failure: the first failed launch among the finished ones, as
        drain's. With `watch` a thread of the lane's calls it when the device gets there (an
        event's time, another process waiting); else, or first, the returned check(block)
        does: at once if the device is past it (a synchronisation of the stream made it so),
        after waiting for it with `block`. The launches after it stay in flight, and so does
        the printf ring while any launch runs (its records are read and printed when nothing
        is in flight). The check's `place` is (lane, ticket): what a stream waiting for the
        event waits for on the GPU (follow)."""
        from . import runtime

        calling = threading.Lock()  # (held while fn is called: a second caller waits, then skips)
        called = [False]
        with self._lock:
            # (cut: work recorded later must not join its submission, or the event would wait
            # for it)
            lane = self.stream
            ticket = lane.cut()

            def reached(error: BaseException | None) -> None:
                with calling:
                    if called[0]:
                        return
                    called[0] = True
                    if isinstance(error, runtime.VulkanUnavailable):
                        fn(None)  # (the process is exiting: nothing more to find out)
                    elif error is not None:
                        fn(("cuEventRecord", BackendError(CUDA_ERROR_LAUNCH_FAILED, str(error))))
                    else:
                        with self._lock:
                            failed = self._retire_finished()
                        fn(failed)

            if watch:
                marks = self._marks.get(lane)
                if marks is None:
                    marks = self._marks[lane] = collections.deque()
                while marks and marks[0][2][0]:  # (those the watcher called)
                    marks.popleft()
                marks.append((ticket, reached, called))
                lane.when_done(ticket, reached)

        def check(block: bool) -> None:
            if called[0]:
                with calling:  # (fn may be under way on the stream's thread: its end)
                    return
            if block:
                lane.wait(ticket)
            elif not lane.is_done(ticket):
                return
            if watch:
                self._reach(lane, ticket)  # (the earlier marks first, then this one)
            reached(None)

        check.place = (lane, ticket)
        return check

    def follow(self, check) -> None:
        """Later work on the calling thread's lane waits on the GPU for the place of an event
        recorded on this device (when_reached's check; cuStreamWaitEvent)."""
        other, ticket = check.place
        if other is not self.stream and not other.destroyed:
            self.stream.wait_for(other, ticket)

    def _print(self, ring: int) -> None:
        used = min(ctypes.c_uint32.from_address(ring).value, V.RING_BYTES - V.RING_DATA)
        if not used:
            return
        data = ctypes.string_at(ring + V.RING_DATA, used)
        out = []
        pos = 0
        while pos + 16 <= len(data):
            size, nargs, fmt = struct.unpack_from("<IIQ", data, pos)
            if size < 16 or pos + size > len(data):
                break
            if nargs == V.RING_ASSERT:
                out.append(self._assert_line(fmt, *V.RING_ASSERT_ARGS.unpack_from(data, pos + 16)))
                pos += size
                continue
            args = ctypes.create_string_buffer(data[pos + 16:pos + 16 + nargs], max(nargs, 8))
            try:
                out.append(format_printf(self.string_at(fmt), ctypes.addressof(args), self.string_at))
            except Exception as e:  # never let a bad format string bring the process down
                out.append(f"cuport: printf from a kernel failed: {e}\n".encode())
            pos += size
        text = b"".join(out)
        _libc.fwrite(text, 1, len(text), _c_stdout)
        _libc.fflush(_c_stdout)

    def _assert_line(self, msg: int, file: int, func: int, line: int, cx: int, cy: int, cz: int,
                     tx: int, ty: int, tz: int, _pad: int) -> bytes:
        """A failed assert's line as CUDA prints it (each failing thread's, printf ring)."""
        def s(p: int) -> str:
            try:
                return self.string_at(p).decode(errors="replace") if p else "?"
            except ValueError:
                return "?"
        return (f"{s(file)}:{line}: {s(func)}: block: [{cx},{cy},{cz}], thread: [{tx},{ty},{tz}] "
                f"Assertion `{s(msg)}` failed.\n").encode()

    def _raise(self, name: str, lb: int, kind: int) -> None:
        f = {name: struct.unpack_from("<Q" if off in (32, 40, 48) else "<I",
                                      ctypes.string_at(lb + off, 8), 0)[0]
             for name, off, _ in V.STATUS_FIELDS}
        where = (f"PTX line {f['line']}, block ({f['ctaid_x']},{f['ctaid_y']},{f['ctaid_z']}), "
                 f"thread ({f['tid_x']},{f['tid_y']},{f['tid_z']})")
        what = V.ERROR_NAMES.get(kind, f"error {kind}")
        if kind == V.ERR_ILLEGAL_ADDRESS and f["arg"]:
            what += f" 0x{f['arg']:x}"
        if kind == V.ERR_STACK:
            what += (f": the stack is {f['arg']} bytes a thread; cudaDeviceSetLimit("
                     "cudaLimitStackSize) raises it")
        raise BackendError(_CODES.get(kind, CUDA_ERROR_LAUNCH_FAILED), f"kernel {name}: {what} ({where})")


_backends: dict[int, VulkanBackend] = {}
_blk = threading.Lock()


def get_vulkan_backend(index: int = 0) -> VulkanBackend:
    with _blk:
        b = _backends.get(index)
        if b is None:
            b = _backends[index] = VulkanBackend(index)
        return b
