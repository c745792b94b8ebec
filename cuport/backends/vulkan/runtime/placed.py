"""VK_EXT_map_memory_placed: a memory object mapped on the host at an address cuport chooses.

The `vulkan` package (Vulkan 1.3.275) predates the extension (1.3.279), so its two structs
are laid out here by hand from the specification (VkPhysicalDeviceMapMemoryPlacedFeaturesEXT,
...PropertiesEXT, VkMemoryMapPlacedInfoEXT); vkMapMemory2KHR and vkUnmapMemory2KHR
(VK_KHR_map_memory2) are the package's. Memory uses it to map device-local, host-visible
memory at its own device address, so that host and kernels share one pointer to it
(memory.py, "signal" blocks).
"""

from __future__ import annotations

from typing import Any

from .binding import Binding
from .errors import VulkanError

EXTENSIONS = ("VK_KHR_map_memory2", "VK_EXT_map_memory_placed")
_STYPE_FEATURES = 1000272000
_STYPE_PROPERTIES = 1000272001
_STYPE_MAP_INFO = 1000272002
_MAP_PLACED = 0x1  # VK_MEMORY_MAP_PLACED_BIT_EXT
_UNMAP_RESERVE = 0x1  # VK_MEMORY_UNMAP_RESERVE_BIT_EXT


def _struct(vk: Binding, stype: int, words: int) -> Any:
    """A zeroed struct of `words` 8-byte words whose first member is sType (pNext next)."""
    raw = vk.ffi.new("uint64_t[]", words)
    vk.ffi.cast("int32_t*", raw)[0] = stype
    return raw


def query(vk: Binding, pd: Any, exts: frozenset[str]) -> int:
    """minPlacedMemoryMapAlignment where the device can map memory placed and keep the range
    reserved when it unmaps it (memoryMapPlaced, memoryUnmapReserve), else 0."""
    if not all(e in exts for e in EXTENSIONS):
        return 0
    ffi = vk.ffi
    feats = _struct(vk, _STYPE_FEATURES, 4)  # sType, pNext, 3 x VkBool32
    f2 = vk.new("VkPhysicalDeviceFeatures2", pNext=ffi.cast("void*", feats))
    vk.lib.vkGetPhysicalDeviceFeatures2(pd, f2)
    placed, _range, reserve = (ffi.cast("uint32_t*", feats)[4 + i] for i in range(3))
    if not (placed and reserve):
        return 0
    props = _struct(vk, _STYPE_PROPERTIES, 3)  # sType, pNext, VkDeviceSize
    p2 = vk.new("VkPhysicalDeviceProperties2", pNext=ffi.cast("void*", props))
    vk.lib.vkGetPhysicalDeviceProperties2(pd, p2)
    return int(props[2])


def features(vk: Binding) -> Any:
    """The features struct that enables placed maps and reserving unmaps at vkCreateDevice."""
    feats = _struct(vk, _STYPE_FEATURES, 4)
    ints = vk.ffi.cast("uint32_t*", feats)
    ints[4], ints[6] = 1, 1  # memoryMapPlaced, memoryUnmapReserve
    return feats


def chain_after(vk: Binding, last: Any, raw: Any) -> None:
    """Append the hand-made struct `raw` to a chain whose last struct is `last`."""
    last.pNext = vk.ffi.cast("void*", raw)


def map_at(vk: Binding, cmd: Any, device: Any, memory: Any, address: int) -> None:
    """Map all of `memory` at host `address` (replacing what is mapped there)."""
    ffi = vk.ffi
    info = _struct(vk, _STYPE_MAP_INFO, 3)  # sType, pNext, pPlacedAddress
    info[2] = address
    mi = vk.new("VkMemoryMapInfoKHR", pNext=ffi.cast("void*", info), flags=_MAP_PLACED,
                memory=memory, offset=0, size=0xFFFFFFFFFFFFFFFF)
    out = ffi.new("void**")
    vk.check(cmd.vkMapMemory2KHR(device, mi, out), "vkMapMemory2KHR")
    got = int(ffi.cast("uintptr_t", out[0]))
    if got != address:
        raise VulkanError(f"the driver placed the map at 0x{got:x}, not 0x{address:x}",
                          "vkMapMemory2KHR")


def unmap_reserving(vk: Binding, cmd: Any, device: Any, memory: Any) -> None:
    """Unmap `memory`, leaving its host range reserved (the caller releases it)."""
    ui = vk.new("VkMemoryUnmapInfoKHR", flags=_UNMAP_RESERVE, memory=memory)
    vk.check(cmd.vkUnmapMemory2KHR(device, ui), "vkUnmapMemory2KHR")
