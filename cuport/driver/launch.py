"""Kernel launches: checks, parameter packing, and the launch queued on its stream.

Parameters arrive either as `kernelParams` (one pointer per parameter; each
argument is copied at the offset and size the kernel's KernelInfo gives) or as
the `extra` list (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END) holding the packed
buffer; either way they are copied at the call, as the program may reuse them at
once. Geometry and shared memory are checked against the device's limits and the
function's settings before anything is queued.
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable

from cuport.backends.base import BackendError
from cuport.capi import types
from cuport.driver import device, event, module, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

KiB = 1024


def _kib(n: int) -> str:
    return f"{n // KiB} KiB" if n % KiB == 0 else f"{n} bytes"


def pack_params(f: module.Function, kernel_params: int, extra: int) -> bytes:
    info = f.info
    if kernel_params and extra:
        raise CudaError(E.INVALID_VALUE, "both kernelParams and extra are given; pass one",
                        subject=f.name)
    if extra:
        return _from_extra(f, extra)
    if not info.params:
        return b""
    if not kernel_params:
        raise CudaError(E.INVALID_VALUE, f"the kernel takes {len(info.params)} parameters but "
                                         "kernelParams and extra are NULL", subject=f.name)
    packer = f.packer
    if packer is None:
        packer = f.packer = _packer(f.param_layout, info.param_size)
    params = packer(kernel_params)
    if params is None:
        pointers = types.read_pointers(kernel_params, len(f.param_layout))
        i = pointers.index(0)
        raise CudaError(E.INVALID_VALUE, f"kernelParams[{i}] ({f.param_layout[i][3]}) is NULL",
                        subject=f.name)
    return params


#: the packers made so far, by layout (kernels of a library share a few: thrust_cub.cu's 23
#: kernels have 9, and compiling a packer's code took ~0.7 ms of each kernel's first launch)
_packers: dict[tuple, Callable[[int], bytes | None]] = {}


def _packer(layout: tuple[tuple[int, int, int, str], ...], total: int) -> Callable[[int], bytes | None]:
    """pack(kernelParams) -> the parameter buffer (None if a pointer is NULL), as Python code
    generated for this layout: the pointers read with one struct, each argument's bytes
    joined straight from the program's memory (types.MEMORY) with the padding between them.
    A loop over the layout cost a 4-parameter launch 1.5 us; this, 0.5."""
    shape = (tuple(p[:3] for p in layout), total)
    pack = _packers.get(shape)
    if pack is None:
        pack = _packers[shape] = _make_packer(layout, total)
    return pack


def _make_packer(layout: tuple[tuple[int, int, int, str], ...], total: int) -> Callable[[int], bytes | None]:
    pieces, at = [], 0
    for k, (start, end, size, _) in enumerate(layout):
        if start > at:
            pieces.append(f"{bytes(start - at)!r}")
        pieces.append(f"M[p{k}:p{k} + {size}]")
        at = end
    if total > at:
        pieces.append(f"{bytes(total - at)!r}")
    names = [f"p{k}" for k in range(len(layout))]
    source = (f"def pack(kp):\n"
              f"    {''.join(n + ', ' for n in names)}= S.unpack_from(M, kp)\n"
              f"    if not ({' and '.join(names)}):\n"
              f"        return None\n"
              f"    return b''.join(({''.join(p + ', ' for p in pieces)}))\n")
    space = {"M": types.MEMORY, "S": struct.Struct(f"<{len(layout)}Q")}
    exec(compile(source, "<cuport kernel parameters>", "exec"), space)
    return space["pack"]


def _from_extra(f: module.Function, extra: int) -> bytes:
    buffer = size_ptr = None
    for index in range(0, 64, 2):
        (key,) = types.read_pointers(extra + 8 * index, 1)
        if key == K.CU_LAUNCH_PARAM_END_AS_INT:
            break
        (value,) = types.read_pointers(extra + 8 * index + 8, 1)
        if key == K.CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT:
            buffer = value
        elif key == K.CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT:
            size_ptr = value
        else:
            raise CudaError(E.INVALID_VALUE, f"extra[{index}] = {key:#x} is not a "
                                             "CU_LAUNCH_PARAM_* key", subject=f.name)
    else:
        raise CudaError(E.INVALID_VALUE, "extra is not terminated by CU_LAUNCH_PARAM_END",
                        subject=f.name)
    if not buffer or not size_ptr:
        raise CudaError(E.INVALID_VALUE, "extra needs CU_LAUNCH_PARAM_BUFFER_POINTER and "
                                         "CU_LAUNCH_PARAM_BUFFER_SIZE", subject=f.name)
    size = ctypes.c_size_t.from_address(size_ptr).value
    if size < f.info.param_size:
        raise CudaError(E.INVALID_VALUE, f"the parameter buffer has {size} bytes, the kernel's "
                                         f"parameters take {f.info.param_size}", subject=f.name)
    return ctypes.string_at(buffer, f.info.param_size)


def check_geometry(f: module.Function, grid: tuple[int, int, int],
                   block: tuple[int, int, int], dynamic_shared: int) -> None:
    if f.checked == (grid, block, dynamic_shared):  # (launched so before: passed)
        return
    _check_geometry(f, grid, block, dynamic_shared)
    f.checked = (grid, block, dynamic_shared)


def _check_geometry(f: module.Function, grid: tuple[int, int, int],
                    block: tuple[int, int, int], dynamic_shared: int) -> None:
    info = f.info
    for axis, n, limit in zip("xyz", grid, device.MAX_GRID_DIM, strict=False):
        if not 1 <= n <= limit:
            raise CudaError(E.INVALID_VALUE, f"grid dimension {axis} is {n}, it must be "
                                             f"1..{limit}", subject=f.name)
    for axis, n, limit in zip("xyz", block, device.MAX_BLOCK_DIM, strict=False):
        if not 1 <= n <= limit:
            raise CudaError(E.INVALID_VALUE, f"block dimension {axis} is {n}, it must be "
                                             f"1..{limit}", subject=f.name)
    threads = block[0] * block[1] * block[2]
    limit = min(info.max_threads_per_block, device.MAX_THREADS_PER_BLOCK)
    if threads > limit:
        why = "the device's limit" if limit == device.MAX_THREADS_PER_BLOCK else \
            "the kernel's .maxntid/.reqntid"
        raise CudaError(E.INVALID_VALUE, f"{threads} threads per block asked for "
                                         f"({block[0]}x{block[1]}x{block[2]}), at most {limit} "
                                         f"allowed ({why})", subject=f.name)
    if info.reqntid is not None and tuple(block) != tuple(info.reqntid):
        raise CudaError(E.INVALID_VALUE, f"the kernel requires blocks of {info.reqntid} "
                                         f"(.reqntid), not {block}", subject=f.name)
    if info.cluster != (1, 1, 1):
        _cluster_dims(info.cluster, f.name)
    if dynamic_shared > f.max_dynamic_shared:
        raise CudaError(E.INVALID_VALUE,
                        f"{_kib(dynamic_shared)} of dynamic shared memory asked for, "
                        f"{_kib(f.max_dynamic_shared)} allowed unless cuFuncSetAttribute("
                        "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) raised it",
                        subject=f.name)
    total = info.static_shared_bytes + dynamic_shared
    optin = f.shared_limit("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
    if total > optin:
        raise CudaError(E.INVALID_VALUE, f"{_kib(total)} of shared memory per block "
                                         f"(static {_kib(info.static_shared_bytes)} + dynamic "
                                         f"{_kib(dynamic_shared)}), at most {_kib(optin)} on "
                                         "this device", subject=f.name)


def enqueue(f: module.Function, grid, block, dynamic_shared: int, stream_handle: int,
            params: bytes, what: str, cooperative: bool = False) -> stream.Op | None:
    try:
        s = stream.resolve_for_work(stream_handle)
        if f.context is not s.context:  # (the current one's need not be either's: H200)
            raise CudaError(E.INVALID_HANDLE, f"the function {f.name} belongs to context "
                                              f"{hex(f.context.handle)}, the stream to context "
                                              f"{hex(s.context.handle)}: launch it on a stream of "
                                              "its own context")
    except CudaError as e:
        e.subject = f.name
        raise
    kernel, m = f.kernel, f.module
    opts = f.launch_options(params)  # (the limits as they are now, as CUDA's launch takes them)
    if f.prepare is not None and (opts or f.prepared != block):
        # compile now, on the launching thread: a kernel cuport cannot translate is this
        # call's error, not a later synchronising call's (a block shape prepared without
        # options once stays prepared)
        try:
            f.prepare(block, **opts) if opts else f.prepare(block)
        except BackendError as e:
            raise CudaError(e.code, e.message, subject=f.name) from None
        if not opts:
            f.prepared = block
    if s.capture is not None:  # recorded as a kernel node of the capture's graph
        from cuport.driver import capture, graph_nodes

        if cooperative:
            raise CudaError(E.NOT_SUPPORTED, "a cooperative launch cannot be captured into a "
                                             "graph by cuport", subject=f.name)

        node = graph_nodes.Kernel(f, tuple(grid), tuple(block), dynamic_shared, params)
        capture.add(s, node, f"{what}({f.name})")
        return None

    label = f.labels.get(what)
    if label is None:
        label = f.labels[what] = f"{what}({f.name})"
    if f.on_device_queue if f.on_device_queue is not None else f.device_queue():
        # the device's queue keeps the order: handed over now when s is idle (submit_device)
        if f.launch_queued is not None and not opts:  # (the backend's plain path)
            return stream.submit_device(s, f.launch_queued, label, m,
                                        (grid, block, dynamic_shared, params, label, cooperative))
        launch = functools.partial(kernel.launch, **opts) if opts else kernel.launch
        return stream.submit_device(s, launch, label, m,
                                    (grid, block, dynamic_shared, params, cooperative))

    def run_later() -> None:
        try:
            kernel.launch(grid, block, dynamic_shared, params, cooperative=cooperative, **opts)
        finally:
            m.launch_finished()

    m.launch_started()
    try:
        return stream.submit(s, run_later, label, device_work=True)
    except BaseException:
        m.launch_finished()
        raise


@implements("cuLaunchKernel", "cuLaunchKernel_ptsz")
def launch_kernel(handle: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                  shared: int, stream_handle: int, kernel_params: int, extra: int) -> None:
    f = module.resolve_function(handle)
    grid, block = (gx, gy, gz), (bx, by, bz)
    check_geometry(f, grid, block, shared)
    params = pack_params(f, kernel_params, extra)
    enqueue(f, grid, block, shared, stream_handle, params, "cuLaunchKernel")


def check_cooperative(f: module.Function, grid, block, dynamic_shared: int) -> None:
    """NVIDIA's rule: a cooperative grid must fit on the device at once, as many blocks as
    the occupancy calculator allows per multiprocessor times the multiprocessors."""
    per_sm = _blocks_per_sm(f, block[0] * block[1] * block[2], dynamic_shared)
    sms = f.module.context.device.multiprocessors
    nblocks = grid[0] * grid[1] * grid[2]
    if nblocks > per_sm * sms:
        raise CudaError(E.COOPERATIVE_LAUNCH_TOO_LARGE,
                        f"a cooperative grid of {nblocks} blocks, at most {per_sm * sms} can be "
                        f"resident ({per_sm} per multiprocessor (cuOccupancyMaxActiveBlocksPer"
                        f"Multiprocessor) x {sms} multiprocessors)", subject=f.name)


@implements("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz")
def launch_cooperative(handle: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream_handle: int, kernel_params: int) -> None:
    f = module.resolve_function(handle)
    grid, block = (gx, gy, gz), (bx, by, bz)
    check_geometry(f, grid, block, shared)
    check_cooperative(f, grid, block, shared)
    params = pack_params(f, kernel_params, 0)
    enqueue(f, grid, block, shared, stream_handle, params, "cuLaunchCooperativeKernel",
            cooperative=True)


# CUlaunchAttributeID -> None (a hint cuport may ignore) or a check of the value.


def _cluster_dims(dims: tuple[int, int, int], subject: str | None = None) -> None:
    """cuport runs every cluster as one block (isa/cluster.py): larger ones are refused."""
    if any(d > 1 for d in dims):
        raise CudaError(E.NOT_SUPPORTED, f"thread block clusters of {dims[0]}x{dims[1]}x{dims[2]} "
                                         "blocks are not supported by cuport", subject=subject)


def _cluster(value) -> None:
    _cluster_dims((value.clusterDim.x, value.clusterDim.y, value.clusterDim.z))


def access_policy_window(value) -> None:
    """An L2 access-policy window is a hint (a CPU has no L2 set-aside to steer), but its
    fields are checked as NVIDIA's driver checks them."""
    w = value.accessPolicyWindow
    if w.num_bytes > device.MAX_ACCESS_POLICY_WINDOW:
        raise CudaError(E.INVALID_VALUE, f"accessPolicyWindow.num_bytes {w.num_bytes} is over "
                                         "the device's MAX_ACCESS_POLICY_WINDOW_SIZE "
                                         f"({device.MAX_ACCESS_POLICY_WINDOW})")
    if not 0.0 <= w.hitRatio <= 1.0:
        raise CudaError(E.INVALID_VALUE, f"accessPolicyWindow.hitRatio {w.hitRatio} is not in "
                                         "[0, 1]")
    props = (K.CU_ACCESS_PROPERTY_NORMAL, K.CU_ACCESS_PROPERTY_STREAMING,
             K.CU_ACCESS_PROPERTY_PERSISTING)
    if w.hitProp not in props:
        raise CudaError(E.INVALID_VALUE, f"accessPolicyWindow.hitProp {w.hitProp} is not a "
                                         "CUaccessProperty")
    if w.missProp not in props[:2]:
        raise CudaError(E.INVALID_VALUE, f"accessPolicyWindow.missProp {w.missProp} must be "
                                         "CU_ACCESS_PROPERTY_NORMAL or _STREAMING")


def _graph_only(value) -> None:
    if value.deviceUpdatableKernelNode.deviceUpdatable:
        raise CudaError(E.INVALID_VALUE, "CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE is "
                                         "for graph kernel nodes only")


LAUNCH_ATTRIBUTES = {
    K.CU_LAUNCH_ATTRIBUTE_IGNORE: None,
    K.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: access_policy_window,
    K.CU_LAUNCH_ATTRIBUTE_COOPERATIVE: None,  # read below
    K.CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: None,
    K.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: _cluster,
    K.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: None,
    K.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: None,  # we serialise anyway
    K.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: None,  # recorded after the launch, below
    K.CU_LAUNCH_ATTRIBUTE_PRIORITY: None,
    K.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: None,
    K.CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: None,
    K.CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION: None,
    K.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: None,  # recorded after the launch, below
    K.CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE: _graph_only,
    K.CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: None,
    K.CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING: None,
}


@implements("cuLaunchKernelEx", "cuLaunchKernelEx_ptsz")
def launch_kernel_ex(config: int, handle: int, kernel_params: int, extra: int) -> None:
    if not config:
        raise CudaError(E.INVALID_VALUE, "config is NULL")
    c = types.struct_at(config, "CUlaunchConfig")
    f = module.resolve_function(handle)
    grid = (c.gridDimX, c.gridDimY, c.gridDimZ)
    block = (c.blockDimX, c.blockDimY, c.blockDimZ)
    stream_handle = int(types.ffi().cast("uintptr_t", c.hStream))
    events = []
    cooperative = False
    for i in range(c.numAttrs):
        a = c.attrs[i]
        if a.id not in LAUNCH_ATTRIBUTES:
            raise CudaError(E.INVALID_VALUE, f"attrs[{i}].id = {a.id} is not a "
                                             "CUlaunchAttributeID", subject=f.name)
        check = LAUNCH_ATTRIBUTES[a.id]
        if check is not None:
            try:
                check(a.value)
            except CudaError as e:
                e.subject = f.name
                raise
        if a.id == K.CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = bool(a.value.cooperative)
        elif a.id == K.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
            events.append(int(types.ffi().cast("uintptr_t", a.value.programmaticEvent.event)))
        elif a.id == K.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
            events.append(int(types.ffi().cast("uintptr_t", a.value.launchCompletionEvent.event)))
    check_geometry(f, grid, block, c.sharedMemBytes)
    if cooperative:
        check_cooperative(f, grid, block, c.sharedMemBytes)
    params = pack_params(f, kernel_params, extra)
    enqueue(f, grid, block, c.sharedMemBytes, stream_handle, params, "cuLaunchKernelEx",
            cooperative)
    for handle_ in events:
        event.record_with_flags(handle_, stream_handle, 0)


# -- occupancy: what the CPU device's limits allow -----------------------------------------

def _blocks_per_sm(f: module.Function, block_size: int, dynamic_shared: int) -> int:
    if block_size <= 0:
        raise CudaError(E.INVALID_VALUE, f"blockSize {block_size} is not positive", subject=f.name)
    own = getattr(f.kernel, "blocks_per_multiprocessor", None)  # a device backend's own answer
    if own is not None:
        n = own(block_size, dynamic_shared)
        if n is not None:
            return n
    if block_size > min(f.info.max_threads_per_block, device.MAX_THREADS_PER_BLOCK):
        return 0
    by_threads = device.ATTRIBUTES["MAX_THREADS_PER_MULTIPROCESSOR"] // block_size
    by_blocks = device.ATTRIBUTES["MAX_BLOCKS_PER_MULTIPROCESSOR"]
    shared = f.info.static_shared_bytes + dynamic_shared
    by_shared = device.SHARED_PER_MULTIPROCESSOR // shared if shared else by_blocks
    return max(0, min(by_threads, by_blocks, by_shared))


@implements("cuOccupancyMaxActiveBlocksPerMultiprocessor")
def occupancy_blocks(handle: int, block_size: int, dynamic_shared: int) -> int:
    return _blocks_per_sm(module.resolve_function(handle), block_size, dynamic_shared)


@implements("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags")
def occupancy_blocks_flags(handle: int, block_size: int, dynamic_shared: int, flags: int) -> int:
    return occupancy_blocks(handle, block_size, dynamic_shared)


@implements("cuOccupancyMaxPotentialBlockSize")
def occupancy_block_size(handle: int, size_fn: int, dynamic_shared: int,
                         limit: int) -> tuple[int, int]:
    f = module.resolve_function(handle)
    shared_of = types.c_function(size_fn, "CUoccupancyB2DSize") if size_fn else None
    top = min(f.info.max_threads_per_block, device.MAX_THREADS_PER_BLOCK)
    if limit > 0:
        top = min(top, limit)
    best = (0, 0)  # (resident threads per multiprocessor, block size)
    for size in range(32 * (top // 32) or top, 0, -32):
        shared = shared_of(size) if shared_of else dynamic_shared
        blocks = _blocks_per_sm(f, size, shared)
        best = max(best, (blocks * size, size))
    blocks_per_sm = best[0] // best[1] if best[1] else 0
    return blocks_per_sm * f.module.context.device.multiprocessors, best[1]


@implements("cuOccupancyMaxPotentialBlockSizeWithFlags")
def occupancy_block_size_flags(handle: int, size_fn: int, dynamic_shared: int, limit: int,
                               flags: int) -> tuple[int, int]:
    return occupancy_block_size(handle, size_fn, dynamic_shared, limit)


@implements("cuOccupancyAvailableDynamicSMemPerBlock")
def occupancy_dynamic_shared(handle: int, blocks: int, block_size: int) -> int:
    f = module.resolve_function(handle)
    if blocks <= 0:
        raise CudaError(E.INVALID_VALUE, f"numBlocks {blocks} is not positive", subject=f.name)
    per_block = device.SHARED_PER_MULTIPROCESSOR // blocks - f.info.static_shared_bytes
    return max(0, min(per_block, f.max_dynamic_shared))
