"""Device memory shared with other processes (VK_KHR_external_memory_fd, opaque descriptors).

cudaIpcGetMemHandle works on memory from an ordinary cudaMalloc, so the memory must be
exportable from the start: where the device can export buffers' memory without a dedicated
allocation, every block of "device" memory is allocated exportable (memory.py), unless the
driver is known to pay for it (COSTLY; CUPORT_VK_EXPORTABLE=1 or 0 decides instead). Exporting an
allocation hands out a descriptor of its whole block and a Description: what the importer
needs to allocate the same payload (its size and memory type must match the exporter's) and
where the allocation lies in it. The importer binds a buffer of its own to that memory, so
the allocation has a device address of its own there, as cudaIpcOpenMemHandle gives a
pointer of the importer's. Only the same physical device and driver (their UUIDs) may
import an opaque descriptor; that is checked before the driver sees it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

EXTENSION = "VK_KHR_external_memory_fd"
_MAGIC = b"cuportVK"
# magic, device UUID, driver UUID, allocation size, memory type, block size, offset, size
_LAYOUT = struct.Struct("<8s16s16sQIQQQ")


# Drivers whose exportable memory costs something that plain memory does not, measured with
# bench/vulkan_exportable.py; their device memory is exportable only with CUPORT_VK_EXPORTABLE=1.
COSTLY = {
    "MESA_LLVMPIPE": "lavapipe backs exportable memory with a memory file, whose pages take "
                     "~1.4x as long to allocate and touch first and ~2.6x as long to release "
                     "(2 x 256 MiB: 0.76 -> 1.09 s, 94 -> 250 ms; copies the same)",
}


def wanted(driver_id: str) -> tuple[bool, str]:
    """Whether device memory should be allocated exportable on this driver, and why not."""
    env = os.environ.get("CUPORT_VK_EXPORTABLE", "")
    if env in ("0", "1"):
        return (True, "") if env == "1" else (False, "CUPORT_VK_EXPORTABLE=0")
    cost = COSTLY.get(driver_id)
    if cost is None:
        return True, ""
    return False, f"{cost}; CUPORT_VK_EXPORTABLE=1 allocates it exportable"


def handle_type(vk: Any) -> int:
    return vk.lib.VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT


def refusal(vk: Any, physical: Any, extensions: frozenset[str], usage: int) -> str | None:
    """Why blocks of device memory cannot be exportable on this device, or None if they can:
    the extension, and buffers of cuport's usage exportable and importable as opaque
    descriptors without a dedicated allocation (blocks hold many allocations)."""
    if EXTENSION not in extensions:
        return f"the device lacks {EXTENSION}"
    lib = vk.lib
    info = vk.new("VkPhysicalDeviceExternalBufferInfo", usage=usage, handleType=handle_type(vk))
    props = vk.new("VkExternalBufferProperties")
    lib.vkGetPhysicalDeviceExternalBufferProperties(physical, info, props)
    features = props.externalMemoryProperties.externalMemoryFeatures
    need = lib.VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT | lib.VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT
    if features & need != need:
        return "the driver cannot export and import buffer memory as opaque descriptors"
    if features & lib.VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT:
        return ("the driver exports buffer memory only from dedicated allocations, and cuport "
                "suballocates device memory")
    return None


@dataclass(frozen=True)
class Description:
    """What an importer needs besides the descriptor, and what it checks first."""

    device_uuid: bytes
    driver_uuid: bytes
    allocation_size: int  # the exporter's VkMemoryAllocateInfo, which an import must repeat
    type_index: int
    block_size: int  # the buffer the exporter bound over the whole block
    offset: int  # the allocation within the block
    size: int

    def pack(self) -> bytes:
        return _LAYOUT.pack(_MAGIC, self.device_uuid, self.driver_uuid, self.allocation_size,
                            self.type_index, self.block_size, self.offset, self.size)

    @classmethod
    def unpack(cls, data: bytes) -> Description:
        if len(data) != _LAYOUT.size or not data.startswith(_MAGIC):
            raise ValueError("the shared memory is another backend's, not a Vulkan device's")
        _, dev, drv, alloc, ti, block, off, size = _LAYOUT.unpack(data)
        return cls(dev, drv, alloc, ti, block, off, size)

    def check(self, device_uuid: bytes, driver_uuid: bytes, type_count: int) -> None:
        """ValueError unless this device and driver can import the payload."""
        if self.device_uuid != device_uuid or self.driver_uuid != driver_uuid:
            raise ValueError("the shared memory belongs to another Vulkan device or driver "
                             f"(device UUID {self.device_uuid.hex()}, this one's {device_uuid.hex()})")
        if not 0 <= self.type_index < type_count or self.offset + self.size > self.block_size:
            raise ValueError("the shared memory's description does not fit this device")
