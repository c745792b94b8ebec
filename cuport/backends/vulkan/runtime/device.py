"""An opened Vulkan device: the logical device, its queues, memory, pipelines and streams.

`open(index)` enables exactly the features of features.py that the device has (and the
extensions they come from), asks for up to four queues of the compute family (streams are
spread over them), and checks on a probe allocation how host and device can share an
address (memory.py). Everything a CUDA context needs from the device goes through this
object; it is thread-safe.
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from . import external, placed
from . import features as F
from . import instance as _instance
from .binding import DeviceCommands
from .errors import DeviceLost, Unsupported, VulkanError, VulkanUnavailable
from .memory import DEVICE, SIGNALS_IN_DEVICE_MEMORY, Buffer, Memory
from .pipeline import Pipeline, Pipelines
from .probe import devices
from .properties import DeviceInfo, feature_chain, read_features
from .stream import WAIT_SLICE_NS, StagingPool, Stream, _release_handles

MAX_QUEUES = 4


class Queue:
    def __init__(self, handle: Any, family: int, index: int) -> None:
        self.handle = handle
        self.family = family
        self.index = index
        self.lock = threading.Lock()  # vkQueueSubmit needs the queue externally synchronised


class Device:
    """One opened physical device (see the module docstring)."""

    def __init__(self, info: DeviceInfo) -> None:
        if not info.usable:
            need = "; ".join(m for m in info.missing if m.startswith("required: "))
            raise Unsupported(f"the Vulkan device {info.name!r} cannot run cuport: {need}")
        inst = _instance.get()
        self.info = info
        self.vk = vk = inst.vk
        ffi, lib = vk.ffi, vk.lib
        self.physical = inst.physical_devices[info.index]
        self.lost = False
        self.closed = False
        api = min(info.api_version[:2], inst.api_version[:2])

        # Features: what the device has, of what cuport asks for; nothing else.
        have = read_features(vk, self.physical, api, info.extensions)
        f2, structs = feature_chain(vk, api, info.extensions)
        self.enabled_features: dict[str, bool] = {}
        used_structs = set()
        for feat in F.FEATURES:
            if not have.get(feat.name):
                continue
            for ctype in feat.structs:
                if ctype in structs:
                    setattr(structs[ctype], feat.name, 1)
                    used_structs.add(ctype)
                    self.enabled_features[feat.name] = True
                    break
        exts = set()
        for s in F.FEATURE_STRUCTS:
            if s.ctype in structs and s.extension and s.core is None and s.ctype in used_structs:
                exts.add(s.extension)
        # A struct whose features are all off is left in the chain only where it is core.
        kept = [structs["_root"]] + [structs[s.ctype] for s in F.FEATURE_STRUCTS
                                     if s.ctype in structs and (s.core or s.ctype in used_structs)]
        vk.chain(*kept)
        kept[-1].pNext = ffi.NULL
        for ext, _why in F.EXTENSIONS:
            if ext in info.extensions:
                exts.add(ext)
        # host memory a running kernel polls (memory.py's "signal" blocks): where the driver
        # shows it host writes to system memory only at submissions (NVIDIA's), device-local
        # host-visible memory mapped at its device address
        self.placed_alignment = 0
        if info.driver_id in SIGNALS_IN_DEVICE_MEMORY and os.environ.get("CUPORT_VK_SIGNALS") != "0":
            self.placed_alignment = placed.query(vk, self.physical, info.extensions)
        if self.placed_alignment:
            self._placed_features = placed.features(vk)
            placed.chain_after(vk, kept[-1], self._placed_features)
            exts.update(placed.EXTENSIONS)
        self.enabled_extensions = frozenset(exts)

        family = _queue_family(info)
        nq = max(1, min(MAX_QUEUES, info.queue_families[family].count))
        prios = ffi.new("float[]", [1.0] * nq)
        qci = vk.new("VkDeviceQueueCreateInfo", queueFamilyIndex=family, queueCount=nq,
                     pQueuePriorities=prios)
        names = [ffi.new("char[]", e.encode()) for e in sorted(exts)]
        name_arr = ffi.new("char*[]", names)
        dci = vk.new("VkDeviceCreateInfo", pNext=f2, queueCreateInfoCount=1, pQueueCreateInfos=qci,
                     enabledExtensionCount=len(names), ppEnabledExtensionNames=name_arr)
        out = ffi.new("VkDevice*")
        vk.check(lib.vkCreateDevice(self.physical, dci, ffi.NULL, out), "vkCreateDevice")
        self.handle = out[0]
        self.cmd = DeviceCommands(vk, self.handle)
        self.queues = []
        for i in range(nq):
            q = ffi.new("VkQueue*")
            self.cmd.vkGetDeviceQueue(self.handle, family, i, q)
            self.queues.append(Queue(q[0], family, i))
        self._next_queue = itertools.count()

        props = ffi.new("VkPhysicalDeviceProperties*")
        lib.vkGetPhysicalDeviceProperties(self.physical, props)
        self.pipeline_cache_uuid = bytes(props.pipelineCacheUUID)

        # Constants every command buffer uses.
        work = lib.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | lib.VK_PIPELINE_STAGE_TRANSFER_BIT
        self.stages_work = work
        self.stages_host = lib.VK_PIPELINE_STAGE_HOST_BIT
        self.stage_compute = lib.VK_SHADER_STAGE_COMPUTE_BIT
        self.bind_compute = lib.VK_PIPELINE_BIND_POINT_COMPUTE
        writes = lib.VK_ACCESS_SHADER_WRITE_BIT | lib.VK_ACCESS_TRANSFER_WRITE_BIT
        self.barrier_work = vk.new("VkMemoryBarrier", srcAccessMask=writes, dstAccessMask=(
            lib.VK_ACCESS_SHADER_READ_BIT | lib.VK_ACCESS_SHADER_WRITE_BIT
            | lib.VK_ACCESS_TRANSFER_READ_BIT | lib.VK_ACCESS_TRANSFER_WRITE_BIT))
        self.barrier_host = vk.new("VkMemoryBarrier", srcAccessMask=writes,
                                   dstAccessMask=lib.VK_ACCESS_HOST_READ_BIT)
        # The same two barriers for vkCmdPipelineBarrier2 (synchronization2): a call of two
        # arguments instead of ten, which cffi converts each time (lavapipe: a third of the
        # host time of vkCmdPipelineBarrier's)
        # a stream's submission after its own previous one on the same queue begins with a
        # barrier instead of waiting for the previous ticket's semaphore (stream.py _begin);
        # CUPORT_VK_SELF_WAIT=1 waits as before (for measurements)
        self.self_wait = os.environ.get("CUPORT_VK_SELF_WAIT", "") == "1"
        self.barrier2 = None  # (CUPORT_VK_BARRIER2=0: vkCmdPipelineBarrier, for measurements)
        if (self.enabled_features.get("synchronization2")
                and os.environ.get("CUPORT_VK_BARRIER2", "") != "0"):
            self.barrier2 = self.cmd.vkCmdPipelineBarrier2
            work2 = lib.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT | lib.VK_PIPELINE_STAGE_2_TRANSFER_BIT
            writes2 = lib.VK_ACCESS_2_SHADER_WRITE_BIT | lib.VK_ACCESS_2_TRANSFER_WRITE_BIT
            self.dependency_work = vk.new("VkDependencyInfo", memoryBarrierCount=1,
                                          pMemoryBarriers=vk.new(
                "VkMemoryBarrier2", srcStageMask=work2, srcAccessMask=writes2, dstStageMask=work2,
                dstAccessMask=(lib.VK_ACCESS_2_SHADER_READ_BIT | lib.VK_ACCESS_2_SHADER_WRITE_BIT
                               | lib.VK_ACCESS_2_TRANSFER_READ_BIT
                               | lib.VK_ACCESS_2_TRANSFER_WRITE_BIT)))
            self.dependency_host = vk.new("VkDependencyInfo", memoryBarrierCount=1,
                                          pMemoryBarriers=vk.new(
                "VkMemoryBarrier2", srcStageMask=work2, srcAccessMask=writes2,
                dstStageMask=lib.VK_PIPELINE_STAGE_2_HOST_BIT,
                dstAccessMask=lib.VK_ACCESS_2_HOST_READ_BIT))

        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._deferred: list[tuple[list[tuple[Any, int]], Callable[[], None]]] = []
        self._deferred_lock = threading.Lock()
        self.dropped: queue.SimpleQueue = queue.SimpleQueue()  # handles of unclosed, collected streams
        self._dropped_live: list[Any] = []  # taken from `dropped`, not released yet
        self._counter = ffi.new("uint64_t*")
        self._waits = threading.local()  # each thread's structs for wait_value
        env_limit = os.environ.get("CUPORT_VK_WAIT_S")  # (a debugging aid: wait_value)
        self.wait_limit = float(env_limit) if env_limit else None
        try:
            self.memory = Memory(self)
            self.staging = StagingPool(self)
            self.pipelines = Pipelines(self)
        except BaseException:
            self.cmd.vkDestroyDevice(self.handle, ffi.NULL)
            raise
        self.pid = os.getpid()  # a forked child inherits the object, not the driver's threads
        _open_devices.add(self)
        exit_hook("device")

    # -- what the backend reports as device attributes ---------------------------------------------
    @property
    def managed_same_address(self) -> bool:
        """cuMemAllocManaged and cuMemHostAlloc give pointers that host and kernels both use."""
        return self.memory.strategy in ("identity", "alias")

    @property
    def unified_addressing(self) -> bool:
        """A pointer value names one thing: device allocations never have a host object's address."""
        return self.memory.unified

    @property
    def host_pointer_is_device_pointer(self) -> bool:
        """Registered host memory (cuMemHostRegister) is usable by kernels at its host address."""
        return self.memory.strategy == "identity"

    # -- memory ---------------------------------------------------------------------------------------
    def alloc(self, size: int, kind: str = DEVICE) -> Buffer:
        """`size` bytes of "device", "host" (pinned, mapped) or "managed" memory (memory.py)."""
        self._check()
        return self.memory.alloc(size, kind)

    def free(self, buf: Buffer) -> None:
        """Free an allocation; its memory is reused only after the work queued so far has run."""
        self.memory.free(buf)

    def find(self, address: int, size: int = 1) -> Buffer:
        return self.memory.find(address, size)

    def register_host(self, ptr: int, size: int) -> Buffer:
        self._check()
        return self.memory.register_host(ptr, size)

    def export_memory(self, buf: Buffer) -> tuple[int, bytes]:
        """A descriptor of `buf`'s memory (the caller closes it) and the description another
        process's import_memory needs (external.py)."""
        self._check()
        fd, desc = self.memory.export_fd(buf)
        return fd, desc.pack()

    def import_memory(self, fd: int, description: bytes) -> Buffer:
        """Another process's exported memory, at a device address of this process's; the
        descriptor is consumed. ValueError if the description is not this device's."""
        try:
            self._check()
            desc = external.Description.unpack(description)
        except BaseException:
            os.close(fd)
            raise
        return self.memory.import_fd(fd, desc)

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of the device-local heaps (cuMemGetInfo)."""
        heaps = [i for i, h in enumerate(self.info.memory_heaps) if h.device_local] or [0]
        total = sum(self.info.memory_heaps[i].size for i in heaps)
        if "VK_EXT_memory_budget" in self.enabled_extensions:
            vk = self.vk
            budget = vk.new("VkPhysicalDeviceMemoryBudgetPropertiesEXT")
            mp2 = vk.new("VkPhysicalDeviceMemoryProperties2", pNext=budget)
            vk.lib.vkGetPhysicalDeviceMemoryProperties2(self.physical, mp2)
            free = sum(max(0, budget.heapBudget[i] - budget.heapUsage[i]) for i in heaps)
            return min(free, total), total
        return max(0, total - self.memory.allocated), total

    # -- kernels ----------------------------------------------------------------------------------------
    def pipeline(self, spirv: Any, entry: str, local_size: tuple[int, int, int], push_size: int,
                 required_subgroup_size: int | None = None, full_subgroups: bool = False
                 ) -> Pipeline:
        """A compute pipeline for `entry` of `spirv` (bytes or 32-bit words); identical ones are shared."""
        self._check()
        return self.pipelines.get(spirv, entry, local_size, push_size, required_subgroup_size,
                                  full_subgroups)

    def destroy_pipeline(self, p: Pipeline) -> None:
        """Release a pipeline (module unload); queued launches of it still run."""
        self.pipelines.destroy(p)

    def stream(self, batch: int | None = None, eager: bool | None = None,
               host_paths: bool = True, submitter: bool | None = None) -> Stream:
        """A new stream, on the next of the device's queues (stream.py: batch, eager, host_paths,
        submitter). Defaults: CUPORT_VK_BATCH (256) commands a submission at most; while the
        GPU has fewer than CUPORT_VK_DEPTH (2) submissions of the stream left to run, what is
        recorded is submitted ("eager"), in a C program by a thread of the stream's, the
        submitter, in a Python program on the recording thread (a Python program may hold
        the GIL for a while after a launch, and the submitter would wait for it: up to the
        interpreter's switch interval, 5 ms, with the GPU idle); CUPORT_VK_SUBMIT=thread or
        =eager chooses either anywhere, =batch submits only when a batch is full or a result
        is needed."""
        self._check()
        if batch is None:
            batch = int(os.environ.get("CUPORT_VK_BATCH", "256") or 256)
        policy = os.environ.get("CUPORT_VK_SUBMIT") or ("thread" if _in_c_program() else "eager")
        if eager is None:
            eager = policy != "batch"
        if submitter is None:
            submitter = policy == "thread"
        depth = int(os.environ.get("CUPORT_VK_DEPTH", "2") or 2)
        q = self.queues[next(self._next_queue) % len(self.queues)]
        s = Stream(self, q, batch=max(1, batch), eager=eager, host_paths=host_paths, depth=depth,
                   submitter=submitter)
        self._streams.add(s)
        if os.environ.get("CUPORT_VK_SUBMISSIONS", "") not in ("", "0"):
            _count_submissions(s, policy, depth)
        return s

    def synchronize(self) -> None:
        """Wait for every stream's work (cuCtxSynchronize), dropped streams' included."""
        streams = [s for s in list(self._streams) if not s.destroyed]
        for s in streams:
            if not s.closed:
                s.submit()
        for s in streams:
            s.wait()
        self.collect()
        for h in list(self._dropped_live):
            if not h.released:
                self.wait_value(h.semaphore, h.submitted)
        self.collect()

    def wait_value(self, semaphore: Any, value: int, timeout_s: float | None = None) -> None:
        """Block until a timeline semaphore reaches `value`, in slices (a lost device is seen;
        CUPORT_VK_WAIT_S=N, read when the device opens, gives up after N seconds). The wait's
        structs are the calling thread's, made once (every synchronisation waits here)."""
        w = self._waits.__dict__.get("w")  # (getattr of one not set yet raises inside: slow)
        if w is None:  # (per thread: waits may come from several at once)
            ffi = self.vk.ffi
            sems = ffi.new("VkSemaphore[1]")
            vals = ffi.new("uint64_t[1]")
            info = self.vk.new("VkSemaphoreWaitInfo", semaphoreCount=1, pSemaphores=sems,
                               pValues=vals)
            w = self._waits.w = (info, sems, vals)
        info, sems, vals = w
        limit = timeout_s if timeout_s is not None else self.wait_limit
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            sems[0] = semaphore  # (each slice: nothing else may use them meanwhile, but
            vals[0] = value      # a signal handler's Python between slices could wait too)
            r = self.cmd.vkWaitSemaphores(self.handle, info, WAIT_SLICE_NS)
            if r == 0:
                return
            if r < 0:
                self.lost = True
                self.vk.check(r, "vkWaitSemaphores")
            if deadline is not None and time.monotonic() > deadline:
                raise VulkanError(f"GPU work did not finish within the wait limit (value {value})",
                                  "vkWaitSemaphores", r)

    # -- releasing what queued work may still use -------------------------------------------------------
    def defer(self, release: Callable[[], None], also: tuple[tuple[Any, int], ...] = ()) -> None:
        """Run `release` once every stream has finished the work recorded so far (at once if
        there is none): freed memory, destroyed streams and pipelines wait for their users.
        Streams dropped without close() count until their last submission has run."""
        pending = [w for w in also if not self._finished(*w)]
        for s in list(self._streams):
            if s.destroyed:
                continue
            t = s.mark()
            if t > s._done and s.completed() < t:
                pending.append((s, t))
        pending += [(h, h.submitted) for h in self._dropped_live
                    if h not in [w[0] for w in also] and not self._finished(h, h.submitted)]
        if not pending or self.lost:
            release()
            return
        with self._deferred_lock:
            self._deferred.append((pending, release))

    def _release_dropped(self, h: Any) -> None:
        _release_handles(self, h)
        self._dropped_live = [x for x in self._dropped_live if x is not h]

    def _finished(self, obj: Any, t: int) -> bool:
        if isinstance(obj, Stream):
            return t <= obj._done or (t <= obj.submitted and obj.completed() >= t)
        if obj.released:  # the handles of a dropped stream
            return True
        r = self.cmd.vkGetSemaphoreCounterValue(self.handle, obj.semaphore, self._counter)
        return r < 0 or self._counter[0] >= t

    def collect(self) -> None:
        """Run the deferred releases whose work has finished (called at allocations, waits, close)."""
        if not self._deferred and self.dropped.empty():
            return
        while not self.dropped.empty():
            h = self.dropped.get()
            self._dropped_live.append(h)
            self.defer(lambda h=h: self._release_dropped(h), also=((h, h.submitted),))
        with self._deferred_lock:
            ready, waiting = [], []
            for item in self._deferred:
                done = self.lost or all(self._finished(obj, t) for obj, t in item[0])
                (ready if done else waiting).append(item)
            self._deferred = waiting
        for _, release in ready:
            release()

    # -- end ------------------------------------------------------------------------------------------------
    def _check(self) -> None:
        if self.closed:
            raise VulkanUnavailable("the device was closed")
        if _shut_down:
            raise VulkanUnavailable("the Vulkan driver shut down (the process is exiting)")
        if self.lost:
            raise DeviceLost("the device was lost; no more work can run on it")

    def close(self) -> None:
        """Finish all work and release everything (also run at exit for devices left open)."""
        if self.closed:
            return
        try:
            if not self.lost:
                self.synchronize()
        except Exception:
            pass
        for s in list(self._streams):
            try:
                s.close()
            except Exception:
                pass
        self.cmd.vkDeviceWaitIdle(self.handle)
        while not self.dropped.empty():
            self._dropped_live.append(self.dropped.get())
        for h in self._dropped_live:
            _release_handles(self, h)
        self._dropped_live = []
        with self._deferred_lock:
            ready, self._deferred = self._deferred, []
        for _, release in ready:
            try:
                release()
            except Exception:
                pass
        self.pipelines.close()
        self.staging.close()
        self.memory.release_all()
        self.cmd.vkDestroyDevice(self.handle, self.vk.ffi.NULL)
        self.closed = True
        _open_devices.discard(self)


_open_devices: weakref.WeakSet[Device] = weakref.WeakSet()
_opened: dict[int, Device] = {}
_open_lock = threading.Lock()


def open(index: int = 0) -> Device:  # noqa: A001 (the contract's name)
    """The device at `index` of devices(), opened once per process (later calls share it)."""
    with _open_lock:
        dev = _opened.get(index)
        if dev is not None and not dev.closed:
            return dev
        found = devices()
        if not 0 <= index < len(found):
            from .probe import unavailable_reason

            why = unavailable_reason()
            raise VulkanUnavailable(f"no Vulkan device {index} ({len(found)} found"
                                    + (f"; {why}" if why else "") + ")")
        dev = Device(found[index])
        _opened[index] = dev
        return dev


# -- the end of a C program ---------------------------------------------------------------------
# In a C program (cuport's libcuda embeds Python, which is never finalised) the CUDA runtime's
# exit handler releases its context from libc's exit(), and NVIDIA's Vulkan driver shuts
# itself down from an exit handler of its own that may run first: a Vulkan call after that
# crashed the process at exit (SIGSEGV in vkFreeMemory, vkGetSemaphoreCounterValue; H200).
# So cuport registers an exit handler of its own after the driver had its chances to
# register one (the device opened, its first pipeline, its first submission: handlers run
# in the reverse order of registration); it stops every Vulkan call (binding.DeviceCommands
# .shut_down): releases and waits then do nothing, anything else fails. Python programs
# finalise their interpreter first and close the devices (_close_all), so nothing is
# registered there.
_exit_points: set[str] = set()
_exit_hooks: list[Any] = []  # the ctypes callbacks, kept alive
_shut_down = False
_before_exit: list[Callable[[], None]] = []  # last words that still use the device


_at_shut_down: list[Callable[[], None]] = []  # told before the devices are closed at exit


def before_exit(fn: Callable[[], None]) -> None:
    """Call fn at exit while Vulkan calls still work (CUPORT_VK_PROFILE's report)."""
    _before_exit.append(fn)


def at_shut_down(fn: Callable[[], None]) -> None:
    """Call fn when the devices are about to be closed at the end of a Python program: no
    call may reach them afterwards (the driver then answers as after the interpreter's end;
    the exit handlers of packages that registered theirs before the device opened run later,
    and touched memory that was no longer mapped)."""
    if fn not in _at_shut_down:
        _at_shut_down.append(fn)


_counted: list[tuple[str, list[int]]] = []  # CUPORT_VK_SUBMISSIONS=1: (stream, its counts)


def _queue_family(info: DeviceInfo) -> int:
    """The queue family streams use: properties' choice (compute, timestamps, most queues),
    or CUPORT_VK_QUEUE_FAMILY=N (to compare families: on NVIDIA's driver the first family
    has 16 graphics-and-compute queues, another 8 compute-only ones)."""
    raw = os.environ.get("CUPORT_VK_QUEUE_FAMILY", "")
    if not raw:
        return info.compute_family
    fams = info.queue_families
    if not raw.isdigit() or int(raw) >= len(fams) or "compute" not in fams[int(raw)].flags:
        computes = [i for i, f in enumerate(fams) if "compute" in f.flags]
        raise Unsupported(f"CUPORT_VK_QUEUE_FAMILY={raw!r}: {info.name}'s queue families that "
                          f"compute are {computes}")
    return int(raw)


def _count_submissions(s: Stream, policy: str, depth: int) -> None:
    """Keep s's counts (Stream.counts) for the report at exit: how many commands went to the
    GPU in how many submissions (a launch's host cost includes its share of one), how many
    times the submitter thread was woken and took a turn (bench/launch_ab.py's figures)."""
    if not _counted:
        before_exit(_report_submissions)
    _counted.append((f"stream {len(_counted)} ({policy}, depth {depth}, queue "
                     f"{s.queue.index})", s.counts))


def _report_submissions() -> None:
    import sys

    for name, (commands, submissions, rounds, kicks) in _counted:
        if submissions or kicks:
            print(f"cuport: {name}: {commands} commands in {submissions} submissions "
                  f"({commands / max(submissions, 1):.1f} each); submitter woken {kicks} times, "
                  f"{rounds} turns", file=sys.stderr)


def _last_words() -> None:
    while _before_exit:
        try:
            _before_exit.pop()()
        except Exception:  # (an exit handler must not take the others down)
            pass


def _on_exit() -> None:
    """A C program's exit: the driver's pipeline cache goes to disk (a C program's
    interpreter is never finalised, so Device.close does not run: every run compiled every
    pipeline in the driver anew), then no command reaches the driver. A forked child that
    calls exit() only shuts its copy off: the streams' threads and the device are its
    parent's."""
    global _shut_down
    if all(dev.pid == os.getpid() for dev in _open_devices):  # (not the parent's reports)
        _last_words()
    _shut_down = True
    for dev in list(_open_devices):
        if dev.pid != os.getpid():
            dev.cmd.shut_down()
            continue
        for s in list(dev._streams):
            s.quiesce()
        try:
            dev.pipelines.save()
        except Exception:  # (best effort, as save itself: an exit handler must not fail)
            pass
        dev.cmd.shut_down()


def exit_hook(point: str) -> None:
    """Register the exit handler (once per `point`) when running inside a C program."""
    if point in _exit_points or not _in_c_program():
        return
    _exit_points.add(point)
    import ctypes

    hook = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _arg: _on_exit())
    try:  # atexit() itself is a static wrapper of this
        if ctypes.CDLL(None).__cxa_atexit(hook, None, None) == 0:
            _exit_hooks.append(hook)
    except (AttributeError, OSError):  # not glibc: no handler, as before
        pass


def _in_c_program() -> bool:
    """Whether this interpreter is the one cuport's libcuda started for a C program (it has
    no command line of its own; a Python program, the REPL included, has one)."""
    import sys

    return not getattr(sys, "orig_argv", [""])


@atexit.register
def _close_all() -> None:
    _last_words()
    if _open_devices:
        for fn in _at_shut_down:
            fn()
    for dev in list(_open_devices):
        try:
            dev.close()
        except Exception:
            pass
