"""Events: markers recorded into a stream, timed when the stream reaches them.

Recorded into a capturing stream, an event instead holds that stream's place in the
capture (capture.py), for cuStreamWaitEvent to fork or join the capture with; it cannot
be queried or waited for from the host while the capture goes on.
"""

from __future__ import annotations

import time

from cuport.driver import context, handles, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

_VALID_FLAGS = K.CU_EVENT_BLOCKING_SYNC | K.CU_EVENT_DISABLE_TIMING | K.CU_EVENT_INTERPROCESS


class Event:
    def __init__(self, ctx: context.Context, flags: int) -> None:
        self.context = ctx
        self.flags = flags
        self.op: stream.Op | None = None  # the record operation last submitted
        self.time: float | None = None  # perf_counter() when the stream reached it
        self.captured = None  # (capture, dependency set) when last recorded while capturing
        self.shared = None  # ipc.SharedEventState of an interprocess event
        self.handle = handles.new(self)

    @property
    def timing(self) -> bool:
        return not self.flags & K.CU_EVENT_DISABLE_TIMING


def lookup(handle: int) -> Event:
    return handles.lookup(handle, Event, "event")


@implements("cuEventCreate")
def create(flags: int) -> int:
    if flags & ~_VALID_FLAGS:
        raise CudaError(E.INVALID_VALUE, f"event flags {flags:#x} are not valid CUevent_flags")
    if flags & K.CU_EVENT_INTERPROCESS and not flags & K.CU_EVENT_DISABLE_TIMING:
        raise CudaError(E.INVALID_VALUE, "CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING")
    e = Event(context.current(), flags)
    if flags & K.CU_EVENT_INTERPROCESS:
        from cuport.driver import ipc

        e.shared = ipc.SharedEventState.create()
    return e.handle


def imported(ctx: context.Context, shared) -> int:
    """An event of this process for another process's interprocess event (ipc.py)."""
    e = Event(ctx, K.CU_EVENT_INTERPROCESS | K.CU_EVENT_DISABLE_TIMING)
    e.shared = shared
    return e.handle


@implements("cuEventDestroy", "cuEventDestroy_v2")
def destroy(handle: int) -> None:
    lookup(handle)
    handles.drop(handle)


def _record(handle: int, stream_handle: int, flags: int = 0) -> None:
    if handle in _of_destroyed_contexts:  # as the H200 answers (tests/driver/recorded)
        raise CudaError(E.CONTEXT_IS_DESTROYED, f"event {hex(handle)}: its context was destroyed")
    e = lookup(handle)
    s = stream.resolve(stream_handle)
    if e.context is not s.context:  # cuda.h, cuEventRecord: "must be from the same context"
        raise CudaError(E.INVALID_HANDLE, f"the event belongs to context {hex(e.context.handle)}, "
                                          f"the stream to context {hex(s.context.handle)}")
    if s.capture is not None:
        from cuport.driver import capture

        capture.record_event(e, s, bool(flags & K.CU_EVENT_RECORD_EXTERNAL))
        return

    shared = e.shared
    n = shared.record() if shared is not None else 0

    def mark() -> None:
        e.time = time.perf_counter()
        if shared is not None:
            shared.reached(n)

    e.time, e.captured = None, None
    if stream.caught_up(s):  # reached at once: nothing before it on the stream or the device
        mark()
        e.op = stream.FINISHED
        return
    # a place in the device's queue where it has one (work handed over later need not wait);
    # marked when the device gets there where a time is kept or another process waits,
    # else when asked
    e.op = (stream.submit_mark(s, mark, "cuEventRecord", watch=e.timing or shared is not None)
            or stream.submit(s, mark, "cuEventRecord"))


implements("cuEventRecord", "cuEventRecord_ptsz")(_record)


@implements("cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz")
def record_with_flags(handle: int, stream_handle: int, flags: int) -> None:
    if flags & ~K.CU_EVENT_RECORD_EXTERNAL:
        raise CudaError(E.INVALID_VALUE, f"record flags {flags:#x} are not valid")
    _record(handle, stream_handle, flags)


def _not_captured(e: Event, name: str = "the event") -> None:
    if e.captured is None:  # (never recorded while capturing: the usual case)
        return
    from cuport.driver import capture

    if capture.in_active_capture(e):
        raise CudaError(E.CAPTURED_EVENT, f"{name} was last recorded in a capturing stream; "
                                          "it stands for graph nodes, not work the host can "
                                          "wait for")


@implements("cuEventQuery")
def query(handle: int) -> None:
    e = lookup(handle)
    _not_captured(e)
    if e.shared is not None:  # recorded here or in another process
        if not e.shared.is_reached(e.shared.target()):
            raise CudaError(E.NOT_READY, "the event has not been reached yet", quiet=True)
        return
    if e.op is not None and not e.op.done.is_set():
        raise CudaError(E.NOT_READY, "the event has not been reached yet", quiet=True)


@implements("cuEventSynchronize")
def synchronize(handle: int) -> None:
    e = lookup(handle)
    _not_captured(e)
    if e.shared is not None:
        e.shared.wait_for(e.shared.target())
    elif e.op is not None:
        e.op.done.wait()
    stream.check_sticky(e.context)


@implements("cuEventElapsedTime", "cuEventElapsedTime_v2")
def elapsed_time(start_handle: int, end_handle: int) -> float:
    start, end = lookup(start_handle), lookup(end_handle)
    for name, e in (("hStart", start), ("hEnd", end)):
        _not_captured(e, name)
        if not e.timing:
            raise CudaError(E.INVALID_HANDLE, f"{name} was created with CU_EVENT_DISABLE_TIMING")
        if e.op is None:
            raise CudaError(E.INVALID_HANDLE, f"{name} has not been recorded")
        if not e.op.done.is_set():
            raise CudaError(E.NOT_READY, f"{name} has not been reached yet", quiet=True)
    return (end.time - start.time) * 1e3


def _release(ctx: context.Context) -> None:
    """Events die with their context (handles of other contexts stay)."""
    # Events hold no resources beyond their handle; NVIDIA invalidates them too.
    for handle in list(handles.owned_by(ctx, Event)):
        handles.drop(handle)
        _of_destroyed_contexts.add(handle)


#: events that died with their context: recording one answers CONTEXT_IS_DESTROYED
_of_destroyed_contexts: set[int] = set()


context.RESOURCE_HOOKS.append(_release)
