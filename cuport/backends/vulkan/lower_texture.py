"""What the isa's software texture unit (isa/texture.py, texture_sampler.py) asks of the
Vulkan emitter beyond loads and stores: a zero page.

The sampler runs in the kernel as it does on the CPU: descriptors and texels are read
through buffer device addresses (a texture or surface object is the device address of its
descriptor, which the driver writes into device memory: driver/texture.py), per invocation
(`per_lane` is the thread itself). A query of a NULL object reads a zeroed descriptor and a
surface read that `.zero` drops reads zeros: on Vulkan both read the backend's zero page,
ZERO_PAGE_BYTES of device memory zeroed when the device opens, whose address each launch
passes in its push constants (caps.zero_page only says there is one). A variant compiled for
a launch whose texture parameters hold known objects (KernelPlan.textures) gives the sampler
their facts.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.texture_layout import Sampling
from ...ptx import ir

ZERO_PAGE_BYTES = 4096


class TextureOps:
    """Mixin of the VulkanEmitter."""

    def zero_bytes(self, size: int) -> ll.Value:
        caps = self.plan.caps
        if size > ZERO_PAGE_BYTES or not caps.zero_page:
            raise self.error(f"{size} bytes of zeros (the backend's zero page has "
                             f"{ZERO_PAGE_BYTES if caps.zero_page else 0})")
        return self.push("zero_page")

    def texture_facts(self, image) -> Sampling | None:
        plan = self.plan
        if not plan.textures or not isinstance(image, (ir.Reg, ir.Sym)):
            return None
        param = plan.texture_handles.get(image.name)
        return plan.textures.get(param) if param is not None else None
