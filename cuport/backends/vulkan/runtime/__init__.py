"""The Vulkan runtime: devices, memory with buffer device addresses, pipelines, streams.

    from cuport.backends.vulkan import runtime as vkrt
    infos = vkrt.devices()              # [] and vkrt.unavailable_reason() without Vulkan
    dev = vkrt.open(0)                  # shared per process; dev.close() at exit
    buf = dev.alloc(n)                  # buf.address is the CUdeviceptr
    s = dev.stream()
    s.copy_to_device(buf.address, data)
    pipe = dev.pipeline(spirv, "main", (256, 1, 1), push_size=16)
    s.dispatch(pipe, (groups, 1, 1), push_bytes)
    s.copy_to_host(out, buf.address)    # returns when `out` (pageable) holds the data

Nothing here knows about PTX or CUDA's API: the backend maps CUDA's calls onto these.
"""

from .device import Device, Queue, at_shut_down, open
from .errors import DeviceLost, OutOfDeviceMemory, Unsupported, VulkanError, VulkanUnavailable
from .memory import DEVICE, HOST, IMPORTED, MANAGED, REGISTERED, BadAddress, Buffer
from .pipeline import Pipeline
from .probe import devices, unavailable_reason
from .properties import DeviceInfo, Limits, MemoryHeap, MemoryType, QueueFamily
from .stream import Stream, Timestamp, elapsed_ms

__all__ = [
    "DEVICE", "HOST", "IMPORTED", "MANAGED", "REGISTERED", "BadAddress", "Buffer", "Device", "DeviceInfo",
    "DeviceLost", "Limits", "MemoryHeap", "MemoryType", "OutOfDeviceMemory", "Pipeline",
    "Queue", "QueueFamily", "Stream", "Timestamp", "Unsupported", "VulkanError",
    "VulkanUnavailable", "at_shut_down", "devices", "elapsed_ms", "open", "unavailable_reason",
]
