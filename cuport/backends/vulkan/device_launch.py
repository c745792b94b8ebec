"""Dynamic parallelism on the Vulkan backend, host side: the launch area and what the host
does with it (the device side is lower_launch.py, the rules backends/device_launch.py).

A kernel whose code reaches a launch-area syscall (`may_launch`) is dispatched after the
area's header is reset in stream order (empty queue and arena, a new epoch for its
parameter buffers, whether it is at CUDA's nesting limit, its module's kernel table) and is
waited for; the host then reads the queue and the arena and the backend runs the children
in the shared order, each child that may launch in turn the same way. A grid and all it
launched are so on the device's queue before anything handed over after it, as CUDA 12
requires (a grid completes with its children), and one area serves every grid: the area is
read before the next grid that uses it starts.

The area is device memory, made at the first such launch: CUPORT_VK_LAUNCH_QUEUE records
(65536 by default, at most the shared PENDING_CAP) and 256 bytes of arena for each. A grid
that launches more, or asks for more parameter memory, gets CUDA's pending-count error on
the launch (or the buffer) that does not fit.
"""

from __future__ import annotations

import ctypes
import os
import struct

from ...ptx.callgraph import reached_symbols
from .. import device_launch as cdp
from ..base import CUDA_ERROR_INVALID_VALUE, BackendError
from . import layout as V
from .lower_launch import uses_launch_area

DEFAULT_RECORDS = 1 << 16
ARENA_PER_RECORD = 256
_HEADER = struct.Struct("<QQIIIIIIQQQ")  # the fields up to LQ_RESET_BYTES
assert _HEADER.size == V.LQ_RESET_BYTES


def may_launch(module, fn) -> bool:
    """Whether the kernel `fn` can reach a device-runtime call that uses the launch area."""
    return uses_launch_area(reached_symbols(module.ptx, fn))


def queue_records() -> int:
    raw = os.environ.get("CUPORT_VK_LAUNCH_QUEUE", "")
    try:
        n = int(raw) if raw else DEFAULT_RECORDS
    except ValueError:
        raise BackendError(CUDA_ERROR_INVALID_VALUE, f"CUPORT_VK_LAUNCH_QUEUE={raw!r} is not a "
                                                     "number of launch records") from None
    return max(1, min(n, cdp.PENDING_CAP, (1 << 31) // ARENA_PER_RECORD))


def kernel_table(module) -> bytes:
    """LQ_KERNELS: per function of the module, in its order, (parameter bytes, threads per
    block at most), (0, 0) for what is not a kernel."""
    out = bytearray()
    for name, fn in module.ptx.functions.items():
        if fn.is_entry and fn.is_definition:
            info = module.kernel(name).info
            out += struct.pack("<II", info.param_size, info.max_threads_per_block)
        else:
            out += bytes(8)
    return bytes(out)


class LaunchArea:
    """The device's launch area (layout.py LQ_*)."""

    def __init__(self, backend, records: int) -> None:
        self.backend = backend
        self.records = records
        self.arena_bytes = records * ARENA_PER_RECORD
        queue = -(-records * V.LR_BYTES // cdp.PARAM_ALIGN) * cdp.PARAM_ALIGN
        self.buffer = backend.allocate_buffer(V.LQ_HEADER_BYTES + queue + self.arena_bytes)
        self.address = self.buffer.address
        self.queue = self.address + V.LQ_HEADER_BYTES
        self.arena = self.queue + queue
        self.epoch = 0
        backend.stream.fill(self.address, 0, V.LQ_HEADER_BYTES, 1)

    def reset(self, module, depth: int) -> int:
        """Make the area ready for a grid of `module` at `depth` (in stream order, before its
        dispatch); its address, for the push constants."""
        self.epoch = self.epoch % (V.PB_LAUNCHED - 1) + 1
        table = module.launch_table()
        header = _HEADER.pack(0, 0, self.records, self.arena_bytes, int(cdp.may_launch(depth)),
                              self.epoch, len(module.ptx.functions), 0, table, self.queue,
                              self.arena)
        self.backend.stream.update(self.address, header)
        return self.address

    def read(self, module) -> list[cdp.DeviceLaunch]:
        """The launches of the grid that has just completed, in the order they were issued."""
        stream = self.backend.stream
        head = ctypes.create_string_buffer(16)
        stream.copy_to_host(ctypes.addressof(head), self.address, 16)
        count, used = struct.unpack("<QQ", head.raw)
        n = min(count, self.records)
        if not n:
            return []
        records = ctypes.create_string_buffer(n * V.LR_BYTES)
        stream.copy_to_host(ctypes.addressof(records), self.queue, n * V.LR_BYTES)
        used = min(used, self.arena_bytes)
        arena = ctypes.create_string_buffer(max(used, 1))
        stream.copy_to_host(ctypes.addressof(arena), self.arena, used)
        out = []
        for token, gx, gy, gz, bx, by, bz, shared, at, s in V.LR_STRUCT.iter_unpack(records.raw):
            name = cdp.kernel_of_token(module.ptx, token)
            if name is None or not V.PB_HEADER_BYTES <= at <= used:
                raise BackendError(CUDA_ERROR_INVALID_VALUE, f"internal: a device-side launch "
                                                             f"record names {hex(token)} at {at}")
            size = module.kernel(name).info.param_size
            room = struct.unpack_from("<I", arena.raw, at - V.PB_HEADER_BYTES + V.PB_BYTES)[0]
            params = arena.raw[at:at + min(size, room)]
            out.append(cdp.DeviceLaunch(name, (gx, gy, gz), (bx, by, bz), shared,
                                        params + bytes(size - len(params)), s))
        return out
