"""Dynamic parallelism on the CPU: the host side of device-side launches (the rules they
follow are backends/device_launch.py's).

Device code launches through libcudadevrt (cudaGetParameterBufferV2 and
cudaLaunchDeviceV2, or the V1 pair), whose PTX calls the driver's
`__cuda_syscall_cnpv2*` functions; backends/cpu/devrt.py turns those calls into the
host calls here, once per executing thread, in lane order. A launch is checked here and
recorded in the queue of the grid being run; the backend runs the queue when the grid
is done (`run_children`).
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from dataclasses import dataclass, field

from .. import device_launch as cdp
from ..device_launch import DeviceLaunch


@dataclass
class Pending:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    buffer: ctypes.Array


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
_handles = itertools.count(cdp.STREAM_HANDLE_BASE)


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
    return cdp.kernel_of_token(_current.module.ptx, token)


def _dim3(address: int) -> tuple[int, int, int]:
    return struct.unpack("<3I", ctypes.string_at(address, 12))


def _new_buffer(size: int, pending: tuple) -> int:
    """A parameter buffer of `size` bytes, PARAM_ALIGN-aligned; `pending`: what it is for."""
    buf = ctypes.create_string_buffer(cdp.param_buffer_bytes(size) + cdp.PARAM_ALIGN)
    address = -(-ctypes.addressof(buf) // cdp.PARAM_ALIGN) * cdp.PARAM_ALIGN
    with _current.lock:
        _current.buffers[address] = Pending(*pending, buf)
    return address


def _launch(address: int, stream: int, kernel: str | None = None, grid=None, block=None,
            shared: int | None = None) -> int:
    """Check a launch in CUDA's order (cdp.CHECKS) and queue it."""
    q = _current
    with q.lock:
        p = q.buffers.pop(address, None)  # a launch consumes its buffer, whatever the result
        full = len(q.launches) >= cdp.PENDING_CAP
    if p is not None:
        kernel, grid, block = kernel or p.kernel, grid or p.grid, block or p.block
        shared = p.shared if shared is None else shared
    k = q.module.kernel(kernel) if kernel else None
    result = cdp.launch_result({
        "buffer": p is not None, "depth": cdp.may_launch(q.depth), "pending": not full,
        "kernel": k is not None,
        "configuration": k is not None and cdp.good_configuration(grid, block,
                                                                  k.info.max_threads_per_block)})
    if result != cdp.CNP_SUCCESS:
        return result
    capacity = ctypes.sizeof(p.buffer) - (address - ctypes.addressof(p.buffer))
    size = min(k.info.param_size, capacity)
    params = ctypes.string_at(address, size) + bytes(k.info.param_size - size)
    with q.lock:
        if len(q.launches) >= cdp.PENDING_CAP:  # (taken by another thread meanwhile)
            return cdp.CNP_PENDING_COUNT
        q.launches.append(DeviceLaunch(kernel, grid, block, shared, params, stream))
    return cdp.CNP_SUCCESS


# -- the host side of each __cuda_syscall_cnpv2* (args as u64, the thread's id last) ------

def _get_parameter_buffer_v2(func, grid, block, shared, _a, _b, tid):
    kernel = _kernel_of_token(func)
    if kernel is None:
        with _current.lock:
            _current.errors[tid] = cdp.ERROR_INVALID_DEVICE_FUNCTION
        return 0
    size = _current.module.kernel(kernel).info.param_size
    return _new_buffer(size, (kernel, _dim3(grid), _dim3(block), shared & 0xFFFFFFFF))


def _get_parameter_buffer(alignment, size, _a, _b, _c, _d, tid):
    return _new_buffer(size, ("", (1, 1, 1), (1, 1, 1), 0))


def _launch_device_v2(buffer, stream, _a, _b, _c, _d, tid):
    return _launch(buffer, stream)


def _launch_device(func, buffer, grid, block, shared, stream, tid):
    kernel = _kernel_of_token(func)
    if kernel is None:  # (refused before the buffer is looked at: it stays launchable)
        return cdp.CNP_INVALID_VALUE
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
    """Streams and events made in device code: a fresh number (nothing behind it)."""
    ctypes.c_uint64.from_address(out).value = next(_handles)
    return cdp.CNP_SUCCESS


def _nothing(*_args):
    return cdp.CNP_SUCCESS


def _get_device(out, *_args):
    ctypes.c_int32.from_address(out).value = cdp.DEVICE
    return cdp.CNP_SUCCESS


def _get_device_count(out, *_args):
    ctypes.c_int32.from_address(out).value = cdp.DEVICE_COUNT
    return cdp.CNP_SUCCESS


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
    """Run a finished grid's device-side launches, in cdp.schedule's order."""
    cdp.run_children(launches, depth, lambda x, d: module.kernel(x.kernel).launch(
        x.grid, x.block, x.shared, x.params, depth=d))
