"""Stream capture: work submitted to a capturing stream becomes graph nodes instead of running.

NVIDIA's model, followed here:
- cuStreamBeginCapture puts a stream (not the legacy one) into a capture sequence with
  a new graph (or an existing one, cuStreamBeginCaptureToGraph). Each stream in the
  sequence has a dependency set: the nodes its next captured node depends on.
- Kernel launches, async copies and memsets, host functions and graph launches on a
  capturing stream add a node (launch.py, copy.py, stream.py, graph_exec.py call `add`);
  anything else submitted to it fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
  invalidates the sequence.
- cuEventRecord on a capturing stream records the stream's dependency set in the event;
  cuStreamWaitEvent on such an event forks the capture into another stream (which joins
  the sequence) or joins it back. Waiting on an event recorded outside the sequence is
  CUDA_ERROR_STREAM_CAPTURE_ISOLATION; on one of another sequence, _MERGE. Events used
  with the _EXTERNAL flags become event record / wait nodes instead.
- cuStreamEndCapture on the stream that began it returns the graph, unless the sequence
  was invalidated (_INVALIDATED) or a forked stream's work was not joined back into the
  origin stream (_UNJOINED); every stream of the sequence leaves capture mode.
- "Potentially unsafe" calls (allocating or freeing memory, synchronous copies and
  memsets, cuCtxSynchronize) fail with _UNSUPPORTED and invalidate the captures that
  forbid them, by the thread's interaction mode (cuThreadExchangeStreamCaptureMode):
  GLOBAL (the default) forbids them while this thread has a non-relaxed capture or any
  thread a GLOBAL one; THREAD_LOCAL only for this thread's non-relaxed captures; RELAXED
  never. Synchronising or querying a capturing stream is _UNSUPPORTED too, and using the
  legacy stream while a blocking stream captures is _IMPLICIT (stream.check_capture).
"""

from __future__ import annotations

import ctypes
import itertools
import threading

from cuport.driver import context, event, graph, stream
from cuport.driver import graph_nodes as gn
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

GLOBAL = K.CU_STREAM_CAPTURE_MODE_GLOBAL
THREAD_LOCAL = K.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
RELAXED = K.CU_STREAM_CAPTURE_MODE_RELAXED
MODES = {GLOBAL: "CU_STREAM_CAPTURE_MODE_GLOBAL", THREAD_LOCAL: "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL",
         RELAXED: "CU_STREAM_CAPTURE_MODE_RELAXED"}

_lock = threading.RLock()
_ids = itertools.count(1)
_tls = threading.local()
_active: set[Capture] = stream.active_captures

Deps = list[tuple[graph.Node, bytes]]


class Capture:
    """One capture sequence: its graph, the streams in it, and whether it still holds."""

    def __init__(self, origin: stream.Stream, g: graph.Graph, mode: int, owns_graph: bool):
        self.id = next(_ids)
        self.origin = origin
        self.graph = g
        self.mode = mode
        self.owns_graph = owns_graph
        self.thread = threading.get_ident()
        self.streams: list[stream.Stream] = []
        self.invalid: str | None = None  # why it was invalidated

    def describe(self) -> str:
        return f"the capture begun on stream {hex(self.origin.handle)} ({MODES[self.mode]})"

    def invalidate(self, why: str) -> None:
        if self.invalid is None:
            self.invalid = why

    def unsupported(self, what: str) -> CudaError:
        """The error for work or a wait on a capturing stream that cannot be captured."""
        self.invalidate(f"{what} on a capturing stream")
        return CudaError(E.STREAM_CAPTURE_UNSUPPORTED, f"{what} is not permitted on a capturing "
                                                       f"stream; {self.describe()} is now invalidated")


def _join(s: stream.Stream, c: Capture, deps: Deps) -> None:
    s.capture, s.capture_deps = c, deps
    c.streams.append(s)
    stream.streams_of(s.context).capturing.add(s)


def _leave(s: stream.Stream) -> None:
    s.capture, s.capture_deps, s.capture_info = None, [], None
    cs = getattr(s.context, "streams", None)
    if cs is not None:
        cs.capturing.discard(s)


def _end(c: Capture) -> None:
    for s in c.streams:
        _leave(s)
    c.streams = []
    _active.discard(c)


def _invalidated(c: Capture) -> CudaError:
    return CudaError(E.STREAM_CAPTURE_INVALIDATED, f"{c.describe()} was invalidated by an earlier "
                                                   f"error ({c.invalid}); end it with "
                                                   "cuStreamEndCapture")


def add(s: stream.Stream, params: gn.Params, what: str) -> graph.Node:
    """Add a node for work submitted to capturing stream s, after s's dependency set."""
    with _lock:
        c = s.capture
        if c is None:  # left the capture meanwhile (another thread ended it)
            raise CudaError(E.STREAM_CAPTURE_INVALIDATED, f"{what}: the stream's capture ended")
        if c.invalid:
            raise _invalidated(c)
        node = c.graph.add(params, s.capture_deps)
        s.capture_deps = [(node, graph.DEFAULT_EDGE)]
        s.capture_info = None
    return node


# -- the hooks of event.py and stream.py -----------------------------------------------------

def in_active_capture(e: event.Event) -> bool:
    """Whether e was last recorded in a capture sequence that is still going on."""
    captured = e.captured
    return captured is not None and captured[0] in _active


def record_event(e: event.Event, s: stream.Stream, external: bool) -> None:
    """cuEventRecord on capturing stream s: remember s's dependency set in e (or, with
    CU_EVENT_RECORD_EXTERNAL, add an event record node)."""
    if external:
        add(s, gn.EventRecord(e), "cuEventRecordWithFlags")
        return
    with _lock:
        c = s.capture
        if c.invalid:
            raise _invalidated(c)
        e.captured = (c, list(s.capture_deps))
        e.op = e.time = None


def wait_event(s: stream.Stream, e: event.Event, external: bool) -> bool:
    """cuStreamWaitEvent's capture cases; False when it is an ordinary wait."""
    with _lock:
        captured = e.captured if in_active_capture(e) else None
        if captured is not None:
            c, deps = captured
            if s.capture is None:
                if s.kind == "legacy":
                    raise CudaError(E.STREAM_CAPTURE_IMPLICIT, "the legacy stream cannot wait for "
                                                               "work being captured")
                _join(s, c, list(deps))  # a fork: s captures into c from here
                return True
            if s.capture is c:  # a join: s's next node also depends on the event's nodes
                have = {n for n, _ in s.capture_deps}
                s.capture_deps = s.capture_deps + [(n, d) for n, d in deps if n not in have]
                s.capture_info = None
                return True
            s.capture.invalidate("a wait on an event of another capture")
            raise CudaError(E.STREAM_CAPTURE_MERGE, f"the event was recorded in {c.describe()}, "
                                                    f"the stream is in {s.capture.describe()}: "
                                                    "two capture sequences cannot be merged")
        c = s.capture
        if c is None:
            return False
        if c.invalid:
            raise _invalidated(c)
        if external:
            add(s, gn.EventWait(e), "cuStreamWaitEvent")
            return True
        if e.op is not None:
            c.invalidate("a wait on an event recorded outside the capture")
            raise CudaError(E.STREAM_CAPTURE_ISOLATION, f"the event was recorded outside "
                                                        f"{c.describe()}: a captured graph cannot "
                                                        "depend on uncaptured work (record the "
                                                        "event inside the capture, or wait with "
                                                        "CU_EVENT_WAIT_EXTERNAL)")
        return True  # an event never recorded stands for no work


def thread_mode() -> int:
    return getattr(_tls, "mode", GLOBAL)


def check_unsafe(what: str) -> None:
    """Fail (and invalidate the captures that forbid it) a potentially unsafe call."""
    if not _active:  # (the usual answer, before the thread's mode: a missing one is costly)
        return
    mode = thread_mode()
    if mode == RELAXED:
        return
    me = threading.get_ident()
    with _lock:
        culprits = [c for c in _active if (c.thread == me and c.mode != RELAXED)
                    or (mode == GLOBAL and c.thread != me and c.mode == GLOBAL)]
        for c in culprits:
            c.invalidate(f"{what} during the capture")
    if culprits:
        raise CudaError(E.STREAM_CAPTURE_UNSUPPORTED,
                        f"{what} is not permitted while {culprits[0].describe()} is under way "
                        "(this thread's capture mode is "
                        f"{MODES[mode]}); the capture is now invalidated. Capture with "
                        "CU_STREAM_CAPTURE_MODE_RELAXED, or switch this thread with "
                        "cuThreadExchangeStreamCaptureMode, to allow it")


def check_not_captured_into(g: graph.Graph, still: str = "") -> None:
    """A graph a capture is adding to cannot be destroyed, changed or instantiated."""
    with _lock:
        for c in _active:
            if c.graph is g:
                raise CudaError(E.INVALID_VALUE, f"the graph is {still}being captured into by "
                                                 f"{c.describe()}: end the capture first")


def stream_destroyed(s: stream.Stream) -> None:
    """A stream of a capture is destroyed: a forked stream whose work was joined back
    (cuda-samples' graphMemoryNodes does this) just leaves the capture; otherwise the
    capture cannot complete as it was."""
    with _lock:
        c = s.capture
        if c is None:
            return
        joined = c.origin is not s and all(n in _reachable(c) for n, _ in s.capture_deps)
        if not joined:
            c.invalidate("a stream of the capture was destroyed")
        if c.origin is s:
            _end(c)
            if c.owns_graph:
                c.graph.destroy()
        else:
            c.streams.remove(s)
            _leave(s)


def _release(ctx: context.Context) -> None:
    """Captures begun in a context that goes away are dropped with it."""
    with _lock:
        for c in [c for c in _active if c.origin.context is ctx]:
            _end(c)
            if c.owns_graph:
                c.graph.destroy()


context.RESOURCE_HOOKS.append(_release)


# -- API --------------------------------------------------------------------------------------

def _begin(handle: int, mode: int, g: graph.Graph | None, deps: Deps) -> None:
    s = stream.resolve(handle)
    if mode not in MODES:
        raise CudaError(E.INVALID_VALUE, f"mode {mode} is not a CUstreamCaptureMode")
    if s.kind == "legacy":
        raise CudaError(E.STREAM_CAPTURE_UNSUPPORTED, "the legacy default stream cannot be "
                                                      "captured: capture a created stream or the "
                                                      "per-thread default stream")
    with _lock:
        if s.capture is not None:
            raise CudaError(E.ILLEGAL_STATE, f"the stream is already in {s.capture.describe()}")
        c = Capture(s, g if g is not None else graph.Graph(), mode, g is None)
        _active.add(c)
        _join(s, c, deps)


@implements("cuStreamBeginCapture", "cuStreamBeginCapture_ptsz")
def begin(handle: int) -> None:
    _begin(handle, GLOBAL, None, [])


@implements("cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz")
def begin_v2(handle: int, mode: int) -> None:
    _begin(handle, mode, None, [])


@implements("cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz")
def begin_to_graph(handle: int, graph_handle: int, deps: int, edges: int, n: int,
                   mode: int) -> None:
    g = graph.lookup_graph(graph_handle)
    _begin(handle, mode, g, graph.dependencies(g, deps, n, edges))


def _reachable(c: Capture) -> set[graph.Node]:
    """The origin stream's dependency set and everything it depends on."""
    seen: set[graph.Node] = set()
    todo = [n for n, _ in c.origin.capture_deps]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(n.deps)
    return seen


# phGraph may be NULL when the capture went into the program's graph
# (cuStreamBeginCaptureToGraph; cuda-samples graphConditionalNodes does so)
@implements("cuStreamEndCapture", "cuStreamEndCapture_ptsz", optional_outs=("phGraph",))
def end(handle: int) -> int:
    s = stream.resolve(handle)
    with _lock:
        c = s.capture
        if c is None:
            raise CudaError(E.ILLEGAL_STATE, "the stream is not capturing", outs=(0,))
        if c.origin is not s:
            c.invalidate("cuStreamEndCapture on a stream the capture had forked into")
            raise CudaError(E.STREAM_CAPTURE_UNMATCHED, f"{c.describe()}: end it on that stream; "
                                                        "the capture is now invalidated",
                            outs=(0,))
        if c.mode != RELAXED and c.thread != threading.get_ident():
            raise CudaError(E.STREAM_CAPTURE_WRONG_THREAD, f"{c.describe()} must be ended by "
                                                           "the thread that began it", outs=(0,))
        reachable = _reachable(c)
        unjoined = next((t for t in c.streams if t is not s
                         and any(n not in reachable for n, _ in t.capture_deps)), None)
        _end(c)
    if c.invalid or unjoined is not None:
        if c.owns_graph:
            c.graph.destroy()
        if c.invalid:
            raise CudaError(E.STREAM_CAPTURE_INVALIDATED, f"the capture was invalidated by an "
                                                          f"earlier error ({c.invalid}); no graph "
                                                          "is returned", outs=(0,))
        raise CudaError(E.STREAM_CAPTURE_UNJOINED, f"work captured in stream "
                                                   f"{hex(unjoined.handle)} was not joined back "
                                                   "into the stream that began the capture "
                                                   "(record an event after it and wait for that "
                                                   "event there before ending the capture)",
                        outs=(0,))
    return c.graph.handle


def _status(s: stream.Stream) -> int:
    if s.kind == "legacy":
        cs = stream.streams_of(s.context)
        if any(o.blocking for o in list(cs.capturing)):
            raise CudaError(E.STREAM_CAPTURE_IMPLICIT, "a blocking stream is capturing: the legacy "
                                                       "stream cannot be used until it ends")
    c = s.capture
    if c is None:
        return K.CU_STREAM_CAPTURE_STATUS_NONE
    return K.CU_STREAM_CAPTURE_STATUS_INVALIDATED if c.invalid else \
        K.CU_STREAM_CAPTURE_STATUS_ACTIVE


@implements("cuStreamIsCapturing", "cuStreamIsCapturing_ptsz")
def is_capturing(handle: int) -> int:
    return _status(stream.resolve(handle))


def _info(handle: int) -> tuple[int, int, int, int, int, int]:
    """(status, id, graph, dependencies array, edge data array, count)."""
    s = stream.resolve(handle)
    with _lock:
        status = _status(s)
        c = s.capture
        if c is None:
            return status, 0, 0, 0, 0, 0
        deps = s.capture_deps
        n = len(deps)
        # driver-owned arrays, valid until the stream's next capture call
        nodes = (ctypes.c_uint64 * max(1, n))(*[d.handle for d, _ in deps])
        edges = ctypes.create_string_buffer(b"".join(e for _, e in deps), max(1, n) * 8)
        s.capture_info = (nodes, edges)
        return (status, c.id, c.graph.handle, ctypes.addressof(nodes) if n else 0,
                ctypes.addressof(edges) if n else 0, n)


@implements("cuStreamGetCaptureInfo", "cuStreamGetCaptureInfo_ptsz", optional_outs=("id_out",))
def capture_info(handle: int) -> tuple[int, int]:
    status, ident, *_ = _info(handle)
    return status, ident


@implements("cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo_v2_ptsz",
            optional_outs=("id_out", "graph_out", "dependencies_out", "numDependencies_out"))
def capture_info_v2(handle: int) -> tuple[int, int, int, int, int]:
    status, ident, g, deps, _, n = _info(handle)
    return status, ident, g, deps, n


@implements("cuStreamGetCaptureInfo_v3", "cuStreamGetCaptureInfo_v3_ptsz",
            optional_outs=("id_out", "graph_out", "dependencies_out", "edgeData_out",
                           "numDependencies_out"))
def capture_info_v3(handle: int) -> tuple[int, int, int, int, int, int]:
    return _info(handle)


def _update_dependencies(handle: int, deps: int, edges: int, n: int, flags: int) -> None:
    s = stream.resolve(handle)
    with _lock:
        c = s.capture
        if c is None:
            raise CudaError(E.ILLEGAL_STATE, "the stream is not capturing")
        if flags not in (K.CU_STREAM_ADD_CAPTURE_DEPENDENCIES,
                         K.CU_STREAM_SET_CAPTURE_DEPENDENCIES):
            raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not "
                                             "CUstreamUpdateCaptureDependencies_flags")
        new = graph.dependencies(c.graph, deps, n, edges)
        if flags == K.CU_STREAM_SET_CAPTURE_DEPENDENCIES:
            s.capture_deps = new
        else:
            have = {d for d, _ in s.capture_deps}
            s.capture_deps = s.capture_deps + [(d, e) for d, e in new if d not in have]
        s.capture_info = None


@implements("cuStreamUpdateCaptureDependencies", "cuStreamUpdateCaptureDependencies_ptsz")
def update_dependencies(handle: int, deps: int, n: int, flags: int) -> None:
    _update_dependencies(handle, deps, 0, n, flags)


@implements("cuStreamUpdateCaptureDependencies_v2", "cuStreamUpdateCaptureDependencies_v2_ptsz")
def update_dependencies_v2(handle: int, deps: int, edges: int, n: int, flags: int) -> None:
    _update_dependencies(handle, deps, edges, n, flags)


@implements("cuThreadExchangeStreamCaptureMode")
def exchange_mode(address: int) -> None:
    if not address:
        raise CudaError(E.INVALID_VALUE, "mode is NULL")
    value = ctypes.c_uint.from_address(address)
    if value.value not in MODES:
        raise CudaError(E.INVALID_VALUE, f"mode {value.value} is not a CUstreamCaptureMode")
    old = thread_mode()
    _tls.mode = value.value
    value.value = old
