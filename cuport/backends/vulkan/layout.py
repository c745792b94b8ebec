"""What the generated shaders and the Vulkan backend's Python side agree on.

A launch passes one push-constant block (PUSH); everything larger lives in device memory
reached through buffer device addresses: the packed kernel parameters, the table of the
module's `.global`/`.const` variables, the launch status record (first error wins) and
the printf ring. Generic addresses of shared and local memory are windows far above any
device address (NVIDIA's and lavapipe's device addresses stay below 2^48), so a generic
pointer says by its value which space it points into.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: push-constant block: (name, byte offset, PTX-ish type)
PUSH_FIELDS = (
    ("params", 0, "u64"),  # packed kernel parameters
    ("status", 8, "u64"),  # the launch's status record
    ("globals", 16, "u64"),  # table of u64 addresses of the module's variables
    ("printf", 24, "u64"),  # printf ring
    ("grid_x", 32, "u32"),
    ("grid_y", 36, "u32"),
    ("grid_z", 40, "u32"),
    ("base_x", 44, "u32"),  # first block of a dispatch split along x (grids over the device limit)
    ("base_y", 48, "u32"),
    ("base_z", 52, "u32"),
    ("dyn_smem", 56, "u32"),
    ("pad", 60, "u32"),
    ("grid_workspace", 64, "u64"),  # cooperative launches: grid.sync()'s workspace
    ("heap_lo", 72, "u64"),  # device addresses of memory: [heap_lo, heap_lo + heap_span)
    ("heap_span", 80, "u64"),
    ("zero_page", 88, "u64"),  # zeroed memory: loads from wild addresses, NULL texture objects
    ("sink_page", 96, "u64"),  # stores to wild addresses land here
)
PUSH = {name: (off, t) for name, off, t in PUSH_FIELDS}
PUSH_BYTES = 104  # (no address is a constant in the SPIR-V: the SPIR-V cache may reuse it)

#: status record: the first failing thread writes kind (compare-and-swap from 0), then the rest
STATUS_FIELDS = (
    ("kind", 0, "u32"),
    ("line", 4, "u32"),
    ("ctaid_x", 8, "u32"), ("ctaid_y", 12, "u32"), ("ctaid_z", 16, "u32"),
    ("tid_x", 20, "u32"), ("tid_y", 24, "u32"), ("tid_z", 28, "u32"),
    ("arg", 32, "u64"),  # kind-specific: the faulting address, the assert message pointer,
    #                      the stack limit
    ("file", 40, "u64"),  # assert: file name pointer
    ("func", 48, "u64"),  # assert: function name pointer
    ("aline", 56, "u32"),  # assert: source line
    ("done", 60, "u32"),  # set by the failing thread after the other fields
)
STATUS = {name: off for name, off, _ in STATUS_FIELDS}
STATUS_BYTES = 64

ERR_TRAP, ERR_ASSERT, ERR_ILLEGAL_ADDRESS, ERR_MISALIGNED, ERR_LOOP_LIMIT, ERR_STACK = 1, 2, 3, 4, 5, 6
ERROR_NAMES = {
    ERR_TRAP: "the kernel executed trap",
    ERR_ASSERT: "a device-side assert failed",
    ERR_ILLEGAL_ADDRESS: "illegal address",
    ERR_MISALIGNED: "misaligned address",
    ERR_LOOP_LIMIT: "a thread's loops ran longer than this Vulkan driver lets a shader loop "
                    "(lavapipe ends them after 65535 iterations in all, so the results would "
                    "be wrong; backends/vulkan/loops.py)",
    ERR_STACK: "the per-thread stack overflowed (deep recursion)",  # arg: the stack's bytes
}
FAILURE_KINDS = {"trap": ERR_TRAP, "assert": ERR_ASSERT, "illegal_address": ERR_ILLEGAL_ADDRESS,
                 "misaligned": ERR_MISALIGNED}

#: printf ring: u32 next free byte (from RING_DATA), u32 capacity, then records of
#: u32 record bytes, u32 argument bytes, u64 format address, argument bytes (8-aligned)
RING_HEAD, RING_CAP, RING_DATA = 0, 4, 16
RING_BYTES = 1 << 20

#: generic-address windows of shared and local memory
SHARED_WINDOW = 1 << 62
LOCAL_WINDOW = (1 << 62) + (1 << 48)
WINDOW_BYTES = 1 << 48


@dataclass(frozen=True)
class Push:
    """The values of one dispatch's push-constant block."""

    params: int
    status: int
    globals: int
    printf: int
    grid: tuple[int, int, int]
    base: tuple[int, int, int]
    dyn_smem: int
    grid_workspace: int = 0
    heap: tuple[int, int] = (0, (1 << 64) - 1)  # (lowest device address, highest + 1)
    pages: tuple[int, int] = (0, 0)  # (zero page, sink page)

    def pack(self) -> bytes:
        return pack_push(self.params, self.status, self.globals, self.printf, self.grid,
                         self.base, self.dyn_smem, self.grid_workspace, self.heap, self.pages)


_PUSH = struct.Struct("<4Q7IIQQQQQ")
assert _PUSH.size == PUSH_BYTES


def pack_push(params: int, status: int, globals_: int, printf: int, grid: tuple[int, int, int],
              base: tuple[int, int, int], dyn_smem: int, grid_workspace: int,
              heap: tuple[int, int], pages: tuple[int, int]) -> bytes:
    """Push's bytes without building a Push (every launch packs one)."""
    lo, hi = heap
    return _PUSH.pack(params, status, globals_, printf, *grid, *base, dyn_smem, 0, grid_workspace,
                      lo, max(hi - lo, 0) & ((1 << 64) - 1), *pages)
