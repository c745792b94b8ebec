"""cuMemcpy* and cuMemset*: every form, synchronous and in stream order.

Each call is checked completely before anything is queued or touched (pointers
known to the allocation table, copies inside their allocations, pitches wide
enough), then becomes a plan: a list of row copies or fills that runs on the
stream. Synchronous forms run in the default stream's order (legacy, or the
thread's own in `_ptds` calls) and return when done.

Host memory the program may reuse at once is handled as NVIDIA's driver does:
an asynchronous copy from pageable host memory takes its bytes at call time, and
one to pageable host memory completes before the call returns.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from cuport.capi import types
from cuport.driver import array, context, memory, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

Rows = list[tuple[int, int, int]]  # (dst, src, bytes)


def _copy_rows(rows: Rows) -> Callable[[], None]:
    def run() -> None:
        for dst, src, n in rows:
            memory.move(dst, src, n)
    return run


def _queued_copy(rows: Rows, pinned: bool = False) -> Callable[[], None] | None:
    """Device-to-device rows that the device's own queue can run (memory.queued_backend;
    `pinned`: an asynchronous copy, whose page-locked host memory it may reach too)."""
    b = memory.queued_backend(*(a for d, s, _ in rows for a in (d, s)),
                              pinned=pinned) if rows else None
    if b is None:
        return None

    def run() -> None:
        for dst, src, n in rows:
            b.copy_queued(dst, src, n)
    return run


def _queue(s: stream.Stream | None, fn: Callable[[], None], what: str) -> None:
    """Work the device's own queue orders (a fill or a device-to-device copy): handed to it
    in s's order, or the default stream's (s None: a synchronous call, which for device
    memory NVIDIA also returns from without waiting for the device)."""
    if s is None:
        from cuport.driver import capture

        capture.check_unsafe(what)
        s = stream.resolve(0)
        stream.submit_device(s, fn, what)
        stream.check_sticky(s.context)
        return
    stream.submit_device(s, fn, what)


def _now(ctx: context.Context | None, *addresses: int) -> context.Context | None:
    """Whether a synchronous copy or fill of this memory may be done at once on the calling
    thread: the host can use the memory, and nothing orders it (stream.settled_default: the
    default stream, what it waits for and the device are idle); then the context (ctx, the
    current one, if the caller has it; the caller does the work with memory.host_copy or
    host_fill and check_sticky()s), else None. A small copy then costs a driver call, not a
    trip through the stream machinery. Memory of other devices is not waited for: in CUDA
    too a stream is ordered only with its own context's work."""
    if not memory.host_accessible(*addresses):
        return None
    if ctx is None:
        ctx = context.current()
    return ctx if stream.settled_default(ctx) else None


def _copy_1d(ctx: context.Context | None, dst: int, src: int, n: int, what: str) -> None:
    """A checked synchronous copy of n bytes, in the default stream's order (ctx: the
    current context, if the caller has it)."""
    if n and (ctx := _now(ctx, dst, src)) is not None:
        memory.host_copy(dst, src, n)
        stream.check_sticky(ctx)
        return
    _copy(_rows(dst, src, n), None, what)


def _copy(rows: Rows, handle: int | None, what: str, desc=None) -> None:
    """Run a checked copy plan: synchronously in default-stream order (handle None), or
    queued on a stream, where pageable host memory is read now / written before return.
    On a capturing stream it becomes a memcpy node (described by desc, the program's
    CUDA_MEMCPY2D/3D, if any) that copies whenever the graph runs."""
    if handle is None and len(rows) == 1:
        dst, src, n = rows[0]
        if (ctx := _now(None, dst, src)) is not None:
            memory.host_copy(dst, src, n)
            stream.check_sticky(ctx)
            return
    if handle is None:
        queued = _queued_copy(rows)
        if queued is not None:
            _queue(None, queued, what)
            return
        _sync(_copy_rows(rows), what)
        return
    s = stream.resolve_for_work(handle)
    if s.capture is not None:
        from cuport.driver import capture, graph_nodes

        capture.add(s, graph_nodes.captured_memcpy(rows, desc, s.context), what)
        return
    if not rows:
        return
    dst, src, n = rows[0]
    if len(rows) == 1 and n <= memory.SMALL and memory.host_accessible(dst, src) \
            and stream.settled(s):
        # the stream has reached it: a small copy is done now (a large one still overlaps
        # with the program, on the stream's thread)
        memory.host_copy(dst, src, n)
        return
    queued = _queued_copy(rows, pinned=True)
    if queued is not None:
        _queue(s, queued, what)
        return
    if not memory.accessed_in_stream_order(src):
        chunks = [ctypes.create_string_buffer(ctypes.string_at(a, n), n) for _, a, n in rows]

        def run() -> None:
            for (d, _, n), chunk in zip(rows, chunks, strict=True):
                memory.move(d, ctypes.addressof(chunk), n)
        op = stream.submit(s, run, what)
    else:
        op = stream.submit(s, _copy_rows(rows), what)
    if not memory.accessed_in_stream_order(dst):
        op.done.wait()


def _sync(fn: Callable[[], None], what: str) -> None:
    """In the order of the calling thread's default stream, done when this returns."""
    stream.run_sync(stream.resolve(0), fn, what)


# -- 1D copies ----------------------------------------------------------------------------

def _htod(dst: int, src: int, n: int) -> context.Context:
    ctx = context.current()  # NVIDIA checks the context first (CUDA_ERROR_INVALID_CONTEXT)
    memory.check_device_range(dst, n, "dstDevice")
    memory.check_host_range(src, n, "srcHost")
    return ctx


def _dtoh(dst: int, src: int, n: int) -> context.Context:
    ctx = context.current()
    memory.check_host_range(dst, n, "dstHost")
    memory.check_device_range(src, n, "srcDevice")
    return ctx


def _dtod(dst: int, src: int, n: int) -> context.Context:
    ctx = context.current()
    memory.check_device_range(dst, n, "dstDevice")
    memory.check_device_range(src, n, "srcDevice")
    return ctx


def _unified(dst: int, src: int, n: int) -> None:
    memory.check_host_range(dst, n, "dst")
    memory.check_host_range(src, n, "src")


def _rows(dst: int, src: int, n: int) -> Rows:
    return [(dst, src, n)] if n else []


@implements("cuMemcpy", "cuMemcpy_ptds")
def memcpy(dst: int, src: int, n: int) -> None:
    _unified(dst, src, n)
    _copy_1d(None, dst, src, n, "cuMemcpy")


@implements("cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds")
def memcpy_htod(dst: int, src: int, n: int) -> None:
    ctx = _htod(dst, src, n)
    _copy_1d(ctx, dst, src, n, "cuMemcpyHtoD")


@implements("cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds")
def memcpy_dtoh(dst: int, src: int, n: int) -> None:
    ctx = _dtoh(dst, src, n)
    _copy_1d(ctx, dst, src, n, "cuMemcpyDtoH")


@implements("cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds")
def memcpy_dtod(dst: int, src: int, n: int) -> None:
    ctx = _dtod(dst, src, n)
    _copy_1d(ctx, dst, src, n, "cuMemcpyDtoD")


def _peer_contexts(dst_ctx: int, src_ctx: int) -> None:
    context.lookup(dst_ctx).require_active()
    context.lookup(src_ctx).require_active()


@implements("cuMemcpyPeer", "cuMemcpyPeer_ptds")
def memcpy_peer(dst: int, dst_ctx: int, src: int, src_ctx: int, n: int) -> None:
    _peer_contexts(dst_ctx, src_ctx)
    memcpy_dtod(dst, src, n)


@implements("cuMemcpyAsync", "cuMemcpyAsync_ptsz")
def memcpy_async(dst: int, src: int, n: int, handle: int) -> None:
    _unified(dst, src, n)
    _copy(_rows(dst, src, n), handle, "cuMemcpyAsync")


@implements("cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz")
def memcpy_htod_async(dst: int, src: int, n: int, handle: int) -> None:
    _htod(dst, src, n)
    _copy(_rows(dst, src, n), handle, "cuMemcpyHtoDAsync")


@implements("cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz")
def memcpy_dtoh_async(dst: int, src: int, n: int, handle: int) -> None:
    _dtoh(dst, src, n)
    _copy(_rows(dst, src, n), handle, "cuMemcpyDtoHAsync")


@implements("cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz")
def memcpy_dtod_async(dst: int, src: int, n: int, handle: int) -> None:
    _dtod(dst, src, n)
    _copy(_rows(dst, src, n), handle, "cuMemcpyDtoDAsync")


@implements("cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz")
def memcpy_peer_async(dst: int, dst_ctx: int, src: int, src_ctx: int, n: int,
                      handle: int) -> None:
    _peer_contexts(dst_ctx, src_ctx)
    memcpy_dtod_async(dst, src, n, handle)


# -- arrays -------------------------------------------------------------------------------

@implements("cuMemcpyHtoA_v2", "cuMemcpyHtoA_v2_ptds")
def memcpy_htoa(arr: int, offset: int, src: int, n: int) -> None:
    dst = array.lookup(arr).check(offset, n, "dstArray")
    memory.check_host_range(src, n, "srcHost")
    _copy_1d(None, dst, src, n, "cuMemcpyHtoA")


@implements("cuMemcpyAtoH_v2", "cuMemcpyAtoH_v2_ptds")
def memcpy_atoh(dst: int, arr: int, offset: int, n: int) -> None:
    src = array.lookup(arr).check(offset, n, "srcArray")
    memory.check_host_range(dst, n, "dstHost")
    _copy_1d(None, dst, src, n, "cuMemcpyAtoH")


@implements("cuMemcpyDtoA_v2", "cuMemcpyDtoA_v2_ptds")
def memcpy_dtoa(arr: int, offset: int, src: int, n: int) -> None:
    dst = array.lookup(arr).check(offset, n, "dstArray")
    memory.check_device_range(src, n, "srcDevice")
    _copy_1d(None, dst, src, n, "cuMemcpyDtoA")


@implements("cuMemcpyAtoD_v2", "cuMemcpyAtoD_v2_ptds")
def memcpy_atod(dst: int, arr: int, offset: int, n: int) -> None:
    src = array.lookup(arr).check(offset, n, "srcArray")
    memory.check_device_range(dst, n, "dstDevice")
    _copy_1d(None, dst, src, n, "cuMemcpyAtoD")


@implements("cuMemcpyAtoA_v2", "cuMemcpyAtoA_v2_ptds")
def memcpy_atoa(dst_arr: int, dst_off: int, src_arr: int, src_off: int, n: int) -> None:
    dst = array.lookup(dst_arr).check(dst_off, n, "dstArray")
    src = array.lookup(src_arr).check(src_off, n, "srcArray")
    _copy_1d(None, dst, src, n, "cuMemcpyAtoA")


@implements("cuMemcpyHtoAAsync_v2", "cuMemcpyHtoAAsync_v2_ptsz")
def memcpy_htoa_async(arr: int, offset: int, src: int, n: int, handle: int) -> None:
    dst = array.lookup(arr).check(offset, n, "dstArray")
    memory.check_host_range(src, n, "srcHost")
    _copy(_rows(dst, src, n), handle, "cuMemcpyHtoAAsync")


@implements("cuMemcpyAtoHAsync_v2", "cuMemcpyAtoHAsync_v2_ptsz")
def memcpy_atoh_async(dst: int, arr: int, offset: int, n: int, handle: int) -> None:
    src = array.lookup(arr).check(offset, n, "srcArray")
    memory.check_host_range(dst, n, "dstHost")
    _copy(_rows(dst, src, n), handle, "cuMemcpyAtoHAsync")


# -- 2D and 3D ----------------------------------------------------------------------------

class _Side:
    """One end of a 2D/3D copy: where its first byte is and how rows and slices step."""

    def __init__(self, p, prefix: str, width: int, height: int, depth: int,
                 has_z: bool) -> None:
        ffi = types.ffi()
        kind = getattr(p, prefix + "MemoryType")
        x, y = getattr(p, prefix + "XInBytes"), getattr(p, prefix + "Y")
        z = getattr(p, prefix + "Z") if has_z else 0
        what = f"{prefix} of the copy"
        if kind == K.CU_MEMORYTYPE_ARRAY:
            arr = array.lookup(int(ffi.cast("uintptr_t", getattr(p, prefix + "Array"))))
            base, pitch, slice_rows = arr.storage.base, arr.row_bytes, arr.rows
        elif kind == K.CU_MEMORYTYPE_HOST:
            base = int(ffi.cast("uintptr_t", getattr(p, prefix + "Host")))
            pitch = getattr(p, prefix + "Pitch")
            slice_rows = getattr(p, prefix + "Height") if has_z else 0
        elif kind in (K.CU_MEMORYTYPE_DEVICE, K.CU_MEMORYTYPE_UNIFIED):
            base = getattr(p, prefix + "Device")
            pitch = getattr(p, prefix + "Pitch")
            slice_rows = getattr(p, prefix + "Height") if has_z else 0
        else:
            raise CudaError(E.INVALID_VALUE, f"{prefix}MemoryType {kind} is not a CUmemorytype")
        if (height > 1 or depth > 1) and pitch < width:
            raise CudaError(E.INVALID_VALUE, f"{prefix}Pitch {pitch} is less than "
                                             f"WidthInBytes {width}")
        if depth > 1 and slice_rows < height:
            raise CudaError(E.INVALID_VALUE, f"{prefix}Height {slice_rows} is less than "
                                             f"Height {height}")
        self.pitch, self.slice = pitch, pitch * slice_rows
        self.start = base + (z * slice_rows + y) * pitch + x
        span = (depth - 1) * self.slice + (height - 1) * pitch + width
        if width and height and depth:
            if kind == K.CU_MEMORYTYPE_ARRAY:
                arr.check(self.start - base, span, what)
            elif kind == K.CU_MEMORYTYPE_DEVICE:
                memory.check_device_range(self.start, span, what)
            else:
                memory.check_host_range(self.start, span, what)


def plan(p, has_z: bool) -> Rows:
    """The row copies of a CUDA_MEMCPY2D/3D(_PEER), all checked."""
    width, height = p.WidthInBytes, p.Height
    depth = p.Depth if has_z else 1
    if has_z and (p.srcLOD or p.dstLOD):
        raise CudaError(E.INVALID_VALUE, "mipmap levels (srcLOD/dstLOD) are not supported")
    src = _Side(p, "src", width, height, depth, has_z)
    dst = _Side(p, "dst", width, height, depth, has_z)
    return [(dst.start + k * dst.slice + r * dst.pitch, src.start + k * src.slice + r * src.pitch,
             width) for k in range(depth) for r in range(height)] if width else []


@implements("cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds", "cuMemcpy2DUnaligned_v2",
            "cuMemcpy2DUnaligned_v2_ptds")
def memcpy_2d(p: int) -> None:
    _copy(plan(types.struct_at(_nonnull(p), "CUDA_MEMCPY2D"), False), None, "cuMemcpy2D")


@implements("cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz")
def memcpy_2d_async(p: int, handle: int) -> None:
    q = types.struct_at(_nonnull(p), "CUDA_MEMCPY2D")
    _copy(plan(q, False), handle, "cuMemcpy2DAsync", q)


@implements("cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds")
def memcpy_3d(p: int) -> None:
    _copy(plan(types.struct_at(_nonnull(p), "CUDA_MEMCPY3D"), True), None, "cuMemcpy3D")


@implements("cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz")
def memcpy_3d_async(p: int, handle: int) -> None:
    q = types.struct_at(_nonnull(p), "CUDA_MEMCPY3D")
    _copy(plan(q, True), handle, "cuMemcpy3DAsync", q)


def _peer_3d(p: int):
    q = types.struct_at(_nonnull(p), "CUDA_MEMCPY3D_PEER")
    ffi = types.ffi()
    _peer_contexts(int(ffi.cast("uintptr_t", q.dstContext)),
                   int(ffi.cast("uintptr_t", q.srcContext)))
    return q


@implements("cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds")
def memcpy_3d_peer(p: int) -> None:
    _copy(plan(_peer_3d(p), True), None, "cuMemcpy3DPeer")


@implements("cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync_ptsz")
def memcpy_3d_peer_async(p: int, handle: int) -> None:
    _copy(plan(_peer_3d(p), True), handle, "cuMemcpy3DPeerAsync")


def _nonnull(p: int) -> int:
    if p == 0:
        raise CudaError(E.INVALID_VALUE, "pCopy is NULL")
    return p


# -- memset -------------------------------------------------------------------------------

def _check_fill(dst: int, pitch: int, width: int, height: int, size: int) -> None:
    """A (2D) fill of `width` elements of `size` bytes per row must fit its allocation."""
    if dst % size:
        raise CudaError(E.INVALID_VALUE, f"dstDevice {hex(dst)} is not {size}-byte aligned")
    row = width * size
    if height > 1 and pitch < row:
        raise CudaError(E.INVALID_VALUE, f"dstPitch {pitch} is less than the row's {row} bytes")
    if row and height:
        memory.check_device_range(dst, (height - 1) * pitch + row, "dstDevice")


def fill_plan(dst: int, pitch: int, value: int, width: int, height: int,
               size: int) -> Callable[[], None]:
    """Check a (2D) fill of `width` elements of `size` bytes per row and return it."""
    _check_fill(dst, pitch, width, height, size)

    def run() -> None:
        for r in range(height):
            memory.fill(dst + r * pitch, value, width, size)
    return run


def _queued_fill(dst: int, pitch: int, value: int, width: int, height: int,
                 size: int) -> Callable[[], None] | None:
    """A checked fill of device memory that the device's own queue can run, else None."""
    b = memory.queued_backend(dst) if width and height else None
    if b is None:
        return None

    def run() -> None:
        for r in range(height):
            b.fill_queued(dst + r * pitch, value, width, size)
    return run


def _fill_sync(dst: int, pitch: int, value: int, width: int, height: int, size: int,
               what: str) -> None:
    fill = fill_plan(dst, pitch, value, width, height, size)
    if height == 1 and width and (ctx := _now(None, dst)) is not None:
        memory.host_fill(dst, value, width, size)
        stream.check_sticky(ctx)
        return
    queued = _queued_fill(dst, pitch, value, width, height, size)
    if queued is not None:
        _queue(None, queued, what)
    else:
        _sync(fill, what)


def _memset_sync(what: str, size: int):
    def set_1d(dst: int, value: int, n: int) -> None:
        _check_fill(dst, 0, n, 1, size)
        if n and (ctx := _now(None, dst)) is not None:  # (as _fill_sync, without a plan)
            memory.host_fill(dst, value, n, size)
            stream.check_sticky(ctx)
            return
        _fill_sync(dst, 0, value, n, 1, size, what)
    return set_1d


def _fill_async(handle: int, dst: int, pitch: int, value: int, width: int, height: int,
                size: int, what: str) -> None:
    """A checked fill queued on a stream, or a memset node of its capture."""
    fill = fill_plan(dst, pitch, value, width, height, size)
    s = stream.resolve(handle)
    if s.capture is not None:
        from cuport.driver import capture, graph_nodes

        value &= (1 << (8 * size)) - 1
        node = graph_nodes.Memset(dst, pitch, value, size, width, height, s.context, fill)
        capture.add(s, node, what)
        return
    queued = _queued_fill(dst, pitch, value, width, height, size)
    if queued is not None:
        _queue(s, queued, what)
        return
    stream.submit(s, fill, what)


def _memset_async(what: str, size: int):
    def set_1d(dst: int, value: int, n: int, handle: int) -> None:
        _fill_async(handle, dst, 0, value, n, 1, size, what)
    return set_1d


def _memset_2d_sync(what: str, size: int):
    def set_2d(dst: int, pitch: int, value: int, width: int, height: int) -> None:
        _fill_sync(dst, pitch, value, width, height, size, what)
    return set_2d


def _memset_2d_async(what: str, size: int):
    def set_2d(dst: int, pitch: int, value: int, width: int, height: int, handle: int) -> None:
        _fill_async(handle, dst, pitch, value, width, height, size, what)
    return set_2d


for _bits, _size in ((8, 1), (16, 2), (32, 4)):
    implements(f"cuMemsetD{_bits}_v2", f"cuMemsetD{_bits}_v2_ptds")(
        _memset_sync(f"cuMemsetD{_bits}", _size))
    implements(f"cuMemsetD{_bits}Async", f"cuMemsetD{_bits}Async_ptsz")(
        _memset_async(f"cuMemsetD{_bits}Async", _size))
    implements(f"cuMemsetD2D{_bits}_v2", f"cuMemsetD2D{_bits}_v2_ptds")(
        _memset_2d_sync(f"cuMemsetD2D{_bits}", _size))
    implements(f"cuMemsetD2D{_bits}Async", f"cuMemsetD2D{_bits}Async_ptsz")(
        _memset_2d_async(f"cuMemsetD2D{_bits}Async", _size))
