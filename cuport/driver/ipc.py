"""Memory and events shared between processes: cuIpcGetMemHandle, cuIpcOpenMemHandle,
cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle. Backend-neutral: the
device's backend exports and imports its memory, ipc_channel carries it.

Exporting an allocation asks the backend for a descriptor of its memory (a memory file of
host pages on the CPU; an opaque descriptor of the Vulkan device's memory) and a
description of it, which this process then offers on its IPC socket (ipc_channel). The
64-byte handle names the process (pid and start time), the socket's token and the
allocation. The importer fetches the descriptor from that process, checked to be of its
own user, and its backend maps the memory at an address of its own, as a GPU's importer
gets a pointer of its own. Opening a handle again gives the same pointer, counted; closing
it as often unmaps it. A handle whose process has exited, or whose memory was freed, is
CUDA_ERROR_INVALID_VALUE; one made by the opening process itself is
CUDA_ERROR_INVALID_CONTEXT, as on NVIDIA's driver.

An interprocess event (CU_EVENT_INTERPROCESS) keeps its state in a shared page, handed
over the same way: the number of records so far and the number the recording streams have
reached. Waiting (cuEventSynchronize, cuStreamWaitEvent, cuEventQuery) in any process
means waiting until every record made before the wait was reached; a stream's record is
reached when its work before it has finished on the device (stream.py drains the device
first), so a wait on the host orders another process's stream after it, whatever backend
either process runs on.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import threading
import time
import weakref
from dataclasses import dataclass
from types import ModuleType

from cuport.backends import host_pages
from cuport.capi import types
from cuport.driver import context, memory
from cuport.driver.api import implements
from cuport.driver.errors import CudaError, E

HANDLE_BYTES = 64
_MEM_MAGIC = b"cuportIM"
_EVENT_MAGIC = b"cuportIE"
_MEM, _EVENT = b"mem", b"event"  # what the IPC socket offers
# magic, pid, (unused), exporter's start time, its socket's token, bytes, allocation (or event) id
_LAYOUT = struct.Struct("<8sIIQQQQ")
_lock = threading.RLock()  # (memory: exports and imports)


# -- handles ------------------------------------------------------------------------------

def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (/proc/pid/stat field 22): it
    tells a live exporter from a later process that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[19])


def _pack(magic: bytes, size: int, ident: int) -> bytes:
    pid = os.getpid()
    token = _channel().server().token
    data = _LAYOUT.pack(magic, pid, 0, _start_time(pid), token, size, ident)
    return data + bytes(HANDLE_BYTES - len(data))


@dataclass(frozen=True)
class _Handle:
    pid: int
    start: int
    token: int
    size: int
    ident: int

    @property
    def key(self) -> tuple[int, int, int]:
        return self.pid, self.start, self.ident


def _unpack(data: bytes, magic: bytes, what: str) -> _Handle:
    if len(data) < _LAYOUT.size or data[:8] != magic:
        raise CudaError(E.INVALID_VALUE, f"the {what} handle was not made by cuport's "
                                         f"cuIpcGet{what.capitalize()}Handle")
    _, pid, _, start, token, size, ident = _LAYOUT.unpack_from(data)
    return _Handle(pid, start, token, size, ident)


def _handle_bytes(handle) -> bytes:
    """The 64 bytes of a CUipcMemHandle / CUipcEventHandle passed by value."""
    ffi = types.ffi()
    return bytes(ffi.buffer(ffi.addressof(handle)))


def _fetch(h: _Handle, kind: bytes, what: str) -> tuple[int, bytes]:
    """The descriptor (ours to close) and description the handle's process offers."""
    if h.pid == os.getpid():
        raise CudaError(E.INVALID_CONTEXT, f"the {what} handle was made by this process; "
                                           "use its own pointer or event")
    if _start_time(h.pid) != h.start:
        raise CudaError(E.INVALID_VALUE, f"the process {h.pid} that made the {what} handle "
                                         "has exited")
    return _channel().fetch(h.pid, h.token, kind, h.ident, what)



def _channel() -> ModuleType:
    """cuport.driver.ipc_channel, imported when a program first shares something (its
    sockets' import was 3 ms of every program's start)."""
    from cuport.driver import ipc_channel

    return ipc_channel

# -- memory -------------------------------------------------------------------------------

_exported: set[int] = set()  # ids of the allocations offered
_imported: dict[tuple[int, int, int], list] = {}  # handle key -> [allocation, references]


def _withdraw(a: memory.Allocation) -> None:
    with _lock:
        if a.id in _exported:
            _exported.discard(a.id)
            _channel().withdraw(_MEM, a.id)


memory.UNMAP_HOOKS.append(_withdraw)


@implements("cuIpcGetMemHandle")
def get_mem_handle(out: int, dptr: int) -> None:
    if not out:
        raise CudaError(E.INVALID_VALUE, "pHandle is NULL")
    a = memory.TABLE.find(dptr)
    if a is None or a.base != dptr:
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not the start of an allocation from "
                                         "cuMemAlloc")
    if not memory.cumemalloc_memory(a):
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not cuMemAlloc memory of this process "
                                         f"({a.describe()}); only that can be exported")
    with _lock:
        if a.id not in _exported:
            from cuport.driver import stream

            stream.synchronize_context(a.context)  # (host pages move: no kernel may write meanwhile)
            fd, description = memory.share(a)
            try:
                _channel().server().offer(_MEM, a.id, fd, description)
            finally:
                os.close(fd)
            _exported.add(a.id)
    ctypes.memmove(out, _pack(_MEM_MAGIC, a.size, a.id), HANDLE_BYTES)


def _open_mem(handle, flags: int) -> int:
    if flags & ~1:  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CUipcMem_flags")
    ctx = context.current()
    h = _unpack(_handle_bytes(handle), _MEM_MAGIC, "mem")
    with _lock:
        entry = _imported.get(h.key)
        if entry is not None:  # opened before: the same pointer, one more reference
            entry[1] += 1
            return entry[0].base
        fd, description = _fetch(h, _MEM, "mem")
        base = memory.map_shared(fd, description, h.size, ctx)  # (consumes fd)
        a = memory.track(memory.Allocation(base, h.size, "device", ctx, imported=True))
        _imported[h.key] = [a, 1]
    return base


@implements("cuIpcOpenMemHandle")
def open_mem_handle(handle, flags: int) -> int:
    return _open_mem(handle, flags)


@implements("cuIpcOpenMemHandle_v2")
def open_mem_handle_v2(handle, flags: int) -> int:
    return _open_mem(handle, flags)


@implements("cuIpcCloseMemHandle")
def close_mem_handle(dptr: int) -> None:
    with _lock:
        key = next((k for k, (a, _) in _imported.items() if a.base == dptr), None)
        if key is None:
            raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not memory from cuIpcOpenMemHandle")
        entry = _imported[key]
        entry[1] -= 1
        if entry[1]:
            return
        del _imported[key]
    memory.release(entry[0])


def _forget_imports(ctx: context.Context) -> None:
    with _lock:
        for key, (a, _) in list(_imported.items()):
            if a.context is ctx:
                del _imported[key]


context.RESOURCE_HOOKS.append(_forget_imports)


# -- events -------------------------------------------------------------------------------

_EVENT_PREFIX = "cuport-ipc-event"
_event_ids = iter(range(1, 1 << 62))
_event_lock = threading.Lock()


class SharedEventState:
    """Two counters in a page of a memory file: records made, records reached. The page
    and the file are released (and the event no longer offered) when the last event (or
    queued record) using them goes."""

    def __init__(self, fd: int) -> None:
        page = mmap.PAGESIZE
        if os.fstat(fd).st_size < page:
            os.close(fd)
            raise CudaError(E.INVALID_VALUE, "the event's shared page is not a page")
        self.fd = fd
        self.ident = next(_event_ids)  # what this process offers it as (its handles name it)
        self.offered = False
        address = host_pages.map_file(fd, page)
        self._words = (ctypes.c_uint64 * 2).from_address(address)
        weakref.finalize(self, _release_page, address, page, fd, self.ident)

    @classmethod
    def create(cls) -> SharedEventState:
        fd = os.memfd_create(_EVENT_PREFIX, os.MFD_CLOEXEC)
        os.ftruncate(fd, mmap.PAGESIZE)
        return cls(fd)

    def record(self) -> int:
        """A new record; returns its number, for reached() when the stream gets there."""
        with _event_lock:
            n = self._words[0] + 1
            self._words[0] = n
        return n

    def reached(self, n: int) -> None:
        with _event_lock:
            if self._words[1] < n:
                self._words[1] = n

    def target(self) -> int:
        """What a wait starting now must see reached: every record made so far."""
        return self._words[0]

    def is_reached(self, n: int) -> bool:
        return self._words[1] >= n

    def wait_for(self, n: int) -> None:
        delay = 20e-6
        while self._words[1] < n:
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)


def _release_page(address: int, length: int, fd: int, ident: int) -> None:
    _channel().withdraw(_EVENT, ident)  # (if it was offered)
    host_pages.unmap(address, length)
    os.close(fd)


@implements("cuIpcGetEventHandle")
def get_event_handle(out: int, event_handle: int) -> None:
    from cuport.driver import event

    if not out:
        raise CudaError(E.INVALID_VALUE, "pHandle is NULL")
    e = event.lookup(event_handle)
    if e.shared is None:
        raise CudaError(E.INVALID_VALUE, "the event was not created with CU_EVENT_INTERPROCESS")
    shared = e.shared
    with _event_lock:
        if not shared.offered:
            _channel().server().offer(_EVENT, shared.ident, shared.fd, b"")
            shared.offered = True
    ctypes.memmove(out, _pack(_EVENT_MAGIC, 0, shared.ident), HANDLE_BYTES)


@implements("cuIpcOpenEventHandle")
def open_event_handle(handle) -> int:
    from cuport.driver import event

    ctx = context.current()
    h = _unpack(_handle_bytes(handle), _EVENT_MAGIC, "event")
    fd, _ = _fetch(h, _EVENT, "event")
    return event.imported(ctx, SharedEventState(fd))
