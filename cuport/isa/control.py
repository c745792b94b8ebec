"""call, and the control instructions that are not block terminators.

PTX ISA §9.7.13 (Control Flow Instructions). Branches, ret, exit and trap end blocks and
are emitted by the warp executor itself (backends/cpu/emit.py); `call` passes the
per-lane `.param` memory of its arguments and results to the callee.
"""

from __future__ import annotations

from ..ptx import ir
from .registry import lowers


@lowers("call")
def lower_call(em, ins: ir.Instr) -> None:
    em.emit_call(ins)


@lowers("nanosleep", "pmevent", "brkpt")
def lower_nop(em, ins: ir.Instr) -> None:
    """Hints with no effect on the result: sleeping, profiler events, breakpoints."""


@lowers("griddepcontrol")
def lower_griddepcontrol(em, ins: ir.Instr) -> None:
    """Programmatic dependent launch (sm_90; CUB's kernels use it through Thrust): cuport
    starts a grid only once the grids before it in its stream have finished, their writes
    visible (driver/launch.py serialises launches that allow the overlap), so `.wait` has
    nothing left to wait for and `.launch_dependents` nothing to start early."""
    if set(ins.mods) not in ({"wait"}, {"launch_dependents"}):
        raise em.error(f"griddepcontrol with modifiers {'.'.join(ins.mods) or '(none)'}")


@lowers("membar", "fence")
def lower_fence(em, ins: ir.Instr) -> None:
    """Memory fences: a sequentially consistent fence is at least as strong as any PTX scope."""
    if "proxy" in ins.mods:
        return
    em.b.fence("seq_cst")


@lowers("bar", "barrier")
def lower_warp_bar(em, ins: ir.Instr) -> None:
    """bar.warp.sync: the warp runs in lock-step already. CTA barriers are block terminators.
    barrier.cluster.arrive: a cluster is one block (isa/cluster.py), and the
    barrier.cluster.wait that must follow is the block barrier, which orders every access
    before it; the arrive adds nothing to that."""
    if "warp" in ins.mods or "cluster" in ins.mods:
        return
    raise em.error("bar.arrive / barrier.arrive are not supported yet")
