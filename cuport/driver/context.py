"""Contexts: primary and created, the per-thread context stack, context-local storage.

A context owns streams, events, modules and allocations; destroying it (or the
last release of a primary context) waits for its streams, runs the context-local
storage destructors cudart registered, then lets each resource module free what
it owns (RESOURCE_HOOKS, registered by memory, module, stream ...).

A primary context keeps its handle for the life of the process: cudart asks for
it before retaining it (CUDART_INTERFACE slot 2) and may make it current while
inactive; work submitted to an inactive primary context fails with
CUDA_ERROR_INVALID_CONTEXT.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from cuport.capi import types
from cuport.driver import device, handles
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

_ids = itertools.count(1)

# Called with the context when it is destroyed or reset, after its streams are idle
# and its context-local storage is gone: each frees the resources it tracks.
RESOURCE_HOOKS: list[Callable[[Context], None]] = []
# Called first: waits for all the context's streams (registered by stream.py).
SYNC_HOOKS: list[Callable[[Context], None]] = []
# Called after any thread's context stack or any context's local storage changed (capi keeps
# a memo of context-local storage answers: export_tables.py).
STACK_HOOKS: list[Callable[[], None]] = []


def changed() -> None:
    for hook in STACK_HOOKS:
        hook()

DEFAULT_LIMITS = {
    K.CU_LIMIT_STACK_SIZE: 1024,
    K.CU_LIMIT_PRINTF_FIFO_SIZE: 1 << 20,
    K.CU_LIMIT_MALLOC_HEAP_SIZE: 8 << 20,
    K.CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: 2,
    K.CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: 2048,
    K.CU_LIMIT_MAX_L2_FETCH_GRANULARITY: 32,
    K.CU_LIMIT_PERSISTING_L2_CACHE_SIZE: 0,
    K.CU_LIMIT_SHMEM_SIZE: device.SHARED_PER_MULTIPROCESSOR,
    K.CU_LIMIT_CIG_ENABLED: 0,
    K.CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED: 0,
}
READ_ONLY_LIMITS = {K.CU_LIMIT_SHMEM_SIZE, K.CU_LIMIT_CIG_ENABLED}


class Context:
    def __init__(self, dev: device.Device, flags: int, primary: bool) -> None:
        self.device = dev
        self.flags = flags
        self.primary = primary
        self.active = not primary  # a primary context starts inactive, until retained
        self.id = next(_ids)
        self.limits = dict(DEFAULT_LIMITS)
        self.cache_config = K.CU_FUNC_CACHE_PREFER_NONE
        self.shared_config = K.CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE
        self.cls: dict[int, tuple[int, Callable | None]] = {}
        self.sticky_error: CudaError | None = None
        self.heap_fixed = False  # a kernel using malloc/free ran: the heap limit is fixed
        self.device_heap = None  # its heap's allocation, where the backend needs one (device_heap.py)
        self.streams = None  # its stream.ContextStreams, made when first asked for
        self.lock = threading.RLock()
        self.usage = 1  # cuCtxAttach/cuCtxDetach (legacy): destroyed when it reaches 0
        self.handle = handles.new(self)

    def __repr__(self) -> str:
        kind = "primary" if self.primary else "created"
        return f"<{kind} context {hex(self.handle)} of device {self.device.ordinal}>"

    def require_active(self) -> Context:
        if not self.active:
            raise CudaError(E.INVALID_CONTEXT,
                            f"the primary context of device {self.device.ordinal} is not active: "
                            "retain it with cuDevicePrimaryCtxRetain first")
        return self

    def release_resources(self) -> None:
        """Wait for the context's work, run CLS destructors, free what it owns."""
        for hook in SYNC_HOOKS:
            hook(self)
        cls, self.cls = self.cls, {}
        changed()
        for key, (value, dtor) in cls.items():
            if dtor is not None:
                dtor(self.handle, key, value)
        for hook in RESOURCE_HOOKS:
            hook(self)
        self.sticky_error = None


_primary: dict[int, Context] = {}
_primary_retains: dict[int, int] = {}
_primary_lock = threading.Lock()
_tls = threading.local()


def primary(ordinal: int) -> Context:
    """The primary context of a device (its handle never changes)."""
    dev = device.get(ordinal)
    with _primary_lock:
        ctx = _primary.get(ordinal)
        if ctx is None:
            ctx = _primary[ordinal] = Context(dev, 0, primary=True)
            _primary_retains[ordinal] = 0
        return ctx


def stack() -> list[Context]:
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def lookup(handle: int) -> Context:
    return handles.lookup(handle, Context, "context", E.INVALID_CONTEXT)


def current_or_none() -> Context | None:
    s = stack()
    return s[-1] if s else None


def current() -> Context:
    """The calling thread's current context, active, else CUDA_ERROR_INVALID_CONTEXT."""
    s = getattr(_tls, "stack", None)
    if s:  # (every driver call asks: the usual answer first)
        ctx = s[-1]
        if ctx.active and _peek(ctx.handle) is ctx:
            return ctx
    return _current_checked()


_peek = handles.peek


def _current_checked() -> Context:
    s = stack()
    if not s:
        raise CudaError(E.INVALID_CONTEXT,
                        "no current context: create one (cuCtxCreate) or retain the primary "
                        "context (cuDevicePrimaryCtxRetain) and make it current (cuCtxSetCurrent)")
    ctx = s[-1]
    if handles.peek(ctx.handle) is not ctx:
        # NVIDIA (cuCtxDestroy): a context destroyed while current to another thread stays
        # current there, and using it answers CUDA_ERROR_CONTEXT_IS_DESTROYED
        raise CudaError(E.CONTEXT_IS_DESTROYED,
                        f"the current context {hex(ctx.handle)} was destroyed (by another "
                        "thread, or while it was below the top of this thread's stack)")
    return ctx.require_active()


def resolve(handle: int) -> Context:
    """A context argument: NULL means the current one."""
    return current() if handle == 0 else lookup(handle).require_active()


def _check_flags(flags: int) -> int:
    if flags & ~K.CU_CTX_FLAGS_MASK or (flags & K.CU_CTX_SCHED_MASK) not in (0, 1, 2, 4):
        raise CudaError(E.INVALID_VALUE, f"context flags {flags:#x} are not valid CUctx_flags")
    return flags


# -- created contexts -------------------------------------------------------------------

def create(flags: int, dev: int) -> int:
    ctx = Context(device.get(dev), _check_flags(flags), primary=False)
    stack().append(ctx)
    changed()
    return ctx.handle


implements("cuCtxCreate", "cuCtxCreate_v2")(create)


@implements("cuCtxCreate_v3")
def create_v3(params: int, count: int, flags: int, dev: int) -> int:
    if params and count > 0:
        raise CudaError(E.UNSUPPORTED_EXEC_AFFINITY,
                        "cuport's device does not support execution affinity (SM counts)")
    return create(flags, dev)


@implements("cuCtxCreate_v4")
def create_v4(params: int, flags: int, dev: int) -> int:
    if params:
        p = types.struct_at(params, "CUctxCreateParams")
        if p.execAffinityParams != types.ffi().NULL and p.numExecAffinityParams > 0:
            raise CudaError(E.UNSUPPORTED_EXEC_AFFINITY,
                            "cuport's device does not support execution affinity (SM counts)")
        if p.cigParams != types.ffi().NULL:
            raise CudaError(E.NOT_SUPPORTED, "CUDA in graphics (CIG) contexts are not supported")
    return create(flags, dev)


@implements("cuCtxDestroy", "cuCtxDestroy_v2")
def destroy(handle: int) -> None:
    if handle and handles.peek(handle) is None and handles.was_issued(handle):
        # destroying it again: the H200 answers CONTEXT_IS_DESTROYED (tests/driver/recorded)
        raise CudaError(E.CONTEXT_IS_DESTROYED, f"context {hex(handle)} was destroyed already")
    ctx = lookup(handle)
    if ctx.primary:
        raise CudaError(E.INVALID_CONTEXT, f"{hex(handle)} is a primary context: release it with "
                                           "cuDevicePrimaryCtxRelease instead of destroying it")
    ctx.release_resources()
    handles.drop(handle)
    s = stack()
    while ctx in s:
        s.remove(ctx)
    changed()


@implements("cuCtxAttach")
def attach(flags: int) -> int:
    """Legacy (CUDA 2.0, still bound by PyCUDA): one more use of the current context."""
    if flags:
        raise CudaError(E.INVALID_VALUE, f"flags must be 0, not {flags}")
    ctx = current()
    if ctx.primary:
        raise CudaError(E.INVALID_CONTEXT, "cuCtxAttach does not apply to a primary context")
    ctx.usage += 1
    return ctx.handle


@implements("cuCtxDetach")
def detach(handle: int) -> None:
    """Legacy: one use fewer; the last one destroys the context, as cuCtxDestroy does."""
    ctx = lookup(handle)
    if ctx.primary:
        raise CudaError(E.INVALID_CONTEXT, "cuCtxDetach does not apply to a primary context")
    ctx.usage -= 1
    if ctx.usage == 0:
        destroy(handle)


@implements("cuCtxPushCurrent", "cuCtxPushCurrent_v2")
def push(handle: int) -> None:
    stack().append(lookup(handle))
    changed()


@implements("cuCtxPopCurrent", "cuCtxPopCurrent_v2", optional_outs=("pctx",))
def pop() -> int:
    s = stack()
    if not s:
        raise CudaError(E.INVALID_CONTEXT, "the context stack of this thread is empty")
    ctx = s.pop()
    changed()
    return ctx.handle


@implements("cuCtxSetCurrent")
def set_current(handle: int) -> None:
    s = stack()
    if handle == 0:
        if s:
            s.pop()
            changed()
        return
    ctx = lookup(handle)
    if s:
        s[-1] = ctx
    else:
        s.append(ctx)
    changed()


@implements("cuCtxGetCurrent")
def get_current() -> int:
    ctx = current_or_none()
    return ctx.handle if ctx is not None else 0


@implements("cuCtxGetDevice")
def get_device() -> int:
    return current().device.ordinal


@implements("cuCtxGetDevice_v2")
def get_device_v2(handle: int) -> int:
    return resolve(handle).device.ordinal


@implements("cuCtxGetFlags")
def get_flags() -> int:
    return current().flags


@implements("cuCtxSetFlags")
def set_flags(flags: int) -> None:
    current().flags = _check_flags(flags)


@implements("cuCtxGetId")
def get_id(handle: int) -> int:
    return resolve(handle).id


@implements("cuCtxGetApiVersion")
def get_api_version(handle: int) -> int:
    resolve(handle)
    return 3020  # contexts made through the _v2 (and later) entry points


def _limit(limit: int) -> int:
    if limit not in DEFAULT_LIMITS:
        raise CudaError(E.INVALID_VALUE, f"{limit} is not a CUlimit")
    return limit


@implements("cuCtxGetLimit")
def get_limit(limit: int) -> int:
    return current().limits[_limit(limit)]


@implements("cuCtxSetLimit")
def set_limit(limit: int, value: int) -> None:
    ctx = current()
    if _limit(limit) in READ_ONLY_LIMITS:
        raise CudaError(E.UNSUPPORTED_LIMIT, f"limit {limit} cannot be set on cuport's device")
    from cuport.driver import device_heap

    device_heap.check_set_limit(ctx, limit)
    ctx.limits[limit] = value


@implements("cuCtxGetCacheConfig")
def get_cache_config() -> int:
    return current().cache_config


@implements("cuCtxSetCacheConfig")
def set_cache_config(config: int) -> None:
    if config not in (0, 1, 2, 3):
        raise CudaError(E.INVALID_VALUE, f"{config} is not a CUfunc_cache")
    current().cache_config = config


@implements("cuCtxGetSharedMemConfig")
def get_shared_config() -> int:
    return current().shared_config


@implements("cuCtxSetSharedMemConfig")
def set_shared_config(config: int) -> None:
    if config not in (0, 1, 2):
        raise CudaError(E.INVALID_VALUE, f"{config} is not a CUsharedconfig")
    current().shared_config = config


@implements("cuCtxGetStreamPriorityRange", optional_outs=("leastPriority", "greatestPriority"))
def stream_priority_range() -> tuple[int, int]:
    return 0, -5


@implements("cuCtxResetPersistingL2Cache")
def reset_persisting_l2() -> None:
    current()


# -- primary contexts ---------------------------------------------------------------------

@implements("cuDevicePrimaryCtxRetain")
def primary_retain(dev: int) -> int:
    ctx = primary(dev)
    with _primary_lock:
        _primary_retains[dev] += 1
        ctx.active = True
    return ctx.handle


@implements("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2")
def primary_release(dev: int) -> None:
    ctx = primary(dev)
    with _primary_lock:
        if _primary_retains[dev] == 0:
            raise CudaError(E.INVALID_CONTEXT,
                            f"the primary context of device {dev} is not retained")
        _primary_retains[dev] -= 1
        last = _primary_retains[dev] == 0
    if last:
        ctx.release_resources()
        ctx.active = False


@implements("cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2")
def primary_reset(dev: int) -> None:
    ctx = primary(dev)
    ctx.release_resources()
    with _primary_lock:
        _primary_retains[dev] = 0
        ctx.active = False
        ctx.flags = 0


def _primary_set_flags(dev: int, flags: int, allow_active: bool) -> None:
    ctx = primary(dev)
    if ctx.active and not allow_active:
        raise CudaError(E.PRIMARY_CONTEXT_ACTIVE, f"the primary context of device {dev} is "
                                                  "active; use cuDevicePrimaryCtxSetFlags_v2")
    ctx.flags = _check_flags(flags)


@implements("cuDevicePrimaryCtxSetFlags")
def primary_set_flags_v1(dev: int, flags: int) -> None:
    _primary_set_flags(dev, flags, allow_active=False)


@implements("cuDevicePrimaryCtxSetFlags_v2")
def primary_set_flags(dev: int, flags: int) -> None:
    _primary_set_flags(dev, flags, allow_active=True)


@implements("cuDevicePrimaryCtxGetState")
def primary_get_state(dev: int) -> tuple[int, int]:
    ctx = primary(dev)
    return ctx.flags, int(ctx.active)


# -- context-local storage (export table CONTEXT_LOCAL_STORAGE_INTERFACE_V0301) ----------

def cls_context(handle: int) -> Context:
    if handle == 0:
        ctx = current_or_none()
        if ctx is None:
            raise CudaError(E.INVALID_CONTEXT, "no current context for context-local storage",
                            quiet=True)
        return ctx
    return lookup(handle)


def cls_put(handle: int, key: int, value: int, dtor: Callable | None) -> None:
    ctx = cls_context(handle)
    with ctx.lock:
        ctx.cls[key] = (value, dtor)
    changed()


def cls_get(handle: int, key: int) -> int:
    ctx = cls_context(handle)
    with ctx.lock:
        entry = ctx.cls.get(key)
    if entry is None:
        raise CudaError(E.INVALID_HANDLE, f"no context-local value for key {hex(key)}", quiet=True)
    return entry[0]


def cls_delete(handle: int, key: int) -> None:
    ctx = cls_context(handle)
    with ctx.lock:
        if ctx.cls.pop(key, None) is None:
            raise CudaError(E.INVALID_HANDLE, f"no context-local value for key {hex(key)}",
                            quiet=True)
    changed()
