"""The CUDA device attributes of a Vulkan device, where they differ from the CPU device's.

Values come from the device's properties (runtime.DeviceInfo), never guessed: what Vulkan
does not tell (the memory clock, L2 size) is 0, what cuport does not offer on Vulkan yet
(textures in hardware) is 0 too. CLOCK_RATE is the rate of the clock %clock64 reads,
measured the first time a program asks (clock.py clock_rate_khz). Multiprocessors,
residency and COOPERATIVE_LAUNCH come from cooperative.py (1 only where cuport knows how many workgroups run at once). The
shared-memory sizes are CUDA's (48 KiB per block, 227 KiB by opt-in, as on an H200): a kernel
whose shared memory does not fit the device's workgroup memory keeps it in device memory
(slices.py). Only a device whose memory cannot hold such slices reports its workgroup
memory less the scratch cuport's warp emulation and bar.red need.
"""

from __future__ import annotations

import os

from . import clock, cooperative, slices


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _clock_rate(device) -> int:
    """CLOCK_RATE of a device with a shader clock: asked of its backend (measured once)."""
    return clock.clock_rate_khz(device.backend())


def device_attributes(info) -> dict[str, object]:
    lim = info.limits
    cpu = info.device_type == "cpu"
    same = info.managed_memory in ("identity", "alias")
    sms = info.multiprocessors or (_cores() if cpu else 1)
    threads = min(1024, lim.max_workgroup_invocations)
    if slices.available(info):
        per_block, optin = slices.DEFAULT_BYTES, slices.OPTIN_BYTES
        per_sm = max(slices.PER_MULTIPROCESSOR_BYTES, lim.max_shared_memory)
    else:
        optin = max(lim.max_shared_memory - 8 * 1024 - 64, 0)
        per_block, per_sm = min(optin, slices.DEFAULT_BYTES), lim.max_shared_memory
    local_heaps = [h.size for h in info.memory_heaps if h.device_local] or [h.size for h in info.memory_heaps]
    return {
        "MULTIPROCESSOR_COUNT": sms,
        # (0 without a shader clock: %clock64 is refused there, so there is no rate to give)
        "CLOCK_RATE": _clock_rate if info.features.get("shaderSubgroupClock") else 0,
        "L2_CACHE_SIZE": 0,
        "MAX_THREADS_PER_BLOCK": threads,
        "MAX_BLOCK_DIM_X": min(1024, lim.max_workgroup_size[0]),
        "MAX_BLOCK_DIM_Y": min(1024, lim.max_workgroup_size[1]),
        "MAX_BLOCK_DIM_Z": min(64, lim.max_workgroup_size[2]),
        "MAX_GRID_DIM_X": 2**31 - 1,  # the runtime splits larger grids into several dispatches
        "MAX_GRID_DIM_Y": 65535,
        "MAX_GRID_DIM_Z": 65535,
        "MAX_SHARED_MEMORY_PER_BLOCK": per_block,
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": optin,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": per_sm,
        "INTEGRATED": 1 if info.device_type in ("cpu", "integrated") else 0,
        "CAN_MAP_HOST_MEMORY": int(same),
        "UNIFIED_ADDRESSING": 1,
        "MANAGED_MEMORY": int(same),
        "CONCURRENT_MANAGED_ACCESS": int(info.managed_memory == "identity"),
        "PAGEABLE_MEMORY_ACCESS": 0,
        "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES": 0,
        "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST": int(same),
        "HOST_NATIVE_ATOMIC_SUPPORTED": int(info.managed_memory == "identity"),
        "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM": int(info.managed_memory == "identity"),
        "HOST_REGISTER_SUPPORTED": int(same),
        "COOPERATIVE_LAUNCH": 0,  # cooperative.attributes below
        "MEMORY_POOLS_SUPPORTED": 1,
        "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 0,  # driver/vmm.py maps host pages only
        "MAX_THREADS_PER_MULTIPROCESSOR": max(threads, 2048),
        "GLOBAL_MEMORY_BUS_WIDTH": 0,
        "PCI_BUS_ID": info.pci[1] if info.pci else 0,
        "PCI_DEVICE_ID": info.pci[2] if info.pci else 0,
        "PCI_DOMAIN_ID": info.pci[0] if info.pci else 0,
        "_memory_bytes": max(local_heaps),
    } | cooperative.attributes(info)
