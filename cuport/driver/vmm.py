"""Virtual memory management: cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess.

A program reserves a range of device addresses, creates physical allocations and maps
them into the range (cuda-samples vectorAddMMAP, growable buffers, PyTorch's expandable
segments). On the CPU backend device memory is host memory, so the host's own virtual
memory does it: a reservation is an inaccessible anonymous mapping, a physical
allocation a memory file (memfd), cuMemMap maps the file over part of a reservation
(still inaccessible, as on a GPU until cuMemSetAccess), and cuMemSetAccess opens it.
Two mappings of one allocation share its memory, as on a GPU. Each mapping enters the
allocation table (memory.py) as device memory, so copies, kernels and pointer
attributes know it. Devices whose memory is not host memory (Vulkan) report
CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 0 and refuse these calls.
"""

from __future__ import annotations

import mmap
import os
import threading
from dataclasses import dataclass, field

from cuport.backends import host_pages
from cuport.capi import types
from cuport.driver import context, device, handles, memory, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

#: what cuMemGetAllocationGranularity answers (minimum and recommended), an H200's 2 MiB
GRANULARITY = host_pages.GRANULE
_NONE = 0  # PROT_NONE


@dataclass(eq=False)
class Physical:
    """A physical allocation (CUmemGenericAllocationHandle): a memory file."""

    fd: int
    size: int
    device: int
    refs: int = 1  # cuMemCreate's and cuMemRetainAllocationHandle's, less cuMemRelease's
    mappings: int = 0  # the file closes when both are 0
    handle: int = 0


@dataclass(eq=False)
class Reservation:
    base: int
    size: int
    mapped: dict[int, memory.Allocation] = field(default_factory=dict)  # base -> mapping
    access: dict[int, int] = field(default_factory=dict)  # mapping base -> PROT_* it has


_reservations: dict[int, Reservation] = {}  # base -> reservation
_lock = threading.RLock()


def _check_vmm(what: str) -> context.Context | None:
    ctx = context.current_or_none()
    dev = ctx.device if ctx is not None else device.get(0)
    if not dev.value("VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"):
        raise CudaError(E.NOT_SUPPORTED, f"{what}: virtual memory management is not supported "
                                         f"by cuport on {dev.name}")
    return ctx


def _check_prop(prop: int) -> int:
    """The device a CUmemAllocationProp asks for (pinned device memory, no export)."""
    if not prop:
        raise CudaError(E.INVALID_VALUE, "prop is NULL")
    p = types.struct_at(prop, "CUmemAllocationProp")
    if p.type != K.CU_MEM_ALLOCATION_TYPE_PINNED:
        raise CudaError(E.INVALID_VALUE, f"prop.type {p.type} is not CU_MEM_ALLOCATION_TYPE_PINNED")
    if p.location.type != K.CU_MEM_LOCATION_TYPE_DEVICE:
        raise CudaError(E.NOT_SUPPORTED, "only device memory (CU_MEM_LOCATION_TYPE_DEVICE) can be "
                                         "created by cuport")
    if p.requestedHandleTypes != K.CU_MEM_HANDLE_TYPE_NONE:
        raise CudaError(E.NOT_SUPPORTED, f"shareable handle types ({p.requestedHandleTypes:#x}) "
                                         "are not supported by cuport's cuMemCreate")
    if p.allocFlags.compressionType:
        raise CudaError(E.NOT_SUPPORTED, "compressible memory is not supported by cuport")
    return device.get(p.location.id).ordinal


def _physical(handle: int) -> Physical:
    p = handles.lookup(handle, Physical, "the allocation handle", E.INVALID_VALUE)
    if not p.refs:
        raise CudaError(E.INVALID_VALUE, f"the allocation handle {hex(handle)} was released")
    return p


def _reservation_of(ptr: int, size: int, what: str) -> Reservation:
    r = next((r for r in _reservations.values() if r.base <= ptr < r.base + r.size), None)
    if r is None or ptr + size > r.base + r.size:
        raise CudaError(E.INVALID_VALUE, f"{what}: [{hex(ptr)}, +{size}) is not inside a range "
                                         "reserved with cuMemAddressReserve")
    return r


@implements("cuMemGetAllocationGranularity")
def get_granularity(prop: int, option: int) -> int:
    _check_vmm("cuMemGetAllocationGranularity")
    _check_prop(prop)
    if option not in (K.CU_MEM_ALLOC_GRANULARITY_MINIMUM, K.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED):
        raise CudaError(E.INVALID_VALUE, f"{option} is not a CUmemAllocationGranularity_flags")
    return GRANULARITY


@implements("cuMemCreate")
def create(size: int, prop: int, flags: int) -> int:
    _check_vmm("cuMemCreate")
    dev = _check_prop(prop)
    if flags:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} must be 0")
    if size == 0 or size % GRANULARITY:
        raise CudaError(E.INVALID_VALUE, f"size {size} is not a positive multiple of the "
                                         f"allocation granularity ({GRANULARITY})")
    if size > device.get(dev).total_memory():
        raise CudaError(E.OUT_OF_MEMORY, f"{size} bytes asked for, the device has "
                                         f"{device.get(dev).total_memory()} bytes of memory")
    fd = os.memfd_create("cuport-vmm", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
    except OSError as e:
        os.close(fd)
        raise CudaError(E.OUT_OF_MEMORY, f"a memory file of {size} bytes: {e.strerror}") from None
    p = Physical(fd, size, dev)
    p.handle = handles.new(p)
    return p.handle


@implements("cuMemRelease")
def release(handle: int) -> None:
    """The memory stays while mapped (CUDA's rule); the file closes with its last mapping."""
    with _lock:
        p = _physical(handle)
        p.refs -= 1
        _close_if_done(p)


def _close_if_done(p: Physical) -> None:
    if not p.refs and not p.mappings:
        os.close(p.fd)
        handles.drop(p.handle)


@implements("cuMemAddressReserve")
def address_reserve(size: int, alignment: int, addr: int, flags: int) -> int:
    """The requested address `addr` is a hint (CUDA's too): the range goes where it fits."""
    _check_vmm("cuMemAddressReserve")
    if size == 0 or size % GRANULARITY:
        raise CudaError(E.INVALID_VALUE, f"size {size} is not a positive multiple of the "
                                         f"allocation granularity ({GRANULARITY})")
    if flags:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} must be 0")
    align = alignment or GRANULARITY
    if align & (align - 1):
        raise CudaError(E.INVALID_VALUE, f"alignment {alignment} is not a power of two")
    align = max(align, GRANULARITY)
    start = host_pages.reserve(size + align, addr or None)
    base = -(-start // align) * align
    if base > start:  # (the reservation is cut to its aligned part)
        host_pages.unmap(start, base - start)
    host_pages.unmap(base + size, start + align - base)
    with _lock:
        _reservations[base] = Reservation(base, size)
    return base


@implements("cuMemAddressFree")
def address_free(ptr: int, size: int) -> None:
    with _lock:
        r = _reservations.get(ptr)
        if r is None or r.size != size:
            raise CudaError(E.INVALID_VALUE, f"[{hex(ptr)}, +{size}) is not a range reserved with "
                                             "cuMemAddressReserve (its start and size)")
        if r.mapped:
            raise CudaError(E.INVALID_VALUE, f"the range at {hex(ptr)} still has {len(r.mapped)} "
                                             "mapping(s): cuMemUnmap them first")
        del _reservations[ptr]
    host_pages.unmap(ptr, size)


@implements("cuMemMap")
def map_(ptr: int, size: int, offset: int, handle: int, flags: int) -> None:
    ctx = _check_vmm("cuMemMap")
    if flags:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} must be 0")
    with _lock:
        p = _physical(handle)
        r = _reservation_of(ptr, size, "cuMemMap")
        if size == 0 or ptr % GRANULARITY or size % GRANULARITY:
            raise CudaError(E.INVALID_VALUE, f"[{hex(ptr)}, +{size}) is not aligned to the "
                                             f"allocation granularity ({GRANULARITY})")
        if offset % GRANULARITY or offset + size > p.size:
            raise CudaError(E.INVALID_VALUE, f"offset {offset} and size {size} do not fit in the "
                                             f"{p.size}-byte allocation")
        clash = memory.TABLE.overlapping(ptr, size)
        if clash is not None:
            raise CudaError(E.INVALID_VALUE, f"[{hex(ptr)}, +{size}) overlaps {clash.describe()}")
        host_pages.map_file_at(ptr, size, p.fd, offset, _NONE)
        a = memory.track(memory.Allocation(ptr, size, "device", ctx, owned=False, mapping=p))
        r.mapped[ptr] = a
        r.access[ptr] = _NONE
        p.mappings += 1


@implements("cuMemUnmap")
def unmap(ptr: int, size: int) -> None:
    """[ptr, ptr+size) must be whole mappings; work queued before that may use them ends
    first (cuMemUnmap synchronizes, as CUDA's does)."""
    with _lock:
        r = _reservation_of(ptr, size, "cuMemUnmap")
        inside = [a for a in r.mapped.values() if ptr <= a.base < ptr + size]
        if not inside or any(a.end > ptr + size for a in inside) or \
                any(a.base < ptr < a.end for a in r.mapped.values()):
            raise CudaError(E.INVALID_VALUE, f"[{hex(ptr)}, +{size}) is not a whole number of "
                                             "mappings made with cuMemMap")
        for a in inside:
            if a.context is not None:
                stream.synchronize_context(a.context)
            if memory.TABLE.find(a.base) is a:  # (gone already if its context was destroyed)
                memory.TABLE.remove(a, "unmapped")
            del r.mapped[a.base], r.access[a.base]
            host_pages.reserve_at(a.base, a.size)
            a.mapping.mappings -= 1
            _close_if_done(a.mapping)


def _mapped(ptr: int, size: int, what: str) -> list[memory.Allocation]:
    r = _reservation_of(ptr, size, what)
    covered = sorted((a for a in r.mapped.values() if a.end > ptr and a.base < ptr + size),
                     key=lambda a: a.base)
    at = ptr
    for a in covered:
        if a.base > at:
            break
        at = a.end
    if at < ptr + size:
        raise CudaError(E.INVALID_VALUE, f"{what}: {hex(at)} in [{hex(ptr)}, +{size}) is not mapped")
    return covered


_PROT = {
    K.CU_MEM_ACCESS_FLAGS_PROT_NONE: _NONE,
    K.CU_MEM_ACCESS_FLAGS_PROT_READ: mmap.PROT_READ,
    K.CU_MEM_ACCESS_FLAGS_PROT_READWRITE: mmap.PROT_READ | mmap.PROT_WRITE,
}


@implements("cuMemSetAccess")
def set_access(ptr: int, size: int, desc: int, count: int) -> None:
    _check_vmm("cuMemSetAccess")
    if not desc or not count:
        raise CudaError(E.INVALID_VALUE, "no CUmemAccessDesc given")
    prot = None
    for i in range(count):
        d = types.struct_at(desc + i * types.sizeof("CUmemAccessDesc"), "CUmemAccessDesc")
        if d.location.type != K.CU_MEM_LOCATION_TYPE_DEVICE:
            raise CudaError(E.NOT_SUPPORTED, "access can be set for devices only by cuport")
        device.get(d.location.id)
        if d.flags not in _PROT:
            raise CudaError(E.INVALID_VALUE, f"{d.flags} is not a CUmemAccess_flags")
        prot = _PROT[d.flags]  # (one device: the last descriptor for it wins)
    with _lock:
        r = _reservation_of(ptr, size, "cuMemSetAccess")
        for a in _mapped(ptr, size, "cuMemSetAccess"):
            lo, hi = max(a.base, ptr), min(a.end, ptr + size)
            host_pages.protect(lo, hi - lo, prot)
            r.access[a.base] = prot


@implements("cuMemGetAccess")
def get_access(location: int, ptr: int) -> int:
    if not location:
        raise CudaError(E.INVALID_VALUE, "location is NULL")
    loc = types.struct_at(location, "CUmemLocation")
    with _lock:
        a = _mapped(ptr, 1, "cuMemGetAccess")[0]
        prot = _reservation_of(ptr, 1, "cuMemGetAccess").access[a.base]
    if loc.type != K.CU_MEM_LOCATION_TYPE_DEVICE:
        return K.CU_MEM_ACCESS_FLAGS_PROT_NONE
    device.get(loc.id)
    return {v: k for k, v in _PROT.items()}[prot]


@implements("cuMemRetainAllocationHandle")
def retain_handle(addr: int) -> int:
    """The handle of the allocation mapped at addr; the caller releases it (cuMemRelease)."""
    with _lock:
        a = memory.TABLE.find(addr)
        if a is None or a.mapping is None:
            raise CudaError(E.INVALID_VALUE, f"{hex(addr)} is not memory mapped with cuMemMap")
        a.mapping.refs += 1
        return a.mapping.handle


@implements("cuMemGetAllocationPropertiesFromHandle")
def properties_from_handle(prop: int, handle: int) -> None:
    if not prop:
        raise CudaError(E.INVALID_VALUE, "prop is NULL")
    p = _physical(handle)
    out = types.struct_at(prop, "CUmemAllocationProp")
    types.write_bytes(prop, bytes(types.sizeof("CUmemAllocationProp")))
    out.type = K.CU_MEM_ALLOCATION_TYPE_PINNED
    out.requestedHandleTypes = K.CU_MEM_HANDLE_TYPE_NONE
    out.location.type = K.CU_MEM_LOCATION_TYPE_DEVICE
    out.location.id = p.device
