"""Stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync) and memory pools.

Device memory is host memory, mapped when asked for (memory.py), so a pool is
bookkeeping: its allocations, its attributes (release threshold, reuse policies) and
the current and high-water figures NVIDIA reports. cuMemAllocAsync maps at once: work
queued later in the stream may use the memory, and nothing queued earlier can know its
address. cuMemFreeAsync unmaps when the stream reaches it, after the work queued before
it. Under stream capture both become graph memory nodes, as in CUDA. One device, so a
pool is always accessible read-write from it; pools cannot be shared between processes.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field

from cuport.capi import types
from cuport.driver import context, device, handles, memory, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

_INT_ATTRS = {K.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
              K.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
              K.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES}
_lock = threading.Lock()


@dataclass(eq=False)
class Pool:
    device: int
    default: bool
    attrs: dict[int, int] = field(default_factory=lambda: {
        K.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES: 1,
        K.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC: 1,
        K.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: 1,
        K.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: 0,
    })
    live: dict[int, memory.Allocation] = field(default_factory=dict)  # base -> allocation
    used_high: int = 0
    handle: int = 0

    def used(self) -> int:
        return sum(a.size for a in self.live.values())

    def take(self, size: int, ctx: context.Context) -> memory.Allocation:
        a = memory.Allocation(memory.map_pages(size, ctx), size, "device", ctx)
        a.pool = self
        memory.track(a)
        with _lock:
            self.live[a.base] = a
            self.used_high = max(self.used_high, self.used())
        return a

    def forget(self, a: memory.Allocation) -> None:
        with _lock:
            self.live.pop(a.base, None)


_default: dict[int, Pool] = {}
_current: dict[int, Pool] = {}


def default_pool(ordinal: int) -> Pool:
    with _lock:
        pool = _default.get(ordinal)
        if pool is None:
            pool = _default[ordinal] = Pool(ordinal, True)
            pool.handle = handles.new(pool)
        return pool


def _lookup(handle: int) -> Pool:
    return handles.lookup(handle, Pool, "memory pool")


def _current_pool(ordinal: int) -> Pool:
    return _current.get(ordinal) or default_pool(ordinal)


def _check_device(dev: int) -> int:
    return device.get(dev).ordinal


@implements("cuDeviceGetDefaultMemPool")
def device_get_default_pool(dev: int) -> int:
    return default_pool(_check_device(dev)).handle


@implements("cuDeviceGetMemPool")
def device_get_pool(dev: int) -> int:
    return _current_pool(_check_device(dev)).handle


@implements("cuDeviceSetMemPool")
def device_set_pool(dev: int, handle: int) -> None:
    pool = _lookup(handle)
    if pool.device != _check_device(dev):
        raise CudaError(E.INVALID_DEVICE, f"the pool belongs to device {pool.device}")
    _current[dev] = pool


@implements("cuMemPoolCreate")
def pool_create(props: int) -> int:
    if not props:
        raise CudaError(E.INVALID_VALUE, "poolProps is NULL")
    p = types.struct_at(props, "CUmemPoolProps")
    if p.allocType != K.CU_MEM_ALLOCATION_TYPE_PINNED:
        raise CudaError(E.INVALID_VALUE, "poolProps.allocType must be CU_MEM_ALLOCATION_TYPE_PINNED")
    if p.location.type != K.CU_MEM_LOCATION_TYPE_DEVICE:
        raise CudaError(E.NOT_SUPPORTED, "only device memory pools are supported by cuport")
    if p.handleTypes != K.CU_MEM_HANDLE_TYPE_NONE:
        raise CudaError(E.NOT_SUPPORTED, "pools shared between processes (handleTypes) are not "
                                         "supported by cuport")
    pool = Pool(_check_device(p.location.id), False)
    pool.handle = handles.new(pool)
    return pool.handle


@implements("cuMemPoolDestroy")
def pool_destroy(handle: int) -> None:
    pool = _lookup(handle)
    if pool.default:
        raise CudaError(E.INVALID_VALUE, "the default pool of a device cannot be destroyed")
    for d, current in list(_current.items()):
        if current is pool:
            del _current[d]
    handles.drop(handle)  # its live allocations stay valid until freed, as in CUDA


@implements("cuMemPoolSetAttribute")
def pool_set_attribute(handle: int, attr: int, value: int) -> None:
    pool = _lookup(handle)
    if not value:
        raise CudaError(E.INVALID_VALUE, "value is NULL")
    if attr in _INT_ATTRS:
        pool.attrs[attr] = ctypes.c_int.from_address(value).value
    elif attr == K.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        pool.attrs[attr] = ctypes.c_uint64.from_address(value).value
    elif attr in (K.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, K.CU_MEMPOOL_ATTR_USED_MEM_HIGH):
        if ctypes.c_uint64.from_address(value).value != 0:
            raise CudaError(E.INVALID_VALUE, "a high-water mark can only be reset to 0")
        pool.used_high = pool.used()
    else:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a settable CUmemPool_attribute")


@implements("cuMemPoolGetAttribute")
def pool_get_attribute(handle: int, attr: int, value: int) -> None:
    pool = _lookup(handle)
    if not value:
        raise CudaError(E.INVALID_VALUE, "value is NULL")
    if attr in _INT_ATTRS:
        ctypes.c_int.from_address(value).value = pool.attrs[attr]
        return
    figures = {
        K.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool.attrs[K.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD],
        # memory is returned to the system when freed: reserved is what is in use
        K.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: pool.used(),
        K.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: pool.used_high,
        K.CU_MEMPOOL_ATTR_USED_MEM_CURRENT: pool.used(),
        K.CU_MEMPOOL_ATTR_USED_MEM_HIGH: pool.used_high,
    }
    if attr not in figures:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a CUmemPool_attribute")
    ctypes.c_uint64.from_address(value).value = figures[attr]


@implements("cuMemPoolTrimTo")
def pool_trim_to(handle: int, keep: int) -> None:
    _lookup(handle)  # nothing is held back: freed memory is unmapped at once


@implements("cuMemPoolSetAccess")
def pool_set_access(handle: int, descs: int, count: int) -> None:
    pool = _lookup(handle)
    for i in range(count):
        d = types.struct_at(descs + i * types.ffi().sizeof("CUmemAccessDesc"), "CUmemAccessDesc")
        if d.location.type != K.CU_MEM_LOCATION_TYPE_DEVICE or d.location.id != pool.device:
            raise CudaError(E.INVALID_DEVICE, "cuport has one device: access can only be set for it")
        if d.flags != K.CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
            raise CudaError(E.INVALID_VALUE, "the pool's own device always has read-write access")


@implements("cuMemPoolGetAccess")
def pool_get_access(handle: int, location: int) -> int:
    pool = _lookup(handle)
    loc = types.struct_at(location, "CUmemLocation")
    if loc.type == K.CU_MEM_LOCATION_TYPE_DEVICE and loc.id == pool.device:
        return K.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    return K.CU_MEM_ACCESS_FLAGS_PROT_NONE


def _alloc(size: int, pool: Pool, stream_handle: int, what: str) -> int:
    s = stream.resolve(stream_handle)
    if size == 0:  # success and a NULL pointer, as NVIDIA's driver answers (gpu_answers.json)
        return 0
    if s.capture is not None:  # a graph memory node, as CUDA records it
        from cuport.driver import capture, graph_nodes

        p = types.ffi().new("CUDA_MEM_ALLOC_NODE_PARAMS_v1 *")
        p.poolProps.allocType = K.CU_MEM_ALLOCATION_TYPE_PINNED
        p.poolProps.location.type = K.CU_MEM_LOCATION_TYPE_DEVICE
        p.poolProps.location.id = pool.device
        p.bytesize = size
        node = graph_nodes.mem_alloc_params(p, s.context, [n for n, _ in s.capture_deps])
        capture.add(s, node, what)
        return int(p.dptr)
    return pool.take(size, s.context).base


@implements("cuMemAllocAsync", "cuMemAllocAsync_ptsz")
def mem_alloc_async(size: int, stream_handle: int) -> int:
    ctx = context.current()
    return _alloc(size, _current_pool(ctx.device.ordinal), stream_handle, "cuMemAllocAsync")


@implements("cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz")
def mem_alloc_from_pool_async(size: int, handle: int, stream_handle: int) -> int:
    return _alloc(size, _lookup(handle), stream_handle, "cuMemAllocFromPoolAsync")


@implements("cuMemFreeAsync", "cuMemFreeAsync_ptsz")
def mem_free_async(dptr: int, stream_handle: int) -> None:
    s = stream.resolve(stream_handle)
    if dptr == 0:  # NULL: success, nothing queued, as NVIDIA's driver answers (gpu_answers.json)
        return
    if s.capture is not None:
        from cuport.driver import capture, graph_nodes

        capture.add(s, graph_nodes.mem_free_params(dptr), "cuMemFreeAsync")
        return
    a = memory.check_freeable(dptr, ("device",), "cuMemFreeHost (host memory)")
    a.freeing = True  # memory from cuMemAlloc too: freed in stream order
    stream.submit(s, lambda: memory.release_now(a), "cuMemFreeAsync")
