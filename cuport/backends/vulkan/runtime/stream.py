"""Streams: commands recorded into command buffers, submitted in order, finished by tickets.

A stream owns a timeline semaphore; each submission waits for the stream's previous one
and signals the next value, its *ticket*. Within a command buffer a memory barrier
separates consecutive commands, so a stream runs its work one command after the other with
every write visible to the next command, as a CUDA stream does; the last command is
followed by a barrier that makes writes visible to the host. Streams on one device run
concurrently with each other (their submissions wait only for their own predecessors and
for what `wait_for` adds), as CUDA streams do.

Launches are not waited for: they are recorded, and the command buffer is submitted when
the GPU has fewer than `depth` of this stream's submissions left to run (so it starts at
once), when `batch` commands have piled up, or when a result is needed (wait, synchronize, a
copy into pageable host memory, a ticket someone waits for). With a submitter (the default)
the first of these is a thread of the stream's: the recording thread only kicks it, never
waits in vkEndCommandBuffer/vkQueueSubmit, and what it records while a submission is under
way goes with the next. `mark()` names the work recorded so far without submitting it;
`cut()` ends the submission there (an event's place) and `when_done()` calls back once a
ticket has run.

Copies follow CUDA's rules on pageable and pinned host memory: from pageable memory the
data is taken at the call (into the command buffer up to 64 KiB, else into staging memory),
into pageable memory the call returns when the data is there; to and from pinned memory
(cuport's host-visible allocations) the copy runs on the GPU in stream order.
Where the stream is idle and the device memory is mapped, copies are plain host copies.

Host waits are cut into 100 ms slices, so a lost device is noticed; CUPORT_VK_WAIT_S=N makes
a wait give up after N seconds (a debugging aid: CUDA itself waits for ever).
"""

from __future__ import annotations

import ctypes
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import DeviceLost, Unsupported, VulkanError, VulkanUnavailable
from .memory import Block, Buffer
from .pipeline import Pipeline

if TYPE_CHECKING:
    from .device import Device, Queue

UPDATE_MAX = 65536  # vkCmdUpdateBuffer's limit
CHUNK = 16 << 20  # larger copies through pageable memory go in pieces of this size
WAIT_SLICE_NS = 100_000_000  # host waits are cut into slices (no wait is ever unbounded in C)
QUERY_SLOTS = 256
_ORIGIN = (0, 0, 0)  # dispatch's default base (compared by identity first)
_submitted = [False]  # a first submission was made in this process
#: streams with cut submissions the submitter has yet to hand over: kept alive until it has
#: (a stream dropped meanwhile would leave tickets that nothing signals)
_cut_pending: set = set()


@dataclass(eq=False)
class Staging:
    block: Block
    size: int


class StagingPool:
    """Host-visible buffers for copies through pageable memory, reused by size class."""

    KEEP = 256 << 20  # idle staging memory kept for reuse

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self._free: dict[int, list[Staging]] = {}
        self._idle = 0
        self._lock = threading.Lock()

    def get(self, size: int) -> Staging:
        cls = max(1 << 16, 1 << (size - 1).bit_length())
        with self._lock:
            lst = self._free.get(cls)
            if lst:
                self._idle -= cls
                return lst.pop()
        from .memory import HOST

        blk = self.dev.memory._plain_block(cls, HOST)
        if blk.host_ptr is None:
            self.dev.memory._destroy_block(blk)
            raise Unsupported("no host-visible memory for staging copies", "vkAllocateMemory")
        return Staging(blk, cls)

    def put(self, s: Staging) -> None:
        with self._lock:
            if self._idle + s.size <= self.KEEP:
                self._free.setdefault(s.size, []).append(s)
                self._idle += s.size
                return
        self.dev.memory._destroy_block(s.block)

    def close(self) -> None:
        with self._lock:
            for lst in self._free.values():
                for s in lst:
                    self.dev.memory._destroy_block(s.block)
            self._free.clear()
            self._idle = 0


@dataclass(eq=False)
class Timestamp:
    """A GPU timestamp written in stream order (cuEventRecord with timing)."""

    stream: Stream
    ticket: int
    slot: int
    _ns: float | None = None  # read once, when first asked for (or when the stream goes)

    def ns(self) -> float:
        """Nanoseconds on the device's clock; waits for the timestamp to be written."""
        return self.stream._read_timestamp(self)


def elapsed_ms(start: Timestamp, end: Timestamp) -> float:
    """cuEventElapsedTime: milliseconds between two timestamps of one device."""
    return (end.ns() - start.ns()) / 1e6


class Stream:
    """One CUDA stream on a device queue."""

    def __init__(self, dev: Device, queue: Queue, batch: int = 256, eager: bool = True,
                 host_paths: bool = True, depth: int = 2, submitter: bool = False) -> None:
        self.dev = dev
        self.vk = dev.vk
        self.cmd = dev.cmd
        self.queue = queue
        self.batch = batch  # commands recorded before a submission is forced
        self.eager = eager  # submit as soon as the GPU has nothing of ours left to run
        self.host_paths = host_paths  # idle stream + mapped memory: copy on the host
        # eager: a command is submitted while fewer than `depth` submissions are unfinished,
        # so the GPU has the next one queued when it finishes one (with depth 1 it idled from
        # the end of a kernel to the host's next call: up to a launch's host time, ~100 us on
        # the H200 host); else it is recorded, and goes with the next command after one ends
        self.depth = max(1, depth)
        # submitter: eager submissions are made by a thread of the stream's (_submit_loop), so
        # that the thread recording work never waits in vkEndCommandBuffer/vkQueueSubmit, and
        # what is recorded while a submission is under way goes with the next one
        self.threaded = submitter and eager
        vk, ffi, lib = self.vk, self.vk.ffi, self.vk.lib
        h = dev.handle
        self._lock = threading.RLock()
        # held from a ticket's _detach (under _lock) until its vkQueueSubmit returned, so that
        # submissions reach the queue in ticket order; never wait for _lock while holding it
        self._submitting = threading.Lock()
        self._queued = 0  # the last ticket vkQueueSubmit has returned for
        self._failure: BaseException | None = None  # a failed submission of the submitter's
        self._kick = threading.Lock()  # released: the submitter has work (see _recorded)
        self._kick.acquire()
        self._kicked = False
        self._submitter: threading.Thread | None = None
        self._waiting = threading.Lock()  # held while the submitter waits for the GPU
        self._stopped = False  # the submitter and watcher make no more Vulkan calls (quiesce)
        self._watched: queue.SimpleQueue | None = None  # (ticket, fn) for the watcher (when_done)
        self._watching = threading.Lock()  # held while the watcher waits for the GPU
        self._cut: list = []  # detached jobs (cut) the submitter has yet to hand to the queue
        tci = vk.new("VkSemaphoreTypeCreateInfo", semaphoreType=lib.VK_SEMAPHORE_TYPE_TIMELINE,
                     initialValue=0)
        sem = ffi.new("VkSemaphore*")
        vk.check(self.cmd.vkCreateSemaphore(h, vk.new("VkSemaphoreCreateInfo", pNext=tci),
                                            ffi.NULL, sem), "vkCreateSemaphore")
        self.semaphore = sem[0]
        pool = ffi.new("VkCommandPool*")
        pci = vk.new("VkCommandPoolCreateInfo", queueFamilyIndex=queue.family,
                     flags=lib.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT)
        vk.check(self.cmd.vkCreateCommandPool(h, pci, ffi.NULL, pool), "vkCreateCommandPool")
        self._pool = pool[0]
        self._inflight: deque[tuple[int, Any, list[Any]]] = deque()
        self._keep: list[Any] = []  # released when the recording completes (staging, ...)
        # What must be released even if the stream is dropped without close() (see _Handles).
        self._h = _Handles(semaphore=self.semaphore, pool=self._pool, inflight=self._inflight,
                           keep=self._keep)
        weakref.finalize(self, _dropped, weakref.ref(dev), self._h)
        self.submitted = 0  # the last ticket handed to the queue
        self._done = 0  # the last ticket known complete
        self._cb: Any = None  # the command buffer being recorded
        self._count = 0  # commands in it
        self._bound: Pipeline | None = None
        self._waits: list[tuple[Any, int]] = []  # (semaphore, value) for the next submission
        # the buffer being recorded began with a barrier after the stream's previous
        # submission, which held commands (so it needs no wait for the previous ticket)
        self._fenced = False
        self._last_had_cb = False  # the previous submission held a command buffer
        self._free_cbs: list[Any] = []
        self._queries: Any = None
        self._free_slots: list[int] = []
        self.closed = False  # no more work may be recorded
        self.destroyed = False  # its Vulkan objects are gone (after close, once its work ran)
        self._timestamps: weakref.WeakSet[Timestamp] = weakref.WeakSet()
        self._host_sem: Any = None  # signalled by the host thread that runs host functions
        self._host_value = 0
        self._host_jobs: queue.SimpleQueue | None = None
        self._host_thread: threading.Thread | None = None
        # Structs reused by every submission and barrier (vkQueueSubmit copies what it reads).
        # Only the counts, the waits, the buffer and the signalled value change between
        # submissions: the rest is set here once.
        self._submit = vk.new("VkSubmitInfo")
        self._tsi = vk.new("VkTimelineSemaphoreSubmitInfo")
        self._submit.pNext = self._tsi
        self._cbs = ffi.new("VkCommandBuffer[1]")
        self._signal_sem = ffi.new("VkSemaphore[1]", [self.semaphore])
        self._signal_val = ffi.new("uint64_t[1]")
        self._submit.pCommandBuffers = self._cbs
        self._submit.signalSemaphoreCount = 1
        self._submit.pSignalSemaphores = self._signal_sem
        self._tsi.signalSemaphoreValueCount = 1
        self._tsi.pSignalSemaphoreValues = self._signal_val
        self._wait_sems = ffi.new("VkSemaphore[1]", [self.semaphore])
        self._counter = ffi.new("uint64_t*")
        self._begin_info = vk.new("VkCommandBufferBeginInfo",
                                  flags=lib.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self._region = ffi.new("VkBufferCopy*")
        self._grow_waits(4)
        self._max_groups = dev.info.limits.max_workgroup_count
        # [commands, submissions, submitter rounds, kicks] (CUPORT_VK_SUBMISSIONS=1 prints
        # them at exit: device.py), counted per submission and per kick, not per command
        self.counts = [0, 0, 0, 0]
        # the barriers between commands and before the host reads, as (function, arguments
        # after the command buffer), and the constants of a dispatch: looked up once
        if dev.barrier2 is not None:
            self._barrier_work, self._barrier_work_args = dev.barrier2, (dev.dependency_work,)
            self._barrier_host, self._barrier_host_args = dev.barrier2, (dev.dependency_host,)
        else:
            self._barrier_work = self._barrier_host = self._barrier1
            self._barrier_work_args = (dev.stages_work, dev.stages_work, 0, 1, dev.barrier_work,
                                       0, ffi.NULL, 0, ffi.NULL)
            self._barrier_host_args = (dev.stages_work, dev.stages_host, 0, 1, dev.barrier_host,
                                       0, ffi.NULL, 0, ffi.NULL)
        self._bind_compute = dev.bind_compute
        self._stage_compute = dev.stage_compute

    # -- tickets ---------------------------------------------------------------------------------
    def mark(self) -> int:
        """The ticket that completes when everything recorded so far has run (not submitted yet)."""
        with self._lock:
            return self.submitted + 1 if (self._cb is not None or self._waits) else self.submitted

    def completed(self) -> int:
        """The last ticket the GPU has finished."""
        with self._lock:
            if self.destroyed:
                return self._done
            r = self.cmd.vkGetSemaphoreCounterValue(self.dev.handle, self.semaphore, self._counter)
            if r < 0:
                self.vk.check(r, "vkGetSemaphoreCounterValue")
            v = self._counter[0]
            if v > self._done:
                self._done = v
            return self._done

    def is_done(self, ticket: int) -> bool:
        """Whether `ticket` has completed (submitting it first if it is still being recorded)."""
        if ticket <= self._done:
            return True
        if ticket > self.submitted:
            self.submit()
        return self.completed() >= ticket

    def finished(self, ticket: int) -> bool:
        """Whether `ticket` has completed, submitting nothing (a watcher's question: work
        recorded since stays for its own submission); False once the driver shut down."""
        if ticket <= self._done:
            return True
        if ticket > self.submitted or self.cmd.down():
            return False
        return self.completed() >= ticket

    def reached(self) -> int:
        """The last ticket known to have completed, the GPU asked once (finished(t) is
        t <= reached(): for many tickets of one stream, one call); nothing is submitted."""
        return self._done if self.cmd.down() else self.completed()

    def known_idle(self) -> bool:
        """Nothing recorded, waited for or cut, and every submission known to have finished
        (no Vulkan call: False may still be idle)."""
        return (self._cb is None and not self._waits and not self._cut
                and self.submitted <= self._done)

    def idle(self) -> bool:
        """Nothing recorded, nothing waited for, nothing running."""
        return self._cb is None and not self._waits and self.completed() >= self.submitted

    def wait(self, ticket: int | None = None, timeout_s: float | None = None) -> None:
        """Block until `ticket` (default: all recorded work) has completed. Once the driver
        shut down (the process is exiting), waits do nothing (device.py _on_exit)."""
        if self.cmd.down():
            return
        if ticket is None:
            ticket = self.mark()
        if ticket <= self._done:
            return
        if ticket > self.submitted:
            self.submit()
        if ticket > self.submitted:
            raise ValueError(f"ticket {ticket} was never issued on this stream "
                             f"(last {self.submitted})")
        self._on_queue(ticket)
        self.dev.wait_value(self.semaphore, ticket, timeout_s)
        if self._failure is not None:  # (a submission the submitter could not make)
            self._check_open()
        with self._lock:
            if ticket > self._done:
                self._done = ticket
            self._reclaim()
        self.dev.collect()

    def synchronize(self) -> None:
        self.wait(None)

    def wait_for(self, other: Stream, ticket: int) -> None:
        """Make later work of this stream wait on the GPU for `ticket` of `other` (cuStreamWaitEvent)."""
        if other is self:
            return
        if ticket > other.submitted:
            other.submit()
        if other.is_done(ticket):
            return
        other._on_queue(ticket)
        with self._lock:
            if self._cb is not None:
                self.submit()  # the wait applies only to what is recorded after it
            self._waits.append((other.semaphore, ticket))

    def launch_host_func(self, fn: Callable[[], None]) -> None:
        """Call `fn` on a host thread once the work recorded so far has run; work recorded
        later waits for `fn` to return (cuLaunchHostFunc, cuStreamAddCallback)."""
        vk, ffi, lib = self.vk, self.vk.ffi, self.vk.lib
        with self._lock:
            self._check_open()
            if self._host_sem is None:
                tci = vk.new("VkSemaphoreTypeCreateInfo",
                             semaphoreType=lib.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)
                sem = ffi.new("VkSemaphore*")
                vk.check(self.cmd.vkCreateSemaphore(
                    self.dev.handle, vk.new("VkSemaphoreCreateInfo", pNext=tci), ffi.NULL, sem),
                    "vkCreateSemaphore")
                self._host_sem = self._h.host_sem = sem[0]
                self._host_jobs = queue.SimpleQueue()
                self._host_thread = threading.Thread(target=self._host_worker, daemon=True,
                                                     name="cuport-vulkan-host-func")
                self._host_thread.start()
            ticket = self.submit()
            self._host_value += 1
            self._host_jobs.put((ticket, fn, self._host_value))
            self._waits.append((self._host_sem, self._host_value))

    def when_done(self, ticket: int, fn: Callable[[BaseException | None], None]) -> None:
        """Call fn on the stream's watcher thread once `ticket` has completed (fn(None)), or
        could not (fn(the error); VulkanUnavailable: the process is exiting); in ticket order.
        Unlike launch_host_func, nothing recorded later waits for fn (an event's record)."""
        with self._lock:
            self._check_open()
            if self._watched is None:
                self._watched = self._h.watched = queue.SimpleQueue()
                threading.Thread(target=_watcher_main, args=(weakref.ref(self), self._watched),
                                 daemon=True, name="cuport-vulkan-watch").start()
            self._watched.put((ticket, fn))

    def _watch(self, ticket: int) -> BaseException | None:
        """The watcher's wait for `ticket` (what it reports to its fn)."""
        if ticket <= self._done:
            return None
        try:
            if ticket > self.submitted:
                self.submit()
            self._on_queue(ticket)
            with self._watching:  # (quiesce waits for it)
                if self._stopped or self.destroyed:
                    return VulkanUnavailable("the Vulkan driver shut down (the process is exiting)")
                self.dev.wait_value(self.semaphore, ticket)
            return None
        except Exception as e:
            return e

    def _host_worker(self) -> None:
        vk = self.vk
        while True:
            ticket, fn, value = self._host_jobs.get()
            if fn is None:
                return
            try:
                self.wait(ticket)
                fn()
            except Exception:  # as CUDA: an error in a callback is the program's, reported
                import traceback

                traceback.print_exc()
            finally:
                info = vk.new("VkSemaphoreSignalInfo", semaphore=self._host_sem, value=value)
                r = self.cmd.vkSignalSemaphore(self.dev.handle, info)
                if r < 0:
                    self.dev.lost = True

    # -- submission ---------------------------------------------------------------------------------
    def submit(self) -> int:
        """Hand what is recorded to the queue; returns its ticket (the last one if nothing is new)."""
        with self._lock:
            self._check_open()
            jobs = self._take_cut()
            job = self._detach()
            if job is not None:
                jobs.append(job)
            if not jobs:
                return self.submitted
            self._submitting.acquire()  # (released once they are on the queue: ticket order)
        self._queue_jobs(jobs)
        return self.submitted if job is None else job[0]

    def cut(self) -> int:
        """End the submission being recorded here: its ticket (returned) covers nothing recorded
        later (an event's place). With a submitter, the thread submits it."""
        if not self.threaded:
            return self.submit()
        with self._lock:
            self._check_open()
            job = self._detach()
            if job is None:
                return self.submitted
            self._cut.append(job)
            _cut_pending.add(self)
            self._kick_submitter()
            return job[0]

    def _take_cut(self) -> list:
        """The cut jobs, now the caller's to submit (lock held)."""
        jobs = self._cut
        if not jobs:
            return []  # (a list of the caller's: it may add to it)
        self._cut = []
        _cut_pending.discard(self)
        return jobs

    def _queue_jobs(self, jobs: list) -> None:
        """_queue_submit each detached job in order (`_submitting` held, released here); the
        first failure is raised once all were tried (a failed one is signalled: see there)."""
        first = None
        try:
            for job in jobs:
                try:
                    self._queue_submit(*job)
                except Exception as e:
                    first = first or e
        finally:
            self._submitting.release()
        if first is not None:
            raise first

    def _detach(self) -> tuple[int, Any, list[tuple[Any, int]]] | None:
        """Give the command buffer being recorded the next ticket and take it off the stream
        (lock held): (ticket, command buffer or None, semaphore waits), or None if nothing is
        new. From here the ticket counts as submitted; _queue_submit ends the buffer and hands
        it to the queue, outside the stream's lock (its Vulkan calls release the GIL, and a
        recording thread then waited for the lock as well)."""
        cb = self._cb
        if cb is None and not self._waits:
            return None
        value = self.submitted + 1
        waits = self._waits
        if self.submitted and not (self._fenced and cb is not None):
            waits.append((self.semaphore, self.submitted))
        self._fenced = False
        self._last_had_cb = cb is not None
        if self._keep:
            keep = list(self._keep)
            self._keep.clear()
        else:
            keep = ()
        self._cb = None
        self._bound = None
        self._waits = []
        self._inflight.append((value, cb, keep))
        self.submitted = self._h.submitted = value
        counts = self.counts
        counts[0] += self._count
        counts[1] += 1
        self._count = 0
        return value, cb, waits

    def _queue_submit(self, value: int, cb: Any, waits: list[tuple[Any, int]]) -> None:
        """End a detached ticket's command buffer and vkQueueSubmit it (`_submitting` held, the
        stream lock need not be: nobody records into a detached buffer, and the submitter
        records nothing meanwhile). A failed submission's work is dropped: the host signals
        its ticket, so what waits for it goes on, and the error is raised (on the submitter
        thread: by the stream's next call)."""
        vk, ffi, cmd = self.vk, self.vk.ffi, self.cmd
        si = self._submit
        if cb is not None:
            self._barrier_host(cb, *self._barrier_host_args)
            r = cmd.vkEndCommandBuffer(cb)
            if r < 0:
                self._drop_ticket(value, r)
                vk.check(r, "vkEndCommandBuffer")
            self._cbs[0] = cb
            si.commandBufferCount = 1
        else:
            si.commandBufferCount = 0
        n = len(waits)
        if n > len(self._wsems):
            self._grow_waits(n)
        wsems, wvals = self._wsems, self._wvals
        for i, (sem, val) in enumerate(waits):
            wsems[i] = sem
            wvals[i] = val
        si.waitSemaphoreCount = n
        self._tsi.waitSemaphoreValueCount = n
        self._signal_val[0] = value
        with self.queue.lock:
            r = cmd.vkQueueSubmit(self.queue.handle, 1, si, ffi.NULL)
        if not _submitted[0]:
            _submitted[0] = True
            from .device import exit_hook

            exit_hook("submit")  # after the driver's first submission (device.py)
        if r < 0:
            self._drop_ticket(value, r)
        self._queued = value
        vk.check(r, "vkQueueSubmit")

    def _drop_ticket(self, value: int, r: int) -> None:
        """A detached ticket that cannot reach the queue (its command buffer could not be
        ended or submitted): signalled from the host, so that what waits for it goes on,
        unless the device is lost."""
        vk, cmd = self.vk, self.cmd
        self._queued = value
        if vk.result_name(r) == "VK_ERROR_DEVICE_LOST":
            self.dev.lost = True
            return
        info = vk.new("VkSemaphoreSignalInfo", semaphore=self.semaphore, value=value)
        if cmd.vkSignalSemaphore(self.dev.handle, info) < 0:
            self.dev.lost = True

    def _grow_waits(self, n: int) -> None:
        """Room for n semaphore waits in the submission's arrays (which _submit points to)."""
        ffi, lib = self.vk.ffi, self.vk.lib
        self._wsems = ffi.new("VkSemaphore[]", n)
        self._wvals = ffi.new("uint64_t[]", n)
        self._wstages = ffi.new("VkPipelineStageFlags[]", [lib.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT] * n)
        self._submit.pWaitSemaphores = self._wsems
        self._submit.pWaitDstStageMask = self._wstages
        self._tsi.pWaitSemaphoreValues = self._wvals

    def _reclaim(self) -> None:
        """Recycle command buffers and staging memory of completed submissions."""
        done = self._done
        while self._inflight and self._inflight[0][0] <= done:
            _, cb, keep = self._inflight.popleft()
            if cb is not None:
                self._free_cbs.append(cb)
            for k in keep:
                if isinstance(k, Staging):
                    self.dev.staging.put(k)

    def _begin(self) -> Any:
        """The command buffer to record into, with a barrier after the previous command."""
        cb = self._cb
        if cb is not None:  # (every launch's path: a stream with a buffer is not closed)
            if self._failure is not None or self.dev.lost:
                self._check_open()
            if self._count:
                self._barrier_work(cb, *self._barrier_work_args)
            return cb
        self._check_open()
        vk, ffi, cmd = self.vk, self.vk.ffi, self.cmd
        inflight = self._inflight
        # (the GPU is asked only where a buffer or staging memory is wanted back: a call that
        # releases the GIL, at every submission's first command)
        if inflight and (inflight[0][0] <= self._done or (not self._free_cbs or inflight[0][2])
                         and inflight[0][0] <= self.completed()):
            self._reclaim()
        if self._free_cbs:
            # (no vkResetCommandBuffer: the pool has RESET_COMMAND_BUFFER_BIT, so that
            # vkBeginCommandBuffer resets an executable buffer itself; one call less a buffer)
            cb = self._free_cbs.pop()
        else:
            ai = vk.new("VkCommandBufferAllocateInfo", commandPool=self._pool,
                        level=vk.lib.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
            out = ffi.new("VkCommandBuffer*")
            vk.check(cmd.vkAllocateCommandBuffers(self.dev.handle, ai, out),
                     "vkAllocateCommandBuffers")
            cb = out[0]
        vk.check(cmd.vkBeginCommandBuffer(cb, self._begin_info), "vkBeginCommandBuffer")
        if self.submitted > self._done and self._last_had_cb and not self.dev.self_wait:
            # After the stream's previous submission, on the same queue: a barrier's first
            # scope holds every command submitted to the queue before it, so it orders this
            # buffer after that one's commands (which ran after that one's own waits) without
            # the wait for its semaphore, which NVIDIA's driver resolves between submissions
            # (an idle GPU at some of them: stencil's 104.6 us kernels at 128.5 us a launch).
            self._barrier_work(cb, *self._barrier_work_args)
            self._fenced = True
        self._cb = cb
        self._count = 0
        self._bound = None
        return cb

    def _barrier1(self, cb: Any, *args: Any) -> None:
        """vkCmdPipelineBarrier (no synchronization2, or CUPORT_VK_BARRIER2=0), looked up at
        each call: after the exit handler it refuses instead of reaching the driver."""
        self.cmd.vkCmdPipelineBarrier(cb, *args)

    def _recorded(self) -> None:
        """After each command: submit while the GPU has fewer than `depth` submissions left to
        run (eager; with a submitter, it is told to), or when the batch is full."""
        self._count += 1
        if self._count >= self.batch:
            self.submit()
        elif self.threaded:
            self._kick_submitter()
        elif self.eager and self._room():
            self.submit()

    def _on_queue(self, ticket: int) -> None:
        """Return once `ticket`, detached, is on the queue (the submitter may be handing it
        over, or have it still to do: cut): a wait for it, on the host or the GPU, then waits
        for its signal only."""
        if ticket > self._queued:
            if self._cut:
                with self._lock:
                    jobs = self._take_cut()
                    if jobs:
                        self._submitting.acquire()
                if jobs:
                    self._queue_jobs(jobs)
            with self._submitting:
                pass

    def _kick_submitter(self) -> None:
        """Wake the submitter (started on first use) unless a kick is pending (lock held)."""
        if not self._kicked:
            self._kicked = True
            self._start_submitter()
            self.counts[3] += 1
            self._kick.release()

    def _start_submitter(self) -> None:
        if self._submitter is None:
            self._h.kick = self._kick  # (a stream dropped without close() lets it end)
            self._submitter = threading.Thread(target=_submitter_main,
                                               args=(weakref.ref(self), self._kick), daemon=True,
                                               name="cuport-vulkan-submit")
            self._submitter.start()

    def _submit_round(self) -> bool:
        """The submitter's answer to a kick: submit what was cut, and what is recorded once the
        GPU has fewer than `depth` of the stream's submissions left to run (waiting for one to
        finish, while the recording thread goes on adding to the batch); False: the stream is
        gone."""
        first = True
        try:
            while True:
                with self._lock:
                    if first:  # (one lock taken for the kick and the usual single pass)
                        first = False
                        self.counts[2] += 1
                        self._kicked = False  # (cleared once per kick taken: never given twice)
                        if self.destroyed or self._stopped:
                            return False
                    if self._stopped or self.closed:
                        return True
                    jobs, last = self._take_cut(), False
                    if not jobs:
                        if self._cb is None and not self._waits:
                            return True
                        if self._room():
                            jobs, last = [self._detach()], True
                        else:
                            self._waiting.acquire()
                    if jobs:
                        self._submitting.acquire()
                    else:
                        target = self.submitted - self.depth + 1
                if jobs:
                    self._queue_jobs(jobs)
                    if last:
                        return True
                    continue
                try:
                    self.dev.wait_value(self.semaphore, target)
                finally:
                    self._waiting.release()
        except Exception as e:  # (raised by the stream's next call: _check_open)
            self._failure = e
        return True

    def quiesce(self) -> None:
        """No Vulkan call from the submitter or the watcher from now on, the one under way
        finished (the driver is about to shut down: device.py _on_exit)."""
        if self._submitter is None and self._watched is None:
            return
        if self._lock.acquire(timeout=1):  # (a thread of the program's may hold it at exit)
            self._stopped = True
            self._lock.release()
        for lock in (self._submitting, self._waiting, self._watching):
            if lock.acquire(timeout=1):
                lock.release()

    def _room(self) -> bool:
        """Whether fewer than `depth` submissions are unfinished."""
        return (self.submitted - self._done < self.depth
                or self.submitted - self.completed() < self.depth)

    def _check_open(self) -> None:
        if self._failure is not None:  # (the submitter's, raised once)
            failure, self._failure = self._failure, None
            raise failure
        if self.closed:
            raise VulkanError("the stream was destroyed")
        if self.dev.lost:
            raise DeviceLost("the device was lost; no more work can run on it")

    # -- kernels ----------------------------------------------------------------------------------
    def dispatch(self, pipeline: Pipeline, groups: tuple[int, int, int], push: bytes = b"",
                 base: tuple[int, int, int] = _ORIGIN) -> int:
        """Run `pipeline` over `groups` workgroups, the first `base` (WorkgroupId counts from
        it); `push` fills its push constants. Returns the ticket that covers it (mark(), taken
        under the same lock: a launch's place without a second call).

        Grids larger than maxComputeWorkGroupCount are split into vkCmdDispatchBase pieces.
        Every launch comes here: a command buffer being recorded takes a barrier (one
        prepared call), the push constants and the dispatch; a pipeline already bound is not
        bound again."""
        gx, gy, gz = groups
        if gx <= 0 or gy <= 0 or gz <= 0:
            raise ValueError(f"grid {groups} has an empty dimension")
        n = len(push)
        if n > pipeline.push_size:
            raise ValueError(f"{n} bytes of push constants; the pipeline declares "
                             f"{pipeline.push_size}")
        if n & 3:
            push += bytes(4 - (n & 3))
            n = len(push)
        cmd = self.cmd
        mx, my, mz = self._max_groups
        with self._lock:
            cb = self._begin()
            if self._bound is not pipeline:
                cmd.vkCmdBindPipeline(cb, self._bind_compute, pipeline.handle)
                self._bound = pipeline
            if n:
                cmd.vkCmdPushConstants(cb, pipeline.layout, self._stage_compute, 0, n, push)
            if gx <= mx and gy <= my and gz <= mz and (base is _ORIGIN or not any(base)):
                cmd.vkCmdDispatch(cb, gx, gy, gz)
            else:
                bx, by, bz = base
                for z in range(0, gz, mz):
                    for y in range(0, gy, my):
                        for x in range(0, gx, mx):
                            cmd.vkCmdDispatchBase(cb, bx + x, by + y, bz + z, min(mx, gx - x),
                                                  min(my, gy - y), min(mz, gz - z))
            self._recorded()
            return self.submitted + 1 if (self._cb is not None or self._waits) else self.submitted

    def fits(self, groups: tuple[int, int, int]) -> bool:
        """Whether a grid is one vkCmdDispatch on this device (dispatch_planned's condition)."""
        return all(0 < g <= m for g, m in zip(groups, self._max_groups, strict=True))

    def dispatch_planned(self, pipeline: Pipeline, gx: int, gy: int, gz: int, push: bytes) -> int:
        """dispatch() of a launch plan's shape (backend.py run_planned), whose checks were made
        once with the plan: the grid `fits`, `push` is 4-byte aligned, at most the pipeline's
        push constants and not empty, the base the origin. The same commands and ticket as
        dispatch()."""
        cmd = self.cmd
        with self._lock:
            cb = self._begin()
            if self._bound is not pipeline:
                cmd.vkCmdBindPipeline(cb, self._bind_compute, pipeline.handle)
                self._bound = pipeline
            cmd.vkCmdPushConstants(cb, pipeline.layout, self._stage_compute, 0, len(push), push)
            cmd.vkCmdDispatch(cb, gx, gy, gz)
            self._recorded()
            return self.submitted + 1 if (self._cb is not None or self._waits) else self.submitted

    # -- copies -------------------------------------------------------------------------------------
    def copy_to_device(self, dst: int, src: Any, size: int | None = None) -> None:
        """Host -> device: `src` is a host address (int) or a buffer (bytes, numpy, ...)."""
        src_ptr, size, keep = self._host_source(src, size)
        if size == 0:
            return
        with self._lock:
            d = self.dev.memory.find(dst, size)
            if d.host_ptr is not None and self.host_paths and self.idle():
                ctypes.memmove(d.host_ptr + (dst - d.address), src_ptr, size)
                return
            pinned = self.dev.memory.find_host(src_ptr, size) if keep is None else None
            doff = d.offset + (dst - d.address)
            if pinned is not None:
                cb = self._begin()
                self._copy(cb, pinned.block.buffer, pinned.offset + (src_ptr - pinned.host_ptr),
                           d.block.buffer, doff, size)
            elif size <= UPDATE_MAX and doff % 4 == 0 and size % 4 == 0:
                cb = self._begin()
                self.cmd.vkCmdUpdateBuffer(cb, d.block.buffer, doff, size,
                                           self.vk.ffi.cast("void*", src_ptr))
            elif size <= CHUNK:
                st = self.dev.staging.get(size)
                ctypes.memmove(st.block.host_ptr, src_ptr, size)
                cb = self._begin()
                self._copy(cb, st.block.buffer, 0, d.block.buffer, doff, size)
                self._keep.append(st)
            else:
                self._staged_to_device(d, doff, src_ptr, size)
                return
            self._recorded()

    def update(self, dst: int, data: bytes) -> None:
        """Up to 64 KiB into device memory in stream order, the bytes taken now (inside the
        command buffer: vkCmdUpdateBuffer); no submission of its own (a launch's parameters,
        recorded just before its dispatch)."""
        n = (len(data) + 3) & ~3
        if n > UPDATE_MAX:
            raise ValueError(f"{len(data)} bytes: vkCmdUpdateBuffer takes at most {UPDATE_MAX}")
        padded = data if n == len(data) else data + bytes(n - len(data))
        with self._lock:
            d = self.dev.memory.find(dst, n)
            doff = d.offset + (dst - d.address)
            if doff % 4:
                raise ValueError(f"{hex(dst)}: vkCmdUpdateBuffer needs a 4-byte aligned offset")
            cb = self._begin()
            self.cmd.vkCmdUpdateBuffer(cb, d.block.buffer, doff, n, padded)
            self._count += 1

    def _staged_to_device(self, d: Buffer, doff: int, src_ptr: int, size: int) -> None:
        """A large copy from pageable memory in CHUNK pieces, at most two in flight (the host
        fills one staging buffer while the GPU copies the other)."""
        tickets: deque[int] = deque()
        for off in range(0, size, CHUNK):
            n = min(CHUNK, size - off)
            if len(tickets) >= 2:
                self.wait(tickets.popleft())
            st = self.dev.staging.get(n)
            ctypes.memmove(st.block.host_ptr, src_ptr + off, n)
            cb = self._begin()
            self._copy(cb, st.block.buffer, 0, d.block.buffer, doff + off, n)
            self._keep.append(st)
            self._count += 1
            tickets.append(self.submit())

    def copy_to_host(self, dst: Any, src: int, size: int | None = None) -> None:
        """Device -> host. Into pageable memory this returns once the data is there; into
        pinned memory (a host-visible allocation of this device) it runs in stream order."""
        dst_ptr, size, keep = self._host_source(dst, size, writable=True)
        if size == 0:
            return
        with self._lock:
            s = self.dev.memory.find(src, size)
            soff = s.offset + (src - s.address)
            pinned = self.dev.memory.find_host(dst_ptr, size) if keep is None else None
            if pinned is not None:
                cb = self._begin()
                self._copy(cb, s.block.buffer, soff, pinned.block.buffer,
                           pinned.offset + (dst_ptr - pinned.host_ptr), size)
                self._recorded()
                return
            if s.host_ptr is not None and s.block.host_reads_fast and self.host_paths:
                if not self.idle():
                    self.wait()
                ctypes.memmove(dst_ptr, s.host_ptr + (src - s.address), size)
                return
            # Through staging in CHUNK pieces; the GPU copies the next while the host copies one.
            pending: deque[tuple[int, Staging, int, int]] = deque()
            try:
                for off in range(0, size, CHUNK):
                    n = min(CHUNK, size - off)
                    st = self.dev.staging.get(n)
                    cb = self._begin()
                    self._copy(cb, s.block.buffer, soff + off, st.block.buffer, 0, n)
                    self._count += 1
                    pending.append((self.submit(), st, off, n))
                    if len(pending) >= 2:
                        self._drain_one(pending, dst_ptr)
                while pending:
                    self._drain_one(pending, dst_ptr)
            finally:
                for _, st, _, _ in pending:
                    self.dev.staging.put(st)

    def _drain_one(self, pending: deque, dst_ptr: int) -> None:
        ticket, st, off, n = pending[0]
        self.wait(ticket)
        ctypes.memmove(dst_ptr + off, st.block.host_ptr, n)
        pending.popleft()
        self.dev.staging.put(st)

    def copy(self, dst: int, src: int, size: int) -> None:
        """Device -> device, in stream order (either side may be any kind of allocation)."""
        if size == 0:
            return
        with self._lock:
            d = self.dev.memory.find(dst, size)
            s = self.dev.memory.find(src, size)
            doff = d.offset + (dst - d.address)
            soff = s.offset + (src - s.address)
            cb = self._begin()
            if d.block is s.block and abs(doff - soff) < size:
                # vkCmdCopyBuffer forbids overlap: go through staging memory
                st = self.dev.staging.get(size)
                self._copy(cb, s.block.buffer, soff, st.block.buffer, 0, size)
                self._barrier_work(cb, *self._barrier_work_args)
                self._copy(cb, st.block.buffer, 0, d.block.buffer, doff, size)
                self._keep.append(st)
            else:
                self._copy(cb, s.block.buffer, soff, d.block.buffer, doff, size)
            self._recorded()

    def fill(self, dst: int, value: int, count: int, width: int = 1) -> None:
        """cuMemsetD8/16/32: `count` elements of `width` bytes set to `value`."""
        if width not in (1, 2, 4):
            raise ValueError("fill width must be 1, 2 or 4 bytes")
        if dst % width:
            raise ValueError(f"a {width * 8}-bit fill needs a {width}-byte aligned address")
        size = count * width
        if size == 0:
            return
        pattern = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little") * (4 // width)
        word = int.from_bytes(pattern, "little")
        with self._lock:
            d = self.dev.memory.find(dst, size)
            if (d.host_ptr is not None and d.block.host_reads_fast and self.host_paths
                    and self.idle()):
                _host_fill(d.host_ptr + (dst - d.address), pattern, size)
                return
            off = d.offset + (dst - d.address)
            head = min((-dst) % 4, size)
            mid = (size - head) // 4 * 4
            tail = size - head - mid
            cb = self._begin()
            if mid:
                self.cmd.vkCmdFillBuffer(cb, d.block.buffer, off + head, mid, word)
            if head or tail:
                st = self.dev.staging.get(8)
                ctypes.memmove(st.block.host_ptr, pattern * 2, 8)
                if head:
                    self._copy(cb, st.block.buffer, 0, d.block.buffer, off, head)
                if tail:
                    self._copy(cb, st.block.buffer, 0, d.block.buffer, off + head + mid, tail)
                self._keep.append(st)
            self._recorded()

    def _copy(self, cb: Any, src: Any, soff: int, dst: Any, doff: int, size: int) -> None:
        r = self._region
        r.srcOffset, r.dstOffset, r.size = soff, doff, size
        self.cmd.vkCmdCopyBuffer(cb, src, dst, 1, r)

    def _host_source(self, obj: Any, size: int | None, writable: bool = False
                     ) -> tuple[int, int, Any]:
        """(address, size, keep-alive) of a host pointer (int) or a buffer-protocol object."""
        if isinstance(obj, int):
            if size is None:
                raise ValueError("a host address needs a size")
            return obj, size, None
        mv = memoryview(obj)
        if writable and mv.readonly:
            raise ValueError("the destination buffer is read-only")
        cbuf = self.vk.ffi.from_buffer(mv, require_writable=writable)
        n = mv.nbytes if size is None else size
        if n > mv.nbytes:
            raise ValueError(f"{n} bytes asked for from a buffer of {mv.nbytes}")
        return int(self.vk.ffi.cast("uintptr_t", cbuf)), n, (mv, cbuf)

    # -- timestamps -----------------------------------------------------------------------------------
    def timestamp(self, submit: bool = True) -> Timestamp:
        """A timestamp written when all work recorded before it has finished; `submit` False:
        recorded only (the next command submits it; CUPORT_VK_PROFILE's opening timestamp,
        which a submission boundary before its dispatch would stretch by the host's time)."""
        vk, ffi, lib = self.vk, self.vk.ffi, self.vk.lib
        if self.dev.info.limits.timestamp_valid_bits == 0:
            raise Unsupported("the device's compute queue has no timestamps", "vkCmdWriteTimestamp")
        with self._lock:
            if self._queries is None:
                qci = vk.new("VkQueryPoolCreateInfo", queryType=lib.VK_QUERY_TYPE_TIMESTAMP,
                             queryCount=QUERY_SLOTS)
                out = ffi.new("VkQueryPool*")
                vk.check(self.cmd.vkCreateQueryPool(self.dev.handle, qci, ffi.NULL, out),
                         "vkCreateQueryPool")
                self._queries = self._h.queries = out[0]
                self._free_slots = list(range(QUERY_SLOTS - 1, -1, -1))
            if not self._free_slots:
                raise Unsupported(f"more than {QUERY_SLOTS} timestamps alive on one stream",
                                  "vkCmdWriteTimestamp")
            slot = self._free_slots.pop()
            cb = self._begin()
            self.cmd.vkCmdResetQueryPool(cb, self._queries, slot, 1)
            self.cmd.vkCmdWriteTimestamp(cb, lib.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                         self._queries, slot)
            self._count += 1
            ts = Timestamp(self, self.submitted + 1, slot)
            weakref.finalize(ts, self._free_slots.append, slot)
            self._timestamps.add(ts)
            if submit:
                self._count -= 1
                self._recorded()
            return ts

    def _read_timestamp(self, ts: Timestamp) -> float:
        if ts._ns is None:
            if self.destroyed:
                raise VulkanError("the timestamp's stream was destroyed before it was written")
            self.wait(ts.ticket)
            with self._lock:
                if ts._ns is None:
                    ts._ns = self._query(ts.slot)
        return ts._ns

    def _query(self, slot: int) -> float:
        ffi, lib = self.vk.ffi, self.vk.lib
        out = ffi.new("uint64_t[1]")
        self.vk.check(self.cmd.vkGetQueryPoolResults(
            self.dev.handle, self._queries, slot, 1, 8, out, 8,
            lib.VK_QUERY_RESULT_64_BIT | lib.VK_QUERY_RESULT_WAIT_BIT), "vkGetQueryPoolResults")
        bits = self.dev.info.limits.timestamp_valid_bits
        ticks = out[0] & ((1 << bits) - 1) if bits < 64 else out[0]
        return ticks * self.dev.info.limits.timestamp_period_ns

    # -- end ----------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Destroy the stream as cuStreamDestroy does: work already recorded still runs, and what
        the stream holds is released once that work (and every stream's before it) is done."""
        with self._lock:
            if self.closed:
                return
            if not self.dev.lost:
                self.submit()
            self.closed = True
        self.dev.defer(self._destroy)

    def _destroy(self) -> None:
        with self._lock:
            if self.destroyed:
                return
            for ts in list(self._timestamps):
                if ts._ns is None and not self.dev.lost:
                    try:
                        ts._ns = self._query(ts.slot)
                    except VulkanError:
                        pass
            self._done = max(self._done, self.submitted)
            with self._waiting, self._submitting, self._watching:  # (its threads are done
                self.destroyed = True                                # with the handles)
            if self._watched is not None:
                self._watched.put(None)
            if self._host_sem is not None:
                self._host_jobs.put((0, None, 0))
            if self._submitter is not None and not self._kicked:
                self._kicked = True
                self._kick.release()  # (it sees `destroyed` and ends)
            _release_handles(self.dev, self._h)


def _watcher_main(ref: weakref.ref, jobs: queue.SimpleQueue) -> None:
    """A stream's watcher thread (Stream.when_done); like the submitter, it holds the stream
    only while it waits for a ticket."""
    while True:
        job = jobs.get()
        s = ref()
        if job is None or s is None:
            return
        ticket, fn = job
        failure = s._watch(ticket)
        del s
        try:
            fn(failure)
        except Exception:  # (fn's own errors are its caller's business: reported, not fatal)
            import traceback

            traceback.print_exc()


def _submitter_main(ref: weakref.ref, kick: Any) -> None:
    """A stream's submitter thread (Stream._submit_round on each kick); it holds the stream
    only while it works, so that a stream dropped without close() is still collected."""
    while True:
        kick.acquire()
        s = ref()
        if s is None or not s._submit_round():
            return
        del s


@dataclass(eq=False)
class _Handles:
    """A stream's Vulkan objects and in-flight staging, apart from the stream object, so that a
    stream dropped without close() is still released once its last submission has run."""

    semaphore: Any
    pool: Any
    inflight: deque
    keep: list
    queries: Any = None
    host_sem: Any = None
    kick: Any = None  # the submitter's kick (released when the stream is dropped: it ends)
    watched: Any = None  # the watcher's jobs (None put when the stream is dropped: it ends)
    submitted: int = 0
    released: bool = False


def _release_handles(dev: Device, h: _Handles) -> None:
    if h.released:
        return
    h.released = True
    for _, _, keep in h.inflight:
        for k in keep:
            if isinstance(k, Staging):
                dev.staging.put(k)
    for k in h.keep:
        if isinstance(k, Staging):
            dev.staging.put(k)
    h.inflight.clear()
    h.keep.clear()
    ffi, cmd, d = dev.vk.ffi, dev.cmd, dev.handle
    cmd.vkDestroyCommandPool(d, h.pool, ffi.NULL)
    cmd.vkDestroySemaphore(d, h.semaphore, ffi.NULL)
    if h.queries is not None:
        cmd.vkDestroyQueryPool(d, h.queries, ffi.NULL)
    if h.host_sem is not None:
        cmd.vkDestroySemaphore(d, h.host_sem, ffi.NULL)


def _dropped(dev_ref: weakref.ref, h: _Handles) -> None:
    """A stream was garbage-collected: hand its objects to the device (no Vulkan call here:
    this runs inside the garbage collector, wherever that happens)."""
    if h.watched is not None:
        h.watched.put(None)
    if h.kick is not None:
        try:
            h.kick.release()
        except RuntimeError:  # (a kick was pending: it finds the stream gone all the same)
            pass
    dev = dev_ref()
    if dev is not None and not h.released:
        dev.dropped.put(h)


def _host_fill(ptr: int, pattern: bytes, size: int) -> None:
    """Fill host memory with a repeated pattern: one memset for bytes, doubling copies otherwise."""
    if len(set(pattern)) == 1:
        ctypes.memset(ptr, pattern[0], size)
        return
    first = min(size, len(pattern))
    ctypes.memmove(ptr, pattern, first)
    done = first
    while done < size:
        n = min(done, size - done)
        ctypes.memmove(ptr + done, ptr, n)
        done += n


__all__ = ["Buffer", "Stream", "Timestamp", "elapsed_ms", "StagingPool"]
