"""User objects (cuUserObjectCreate): reference-counted program data graphs keep alive.

A graph holds references until it is destroyed, an executable graph until its last
launch is done. When the count reaches zero the destructor runs on the driver's own
thread, asynchronously, as NVIDIA's driver does (CU_USER_OBJECT_NO_DESTRUCTOR_SYNC
is the only flag): it may not call into CUDA.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from cuport.capi import types
from cuport.driver import handles
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E
from cuport.driver.graph import lookup_graph

_destructors: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_destructor_thread: list[threading.Thread] = []


def later(fn: Callable[[], None]) -> None:
    """Run fn on the driver's destructor thread (user-object destructors are asynchronous)."""
    if not _destructor_thread:
        def drain() -> None:
            while True:
                _destructors.get()()
        t = threading.Thread(target=drain, daemon=True, name="cuport-user-objects")
        _destructor_thread.append(t)
        t.start()
    _destructors.put(fn)


class UserObject:
    def __init__(self, ptr: int, destroy_fn: int, count: int) -> None:
        self.ptr = ptr
        self.destroy = destroy_fn
        self.refs = count
        self.lock = threading.Lock()
        self.handle = handles.new(self)

    def retain(self, count: int) -> None:
        with self.lock:
            self.refs += count

    def release(self, count: int) -> None:
        with self.lock:
            if count > self.refs:
                raise CudaError(E.INVALID_VALUE, f"{count} references released, {self.refs} held")
            self.refs -= count
            dead = self.refs == 0
        if dead:
            handles.drop(self.handle)
            call = types.c_function(self.destroy, "CUhostFn")
            ptr = types.ffi().cast("void *", self.ptr)
            later(lambda: call(ptr))


def lookup_user_object(handle: int) -> UserObject:
    return handles.lookup(handle, UserObject, "object", E.INVALID_VALUE)


def _count(count: int) -> int:
    if not 0 < count <= 0x7FFFFFFF:
        raise CudaError(E.INVALID_VALUE, f"count {count} must be 1..INT_MAX")
    return count


@implements("cuUserObjectCreate")
def user_object_create(ptr: int, destroy_fn: int, initial: int, flags: int) -> int:
    if flags != K.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC:
        raise CudaError(E.INVALID_VALUE, "flags must be CU_USER_OBJECT_NO_DESTRUCTOR_SYNC "
                                         "(cudaUserObjectNoDestructorSync)")
    if not destroy_fn:
        raise CudaError(E.INVALID_VALUE, "destroy is NULL")
    return UserObject(ptr, destroy_fn, _count(initial)).handle


@implements("cuUserObjectRetain")
def user_object_retain(handle: int, count: int) -> None:
    lookup_user_object(handle).retain(_count(count))


@implements("cuUserObjectRelease")
def user_object_release(handle: int, count: int) -> None:
    lookup_user_object(handle).release(_count(count))


@implements("cuGraphRetainUserObject")
def graph_retain_user_object(g: int, handle: int, count: int, flags: int) -> None:
    graph = lookup_graph(g, "graph")
    obj = lookup_user_object(handle)
    if flags not in (0, K.CU_GRAPH_USER_OBJECT_MOVE):
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CUuserObjectRetain_flags")
    _count(count)
    if not flags:  # CU_GRAPH_USER_OBJECT_MOVE takes over the caller's references instead
        obj.retain(count)
    graph.user_refs[obj] = graph.user_refs.get(obj, 0) + count


@implements("cuGraphReleaseUserObject")
def graph_release_user_object(g: int, handle: int, count: int) -> None:
    graph = lookup_graph(g, "graph")
    obj = lookup_user_object(handle)
    held = graph.user_refs.get(obj, 0)
    if _count(count) > held:
        raise CudaError(E.INVALID_VALUE, f"the graph holds {held} references to the object, "
                                         f"{count} released")
    if held == count:
        del graph.user_refs[obj]
    else:
        graph.user_refs[obj] = held - count
    obj.release(count)
