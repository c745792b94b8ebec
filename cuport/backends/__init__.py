"""Backends behind one interface (cuport.backends.base): the CPU and Vulkan devices."""

from __future__ import annotations


def get_backend(kind: str = "cpu", index: int = 0):
    """The backend of a device: "cpu" (this machine's cores) or "vulkan" (Vulkan device `index`)."""
    if kind == "vulkan":
        from .vulkan.backend import get_vulkan_backend

        return get_vulkan_backend(index)
    from .cpu.backend import get_cpu_backend

    return get_cpu_backend()
