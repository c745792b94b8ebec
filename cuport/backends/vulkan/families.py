"""Where the Vulkan emitter lowers an instruction family itself rather than through isa/'s
shared lowering: opcode -> fn(em, ins), consulted first (lower.py)."""

from __future__ import annotations

from . import lower_async, lower_order

VULKAN_LOWERINGS = {
    # per-invocation copies and atomically updated mbarrier words (isa/async_copy.py's are
    # per-lane loops of a warp)
    "cp": lower_async.lower_cp,
    "mbarrier": lower_async.lower_mbarrier,
    # fences carry no memory semantics in divergent code on some drivers (lower_order.py)
    "membar": lower_order.lower_fence,
    "fence": lower_order.lower_fence,
}
