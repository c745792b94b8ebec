"""Device, host, managed and registered memory, and the table that knows all of it.

On the CPU backend device memory is host memory: every allocation is a private
anonymous mmap (page-aligned, zero-filled, padded as a GPU's 2 MiB pages are:
backends/host_pages.py), and a CUdeviceptr is its address, so kernels and host
copies use it directly. The allocation table answers the
questions a driver must (is this pointer ours, which allocation, how large, which
context) and lets every copy be checked before memory is touched: a bad pointer
or a copy past an allocation's end is CUDA_ERROR_INVALID_VALUE, never a crash.
"""

from __future__ import annotations

import bisect
import collections
import ctypes
import itertools
import mmap
import os
import threading
from dataclasses import dataclass, field

from cuport.capi.types import MEMORY
from cuport.driver import context, device, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

PAGE = mmap.PAGESIZE
PITCH_ALIGNMENT = 512


KINDS_DEVICE_VISIBLE = ("device", "managed", "host", "registered", "global")
_ids = itertools.count(1)


@dataclass(eq=False)
class Allocation:
    base: int
    size: int
    kind: str  # device | managed | host | registered | global | array
    context: context.Context | None
    flags: int = 0
    owned: bool = True  # we mmap'd it and must munmap it
    id: int = field(default_factory=lambda: next(_ids))
    sync_memops: int = 0
    pool: object | None = None  # the mempool.Pool of a stream-ordered allocation
    freeing: bool = False  # cuMemFreeAsync queued: freed when its stream gets there
    graph_memory: bool = False  # a mem alloc node's: mapped until its context goes
    imported: bool = False  # another process's, from cuIpcOpenMemHandle (ipc.py)
    host_ok: bool = True  # the host can use the memory at its address (False: copy through the backend)
    mapping: object | None = None  # the vmm.Physical a cuMemMap mapping shows (vmm.py)

    @property
    def end(self) -> int:
        return self.base + self.size

    def describe(self) -> str:
        return f"the {self.size}-byte {self.kind} allocation at {hex(self.base)}"


class AllocationTable:
    """Non-overlapping address ranges, searchable by any address inside them."""

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._by_base: dict[int, Allocation] = {}
        self._freed: collections.OrderedDict[int, str] = collections.OrderedDict()
        self.lock = threading.RLock()

    # find() takes no lock (every copy asks several times): a base is in _by_base whenever
    # it is in _bases (add fills the dict first, remove empties the list first), and a lookup
    # that raced a change is made again under the lock.
    def add(self, a: Allocation) -> None:
        with self.lock:
            self._by_base[a.base] = a
            bisect.insort(self._bases, a.base)
            self._freed.pop(a.base, None)

    def remove(self, a: Allocation, why: str = "freed") -> None:
        with self.lock:
            if not a.host_ok and a.base in self._by_base:
                _opaque[0] -= 1
            i = bisect.bisect_left(self._bases, a.base)
            del self._bases[i]
            del self._by_base[a.base]
            self._freed[a.base] = f"{a.kind} memory, {why}"
            if len(self._freed) > 4096:
                self._freed.popitem(last=False)

    def find(self, address: int) -> Allocation | None:
        """The allocation containing address (an address one past the end is not in it)."""
        bases = self._bases
        i = bisect.bisect_right(bases, address) - 1
        if i < 0:
            return None
        try:
            a = self._by_base.get(bases[i])
        except IndexError:
            a = None
        if a is None or a.base > address:  # (raced an add or remove)
            with self.lock:
                i = bisect.bisect_right(bases, address) - 1
                if i < 0:
                    return None
                a = self._by_base[bases[i]]
        return a if address < a.base + a.size or (a.size == 0 and address == a.base) else None

    def overlapping(self, address: int, size: int) -> Allocation | None:
        with self.lock:
            i = bisect.bisect_left(self._bases, address + size)
            for base in reversed(self._bases[max(0, i - 1): i]):
                a = self._by_base[base]
                if a.end > address:
                    return a
        return None

    def freed_kind(self, address: int) -> str | None:
        return self._freed.get(address)

    def all(self) -> list[Allocation]:
        with self.lock:
            return list(self._by_base.values())


TABLE = AllocationTable()


def map_pages(size: int, ctx: context.Context | None = None, kind: str = "device") -> int:
    """Fresh zero-filled memory of the context's device (its backend allocates it)."""
    if ctx is None:  # (tests and the library API may allocate with no context current)
        s = context.stack()
        ctx = s[-1] if s else None
    limit = ctx.device.total_memory() if ctx is not None else device.total_memory()
    if size > limit:
        raise CudaError(E.OUT_OF_MEMORY, f"{size} bytes asked for, the device has "
                                         f"{limit} bytes of memory")
    return _allocator(ctx).allocate(size, kind)


def _allocator(ctx: context.Context | None):
    """The backend that owns a context's memory (host pages for backends that do not)."""
    b = ctx.device.backend() if ctx is not None else None
    if b is None or not hasattr(b, "allocate"):
        from cuport.backends import host_pages

        return host_pages
    return b


def device_allocates(ctx: context.Context | None) -> bool:
    """Whether the context's device memory is its backend's (a GPU's under Vulkan), not
    host pages mapped by the driver (the CPU backend's)."""
    from cuport.backends import host_pages

    return _allocator(ctx) is not host_pages


def _unmap(a: Allocation) -> None:
    for hook in UNMAP_HOOKS:
        hook(a)
    _allocator(a.context).free(a.base, a.size)


# Called with an allocation just before its memory is unmapped (ipc.py withdraws its offer).
UNMAP_HOOKS: list = []


def _sharing(ctx: context.Context | None, what: str):
    alloc = _allocator(ctx)
    if not hasattr(alloc, "share"):
        raise CudaError(E.NOT_SUPPORTED, f"{what}: the device's memory cannot be shared between "
                                         "processes by cuport")
    return alloc


def share(a: Allocation) -> tuple[int, bytes]:
    """Make an allocation's memory mappable by other processes (address and contents
    kept): a descriptor of it (the caller closes it) and the description that the
    importing process's backend needs (opaque here)."""
    return _sharing(a.context, "cuIpcGetMemHandle").share(a.base, a.size)


def map_shared(fd: int, description: bytes, size: int, ctx: context.Context) -> int:
    """Map another process's shared memory (share there) into this process; returns its
    address here. The descriptor is consumed, mapped or not."""
    try:
        alloc = _sharing(ctx, "cuIpcOpenMemHandle")
    except CudaError:
        os.close(fd)
        raise
    return alloc.map_shared(fd, description, size)


# -- memory the host cannot touch: copies and fills through the device's backend ---------
_opaque = [0]  # live allocations with host_ok False: none means every copy is a memmove


def track(a: Allocation) -> Allocation:
    """Enter a new allocation in the table, noting whether the host can touch its memory
    (every allocation of device memory must come through here, or host copies would
    memmove to a discrete GPU's addresses)."""
    _note_host_access(a)
    TABLE.add(a)
    return a


def _note_host_access(a: Allocation) -> Allocation:
    b = a.context.device.backend() if a.context is not None else None
    if b is not None and hasattr(b, "drain") and a.context.device not in _async_devices:
        _async_devices.append(a.context.device)
    check = getattr(b, "host_accessible", None)
    if check is not None and not check(a.base):
        a.host_ok = False
        with TABLE.lock:
            _opaque[0] += 1
    return a


def host_accessible(*addresses: int) -> bool:
    """Whether the host can use the memory at each address where it is (not a discrete
    GPU's device memory, which only its backend can copy)."""
    return not _opaque[0] or all(_opaque_at(a) is None for a in addresses)


def _opaque_at(address: int) -> Allocation | None:
    if not _opaque[0]:
        return None
    a = TABLE.find(address)
    return a if a is not None and not a.host_ok else None


_async_devices: list = []  # contexts' devices whose backends finish launches later (Vulkan)


def _settle(*addresses: int) -> None:
    """Before the host touches device memory: let a device whose launches finish
    asynchronously complete them (stream.drain), so the host sees their results and the
    kernels see the host's bytes only after they ran. In a stream's host operation (a copy
    on its thread) only the device work CUDA orders it after: other streams' kernels may
    still run (one may wait for what this operation is part of)."""
    for d in _async_devices:
        if d.backend().pending():
            break
    else:
        return
    s = stream.thread_state.stream
    for address in addresses:
        a = TABLE.find(address)
        if a is not None and a.context is not None and stream.device_busy(a.context):
            stream.drain(a.context, s if s is not None and s.context is a.context else None)


def _no(_address: int) -> bool:
    return False


def queued_backend(*addresses: int, pinned: bool = False):
    """The backend that can fill or copy this memory in its own queue (queues_launches: in
    order with its launches, nothing waited for), or None: every address must be device
    memory of one context whose backend does so, or with `pinned` (an asynchronous copy:
    CUDA reads and writes pinned memory when the stream gets there) page-locked host memory
    that backend's queue reaches (queues_host_memory)."""
    if not _async_devices:  # (no such backend holds memory: the CPU backend's copies skip this)
        return None
    backend = None
    for address in addresses:
        a = TABLE.find(address)
        if a is None or a.context is None or a.kind not in ("device", "host"):
            return None
        b = a.context.device.backend()
        if not getattr(b, "queues_launches", False) or backend not in (None, b):
            return None
        if a.kind == "host" and not (pinned and getattr(b, "queues_host_memory", _no)(a.base)):
            return None
        backend = b
    return backend


#: copies and fills up to this size are made holding the GIL: a foreign call (ctypes.memmove)
#: releases and takes it again, which costs more than copying a few KiB
SMALL = 1 << 16


def move(dst: int, src: int, n: int) -> None:
    """memmove for the driver's copies: device memory the host cannot touch (a discrete
    GPU's) goes through its backend; everything else is host memory at its address."""
    if n <= 0:
        return
    _settle(dst, src)
    d = s = None
    if _opaque[0]:
        d, s = _opaque_at(dst), _opaque_at(src)
    if d is None and s is None:
        host_copy(dst, src, n)
        return
    owner = d or s
    b = owner.context.device.backend()
    if d is not None and s is not None:
        b.copy_dtod(dst, src, n)
    elif d is not None:
        b.copy_htod(dst, src, n)
    else:
        b.copy_dtoh(dst, src, n)


_MASKS = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}


def fill(dst: int, value: int, n: int, width: int = 1) -> None:
    """n elements of `width` bytes set to `value`, through the backend where needed."""
    _settle(dst)
    a = _opaque_at(dst) if _opaque[0] else None
    if a is None:
        host_fill(dst, value, n, width)
        return
    a.context.device.backend().fill(dst, value, n, width)


def host_copy(dst: int, src: int, n: int) -> None:
    """memmove of memory the host can use at its address."""
    if n <= SMALL:
        MEMORY[dst:dst + n] = MEMORY[src:src + n]  # (a memmove: overlap allowed)
    else:
        ctypes.memmove(dst, src, n)


def host_fill(dst: int, value: int, n: int, width: int = 1) -> None:
    """n elements of `width` bytes set to `value`, in memory the host can use at its address."""
    if n * width <= SMALL:
        MEMORY[dst:dst + n * width] = (value & _MASKS[width]).to_bytes(width, "little") * n
    elif width == 1:
        ctypes.memset(dst, value & 0xFF, n)
    else:
        import numpy as np

        dtype = {2: np.uint16, 4: np.uint32}[width]
        np.frombuffer((ctypes.c_char * (n * width)).from_address(dst), dtype=dtype).fill(value)


def read(address: int, n: int) -> bytes:
    """The bytes of any memory the driver knows (host or device), as the kernels queued
    before left them."""
    if _opaque_at(address) is None:
        _settle(address)
        return ctypes.string_at(address, n)
    buf = ctypes.create_string_buffer(n)
    move(ctypes.addressof(buf), address, n)
    return buf.raw


def allocate(size: int, kind: str, ctx: context.Context, flags: int = 0) -> Allocation:
    if size == 0:
        raise CudaError(E.INVALID_VALUE, "an allocation of 0 bytes was asked for")
    _check_capture("allocating memory")
    a = _note_host_access(Allocation(map_pages(size, ctx, kind), size, kind, ctx, flags))
    TABLE.add(a)
    return a


def release(a: Allocation) -> None:
    """Free an allocation once no queued work of its context can still use it."""
    _check_capture("freeing memory")
    if a.context is not None:
        stream.synchronize_context(a.context)
    release_now(a)


def release_now(a: Allocation) -> None:
    """Free an allocation now (its stream got to a cuMemFreeAsync, or all work is done).
    Graph memory freed outside its graph stays mapped: the graph's next launch allocates
    it again at the same address, as CUDA's graph memory does."""
    if a.graph_memory:
        a.freeing = False
        return
    if a.pool is not None:
        a.pool.forget(a)
    TABLE.remove(a)
    if a.owned:
        _unmap(a)


def _check_capture(what: str) -> None:
    """Allocating and freeing are "potentially unsafe" during a stream capture."""
    from cuport.driver import capture

    capture.check_unsafe(what)


def register_range(base: int, size: int, kind: str, ctx: context.Context | None) -> Allocation:
    """Record memory cuport did not map (module globals, registered host memory)."""
    a = _note_host_access(Allocation(base, size, kind, ctx, owned=False))
    TABLE.add(a)
    return a


def _release_context(ctx: context.Context) -> None:
    for a in TABLE.all():
        if a.context is ctx and a.kind != "global":
            TABLE.remove(a, "freed with its context")
            if a.owned:
                _unmap(a)


context.RESOURCE_HOOKS.append(_release_context)


# -- checks used by every copy and memset -------------------------------------------------

def check_device_range(address: int, size: int, what: str) -> Allocation | None:
    """[address, address+size) must lie in one allocation the device can reach."""
    if size == 0:
        return None
    a = TABLE.find(address)
    if a is None or a.kind not in KINDS_DEVICE_VISIBLE:
        freed = TABLE.freed_kind(address)
        if freed:
            raise CudaError(E.INVALID_VALUE, f"{what} {hex(address)} is no longer allocated "
                                             f"({freed})")
        raise CudaError(E.INVALID_VALUE,
                        f"{what} {hex(address)} is not device memory: not from cuMemAlloc, "
                        "cuMemAllocManaged, cuMemHostAlloc or cuMemHostRegister, nor a module "
                        "global")
    if address + size > a.end:
        raise CudaError(E.INVALID_VALUE,
                        f"{what}: {size} bytes from {hex(address)} run "
                        f"{address + size - a.end} bytes past the end of {a.describe()}")
    return a


def check_host_range(address: int, size: int, what: str) -> None:
    """A host pointer: not NULL, and within bounds if it is memory cuport knows."""
    if size == 0:
        return
    if address == 0:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    a = TABLE.find(address)
    if a is not None and address + size > a.end:
        raise CudaError(E.INVALID_VALUE,
                        f"{what}: {size} bytes from {hex(address)} run "
                        f"{address + size - a.end} bytes past the end of {a.describe()}")


def accessed_in_stream_order(address: int) -> bool:
    """Whether an asynchronous copy may touch this memory when its stream gets there.

    True for memory cuport knows (device, managed, page-locked host): as with NVIDIA's
    driver the program must leave it alone until the stream is done. False for
    pageable host memory, which an asynchronous copy reads at the call and writes
    before returning.
    """
    a = TABLE.find(address)
    return a is not None and a.kind != "array"


# -- API ----------------------------------------------------------------------------------

@implements("cuMemAlloc_v2")
def mem_alloc(size: int) -> int:
    return allocate(size, "device", context.current()).base


@implements("cuMemAllocPitch_v2")
def mem_alloc_pitch(width: int, height: int, element_size: int) -> tuple[int, int]:
    if element_size not in (4, 8, 16):
        raise CudaError(E.INVALID_VALUE, f"ElementSizeBytes must be 4, 8 or 16, not {element_size}")
    if width == 0 or height == 0:
        raise CudaError(E.INVALID_VALUE, "WidthInBytes and Height must not be 0")
    pitch = -(-width // PITCH_ALIGNMENT) * PITCH_ALIGNMENT
    return allocate(pitch * height, "device", context.current()).base, pitch


def _free(address: int, kinds: tuple[str, ...], call_for_others: str) -> None:
    release(check_freeable(address, kinds, call_for_others))


def check_freeable(address: int, kinds: tuple[str, ...], call_for_others: str) -> Allocation:
    """The allocation that starts at `address`, or the error that says why it is not one."""
    a = TABLE.find(address)
    if a is not None and a.freeing:
        raise CudaError(E.INVALID_VALUE, f"{hex(address)} is already being freed "
                                         "(cuMemFreeAsync): double free")
    if a is None or a.base != address:
        freed = TABLE.freed_kind(address)
        if freed is not None:
            raise CudaError(E.INVALID_VALUE, f"{hex(address)} is no longer allocated ({freed}): "
                                             "double free")
        if a is not None:
            raise CudaError(E.INVALID_VALUE, f"{hex(address)} is inside {a.describe()}, "
                                             "not its start")
        raise CudaError(E.INVALID_VALUE, f"{hex(address)} is not an allocation of cuport's")
    if a.kind not in kinds:
        raise CudaError(E.INVALID_VALUE, f"{hex(address)} is {a.kind} memory: "
                                         f"free it with {call_for_others}")
    if a.imported:
        raise CudaError(E.INVALID_VALUE, f"{hex(address)} is another process's memory, from "
                                         "cuIpcOpenMemHandle: close it with cuIpcCloseMemHandle")
    if a.mapping is not None:
        raise CudaError(E.INVALID_VALUE, f"{hex(address)} is mapped with cuMemMap: unmap it with "
                                         "cuMemUnmap")
    return a


@implements("cuMemFree_v2")
def mem_free(dptr: int) -> None:
    if dptr == 0:  # cudaFree(0), the usual way to create the runtime's context: success,
        return     # with or without a current context (as on an H200, tests/capi/gpu_answers.json)
    _free(dptr, ("device", "managed"), "cuMemFreeHost (host) / cuMemHostUnregister (registered)")


@implements("cuMemAllocHost_v2")
def mem_alloc_host(size: int) -> int:
    return allocate(size, "host", context.current(), 0).base


@implements("cuMemHostAlloc")
def mem_host_alloc(size: int, flags: int) -> int:
    if flags & ~0x7:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CU_MEMHOSTALLOC_* flags")
    return allocate(size, "host", context.current(), flags).base


@implements("cuMemFreeHost")
def mem_free_host(p: int) -> None:
    if p == 0:  # NULL: success, as NVIDIA's driver answers (tests/capi/gpu_answers.json)
        return
    _free(p, ("host",), "cuMemFree (device or managed memory)")


@implements("cuMemAllocManaged")
def mem_alloc_managed(size: int, flags: int) -> int:
    if flags not in (K.CU_MEM_ATTACH_GLOBAL, K.CU_MEM_ATTACH_HOST):
        raise CudaError(E.INVALID_VALUE, "flags must be CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST")
    return allocate(size, "managed", context.current(), flags).base


@implements("cuMemHostRegister", "cuMemHostRegister_v2")
def mem_host_register(p: int, size: int, flags: int) -> None:
    ctx = context.current()
    if p == 0 or size == 0:
        raise CudaError(E.INVALID_VALUE, "p is NULL or bytesize is 0")
    if flags & ~0xF:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CU_MEMHOSTREGISTER_* flags")
    other = TABLE.overlapping(p, size)
    if other is not None:
        raise CudaError(E.HOST_MEMORY_ALREADY_REGISTERED,
                        f"{size} bytes at {hex(p)} overlap {other.describe()}")
    register_range(p, size, "registered", ctx).flags = flags


@implements("cuMemHostUnregister")
def mem_host_unregister(p: int) -> None:
    a = TABLE.find(p)
    if a is None or a.kind != "registered" or a.base != p:
        raise CudaError(E.HOST_MEMORY_NOT_REGISTERED,
                        f"{hex(p)} is not the start of memory registered with cuMemHostRegister")
    release(a)


@implements("cuMemHostGetDevicePointer_v2")
def mem_host_get_device_pointer(p: int, flags: int) -> int:
    if flags != 0:
        raise CudaError(E.INVALID_VALUE, "flags must be 0")
    a = TABLE.find(p)
    if a is None or a.kind not in ("host", "registered"):
        raise CudaError(E.INVALID_VALUE, f"{hex(p)} is not page-locked host memory "
                                         "(cuMemHostAlloc or cuMemHostRegister)")
    return p  # one address space: the device sees host memory where the host does


@implements("cuMemHostGetFlags")
def mem_host_get_flags(p: int) -> int:
    a = TABLE.find(p)
    if a is None or a.kind != "host":
        raise CudaError(E.INVALID_VALUE, f"{hex(p)} is not memory from cuMemHostAlloc")
    return a.flags


_mincore = ctypes.CDLL(None, use_errno=True).mincore
_mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def _resident_bytes(base: int, length: int) -> int:
    """How much of a mapping is in memory (mincore): pages never touched are not."""
    pages = length // PAGE
    vec = (ctypes.c_ubyte * pages)()
    if _mincore(base, length, vec) != 0:
        return length  # cannot tell: count it as used, which MemAvailable then also says
    return (pages - bytes(vec).count(0)) * PAGE


@implements("cuMemGetInfo_v2")
def mem_get_info() -> tuple[int, int]:
    """Free memory falls by what is allocated, as on a GPU. Where device memory is host
    memory (the CPU device), pages are reserved lazily (MAP_NORESERVE), so MemAvailable
    alone sees only the pages touched: the untouched rest of every such allocation is
    subtracted from it. (Devices with memory of their own answer as before.)"""
    ctx = context.current()
    if ctx.device.memory_bytes:  # a device with memory of its own (Vulkan)
        return device.available_memory(), device.total_memory()
    untouched = 0
    for a in TABLE.all():
        if a.owned and (a.context is None or not a.context.device.memory_bytes):
            length = max(PAGE, -(-a.size // PAGE) * PAGE)
            untouched += length - _resident_bytes(a.base, length)
    total = device.total_memory()
    return max(0, min(total, device.available_memory() - untouched)), total


@implements("cuMemGetAddressRange_v2", optional_outs=("pbase", "psize"))
def mem_get_address_range(dptr: int) -> tuple[int, int]:
    a = TABLE.find(dptr)
    if a is None or a.kind not in KINDS_DEVICE_VISIBLE:
        raise CudaError(E.NOT_FOUND, f"{hex(dptr)} is not in any allocation")
    return a.base, a.size


# -- pointer attributes -------------------------------------------------------------------

_U32, _I32, _U64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64


def cumemalloc_memory(a: Allocation) -> bool:
    """cuMemAlloc memory of this process: what cuIpcGetMemHandle may export."""
    return a.kind == "device" and a.pool is None and not a.graph_memory and not a.imported \
        and a.mapping is None


def ipc_capable(a: Allocation) -> bool:
    """Whether cuIpcGetMemHandle can export it: cuMemAlloc memory of a device whose backend
    can share it."""
    shareable = getattr(_allocator(a.context), "shareable", None)
    return cumemalloc_memory(a) and shareable is not None and shareable(a.base)


def _memory_type(a: Allocation) -> int:
    return K.CU_MEMORYTYPE_HOST if a.kind in ("host", "registered") else K.CU_MEMORYTYPE_DEVICE


def _host_pointer(a: Allocation, p: int) -> int:
    if a.kind in ("host", "registered", "managed"):
        return p
    raise CudaError(E.INVALID_VALUE, f"{hex(p)} is device memory: it has no host pointer")


def _not_supported(a: Allocation, p: int) -> int:
    raise CudaError(E.NOT_SUPPORTED, "P2P tokens are not supported by cuport")


# CUpointer_attribute -> (C type written, value for an allocation and pointer)
POINTER_ATTRIBUTES = {
    K.CU_POINTER_ATTRIBUTE_CONTEXT: (_U64, lambda a, p: a.context.handle if a.context else 0),
    K.CU_POINTER_ATTRIBUTE_MEMORY_TYPE: (_U32, lambda a, p: _memory_type(a)),
    K.CU_POINTER_ATTRIBUTE_DEVICE_POINTER: (_U64, lambda a, p: p),
    K.CU_POINTER_ATTRIBUTE_HOST_POINTER: (_U64, _host_pointer),
    K.CU_POINTER_ATTRIBUTE_P2P_TOKENS: (_U64, _not_supported),
    K.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: (_I32, lambda a, p: a.sync_memops),
    K.CU_POINTER_ATTRIBUTE_BUFFER_ID: (_U64, lambda a, p: a.id),
    K.CU_POINTER_ATTRIBUTE_IS_MANAGED: (_U32, lambda a, p: int(a.kind == "managed")),
    K.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: (_I32, lambda a, p: 0),
    K.CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: (_I32, lambda a, p: int(ipc_capable(a))),
    K.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: (_U64, lambda a, p: a.base),
    K.CU_POINTER_ATTRIBUTE_RANGE_SIZE: (_U64, lambda a, p: a.size),
    K.CU_POINTER_ATTRIBUTE_MAPPED: (_I32, lambda a, p: 1),
    K.CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: (_U64, lambda a, p: 0),
    K.CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: (_I32, lambda a, p: 0),
    K.CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: (_I32, lambda a, p: 3),  # read-write
    K.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: (_U64, lambda a, p: 0),
    K.CU_POINTER_ATTRIBUTE_MAPPING_SIZE: (_U64, lambda a, p: a.size),
    K.CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: (_U64, lambda a, p: a.base),
    K.CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: (_U64, lambda a, p: a.id),
    K.CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: (_I32, lambda a, p: 0),
}


def _attribute(attribute: int) -> tuple:
    entry = POINTER_ATTRIBUTES.get(attribute)
    if entry is None:
        raise CudaError(E.INVALID_VALUE, f"{attribute} is not a CUpointer_attribute")
    return entry


@implements("cuPointerGetAttribute")
def pointer_get_attribute(data: int, attribute: int, ptr: int) -> None:
    ctype, getter = _attribute(attribute)
    if data == 0:
        raise CudaError(E.INVALID_VALUE, "data is NULL")
    a = TABLE.find(ptr)
    if a is None:
        raise CudaError(E.INVALID_VALUE, f"{hex(ptr)} is not memory cuport allocated or "
                                         "registered")
    ctype.from_address(data).value = getter(a, ptr)


@implements("cuPointerGetAttributes")
def pointer_get_attributes(count: int, attributes: int, data: int, ptr: int) -> None:
    """Unlike the single query, an unknown pointer is no error: its values read as zero."""
    if count and (attributes == 0 or data == 0):
        raise CudaError(E.INVALID_VALUE, "attributes or data is NULL")
    kinds = (ctypes.c_int * count).from_address(attributes) if count else []
    slots = (ctypes.c_uint64 * count).from_address(data) if count else []
    a = TABLE.find(ptr)
    for attribute, slot in zip(kinds, slots, strict=False):
        ctype, getter = _attribute(attribute)
        if slot == 0:
            continue
        try:
            value = getter(a, ptr) if a is not None else 0
        except CudaError:
            value = 0
        if a is None and attribute == K.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            value = -2  # CU_DEVICE_INVALID: not device memory
        ctype.from_address(slot).value = value


@implements("cuPointerSetAttribute")
def pointer_set_attribute(value: int, attribute: int, ptr: int) -> None:
    if attribute != K.CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        raise CudaError(E.INVALID_VALUE, "only CU_POINTER_ATTRIBUTE_SYNC_MEMOPS can be set")
    a = TABLE.find(ptr)
    if a is None or value == 0:
        raise CudaError(E.INVALID_VALUE, f"{hex(ptr)} is not device memory or value is NULL")
    a.sync_memops = ctypes.c_int32.from_address(value).value


# -- hints that change nothing on the CPU ----------------------------------------------

def _check_hint_range(dptr: int, count: int) -> None:
    a = check_device_range(dptr, count, "devPtr")
    if a is not None and a.kind != "managed":
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not managed memory (cuMemAllocManaged)")


@implements("cuMemPrefetchAsync", "cuMemPrefetchAsync_ptsz")
def prefetch(dptr: int, count: int, dst_device: int, hstream: int) -> None:
    _check_hint_range(dptr, count)
    stream.resolve(hstream)


@implements("cuMemPrefetchAsync_v2", "cuMemPrefetchAsync_v2_ptsz")
def prefetch_v2(dptr: int, count: int, location, flags: int, hstream: int) -> None:
    _check_hint_range(dptr, count)
    stream.resolve(hstream)


@implements("cuMemAdvise")
def advise(dptr: int, count: int, advice: int, dev: int) -> None:
    if not 1 <= advice <= 6:
        raise CudaError(E.INVALID_VALUE, f"{advice} is not a CUmem_advise")
    _check_hint_range(dptr, count)


@implements("cuMemAdvise_v2")
def advise_v2(dptr: int, count: int, advice: int, location) -> None:
    advise(dptr, count, advice, 0)
