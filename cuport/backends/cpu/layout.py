"""Memory layouts shared by the generated code and the Python side of the CPU backend.

A launch is described by a `LaunchCtx` that Python fills and every worker thread reads.
Each worker owns a scratch area: a `BlockState` for the block it is running, the block's
shared memory, one `WarpState` per warp (where a warp suspended at a barrier keeps its
live registers and pending-lane masks) and the per-lane local memory windows.
All offsets are in bytes; fields are naturally aligned.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from ...isa.types import WARP  # noqa: F401 (lanes per warp, also the SIMD width of the generated code)

#: what a warp function returns to the block runner
DONE, SUSPENDED, FAILED, YIELDED = 0, 1, 2, 3
MAX_BARRIERS = 16  # named barriers 0..15 per CTA


class LaunchCtx(ctypes.Structure):
    _fields_ = [
        ("params", ctypes.c_void_p),  # packed kernel parameter buffer
        ("grid_x", ctypes.c_uint32),
        ("grid_y", ctypes.c_uint32),
        ("grid_z", ctypes.c_uint32),
        ("dyn_smem", ctypes.c_uint32),  # dynamic shared memory bytes of this launch
        ("nblocks", ctypes.c_uint64),
        ("next_block", ctypes.c_uint64),  # next block to hand out (atomic)
        ("scratch", ctypes.c_void_p),  # array of per-worker scratch pointers
        ("error", ctypes.c_uint32),  # 0, or an error kind (below); first writer wins
        ("error_line", ctypes.c_uint32),  # PTX line of the failing instruction
        ("error_block", ctypes.c_uint64),  # linear block index where it happened
        ("error_arg", ctypes.c_uint64),  # kind-specific detail (e.g. the faulting lane mask)
        ("clock_base", ctypes.c_uint64),
        ("chunk", ctypes.c_uint32),  # blocks taken per grab
        ("pad0", ctypes.c_uint32),
        ("slot_bytes", ctypes.c_uint64),  # scratch of one resident block
        # cooperative launches: the grid workspace {wsSize, barrier} that cooperative
        # groups' grid.sync() finds through %envreg1 (high half) and %envreg2 (low half)
        ("grid_workspace", ctypes.c_uint64),
    ]


# error kinds written to LaunchCtx.error
ERR_TRAP = 1
ERR_DEADLOCK = 2
ERR_STACK = 3
ERR_ASSERT = 4
ERR_MISALIGNED = 5
ERR_ILLEGAL_ADDRESS = 6
ERR_CONVERGENCE = 7
ERR_INTERRUPTED = 8  # stopped from outside (guard.c's cuport_cancel): ^C in a Python program
ERR_REGION = 9  # lanes pending at a block outside the region a warp runs (a cuport bug)
ERR_ILLEGAL_INSTRUCTION = 10

ERROR_NAMES = {
    ERR_TRAP: "the kernel executed trap",
    ERR_DEADLOCK: "a barrier can never complete (some threads of the block never reach it)",
    ERR_STACK: "the per-thread stack overflowed (deep recursion); raise cudaLimitStackSize",
    ERR_ASSERT: "a device-side assert failed",
    ERR_MISALIGNED: "misaligned address",
    ERR_ILLEGAL_ADDRESS: "illegal address",
    ERR_ILLEGAL_INSTRUCTION: "illegal instruction",
    ERR_INTERRUPTED: "interrupted (SIGINT) before it finished: the launch was stopped",
    ERR_CONVERGENCE: "internal error: a converged block ran with part of the warp (cuport bug; "
                     "CUPORT_CHECK_CONVERGENCE found it)",
    ERR_REGION: "internal error: a warp had lanes waiting outside the region it ran (cuport bug: "
                "region loops; CUPORT_NO_REGION_LOOPS=1 avoids it)",
}

# BlockState: fixed header followed by per-barrier arrays
BS_CTAID = 0  # 3 x u32
BS_EXITED = 12  # u32 threads of the block that have exited
BS_EVENTS = 16  # u32 counter bumped by every arrival or exit (deadlock detection)
BS_RELEASE = 20  # u32 simple protocol: warps waiting at barrier 0 may resume this round
BS_LINEAR = 24  # u64 linear block index
BS_SHARED = 32  # ptr: shared memory window
BS_LOCAL = 40  # ptr: local memory windows (WARP lanes x window bytes per warp, warps in order)
BS_ROUNDS = 48  # u64 region loops: the regions warps wait to run, kept while the worker runs
#                     other blocks (region_loops.py, interleave points)
BS_PARITY = 56  # u32 region loops: the parity of the block's barrier completions
BS_ARRIVED = 64  # MAX_BARRIERS x u32 lanes arrived in the current round
BS_EXPECTED = BS_ARRIVED + 4 * MAX_BARRIERS  # MAX_BARRIERS x u32 explicit count (0 = all)
BS_GEN = BS_EXPECTED + 4 * MAX_BARRIERS  # MAX_BARRIERS x u32 round counter
BS_RED = BS_GEN + 4 * MAX_BARRIERS  # MAX_BARRIERS x u32 bar.red accumulator
BS_REDOUT = BS_RED + 4 * MAX_BARRIERS  # MAX_BARRIERS x u32 bar.red result of the last round
BLOCK_STATE_BYTES = BS_REDOUT + 4 * MAX_BARRIERS

# WarpState header; the rest of a warp's state is laid out per kernel by the emitter
WS_RESUME = 0  # u32: 0 = not started, 1 = suspended at a barrier, 2 = finished,
#                     WS_SIMPLE_BASE + i = suspended at converged barrier i (simple protocol)
WS_SIMPLE_BASE = 16
WS_EXITED = 4  # u32 lanes that executed exit
WS_SP = 8  # u32 local stack pointer (bytes into each lane's window)
WS_YCOUNT = 12  # u32 yield points passed (a warp steps aside every YIELD_PERIOD-th)
WS_EPOCH = 16  # u32 times the warp function was entered (releases waits at yields)
WS_WAITING = 20  # u32 set by the runner: 1 = suspended at a barrier, 2 = at a yield
WS_HEADER = 32
YIELD_PERIOD = 64

RESIDENT_SLOTS = 4  # blocks a worker holds at once when spinning warps may wait on others
MAX_RESIDENT_SLOTS = 32  # the worker's mask of occupied slots is an i32


@dataclass
class CompiledKernelInfo:
    """What the launcher needs to know about a compiled specialization (kept beside its
    object in the disk cache; here, not in compiler.py, so that a run whose kernels come
    from the cache does not import the compiler)."""

    kernel: str
    block: tuple[int, int, int]
    nwarps: int
    warp_state_bytes: int
    local_window: int  # bytes per lane
    static_shared: int
    dyn_shared_offset: int
    resident_slots: int = 1  # blocks a worker may hold at once (more when warps can yield)
    waits_on_others: bool = False  # spin loops with yield points: blocks handed out one by one
    local_align: int = 16  # the largest .align of a .local variable: lane windows keep it
    shared_align: int = 256  # the same for .shared variables: the shared arena's alignment
    global_symbols: dict[str, str] = field(default_factory=dict)  # LLVM symbol → PTX variable
    host_symbols: list[str] = field(default_factory=list)  # runtime callbacks the object imports

    def scratch_bytes(self, dyn_smem: int) -> int:
        return self.shared_offset() + self.dyn_shared_offset + dyn_smem + 64

    def shared_offset(self) -> int:
        off = self.local_offset() + self.nwarps * WARP * self.local_window
        a = max(self.shared_align, 256)
        return (off + a - 1) // a * a

    def local_offset(self) -> int:
        """Where the lanes' local windows start in a block's scratch (which is page-aligned)."""
        off = BLOCK_STATE_BYTES + self.nwarps * self.warp_state_bytes
        a = max(self.local_align, 64)
        return (off + a - 1) // a * a
