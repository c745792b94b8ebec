"""Where the libraries meet the driver: device memory, streams and the current context.

Every data access of a library call goes through this module. A call names the device
ranges it reads and writes and the host function that does the work; `launch` runs it
when the call's stream gets there (after the kernels and copies queued before it, and
before those queued after it), handing it host addresses for the ranges. Where device
memory is host memory (the CPU backend, integrated or host-visible Vulkan memory) a
range's host address is its device address and nothing is copied. Where the host cannot
touch it (a discrete GPU's memory under the Vulkan backend) the range is staged: it is
copied into a host buffer before the work and, if written, copied back after it,
both with the driver's copy primitive (memory.move, which goes through the backend).
Ranges known only when the work runs (the matrices a batched call's pointer array names,
scalars in device pointer mode) are mapped from inside the work with `map_range`, staged
the same way and written back when the work ends. Under stream capture a call becomes a
graph node that does the same when the graph runs.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cffi
import numpy as np

from cuport.driver import context, device, graph_nodes, memory, stream
from cuport.driver.errors import CudaError
from cuport.libs.registry import Status, Unsupported


@dataclass(frozen=True)
class Range:
    address: int
    size: int  # bytes
    mode: str = "r"  # "r", "w" or "rw"


def ensure_context() -> context.Context:
    """The current context, made as the CUDA runtime would (primary context of device 0).

    NVIDIA's libraries initialise the runtime at their handle's creation; a program may
    create a handle before any other CUDA call."""
    if not device.initialized():
        device.init(0)
    ctx = context.current_or_none()
    if ctx is None:
        handle = context.primary_retain(0)
        context.set_current(handle)
        ctx = context.current()
    return ctx


def check_range(r: Range, what: str, invalid: str) -> None:
    """A range the call names must be device memory (else the library's INVALID_VALUE)."""
    if r.size <= 0:
        return
    if r.address == 0:
        raise Status(invalid, f"{what} is NULL")
    try:
        memory.check_device_range(r.address, r.size, what)
    except CudaError as e:
        raise Status(invalid, e.message) from None


def _host_ok(address: int) -> bool:
    """Whether the host can touch device memory at this address where it is."""
    a = memory.TABLE.find(address)
    return a is None or getattr(a, "host_ok", True)


_work = threading.local()  # .staged: [(device address, host buffer, size, mode)] of the work


def map_range(address: int, size: int, mode: str = "r") -> int:
    """The host address of a device range, inside work the stream has reached."""
    if size <= 0 or _host_ok(address):
        return address
    buf = ctypes.create_string_buffer(size)
    # copied in for written ranges too: a write may leave gaps (strides, leading dimensions)
    memory.move(ctypes.addressof(buf), address, size)
    staged = getattr(_work, "staged", None)
    if staged is None:
        raise RuntimeError("map_range of device memory the host cannot touch outside a "
                           "library call's work")
    staged.append((address, buf, size, mode))
    return ctypes.addressof(buf)


def _run_work(work: Callable[[], None]) -> None:
    """Run a call's work with its staged ranges written back to the device after it."""
    outer = getattr(_work, "staged", None)
    _work.staged = []
    try:
        work()
        for address, buf, size, mode in _work.staged:
            if "w" in mode:
                memory.move(address, ctypes.addressof(buf), size)
    finally:
        _work.staged = outer


def resolve_stream(handle: int) -> stream.Stream:
    return stream.resolve(handle)


_ffi = cffi.FFI()


@dataclass(frozen=True, eq=False)
class LibraryCall(graph_nodes.Host):
    """A library call captured into a graph: a host node whose function is a callback
    into the call's work (kept alive with the node)."""

    keep: object = None
    what: str = ""

    def label(self) -> str:
        return f"{self.what}\\n(cuport library call)"


def _capture(s: stream.Stream, what: str, work: Callable[[], None]) -> None:
    """Under stream capture a library call is a graph node (cuBLAS's and cuFFT's kernels
    would be kernel nodes on a GPU): a host node that does the work when the graph runs."""
    from cuport.driver import capture

    def body(_user_data) -> None:
        try:
            work()
        except Exception as e:  # a host node cannot fail: say so, as a faulting kernel would
            print(f"cuport: {what} in a graph failed: {e}", file=sys.stderr)

    callback = _ffi.callback("void(void *)", body)
    node = LibraryCall(int(_ffi.cast("uintptr_t", callback)), 0, keep=callback, what=what)
    capture.add(s, node, what)


def launch(stream_handle: int, what: str, fn: Callable[..., None],
           ranges: Sequence[tuple[Range, str]] = (), invalid: str = "",
           wait: bool = False) -> None:
    """Run fn(*host addresses of ranges) in stream order; asynchronously unless `wait`.

    `ranges` pairs each Range with the name of its parameter (for the error message);
    `invalid` is the library's INVALID_VALUE status. With `wait` the call returns once
    fn has run (library calls that hand a result back to host memory). Under stream
    capture the call becomes a graph node instead (one that waits cannot be captured)."""
    s = resolve_stream(stream_handle)
    for r, name in ranges:
        check_range(r, name, invalid)
    def work() -> None:
        _run_work(lambda: fn(*[map_range(r.address, r.size, r.mode) for r, _ in ranges]))

    if s.capture is not None:
        if wait:
            raise Unsupported(f"{what} hands its result to host memory at once, which a "
                              f"captured stream cannot do (stream {hex(stream_handle)} is "
                              "capturing): use the device pointer mode")
        _capture(s, what, work)
    elif wait:
        stream.run_sync(s, work, what)
    else:
        stream.submit(s, work, what)


def synchronize(stream_handle: int) -> None:
    resolve_stream(stream_handle).synchronize()


# -- host memory views --------------------------------------------------------------------

def view(address: int, dtype: np.dtype | type | str, count: int) -> np.ndarray:
    """A numpy array over `count` elements at a host address (no copy)."""
    dtype = np.dtype(dtype)
    if count <= 0:
        return np.empty(0, dtype)
    buf = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(buf, dtype)


def read_scalar(address: int, dtype: np.dtype | type | str):
    """One value at a host address (a scalar in host pointer mode, read at the call)."""
    return view(address, dtype, 1)[0].copy()


def write_scalar(address: int, dtype: np.dtype | type | str, value) -> None:
    view(address, dtype, 1)[0] = value


def read_pointers(address: int, count: int) -> list[int]:
    return list((ctypes.c_uint64 * count).from_address(address)) if count > 0 else []
