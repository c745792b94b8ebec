"""Streams: ordered, asynchronous work queues, each drained by its own worker thread.

Ordering rules (NVIDIA's):
- work on one stream runs in submission order;
- the legacy default stream (handle 0 or CU_STREAM_LEGACY) waits for all work
  submitted before it to the context's blocking streams, and blocking streams'
  later work waits for it; CU_STREAM_NON_BLOCKING streams take no part;
- the per-thread default stream (CU_STREAM_PER_THREAD, or handle 0 in a `_ptds`/
  `_ptsz` call) is an ordinary blocking stream, one per thread and context;
- cuStreamWaitEvent makes later work on a stream wait for an event's record.

A stream in a capture sequence (capture.py) runs nothing: its work becomes graph nodes;
submit() refuses work nobody taught to be captured, check_capture() the synchronising
calls and the legacy stream's implicit dependency on capturing blocking streams.

An operation is a Python callable; a failure inside one is reported when it happens,
kept as the context's error and returned once, by the next synchronising call
(NVIDIA's driver keeps a faulted context's error for good; cuport lets the program
go on after it has been told). Synchronous calls (e.g.
cuMemcpyHtoD) run inline on the caller's thread when nothing they must wait for
is pending, else they are queued and waited for.
"""

from __future__ import annotations

import _thread
import contextlib
import itertools
import queue
import threading
from collections.abc import Callable

from cuport.capi import types
from cuport.driver import context, handles
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E, from_exception, note_failure, report

LEGACY = K.CU_STREAM_LEGACY  # 0x1
PER_THREAD = K.CU_STREAM_PER_THREAD  # 0x2
_ids = itertools.count(1)


class _ThreadState(threading.local):
    """Within a `_ptds`/`_ptsz` call (the dispatcher sets `ptds` around it), stream 0 means
    the calling thread's per-thread default stream. `stream`: the stream whose host
    operation the thread runs (Op.run, run_sync), in whose order the memory it touches is
    (memory.py's _settle). (Class defaults: a thread-local's missing attribute would raise
    inside every getattr.)"""

    ptds = False
    stream: Stream | None = None


_tls = _ThreadState()
thread_state = _tls
#: the capture sequences under way in any thread (capture.py's; kept here, where every
#: synchronous copy asks whether there is one)
active_captures: set = set()


def drain(ctx: context.Context, s: Stream | None = None, peers: bool = True) -> None:
    """Let the device finish the work its backend has in flight (a Vulkan backend returns
    from a launch once the kernel is queued on the GPU), before anything that observes its
    results: a host callback, an event, a copy, a synchronising call. With `s`, only the
    device work CUDA orders a host operation on s after: s's own and, with `peers`, the
    streams s implicitly waits for (device_lanes); a backend without lanes (one queue for
    all streams) finishes all of it. A kernel failure found then becomes the context's
    asynchronous error, as a failing launch does."""
    b = ctx.device.loaded_backend()  # (none made: nothing in flight)
    if b is not None:
        _drain(ctx, b, None if s is None else device_lanes(s, peers))


def device_lanes(s: Stream, peers: bool = True) -> tuple[int, ...]:
    """The lanes (a backend's queue per CUDA stream: use_lane) of the device work that a host
    operation on s follows: s's own and, with `peers`, those of the streams whose earlier
    work s implicitly waits for (the legacy stream's rules, as _dependencies)."""
    return (s.lane, *_peer_lanes(s)) if peers else (s.lane,)


def _peer_lanes(s: Stream, locked: bool = False) -> tuple[int, ...]:
    """The lanes of the streams whose device work handed over so far s's next work follows:
    the blocking streams for the legacy stream, the legacy stream for a blocking one
    (`locked`: the caller holds the streams' lock)."""
    if s.kind == "legacy":
        cs = s.context.streams or streams_of(s.context)
        if not cs.created and not cs.per_thread:
            return ()
        if locked:
            return _blocking_lanes(cs)
        with cs.lock:
            return _blocking_lanes(cs)
    return (0,) if s.blocking else ()


def _blocking_lanes(cs: ContextStreams) -> tuple[int, ...]:
    """The lanes of the blocking streams, created and per-thread (lock held)."""
    return tuple(o.lane for o in itertools.chain(cs.created, cs.per_thread.values()) if o.blocking)


def _on_lane(b, s: Stream | None, locked: bool = False) -> None:
    """Tell a backend with a queue per CUDA stream (use_lane) that this thread's device work
    is s's from now on (None: no stream's), after what s implicitly waits for (`locked`: the
    caller holds the streams' lock)."""
    use = getattr(b, "use_lane", None)
    if use is not None:
        use(None) if s is None else use(s.lane, _peer_lanes(s, locked))


def _drain(ctx: context.Context, b, lanes: tuple[int, ...] | None = None) -> None:
    """drain(ctx) with its device's backend b, for the lanes `lanes` (None: all)."""
    finish = getattr(b, "drain", None)
    if finish is None:
        return
    failed = finish() if lanes is None or not hasattr(b, "use_lane") else finish(lanes)
    if failed is not None:
        _report_failed(ctx, failed)


def _report_failed(ctx: context.Context, failed: tuple) -> None:
    """A backend's (launch, BackendError) found after the launch returned: the context's
    asynchronous error, as a failing op's."""
    what, err = failed
    Op(lambda: None, [], what)._fail(ctx, CudaError(err.code, err.message))


def device_busy(ctx: context.Context) -> bool:
    pending = getattr(ctx.device.loaded_backend(), "pending", None)
    return bool(pending and pending())


class Done:
    """A one-shot flag that threads wait for: threading.Event's set/is_set/wait for a tenth of
    its cost (an Event builds a Condition; every launch makes one of these)."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._set = False
        self._lock = _thread.allocate_lock()
        self._lock.acquire()

    def set(self) -> None:
        if not self._set:
            self._set = True
            with contextlib.suppress(RuntimeError):  # (set twice at once: released already)
                self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        with contextlib.suppress(RuntimeError):
            self._lock.release()  # (for the next waiter)
        return True


class Op:
    """One queued operation and the operations it must wait for. Device work (launches)
    may finish after the op returns; every other op first drains the device (drain)."""

    __slots__ = ("fn", "deps", "done", "error", "what", "device_work", "stream")

    def __init__(self, fn: Callable[[], None], deps: list[Op], what: str,
                 device_work: bool = False) -> None:
        self.fn = fn
        self.deps = deps
        self.done = Done()
        self.error: CudaError | None = None
        self.what = what
        self.device_work = device_work
        self.stream: Stream | None = None  # (set by submit: the stream whose work it is)

    def run(self, ctx: context.Context) -> None:
        for dep in self.deps:
            dep.done.wait()
        s = self.stream
        b = ctx.device.loaded_backend() if s is not None else None
        before, _tls.stream = _tls.stream, s
        try:
            if b is not None:
                _on_lane(b, s)  # (the device work fn hands over is s's: a graph's kernels)
            if not self.device_work:
                drain(ctx, s)
            self.fn()
        except CudaError as e:
            self._fail(ctx, e)
        except Exception as e:  # noqa: BLE001 - a worker must survive any failure
            self._fail(ctx, from_exception(e, self.what))
        finally:
            _tls.stream = before
            if b is not None:
                _on_lane(b, None)
            self.done.set()

    def _fail(self, ctx: context.Context, e: CudaError) -> None:
        self.error = e
        report(self.what, e.code, e.message + " (asynchronous; returned by the next "
               "synchronising call)", e.subject)
        with ctx.lock:
            if ctx.sticky_error is None:
                ctx.sticky_error = CudaError(
                    e.code, f"an earlier asynchronous operation failed: {self.what}: {e.message}")

        def take_pending() -> CudaError | None:
            with ctx.lock:
                err, ctx.sticky_error = ctx.sticky_error, None
            return err

        note_failure(e, take_pending)


#: the op of work that was done when it was submitted (an event recorded on an idle stream)
FINISHED = Op(lambda: None, [], "finished")
FINISHED.done.set()


class Stream:
    def __init__(self, ctx: context.Context, flags: int, priority: int, kind: str = "created"):
        self.context = ctx
        self.flags = flags
        self.priority = priority
        self.kind = kind  # "created", "legacy" or "per-thread"
        self.id = next(_ids)
        self.last: Op | None = None
        self._queue: queue.SimpleQueue[Op | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self.handle = {"legacy": LEGACY, "per-thread": PER_THREAD}.get(kind) or handles.new(self)
        self.capture = None  # the capture.Capture this stream is in
        self.capture_deps: list = []  # its dependency set there: [(graph node, edge data)]
        self.capture_info = None  # the arrays cuStreamGetCaptureInfo last handed out
        self.attributes: dict[int, bytes] = {}  # cuStreamSetAttribute values (stream_attrs.py)
        # (plain attributes, not properties: every launch asks; neither flags nor kind change)
        self.blocking = not flags & K.CU_STREAM_NON_BLOCKING
        # its key for a backend with a queue per CUDA stream (use_lane): 0 is the legacy
        # stream's, which is also the backend's own
        self.lane = 0 if kind == "legacy" else self.id

    def _ensure_worker(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._drain, daemon=True,
                                            name=f"cuport-stream-{self.id}")
            self._worker.start()

    def _drain(self) -> None:
        while (op := self._queue.get()) is not None:
            op.run(self.context)
        self._drop_lane()  # (closed: its work is handed over)

    def _drop_lane(self) -> None:
        b = self.context.device.loaded_backend()
        drop = getattr(b, "drop_lane", None)
        if drop is not None:
            drop(self.lane)

    def pending(self) -> bool:
        return self.last is not None and not self.last.done.is_set()

    def synchronize(self) -> None:
        if self.last is not None:
            self.last.done.wait()
        # (its own lane: the work it handed over already waits on the device for what it
        # follows, and its host operations waited for that on the host; the legacy stream's
        # synchronisation also waits for the blocking streams, as it did when it drained
        # the device)
        drain(self.context, self, peers=self.kind == "legacy")

    def close(self) -> None:
        """No more work: the worker finishes what is queued and exits; the backend's lane
        goes then (at once if it has no worker)."""
        if self._worker is not None:
            self._queue.put(None)
        elif self.kind != "legacy":
            self._drop_lane()


class ContextStreams:
    """The streams of one context and the lock that orders submissions to them."""

    def __init__(self, ctx: context.Context) -> None:
        self.lock = threading.Lock()
        self.legacy = Stream(ctx, 0, 0, "legacy")
        self.created: set[Stream] = set()
        self.per_thread: dict[int, Stream] = {}
        self.capturing: set[Stream] = set()  # streams in a capture sequence

    def all(self) -> list[Stream]:
        return [self.legacy, *self.created, *self.per_thread.values()]


def streams_of(ctx: context.Context) -> ContextStreams:
    cs = getattr(ctx, "streams", None)
    if cs is None:
        with ctx.lock:
            cs = getattr(ctx, "streams", None)
            if cs is None:
                cs = ctx.streams = ContextStreams(ctx)
    return cs


def _per_thread(ctx: context.Context) -> Stream:
    cs = streams_of(ctx)
    tid = threading.get_ident()
    s = cs.per_thread.get(tid)
    if s is None:
        s = cs.per_thread[tid] = Stream(ctx, 0, 0, "per-thread")
    return s


def resolve(handle: int) -> Stream:
    """The stream a CUstream argument names (0: legacy, or per-thread in a _ptds call)."""
    if handle == 0:
        handle = PER_THREAD if _tls.ptds else LEGACY
    if handle == LEGACY:
        ctx = context.current()
        return (ctx.streams or streams_of(ctx)).legacy
    if handle == PER_THREAD:
        return _per_thread(context.current())
    s = handles.lookup(handle, Stream, "stream")
    s.context.require_active()
    return s


def resolve_for_work(handle: int) -> Stream:
    """A stream that work is queued on: of any live context, not only the current one (an
    H200 runs cuMemcpyHtoDAsync on a stream of a context that is not current, and a launch
    there of that context's function: tests/driver/recorded/misuse-h200.txt)."""
    return resolve(handle)


def _dependencies(s: Stream) -> list[Op]:
    """What new work on s must wait for besides s's own earlier work (lock held)."""
    cs = s.context.streams or streams_of(s.context)
    if s.kind == "legacy":
        if not cs.created and not cs.per_thread:
            return []
        return [o.last for o in cs.all() if o is not s and o.blocking and o.pending()]
    if s.blocking and cs.legacy.pending():
        return [cs.legacy.last]
    return []


def check_capture(s: Stream, what: str) -> None:
    """Refuse work or a wait on s that stream capture forbids (invalidating the capture)."""
    if s.capture is not None:
        raise s.capture.unsupported(what)
    if s.kind == "legacy" and streams_of(s.context).capturing:
        cs = streams_of(s.context)
        blocking = [c for c in (o.capture for o in list(cs.capturing) if o.blocking) if c]
        if blocking:
            for c in blocking:
                c.invalidate(f"{what} on the legacy stream")
            raise CudaError(E.STREAM_CAPTURE_IMPLICIT,
                            f"{what} on the legacy stream would depend on {blocking[0].describe()}, "
                            "a blocking stream; the capture is now invalidated (capture a "
                            "CU_STREAM_NON_BLOCKING stream, or keep the legacy stream idle)")


def submit(s: Stream, fn: Callable[[], None], what: str, extra: list[Op] | None = None,
           device_work: bool = False) -> Op:
    """Queue fn on stream s; it runs after everything it must wait for. `device_work`: fn
    only queues work on the device (a launch), which needs no drain first."""
    check_capture(s, what)
    cs = streams_of(s.context)
    with cs.lock:
        deps = _dependencies(s) + [d for d in (extra or []) if not d.done.is_set()]
        op = Op(fn, deps, what, device_work)
        op.stream = s
        s.last = op
        s._ensure_worker()
        s._queue.put(op)
    return op


def queues_on_device(ctx: context.Context) -> bool:
    """Whether ctx's backend runs launches, fills and device copies in a queue of its own, in
    the order they are handed to it (a Vulkan backend: one command stream on the GPU), so that
    handing work over is all a stream must do in order (submit_device)."""
    return getattr(ctx.device.backend(), "queues_launches", False)


def submit_device(s: Stream, fn: Callable[..., None], what: str, hold=None,
                  args: tuple = ()) -> Op | None:
    """Device work for a backend that queues_on_device: fn(*args) only hands work to the
    device's queue. When s and everything it must wait for are idle, it runs at once on the
    calling thread (the device's queue keeps the order), saving the hand-over to the
    stream's worker thread that costs a launch most of its time (None is returned; a
    failure becomes the context's asynchronous error, as the op's would). Else it is queued
    like any other op; `hold` (a module.Module) is then told (launch_started/
    launch_finished), so that the module stays loaded until fn has run."""
    if active_captures:  # (s's capture, or the legacy stream's on a capturing one)
        check_capture(s, what)
    cs = s.context.streams or streams_of(s.context)
    with cs.lock:
        if not s.pending() and not _dependencies(s):
            # (_on_lane written out, the backend's use_lane looked up once: every launch; the
            # legacy stream with nothing to follow is where a thread's work goes when no lane
            # is named, as after use_lane(None): no call, and no look-up)
            use = None
            try:
                after = _peer_lanes(s, True)
                if s.lane or after:
                    use = getattr(s.context.device.loaded_backend(), "use_lane", None)
                    if use is not None:
                        use(s.lane, after)
                fn(*args)  # (under the lock: nothing else is queued on s meanwhile)
            except CudaError as e:
                Op(fn, [], what)._fail(s.context, e)
            except Exception as e:  # noqa: BLE001 - as Op.run
                Op(fn, [], what)._fail(s.context, from_exception(e, what))
            finally:
                if use is not None:
                    use(None)
            return None
        deps = _dependencies(s)
        if hold is not None:
            hold.launch_started()

        def later() -> None:
            try:
                fn(*args)
            finally:
                if hold is not None:
                    hold.launch_finished()
        op = Op(later, deps, what, device_work=True)
        op.stream = s
        s.last = op
        s._ensure_worker()
        s._queue.put(op)
    return op


class _MarkDone(Done):
    """A DeviceMark's flag: set by the backend's thread when the device gets there, or by
    whoever asks first once the device is past it (`check`, the backend's: after a stream's
    synchronisation its events are reached, whether or not that thread has run yet)."""

    __slots__ = ("check",)

    def __init__(self) -> None:
        super().__init__()
        self.check: Callable[[bool], None] | None = None  # (set when handed over)

    def is_set(self) -> bool:
        if not self._set and self.check is not None:
            self.check(False)
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        if not self._set and self.check is not None and timeout is None:
            self.check(True)
        return super().wait(timeout)


class DeviceMark(Op):
    """A point in the queue of a backend that queues_on_device (an event's record): done once
    the device has run the work handed over before it (when_reached), so that work handed
    over after it never waits for it. Until it is handed over (`handed_over`), it may wait in
    its stream's worker like any op."""

    __slots__ = ("handed_over",)


def submit_mark(s: Stream, fn: Callable[[], None], what: str, watch: bool = True) -> Op | None:
    """fn called once the device has run everything handed over before it in s's order (a
    DeviceMark, returned), where s's backend queues_on_device and can tell (when_reached);
    None elsewhere (submit it as an op). A launch that failed before it is the context's
    error by the time it is done, as if drained. `watch`: fn is called as soon as the device
    gets there (a thread of the backend's waits for it: an event's time); else when someone
    asks whether it is done or waits for it."""
    b = s.context.device.backend()
    when_reached = getattr(b, "when_reached", None)
    if when_reached is None or not getattr(b, "queues_launches", False):
        return None
    ctx = s.context
    op = DeviceMark(fn, [], what, device_work=True)
    op.done = done = _MarkDone()
    op.handed_over = False

    def reached(failed) -> None:
        try:
            if failed is not None:
                _report_failed(ctx, failed)
            fn()
        finally:
            op.done.set()

    def hand_over() -> None:
        try:
            done.check = when_reached(reached, watch)
        except BaseException:
            op.done.set()  # (nothing to wait for: the error is the context's, submit_device)
            raise
        op.handed_over = True

    submit_device(s, hand_over, what)
    return op


_capture_module = None


def _capture():
    """cuport.driver.capture (it imports this module: looked up when first needed)."""
    global _capture_module
    if _capture_module is None:
        from cuport.driver import capture

        _capture_module = capture
    return _capture_module


def run_sync(s: Stream, fn: Callable[[], None], what: str) -> None:
    """Run fn in stream order and return when it is done (synchronous API calls)."""
    _capture().check_unsafe(what)
    check_capture(s, what)
    cs = streams_of(s.context)
    with cs.lock:
        idle = not s.pending() and not _dependencies(s)
    if idle:
        b = s.context.device.loaded_backend()
        before, _tls.stream = _tls.stream, s
        try:
            _on_lane(b, s)  # (a copy or fill the backend makes goes in s's order)
            drain(s.context, s)
            fn()
        finally:
            _tls.stream = before
            _on_lane(b, None)
    else:
        op = submit(s, fn, what)
        op.done.wait()
        if op.error is not None:
            raise CudaError(op.error.code, op.error.message, subject=op.error.subject, quiet=True)
    # "may also return error codes from previous, asynchronous launches" (cuMemcpy*): an
    # asynchronous failure the program has not been told of yet is returned here
    check_sticky(s.context)


def settled(s: Stream) -> bool:
    """Whether work done now on the calling thread is in s's order: nothing pending on s, on
    the streams s waits for or on the device, and no capture under way anywhere (a capture
    forbids synchronous work and may hold the legacy stream's dependencies: the general
    path's checks). If so, the device's failures found meanwhile become the context's error
    (drain), as they would before work queued behind them. A synchronous copy or memset on
    the default stream and an event record are done at once when this holds (CUDA's order:
    each follows everything submitted before it to the streams it depends on)."""
    return not active_captures and caught_up(s)


def caught_up(s: Stream) -> bool:
    """Whether everything submitted to s, to the streams s waits for and to the device has
    finished; if so, drained (a finished launch's failure is the context's error now)."""
    last = s.last
    if last is not None and not last.done._set:
        return False
    ctx = s.context
    cs = ctx.streams or streams_of(ctx)
    if s.kind == "legacy":
        if cs.created or cs.per_thread:
            with cs.lock:  # (_dependencies, without making the list)
                for o in itertools.chain(cs.created, cs.per_thread.values()):
                    last = o.last
                    if last is not None and not last.done._set and o.blocking:
                        return False
    elif s.blocking and cs.legacy.pending():
        return False
    b = ctx.device.loaded_backend()
    if b is not None:
        if hasattr(b, "use_lane"):  # (a queue per stream: s's lanes, and no other's)
            lanes = device_lanes(s)
            if b.pending(lanes):
                return False
            failed = b.drain(lanes)
            if failed is not None:
                _report_failed(ctx, failed)
            return True
        pending = getattr(b, "pending", None)
        if pending is not None and pending():
            return False
        _drain(ctx, b)
    return True


def settled_default(ctx: context.Context) -> bool:
    """settled() for the calling thread's default stream in ctx (the current context): the
    legacy stream, or the thread's own in a `_ptds` call."""
    if _tls.ptds:
        return settled(_per_thread(ctx))
    return settled((ctx.streams or streams_of(ctx)).legacy)


def check_sticky(ctx: context.Context) -> None:
    """Return (raise) an asynchronous failure once, the way synchronising calls do."""
    if ctx.sticky_error is None:  # (read without the lock: set meanwhile is set after this call)
        return
    with ctx.lock:
        err, ctx.sticky_error = ctx.sticky_error, None
    if err is not None:
        raise err


def synchronize_context(ctx: context.Context) -> None:
    """Wait for every stream of ctx, then for the device (drained once, not per stream)."""
    cs = ctx.streams
    if cs is None:
        return
    for s in cs.all():
        last = s.last
        if last is not None:
            last.done.wait()
    drain(ctx)


def _release(ctx: context.Context) -> None:
    cs = getattr(ctx, "streams", None)
    if cs is None:
        return
    for s in cs.all():
        s.close()
        if s.kind == "created":
            handles.drop(s.handle)
    ctx.streams = None


context.SYNC_HOOKS.append(synchronize_context)
context.RESOURCE_HOOKS.append(_release)


# -- API --------------------------------------------------------------------------------

def clamp_priority(priority: int) -> int:
    return max(-5, min(0, priority))


@implements("cuStreamCreate")
def create(flags: int) -> int:
    return create_with_priority(flags, 0)


@implements("cuStreamCreateWithPriority")
def create_with_priority(flags: int, priority: int) -> int:
    if flags & ~K.CU_STREAM_NON_BLOCKING:
        raise CudaError(E.INVALID_VALUE, f"stream flags {flags:#x} are not valid CUstream_flags")
    ctx = context.current()
    s = Stream(ctx, flags, clamp_priority(priority))
    cs = streams_of(ctx)
    with cs.lock:
        cs.created.add(s)
    return s.handle


@implements("cuStreamDestroy", "cuStreamDestroy_v2")
def destroy(handle: int) -> None:
    if handle in (0, LEGACY, PER_THREAD):
        raise CudaError(E.INVALID_HANDLE, "the default streams cannot be destroyed")
    s = handles.lookup(handle, Stream, "stream")
    if s.capture is not None:
        from cuport.driver import capture

        capture.stream_destroyed(s)
    # NVIDIA: returns at once; queued work still completes, then resources go.
    cs = streams_of(s.context)
    with cs.lock:
        cs.created.discard(s)
    handles.drop(handle)
    s.close()


@implements("cuStreamSynchronize", "cuStreamSynchronize_ptsz")
def synchronize(handle: int) -> None:
    s = resolve(handle)
    check_capture(s, "cuStreamSynchronize")
    s.synchronize()
    check_sticky(s.context)


@implements("cuStreamQuery", "cuStreamQuery_ptsz")
def query(handle: int) -> None:
    s = resolve(handle)
    check_capture(s, "cuStreamQuery")
    if not caught_up(s):  # (which drains: a finished launch's failure is this call's)
        raise CudaError(E.NOT_READY, "work is still pending on the stream", quiet=True)
    check_sticky(s.context)


@implements("cuStreamWaitEvent", "cuStreamWaitEvent_ptsz")
def wait_event(handle: int, event_handle: int, flags: int) -> None:
    from cuport.driver import capture, event

    s = resolve(handle)
    e = event.lookup(event_handle)
    if flags & ~K.CU_EVENT_WAIT_EXTERNAL:
        raise CudaError(E.INVALID_VALUE, f"flags {flags:#x} are not CUevent_wait_flags")
    if capture.wait_event(s, e, bool(flags & K.CU_EVENT_WAIT_EXTERNAL)):
        return
    if flags & K.CU_EVENT_WAIT_EXTERNAL:
        raise CudaError(E.INVALID_VALUE, "CU_EVENT_WAIT_EXTERNAL is only for capturing streams")
    if e.shared is not None:  # an interprocess event: its records may be another process's
        shared, n = e.shared, e.shared.target()
        if not shared.is_reached(n):
            submit(s, lambda: shared.wait_for(n), "cuStreamWaitEvent")
        return
    if e.op is not None and not e.op.done.is_set():
        b = s.context.device.backend()
        if getattr(e.op, "handed_over", False) and e.context.device.backend() is b:
            # (a place in a queue of s's device: s's device work from now on waits for it
            # there, s's host work on the host; a backend with one queue needs nothing)
            follow = getattr(b, "follow", None)
            if follow is not None:
                check = e.op.done.check
                submit_device(s, lambda: follow(check), "cuStreamWaitEvent")
            return
        submit(s, lambda: None, "cuStreamWaitEvent", extra=[e.op])


@implements("cuStreamGetFlags", "cuStreamGetFlags_ptsz")
def get_flags(handle: int) -> int:
    return resolve(handle).flags


@implements("cuStreamGetPriority", "cuStreamGetPriority_ptsz")
def get_priority(handle: int) -> int:
    return resolve(handle).priority


@implements("cuStreamGetId", "cuStreamGetId_ptsz")
def get_id(handle: int) -> int:
    return resolve(handle).id


@implements("cuStreamGetCtx", "cuStreamGetCtx_ptsz")
def get_ctx(handle: int) -> int:
    return resolve(handle).context.handle


@implements("cuStreamGetCtx_v2", "cuStreamGetCtx_v2_ptsz", optional_outs=("pGreenCtx",))
def get_ctx_v2(handle: int) -> tuple[int, int]:
    return resolve(handle).context.handle, 0


@implements("cuStreamGetDevice", "cuStreamGetDevice_ptsz")
def get_device(handle: int) -> int:
    return resolve(handle).context.device.ordinal


@implements("cuStreamAttachMemAsync", "cuStreamAttachMemAsync_ptsz")
def attach_mem(handle: int, dptr: int, length: int, flags: int) -> None:
    resolve(handle)  # all memory is reachable from every stream and the host


@implements("cuLaunchHostFunc", "cuLaunchHostFunc_ptsz")
def launch_host_func(handle: int, fn: int, user_data: int) -> None:
    if fn == 0:
        raise CudaError(E.INVALID_VALUE, "fn is NULL")
    s = resolve(handle)
    if s.capture is not None:
        from cuport.driver import capture, graph_nodes

        capture.add(s, graph_nodes.Host(fn, user_data), "cuLaunchHostFunc")
        return
    call = types.c_function(fn, "CUhostFn")
    submit(s, lambda: call(types.ffi().cast("void *", user_data)), "cuLaunchHostFunc")


@implements("cuStreamAddCallback", "cuStreamAddCallback_ptsz")
def add_callback(handle: int, fn: int, user_data: int, flags: int) -> None:
    if fn == 0:
        raise CudaError(E.INVALID_VALUE, "callback is NULL")
    if flags != 0:
        raise CudaError(E.INVALID_VALUE, "flags must be 0")
    s = resolve(handle)
    call = types.c_function(fn, "CUstreamCallback")
    ffi = types.ffi()

    def run() -> None:
        status = s.context.sticky_error.code if s.context.sticky_error else 0
        call(ffi.cast("CUstream", handle), status, ffi.cast("void *", user_data))

    submit(s, run, "cuStreamAddCallback")


@implements("cuCtxSynchronize")
def ctx_synchronize() -> None:
    _capture().check_unsafe("cuCtxSynchronize")
    ctx = context.current()
    synchronize_context(ctx)
    check_sticky(ctx)


@implements("cuCtxSynchronize_v2")
def ctx_synchronize_v2(handle: int) -> None:
    _capture().check_unsafe("cuCtxSynchronize")
    ctx = context.resolve(handle)
    synchronize_context(ctx)
    check_sticky(ctx)


# How the KeyboardInterrupt is raised again after the call: libcuda.so.1 sets this to a
# flag its C entry points check on the way out (capi/runtime.py).
rearm_interrupt: Callable[[], None] = _thread.interrupt_main


def interrupted(what: str) -> int:
    """^C reached a Python program while one of its calls waited in cuport: the exception
    cannot cross the C call, so the kernels in flight are stopped (their launches fail
    with CUDA_ERROR_LAUNCH_FAILED, which leaves the device unusable, as a killed kernel
    does on a GPU), the call answers that code, and the KeyboardInterrupt is raised again
    in the program as soon as its own Python code runs."""
    from cuport.driver import module

    with module._backend_lock:
        backends = list(module._backends.values())  # (none: nothing was launched)
    for b in backends:
        cancel = getattr(b, "cancel_launches", None)
        if cancel is not None:
            cancel()
    ctx = context.current_or_none()
    if ctx is not None and ctx.active:
        drain(ctx)  # the launches it stopped have failed: reported now
    rearm_interrupt()
    report(what, E.LAUNCH_FAILED, "interrupted (SIGINT) while waiting; the kernels in "
                                  "flight were stopped")
    return E.LAUNCH_FAILED
