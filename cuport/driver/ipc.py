"""Memory and events shared between processes: cuIpcGetMemHandle, cuIpcOpenMemHandle,
cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle.

Device memory is host memory, so sharing it between processes on one machine is
sharing pages. Exporting an allocation moves its pages into a memory file (memfd; the
address and contents stay), and the 64-byte handle names the exporting process, the
file's descriptor there and the allocation. The importer opens the file through
`/proc/<pid>/fd/<n>` (only a process of the same user that may read the exporter's
descriptors can) and maps it at an address of its own, as a GPU's importer gets a
pointer of its own. A handle is refused unless its process is alive, is the same one
(its start time) and is the user's, and the file is the one cuport made.

An interprocess event (CU_EVENT_INTERPROCESS) keeps its state in a shared page: the
number of records so far and the number the recording streams have reached. Waiting
(cuEventSynchronize, cuStreamWaitEvent, cuEventQuery) in any process means waiting
until every record made before the wait was reached.
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

from cuport.backends import host_pages
from cuport.capi import types
from cuport.driver import context, memory
from cuport.driver.api import implements
from cuport.driver.errors import CudaError, E

HANDLE_BYTES = 64
_MEM_MAGIC = b"cuportIM"
_EVENT_MAGIC = b"cuportIE"
# magic, pid, descriptor, exporter's start time, bytes, allocation (or event) id
_LAYOUT = struct.Struct("<8sIiQQQ")
_lock = threading.Lock()


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


def _pack(magic: bytes, fd: int, size: int, ident: int) -> bytes:
    pid = os.getpid()
    data = _LAYOUT.pack(magic, pid, fd, _start_time(pid), size, ident)
    return data + bytes(HANDLE_BYTES - len(data))


@dataclass(frozen=True)
class _Handle:
    pid: int
    fd: int
    start: int
    size: int
    ident: int

    @property
    def key(self) -> tuple[int, int, int]:
        return self.pid, self.start, self.ident


def _unpack(data: bytes, magic: bytes, what: str) -> _Handle:
    if len(data) < _LAYOUT.size or data[:8] != magic:
        raise CudaError(E.INVALID_VALUE, f"the {what} handle was not made by cuport's "
                                         f"cuIpcGet{what.capitalize()}Handle")
    _, pid, fd, start, size, ident = _LAYOUT.unpack_from(data)
    return _Handle(pid, fd, start, size, ident)


def _handle_bytes(handle) -> bytes:
    """The 64 bytes of a CUipcMemHandle / CUipcEventHandle passed by value."""
    ffi = types.ffi()
    return bytes(ffi.buffer(ffi.addressof(handle)))


def _open_exported(h: _Handle, prefix: str, what: str) -> int:
    """A descriptor of the memory file behind a handle, opened through /proc."""
    if h.pid == os.getpid():
        raise CudaError(E.INVALID_CONTEXT, f"the {what} handle was made by this process; "
                                           "use its own pointer or event")
    proc = f"/proc/{h.pid}"
    try:
        owner = os.stat(proc).st_uid
    except OSError:
        raise CudaError(E.INVALID_VALUE, f"the process {h.pid} that made the {what} handle "
                                         "has exited") from None
    if owner != os.getuid() or _start_time(h.pid) != h.start:
        raise CudaError(E.INVALID_VALUE, f"the process {h.pid} that made the {what} handle "
                                         "has exited (the pid is another process's now)")
    path = f"{proc}/fd/{h.fd}"
    try:
        target = os.readlink(path)
    except OSError:
        target = ""
    if not target.startswith(f"/memfd:{prefix}"):
        raise CudaError(E.INVALID_VALUE, f"the {what} handle names no memory cuport exported "
                                         f"in process {h.pid} (freed or destroyed since?)")
    try:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        raise CudaError(E.INVALID_VALUE, f"cannot open process {h.pid}'s exported {what}: "
                                         f"{e.strerror}") from None


# -- memory -------------------------------------------------------------------------------

_exported: dict[int, int] = {}  # allocation base -> memory file descriptor
_imported: dict[tuple[int, int, int], list] = {}  # handle key -> [allocation, references]
_MEM_PREFIX = "cuport-ipc-mem"


def _close_export(a: memory.Allocation) -> None:
    fd = _exported.pop(a.base, None)
    if fd is not None:
        os.close(fd)


memory.UNMAP_HOOKS.append(_close_export)


@implements("cuIpcGetMemHandle")
def get_mem_handle(out: int, dptr: int) -> None:
    if not out:
        raise CudaError(E.INVALID_VALUE, "pHandle is NULL")
    a = memory.TABLE.find(dptr)
    if a is None or a.base != dptr:
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not the start of an allocation from "
                                         "cuMemAlloc")
    if not memory.ipc_capable(a):
        raise CudaError(E.INVALID_VALUE, f"{hex(dptr)} is not cuMemAlloc memory of this process "
                                         f"({a.describe()}); only that can be exported")
    with _lock:
        fd = _exported.get(a.base)
        if fd is None:
            from cuport.driver import stream

            stream.synchronize_context(a.context)  # no kernel may write while pages move
            fd = memory.share(a, f"{_MEM_PREFIX}-{a.id}")
            _exported[a.base] = fd
    ctypes.memmove(out, _pack(_MEM_MAGIC, fd, a.size, a.id), HANDLE_BYTES)


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
        fd = _open_exported(h, f"{_MEM_PREFIX}-{h.ident}", "mem")
        try:
            if os.fstat(fd).st_size < h.size:
                raise CudaError(E.INVALID_VALUE, "the exported memory is smaller than its handle "
                                                 "says")
            base = memory.map_shared(fd, h.size, ctx)
        finally:
            os.close(fd)
        a = memory.Allocation(base, h.size, "device", ctx, imported=True)
        memory.TABLE.add(a)
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


class SharedEventState:
    """Two counters in a page of a memory file: records made, records reached. The page
    and the file are released when the last event (or queued record) using them goes."""

    def __init__(self, fd: int, ident: int) -> None:
        self.fd = fd
        self.ident = ident
        page = mmap.PAGESIZE
        address = host_pages.map_file(fd, page)
        self._words = (ctypes.c_uint64 * 2).from_address(address)
        weakref.finalize(self, _release_page, address, page, fd)

    @classmethod
    def create(cls) -> SharedEventState:
        ident = next(_event_ids)
        fd = os.memfd_create(f"{_EVENT_PREFIX}-{ident}", os.MFD_CLOEXEC)
        os.ftruncate(fd, mmap.PAGESIZE)
        return cls(fd, ident)

    def record(self) -> int:
        """A new record; returns its number, for reached() when the stream gets there."""
        with _lock:
            n = self._words[0] + 1
            self._words[0] = n
        return n

    def reached(self, n: int) -> None:
        with _lock:
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


def _release_page(address: int, length: int, fd: int) -> None:
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
    ctypes.memmove(out, _pack(_EVENT_MAGIC, e.shared.fd, 0, e.shared.ident), HANDLE_BYTES)


@implements("cuIpcOpenEventHandle")
def open_event_handle(handle) -> int:
    from cuport.driver import event

    ctx = context.current()
    h = _unpack(_handle_bytes(handle), _EVENT_MAGIC, "event")
    fd = _open_exported(h, f"{_EVENT_PREFIX}-{h.ident}", "event")
    return event.imported(ctx, SharedEventState(fd, h.ident))
