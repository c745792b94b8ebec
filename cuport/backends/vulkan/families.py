"""Where the Vulkan emitter lowers an instruction family itself rather than through isa/'s
shared lowering: opcode -> fn(em, ins), consulted first (lower.py)."""

from __future__ import annotations

from ...isa.control import lower_warp_bar
from . import lower_order


def _bar(em, ins) -> None:
    if "warp" in ins.mods:
        em.warp_barrier()
        return
    lower_warp_bar(em, ins)


VULKAN_LOWERINGS = {
    # fences carry no memory semantics in divergent code on some drivers (lower_order.py)
    "membar": lower_order.lower_fence,
    "fence": lower_order.lower_fence,
    # bar.warp.sync: a barrier of the block where a warp spans several subgroups
    "bar": _bar,
}
