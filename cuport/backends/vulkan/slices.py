"""Shared memory in device memory, for kernels whose shared memory does not fit the device's
workgroup memory (Vulkan drivers give 32 KiB (lavapipe) to 48 KiB (NVIDIA's); CUDA gives
48 KiB without asking and up to 227 KiB by opt-in on an H200).

Such a kernel (lower.py plan_layout: static + dynamic shared memory + cuport's scratch over
DeviceCaps.workgroup_memory) has no Workgroup array: each block's shared memory is a slice
of one device buffer, the pool, at pool + (its linear block index - the first of its
dispatch) x slice bytes (push constants shared_pool and shared_first), with the same
offsets, generic-address window, barriers and atomics as workgroup memory (lower.py).
A launch is dispatched in chunks of at most `slots` blocks, consecutive in linear order,
each a box of the grid (vkCmdDispatchBase), separated by the stream's barrier between
commands: no two blocks that may run at once share a slice.

Why chunks and not slots taken from a free list by an atomic: a block that found none free
would spin until another block ended, and Vulkan promises no forward progress between
workgroups (lavapipe also ends loops early once 8 invocations made 65535 passes in all,
loops.py); chunks ask nothing of the device. Their price is a drain of the queue between
chunks, so a chunk holds several waves of the blocks the device runs at once (WAVES;
measured on lavapipe, see DESIGN.md), within POOL_BYTES. Slices are not cleared: CUDA's
shared memory starts undefined, and only this process's kernels ever wrote the pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

from ..base import CUDA_ERROR_OUT_OF_MEMORY, BackendError
from . import cooperative

#: shared memory CUDA lets a block opt in to on an H200 (cudaDevAttrMaxSharedMemoryPerBlockOptin)
OPTIN_BYTES = 227 * 1024
#: CUDA's per-block shared memory without opting in
DEFAULT_BYTES = 48 * 1024
#: CUDA's shared memory per multiprocessor on an H200
PER_MULTIPROCESSOR_BYTES = 228 * 1024
SLICE_ALIGN = 256  # a slice starts on its own cache lines
POOL_BYTES = 256 << 20  # at most this much device memory for the slices of one launch
POOL_SHARE = 8  # ... and at most this share of the device-local memory
WAVES = 8  # a chunk holds this many waves of the blocks the device runs at once, where known
UNKNOWN_RESIDENT = 1024  # blocks a device of unknown residency is taken to run at once
MAX_CHUNKS = 64  # ... and a launch is at most this many chunks, where the budget allows


def slice_bytes(shared_bytes: int) -> int:
    """The stride of the slices of a kernel with `shared_bytes` of shared memory."""
    return -(-max(shared_bytes, 1) // SLICE_ALIGN) * SLICE_ALIGN


def budget(info) -> int:
    """The bytes the pool may take on this device."""
    heaps = [h.size for h in info.memory_heaps if h.device_local] or [h.size for h in info.memory_heaps]
    return min(POOL_BYTES, max(heaps, default=0) // POOL_SHARE)


def available(info) -> bool:
    """Whether the device's memory holds the slices of CUDA's largest blocks (the device
    attributes then offer CUDA's shared-memory sizes, attributes.py)."""
    return budget(info) >= slice_bytes(OPTIN_BYTES + 16 * 1024)  # (with cuport's scratch)


def resident(info, threads: int) -> int | None:
    """How many blocks of `threads` threads the device runs at once (None: not known).
    A kernel with its shared memory in device memory uses no workgroup memory for it."""
    sms = cooperative.multiprocessors(info)
    if sms is None:
        return None
    return sms * max(cooperative.blocks_per_multiprocessor(info, threads, 0), 1)


def slots(info, threads: int, nbytes: int, nblocks: int, cooperative_launch: bool = False) -> int:
    """The slices a launch of `nblocks` blocks gets (its chunks' most blocks): WAVES waves of
    the blocks the device runs at once, or more where the grid would take more than
    MAX_CHUNKS chunks (each is a dispatch, a barrier and host work), within the pool's
    budget; every block at once for a cooperative launch (its blocks wait for each other in
    grid.sync()). CUPORT_VK_SHARED_SLOTS=N sets it (tests, measurements)."""
    if cooperative_launch:
        return nblocks
    env = os.environ.get("CUPORT_VK_SHARED_SLOTS")
    if env:
        return max(1, min(int(env), nblocks))
    want = max(WAVES * (resident(info, threads) or UNKNOWN_RESIDENT), -(-nblocks // MAX_CHUNKS))
    return max(1, min(nblocks, want, budget(info) // nbytes))


def chunks(grid: tuple[int, int, int], slots: int
           ) -> Iterator[tuple[tuple[int, int, int], tuple[int, int, int], int]]:
    """(base, size, linear index of the first block) of each chunk of the grid: boxes of at
    most `slots` blocks whose linear indices (x fastest) are consecutive, in order."""
    gx, gy, gz = grid
    if slots >= gx * gy * gz:
        yield (0, 0, 0), grid, 0
    elif slots >= gx * gy:
        step = slots // (gx * gy)
        for z in range(0, gz, step):
            yield (0, 0, z), (gx, gy, min(step, gz - z)), z * gx * gy
    elif slots >= gx:
        step = slots // gx
        for z in range(gz):
            for y in range(0, gy, step):
                yield (0, y, z), (gx, min(step, gy - y), 1), (z * gy + y) * gx
    else:
        for z in range(gz):
            for y in range(gy):
                for x in range(0, gx, slots):
                    yield (x, y, z), (min(slots, gx - x), 1, 1), (z * gy + y) * gx + x


class Pool:
    """The backend's slices: one device buffer, grown when a launch needs more (the old one
    is freed after the work queued on it, runtime/memory.py)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.buf = None
        self.lock = threading.Lock()

    def address(self, nbytes: int) -> int:
        with self.lock:
            if self.buf is None or self.buf.size < nbytes:
                old, self.buf = self.buf, None
                if old is not None:
                    self.backend.dev.free(old)
                try:
                    self.buf = self.backend.allocate_buffer(nbytes)
                except BackendError as e:
                    raise BackendError(CUDA_ERROR_OUT_OF_MEMORY,
                                       f"{nbytes} bytes of device memory for the shared memory of "
                                       f"blocks that do not fit the device's workgroup memory: "
                                       f"{e}") from None
            return self.buf.address
