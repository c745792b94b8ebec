"""Where the Vulkan emitter lowers an instruction family itself rather than through isa/'s
shared lowering: opcode -> fn(em, ins), consulted first (lower.py)."""

from __future__ import annotations

from . import lower_order

VULKAN_LOWERINGS = {
    # fences carry no memory semantics in divergent code on some drivers (lower_order.py)
    "membar": lower_order.lower_fence,
    "fence": lower_order.lower_fence,
}
