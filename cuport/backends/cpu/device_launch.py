"""Dynamic parallelism on the CPU: kernels that launch kernels (CUDA 12 semantics, CDP2).

Device code launches through libcudadevrt (cudaGetParameterBufferV2 and
cudaLaunchDeviceV2, or the V1 pair), whose PTX calls the driver's
`__cuda_syscall_cnpv2*` functions; backends/cpu/devrt.py turns those calls into the
host calls here, once per executing thread.

A launch from device code is recorded, in the order threads issue them, in the queue
of the grid being run, and runs when that grid is done: first the grids launched into
any stream but the tail-launch stream (each with the grids it launches in turn), then
those of cudaStreamTailLaunch. That is one of the schedules CUDA 12 allows: a parent
cannot wait for its children (cudaDeviceSynchronize is gone from device code), every
child grid completes before its parent grid counts as complete, a tail launch starts
after all other work of the grid that launched it, and work in one stream (the NULL
stream of a block, a stream the kernel created, cudaStreamFireAndForget) runs in the
order it was launched. Nesting stops at CUDA's 24 levels, with CUDA's error. A grid's
launches all wait until it is done, where a GPU starts them meanwhile, so
CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT (what a GPU keeps pending at once) is not
applied; a grid that launches more than PENDING_CAP grids gets CUDA's pending-count
error instead of exhausting memory.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from dataclasses import dataclass, field

TAIL_LAUNCH = 0x3  # cudaStreamTailLaunch
MAX_DEPTH = 24
PENDING_CAP = 1 << 20

# CNPerror codes (libcudadevrt's cudartErrorCnpMap turns them into cudaError values)
CNP_SUCCESS = 0
CNP_INVALID_VALUE = 1
CNP_MAX_DEPTH = 5
CNP_INVALID_CONFIGURATION = 7
CNP_PENDING_COUNT = 12


@dataclass
class Pending:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    buffer: ctypes.Array


@dataclass
class DeviceLaunch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: bytes
    stream: int


@dataclass
class GridQueue:
    """What the grid now running has launched, and its threads' last errors."""

    module: object  # the CpuModule whose kernels these are
    depth: int
    launches: list[DeviceLaunch] = field(default_factory=list)
    buffers: dict[int, Pending] = field(default_factory=dict)
    errors: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_current: GridQueue | None = None
_tokens = itertools.count(0x5000)


def begin(module, depth: int) -> None:
    """Called (under the backend's launch lock) before a grid runs."""
    global _current
    _current = GridQueue(module, depth)


def end() -> list[DeviceLaunch]:
    """The grid's device-side launches, in issue order."""
    global _current
    q, _current = _current, None
    return q.launches if q is not None else []


def _kernel_of_token(token: int) -> str | None:
    from .compiler import FUNC_TOKEN_BASE

    names = list(_current.module.ptx.functions)
    i = token - FUNC_TOKEN_BASE
    if 0 <= i < len(names) and _current.module.ptx.functions[names[i]].is_entry:
        return names[i]
    return None


def _dim3(address: int) -> tuple[int, int, int]:
    return struct.unpack("<3I", ctypes.string_at(address, 12))


def _buffer(kernel: str | None, grid, block, shared: int) -> int:
    q = _current
    size = 8
    if kernel is not None:
        size = max(size, q.module.kernel(kernel).info.param_size)
    buf = ctypes.create_string_buffer(size + 64)
    address = (ctypes.addressof(buf) + 63) & ~63
    with q.lock:
        q.buffers[address] = Pending(kernel or "", grid, block, shared, buf)
    return address


def _launch(address: int, stream: int, kernel: str | None = None, grid=None, block=None,
            shared: int | None = None) -> int:
    q = _current
    with q.lock:
        p = q.buffers.pop(address, None)
        if p is None:
            return CNP_INVALID_VALUE
        if q.depth + 1 >= MAX_DEPTH:
            return CNP_MAX_DEPTH
        if len(q.launches) >= PENDING_CAP:
            return CNP_PENDING_COUNT
    name = kernel or p.kernel
    grid = grid or p.grid
    block = block or p.block
    shared = p.shared if shared is None else shared
    if not name:
        return CNP_INVALID_VALUE
    k = q.module.kernel(name)
    if min(grid) < 1 or min(block) < 1 or block[0] * block[1] * block[2] > \
            k.info.max_threads_per_block:
        return CNP_INVALID_CONFIGURATION
    capacity = ctypes.sizeof(p.buffer) - (address - ctypes.addressof(p.buffer))
    size = min(k.info.param_size, capacity)
    params = ctypes.string_at(address, size) + bytes(k.info.param_size - size)
    with q.lock:
        q.launches.append(DeviceLaunch(name, grid, block, shared, params, stream))
    return CNP_SUCCESS


# -- the host side of each __cuda_syscall_cnpv2* (args as u64, the thread's id last) ------

def _get_parameter_buffer_v2(func, grid, block, shared, _a, _b, tid):
    kernel = _kernel_of_token(func)
    if kernel is None:
        _current.errors[tid] = 98  # cudaErrorInvalidDeviceFunction
        return 0
    return _buffer(kernel, _dim3(grid), _dim3(block), shared & 0xFFFFFFFF)


def _get_parameter_buffer(alignment, size, _a, _b, _c, _d, tid):
    q = _current
    buf = ctypes.create_string_buffer(max(size, 8) + 64)
    address = (ctypes.addressof(buf) + 63) & ~63
    with q.lock:
        q.buffers[address] = Pending("", (1, 1, 1), (1, 1, 1), 0, buf)
    return address


def _launch_device_v2(buffer, stream, _a, _b, _c, _d, tid):
    return _launch(buffer, stream)


def _launch_device(func, buffer, grid, block, shared, stream, tid):
    kernel = _kernel_of_token(func)
    if kernel is None:
        return CNP_INVALID_VALUE
    return _launch(buffer, stream, kernel, _dim3(grid), _dim3(block), shared & 0xFFFFFFFF)


def _get_last_error(_a, _b, _c, _d, _e, _f, tid):
    with _current.lock:
        return _current.errors.pop(tid, 0)


def _set_last_error(error, _a, _b, _c, _d, _e, tid):
    with _current.lock:
        if error:
            _current.errors[tid] = error & 0xFFFFFFFF
        else:
            _current.errors.pop(tid, None)
    return 0


def _new_handle(out, _flags, _a, _b, _c, _d, tid):
    """Streams and events made in device code: work runs in issue order anyway, so a
    handle needs nothing behind it."""
    ctypes.c_uint64.from_address(out).value = next(_tokens)
    return CNP_SUCCESS


def _nothing(*_args):
    return CNP_SUCCESS


def _get_device(out, *_args):
    ctypes.c_int32.from_address(out).value = 0
    return CNP_SUCCESS


def _get_device_count(out, *_args):
    ctypes.c_int32.from_address(out).value = 1
    return CNP_SUCCESS


_SYSCALL_T = ctypes.CFUNCTYPE(ctypes.c_uint64, *([ctypes.c_uint64] * 7))

#: __cuda_syscall_cnpv2<name> -> its host function
SYSCALLS = {
    "GetParameterBufferV2": _get_parameter_buffer_v2,
    "GetParameterBuffer": _get_parameter_buffer,
    "LaunchDeviceV2": _launch_device_v2,
    "LaunchDevice": _launch_device,
    "GetLastError": _get_last_error,
    "SetLastError": _set_last_error,
    "StreamCreate": _new_handle,
    "StreamDestroy": _nothing,
    "EventCreate": _new_handle,
    "EventRecord": _nothing,
    "EventDestroy": _nothing,
    "StreamWaitEvent": _nothing,
    "GetDevice": _get_device,
    "GetDeviceCount": _get_device_count,
}
_CALLBACKS = {f"cuport_cnpv2_{name}": _SYSCALL_T(fn) for name, fn in SYSCALLS.items()}


def address_of(symbol: str) -> int | None:
    cb = _CALLBACKS.get(symbol)
    return ctypes.cast(cb, ctypes.c_void_p).value if cb is not None else None


def run_children(module, launches: list[DeviceLaunch], depth: int) -> None:
    """Run a finished grid's device-side launches: the tail launches last."""
    ordered = [x for x in launches if x.stream != TAIL_LAUNCH] + \
        [x for x in launches if x.stream == TAIL_LAUNCH]
    for x in ordered:
        module.kernel(x.kernel).launch(x.grid, x.block, x.shared, x.params, depth=depth + 1)
