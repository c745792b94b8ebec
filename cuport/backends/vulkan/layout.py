"""What the generated shaders and the Vulkan backend's Python side agree on.

A launch passes one push-constant block (PUSH); everything larger lives in device memory
reached through buffer device addresses: the packed kernel parameters, the table of the
module's `.global`/`.const` variables, the launch status record (first error wins) and
the printf ring. Generic addresses of shared and local memory are windows far above any
device address (NVIDIA's and lavapipe's device addresses stay below 2^48), so a generic
pointer says by its value which space it points into. A kernel whose shared memory is in
device memory finds its block's slice from the pool and the dispatch's first block
(slices.py).
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
    ("shared_pool", 104, "u64"),  # shared memory in device memory (slices.py): the slices
    ("shared_first", 112, "u64"),  # the linear index of the dispatch's first block (slice 0's)
    ("launches", 120, "u64"),  # dynamic parallelism: the device's launch area (LQ_*), or 0
)
PUSH = {name: (off, t) for name, off, t in PUSH_FIELDS}
PUSH_BYTES = 128  # (Vulkan's least maxPushConstantsSize, all of it; no address is a constant
#                   in the SPIR-V: the SPIR-V cache may reuse it)

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
ERR_ILLEGAL_INSTRUCTION = 7
ERROR_NAMES = {
    ERR_TRAP: "the kernel executed trap",
    ERR_ASSERT: "a device-side assert failed",
    ERR_ILLEGAL_ADDRESS: "illegal address",
    ERR_MISALIGNED: "misaligned address",
    ERR_LOOP_LIMIT: "a thread's loops ran longer than this Vulkan driver lets a shader loop "
                    "(lavapipe ends a loop early once the 8 threads it runs together have made "
                    "65535 loop passes in all, so the results would be wrong; "
                    "backends/vulkan/loops.py)",
    ERR_STACK: "the per-thread stack overflowed (deep recursion)",  # arg: the stack's bytes
    ERR_ILLEGAL_INSTRUCTION: "illegal instruction",
}
FAILURE_KINDS = {"trap": ERR_TRAP, "assert": ERR_ASSERT, "illegal_address": ERR_ILLEGAL_ADDRESS,
                 "misaligned": ERR_MISALIGNED, "illegal_instruction": ERR_ILLEGAL_INSTRUCTION}

#: printf ring: u32 next free byte (from RING_DATA), u32 capacity, then records of
#: u32 record bytes, u32 argument bytes, u64 format address, argument bytes (8-aligned)
RING_HEAD, RING_CAP, RING_DATA = 0, 4, 16
#: a record whose argument bytes are RING_ASSERT is a failed assert's line: its format is the
#: message, then u64 file, u64 function, u32 line, u32 ctaid.xyz, u32 tid.xyz, u32 pad
RING_ASSERT = 0xFFFFFFFF
RING_ASSERT_ARGS = struct.Struct("<QQIIIIIIII")
RING_BYTES = 1 << 20

#: generic-address windows of shared and local memory
SHARED_WINDOW = 1 << 62
LOCAL_WINDOW = (1 << 62) + (1 << 48)
WINDOW_BYTES = 1 << 48
WINDOW = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}


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
    shared: tuple[int, int] = (0, 0)  # (slice pool, linear index of the first block)
    launches: int = 0

    def pack(self) -> bytes:
        return pack_push(self.params, self.status, self.globals, self.printf, self.grid,
                         self.base, self.dyn_smem, self.grid_workspace, self.heap, self.pages,
                         self.shared, self.launches)


# the push constants (Push's fields in order, "<4Q7IIQQQQQQQQ") as a launch's own part (its slot's parameter and status addresses) and the rest, which
# launches of one kernel and shape share (backend.py LaunchPlan: packed once for them)
_PUSH_HEAD = struct.Struct("<QQ")
_PUSH_TAIL = struct.Struct("<2Q7IIQQQQQQQQ")
assert _PUSH_HEAD.size + _PUSH_TAIL.size == PUSH_BYTES


def push_head(params: int, status: int) -> bytes:
    """The first 16 bytes of the push constants: the launch's parameters and status record."""
    return _PUSH_HEAD.pack(params, status)


def push_tail(globals_: int, printf: int, grid: tuple[int, int, int],
              base: tuple[int, int, int], dyn_smem: int, grid_workspace: int,
              heap: tuple[int, int], pages: tuple[int, int],
              shared: tuple[int, int] = (0, 0), launches: int = 0) -> bytes:
    """The push constants after push_head."""
    lo, hi = heap
    return _PUSH_TAIL.pack(globals_, printf, *grid, *base, dyn_smem, 0, grid_workspace,
                           lo, max(hi - lo, 0) & ((1 << 64) - 1), *pages, *shared, launches)


def pack_push(params: int, status: int, globals_: int, printf: int, grid: tuple[int, int, int],
              base: tuple[int, int, int], dyn_smem: int, grid_workspace: int,
              heap: tuple[int, int], pages: tuple[int, int],
              shared: tuple[int, int] = (0, 0), launches: int = 0) -> bytes:
    """Push's bytes without building a Push."""
    return push_head(params, status) + push_tail(globals_, printf, grid, base, dyn_smem,
                                                 grid_workspace, heap, pages, shared, launches)


#: Dynamic parallelism (device_launch.py, lower_launch.py): the launch area, one per device,
#: reset before each grid that may launch: a header, the queue of launch records, the arena
#: that parameter buffers are bumped from. Header fields (the counts are 64-bit: atomic adds
#: past the end, by launches that are then refused, never wrap):
LQ_COUNT = 0  # u64 launches that took a place in the queue (past LQ_CAPACITY: refused)
LQ_HEAD = 8  # u64 arena bytes handed out (past LQ_ARENA_BYTES: refused requests)
LQ_CAPACITY = 16  # u32 records the queue holds
LQ_ARENA_BYTES = 20  # u32 bytes of the arena
LQ_MAY_LAUNCH = 24  # u32 1 unless the grid is at CUDA's nesting limit
LQ_EPOCH = 28  # u32 tag of this grid's parameter buffers (never 0, below PB_LAUNCHED)
LQ_NFUNCS = 32  # u32 entries of the kernel table
LQ_KERNELS = 40  # u64 the module's kernel table: per function (in the module's order) u32
#                  parameter bytes, u32 threads per block at most (0: not a kernel)
LQ_RECORDS = 48  # u64 address of the queue
LQ_ARENA = 56  # u64 address of the arena
LQ_RESET_BYTES = 64  # the fields above: written before each grid
LQ_HANDLES = 64  # u64 streams and events made in device code (never reset)
LQ_HEADER_BYTES = 128
#: a launch record: kernel token, grid, block, dynamic shared bytes, the parameter buffer's
#: arena offset, stream
LR_TOKEN, LR_GRID, LR_BLOCK, LR_SHARED, LR_PARAMS, LR_STREAM = 0, 8, 20, 32, 36, 40
LR_STRUCT = struct.Struct("<Q3I3IIIQ")
LR_BYTES = LR_STRUCT.size
#: a parameter buffer's header, the PB_HEADER_BYTES (cudaGetParameterBuffer's alignment)
#: before it in the arena: its tag (the grid's epoch; PB_LAUNCHED added once launched: a
#: buffer launches once), its bytes, what cudaGetParameterBufferV2 was told (token 0: V1)
PB_TAG, PB_BYTES, PB_TOKEN, PB_GRID, PB_BLOCK, PB_SHARED = 0, 4, 8, 16, 28, 40
PB_HEADER_BYTES = 64
PB_LAUNCHED = 1 << 31
