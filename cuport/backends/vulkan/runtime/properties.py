"""What a physical device is and offers: DeviceInfo, read with the feature and property chains.

Everything here is read from the driver (no value is assumed): names, versions, ids, the
subgroup sizes and operations, the compute limits, memory heaps and types, queue families,
the features of features.py, the float controls, and from these what cuport needs or wants
but the device lacks (`missing`, one line each, required ones first).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from . import features as F
from .binding import Binding
from .instance import Instance, split_version

DEVICE_TYPES = {0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}

FLOAT_CONTROLS = tuple(
    f"shader{kind}Float{bits}"
    for kind in ("DenormPreserve", "DenormFlushToZero", "RoundingModeRTE", "RoundingModeRTZ",
                 "SignedZeroInfNanPreserve")
    for bits in (16, 32, 64))


@dataclass(frozen=True)
class Limits:
    max_workgroup_invocations: int
    max_workgroup_size: tuple[int, int, int]
    max_workgroup_count: tuple[int, int, int]
    max_shared_memory: int  # bytes of workgroup memory
    max_push_constants: int  # bytes
    max_storage_buffer_range: int
    max_memory_allocation_size: int  # one vkAllocateMemory
    max_buffer_size: int  # one VkBuffer (maintenance4; the allocation size where unknown)
    max_allocation_count: int
    max_workgroup_subgroups: int
    timestamp_period_ns: float  # nanoseconds per timestamp tick
    timestamp_valid_bits: int  # of the compute queue family cuport uses (0: no timestamps)
    non_coherent_atom_size: int
    min_imported_host_pointer_alignment: int  # 0 without VK_EXT_external_memory_host


@dataclass(frozen=True)
class MemoryHeap:
    size: int
    device_local: bool
    budget: int | None = None  # VK_EXT_memory_budget, at enumeration time
    usage: int | None = None


@dataclass(frozen=True)
class MemoryType:
    heap: int
    flags: frozenset[str]  # device_local, host_visible, host_coherent, host_cached, lazily_allocated, protected


@dataclass(frozen=True)
class QueueFamily:
    flags: frozenset[str]  # graphics, compute, transfer, sparse_binding, ...
    count: int
    timestamp_valid_bits: int


@dataclass(frozen=True)
class DeviceInfo:
    index: int  # position in the loader's order: open(index)
    name: str
    driver_name: str
    driver_info: str
    driver_id: str  # VkDriverId without the prefix, e.g. "MESA_LLVMPIPE", "NVIDIA_PROPRIETARY"
    api_version: tuple[int, int, int]
    driver_version: int
    vendor_id: int
    device_id: int
    device_type: str  # discrete | integrated | virtual | cpu | other
    uuid: bytes  # 16 bytes (cuDeviceGetUuid)
    pci: tuple[int, int, int, int] | None  # (domain, bus, device, function), VK_EXT_pci_bus_info
    subgroup_size: int
    min_subgroup_size: int
    max_subgroup_size: int
    required_subgroup_size_compute: bool  # a pipeline may ask for a size in [min, max]
    subgroup_operations: frozenset[str]  # basic, vote, arithmetic, ballot, shuffle, ...
    subgroup_in_compute: bool
    limits: Limits
    features: dict[str, bool]
    float_controls: dict[str, Any]
    extensions: frozenset[str]
    memory_heaps: tuple[MemoryHeap, ...]
    memory_types: tuple[MemoryType, ...]
    queue_families: tuple[QueueFamily, ...]
    compute_family: int  # the queue family cuport uses, -1 if none computes
    multiprocessors: int | None  # VK_NV_shader_sm_builtins / VK_AMD_shader_core_properties
    managed_memory: str  # how cuport can give host and device one address: identity|alias|none
    missing: tuple[str, ...] = field(default=())  # required first ("required: ..."), then wanted
    usable: bool = False
    warps_per_multiprocessor: int | None = None  # VK_NV_shader_sm_builtins' shaderWarpsPerSM
    driver_uuid: bytes = b""  # 16 bytes: with uuid, who may import this device's memory (external.py)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able values (sets as sorted lists, bytes as hex), for `cuport info --json`."""
        return _plain(dataclasses.asdict(self))

    def describe(self) -> list[str]:
        """A few lines for `cuport info`: what the device is, its limits, what it lacks."""
        lim = self.limits
        v = ".".join(map(str, self.api_version))
        state = "usable" if self.usable else "NOT usable"
        heaps = ", ".join(f"{h.size / 2**30:.1f} GiB{' device-local' if h.device_local else ''}"
                          for h in self.memory_heaps)
        sms = f"{self.multiprocessors} multiprocessors, " if self.multiprocessors else ""
        lines = [
            f"vulkan:{self.index}  {self.name} ({self.driver_name} {self.driver_info}), "
            f"Vulkan {v}, {self.device_type}, {state}",
            f"  subgroups {self.min_subgroup_size}..{self.max_subgroup_size}, {sms}"
            f"{lim.max_workgroup_invocations} invocations a workgroup, "
            f"{lim.max_shared_memory // 1024} KiB workgroup memory, "
            f"{lim.max_push_constants} bytes of push constants",
            f"  memory heaps: {heaps}; one address for host and device: {self.managed_memory}",
        ]
        lines += [f"  missing: {m}" for m in self.missing]
        return lines

    def warp_subgroups(self) -> bool:
        """Whether a pipeline can run with 32-wide subgroups (a warp per subgroup)."""
        if self.min_subgroup_size == self.max_subgroup_size == 32:
            return True
        return (self.required_subgroup_size_compute and self.min_subgroup_size <= 32
                <= self.max_subgroup_size and self.features.get("subgroupSizeControl", False))


def _flag_names(vk: Binding, enum: str, prefix: str, value: int) -> frozenset[str]:
    """The set bits of a Vk*FlagBits value as short names (VK_QUEUE_COMPUTE_BIT -> "compute";
    a vendor's bit keeps its suffix: ..._DEVICE_COHERENT_BIT_AMD -> "device_coherent_amd")."""
    names = set()
    for bit, name in vk.ffi.typeof(enum).elements.items():
        if not (bit > 0 and bit & (bit - 1) == 0 and value & bit and name.startswith(prefix)):
            continue
        m = _BIT.fullmatch(name[len(prefix):])
        if m:
            names.add((m.group(1) + (m.group(2) or "")).lower())
    return frozenset(names)


_BIT = re.compile(r"(.*?)_BIT(_[A-Z]+)?")


def device_extensions(vk: Binding, pd: Any) -> frozenset[str]:
    ffi, lib = vk.ffi, vk.lib
    n = ffi.new("uint32_t*")
    vk.check(lib.vkEnumerateDeviceExtensionProperties(pd, ffi.NULL, n, ffi.NULL),
             "vkEnumerateDeviceExtensionProperties")
    arr = ffi.new("VkExtensionProperties[]", n[0])
    vk.check(lib.vkEnumerateDeviceExtensionProperties(pd, ffi.NULL, n, arr),
             "vkEnumerateDeviceExtensionProperties")
    return frozenset(vk.string(arr[i].extensionName) for i in range(n[0]))


def feature_chain(vk: Binding, api: tuple[int, int], exts: frozenset[str]) -> tuple[Any, dict[str, Any]]:
    """A VkPhysicalDeviceFeatures2 with every applicable struct of features.py chained."""
    f2 = vk.new("VkPhysicalDeviceFeatures2")
    structs = {F.CORE10: f2.features}
    chain = [f2]
    for s in F.FEATURE_STRUCTS:
        if F.struct_applies(s, api, exts):
            p = vk.new(s.ctype)
            structs[s.ctype] = p
            chain.append(p)
    vk.chain(*chain)
    structs["_root"] = f2
    structs["_all"] = chain  # keeps every struct alive with the root
    return f2, structs


def read_features(vk: Binding, pd: Any, api: tuple[int, int], exts: frozenset[str]) -> dict[str, bool]:
    f2, structs = feature_chain(vk, api, exts)
    vk.lib.vkGetPhysicalDeviceFeatures2(pd, f2)
    out = {}
    for feat in F.FEATURES:
        out[feat.name] = False
        for ctype in feat.structs:
            if ctype in structs:
                out[feat.name] = bool(getattr(structs[ctype], feat.name))
                break
    return out


def query(inst: Instance, pd: Any, index: int) -> DeviceInfo:
    vk = inst.vk
    ffi, lib = vk.ffi, vk.lib
    props = ffi.new("VkPhysicalDeviceProperties*")
    lib.vkGetPhysicalDeviceProperties(pd, props)
    device_api = split_version(props.apiVersion)
    api = min(device_api[:2], inst.api_version[:2])
    exts = device_extensions(vk, pd)
    lim = props.limits

    chain = [vk.new("VkPhysicalDeviceProperties2")]
    by: dict[str, Any] = {}

    def add(ctype: str, when: bool) -> None:
        if when:
            by[ctype] = vk.new(ctype)
            chain.append(by[ctype])

    add("VkPhysicalDeviceVulkan11Properties", api >= (1, 2))
    add("VkPhysicalDeviceVulkan12Properties", api >= (1, 2))
    add("VkPhysicalDeviceVulkan13Properties", api >= (1, 3))
    add("VkPhysicalDeviceSubgroupSizeControlPropertiesEXT",
        api < (1, 3) and "VK_EXT_subgroup_size_control" in exts)
    add("VkPhysicalDeviceSubgroupProperties", (1, 1) <= api < (1, 2))
    add("VkPhysicalDeviceIDProperties", (1, 1) <= api < (1, 2))
    add("VkPhysicalDeviceMaintenance4Properties", api < (1, 3) and "VK_KHR_maintenance4" in exts)
    add("VkPhysicalDeviceExternalMemoryHostPropertiesEXT", "VK_EXT_external_memory_host" in exts)
    add("VkPhysicalDevicePCIBusInfoPropertiesEXT", "VK_EXT_pci_bus_info" in exts)
    add("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", "VK_NV_shader_sm_builtins" in exts)
    add("VkPhysicalDeviceShaderCorePropertiesAMD", "VK_AMD_shader_core_properties" in exts)
    if api >= (1, 1):
        vk.chain(*chain)
        lib.vkGetPhysicalDeviceProperties2(pd, chain[0])

    v11 = by.get("VkPhysicalDeviceVulkan11Properties") or by.get("VkPhysicalDeviceSubgroupProperties")
    v12 = by.get("VkPhysicalDeviceVulkan12Properties")
    v13 = by.get("VkPhysicalDeviceVulkan13Properties") or by.get(
        "VkPhysicalDeviceSubgroupSizeControlPropertiesEXT")
    idp = by.get("VkPhysicalDeviceVulkan11Properties") or by.get("VkPhysicalDeviceIDProperties")
    m4 = by.get("VkPhysicalDeviceVulkan13Properties") or by.get("VkPhysicalDeviceMaintenance4Properties")
    emh = by.get("VkPhysicalDeviceExternalMemoryHostPropertiesEXT")
    pci = by.get("VkPhysicalDevicePCIBusInfoPropertiesEXT")

    compute_bit = lib.VK_SHADER_STAGE_COMPUTE_BIT
    if v11 is not None:
        sg_size = v11.subgroupSize
        if v11 is by.get("VkPhysicalDeviceVulkan11Properties"):
            ops, stages = v11.subgroupSupportedOperations, v11.subgroupSupportedStages
        else:
            ops, stages = v11.supportedOperations, v11.supportedStages
    else:
        sg_size, ops, stages = 1, 0, 0
    sg_min = v13.minSubgroupSize if v13 is not None else sg_size
    sg_max = v13.maxSubgroupSize if v13 is not None else sg_size
    req_stages = v13.requiredSubgroupSizeStages if v13 is not None else 0
    max_alloc = (by["VkPhysicalDeviceVulkan11Properties"].maxMemoryAllocationSize
                 if "VkPhysicalDeviceVulkan11Properties" in by else 1 << 31)

    families = _queue_families(vk, pd)
    compute_family = _pick_compute_family(families)
    ts_bits = families[compute_family].timestamp_valid_bits if compute_family >= 0 else 0

    limits = Limits(
        max_workgroup_invocations=lim.maxComputeWorkGroupInvocations,
        max_workgroup_size=tuple(lim.maxComputeWorkGroupSize[i] for i in range(3)),
        max_workgroup_count=tuple(lim.maxComputeWorkGroupCount[i] for i in range(3)),
        max_shared_memory=lim.maxComputeSharedMemorySize,
        max_push_constants=lim.maxPushConstantsSize,
        max_storage_buffer_range=lim.maxStorageBufferRange,
        max_memory_allocation_size=max_alloc,
        max_buffer_size=m4.maxBufferSize if m4 is not None else max_alloc,
        max_allocation_count=lim.maxMemoryAllocationCount,
        max_workgroup_subgroups=(v13.maxComputeWorkgroupSubgroups if v13 is not None
                                 else max(1, lim.maxComputeWorkGroupInvocations // max(1, sg_size))),
        timestamp_period_ns=float(lim.timestampPeriod),
        timestamp_valid_bits=ts_bits if lim.timestampComputeAndGraphics or ts_bits else 0,
        non_coherent_atom_size=lim.nonCoherentAtomSize,
        min_imported_host_pointer_alignment=emh.minImportedHostPointerAlignment if emh else 0,
    )

    feats = read_features(vk, pd, api, exts) if api >= (1, 1) else {f.name: False for f in F.FEATURES}
    heaps, types = _memory(vk, pd, exts, api)
    float_controls: dict[str, Any] = {}
    if v12 is not None:
        float_controls = {k: bool(getattr(v12, k)) for k in FLOAT_CONTROLS}
        indep = vk.ffi.typeof("VkShaderFloatControlsIndependence").elements
        float_controls["denormBehaviorIndependence"] = _strip(
            indep.get(v12.denormBehaviorIndependence, "?"), "VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_")
        float_controls["roundingModeIndependence"] = _strip(
            indep.get(v12.roundingModeIndependence, "?"), "VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_")

    if v12 is not None:
        driver_name, driver_info = vk.string(v12.driverName), vk.string(v12.driverInfo)
        driver_id = _strip(vk.ffi.typeof("VkDriverId").elements.get(v12.driverID, "?"), "VK_DRIVER_ID_")
    else:
        driver_name, driver_info, driver_id = "", "", "?"
    uuid = bytes(ffi.buffer(idp.deviceUUID, 16)) if idp is not None else bytes(props.pipelineCacheUUID)
    driver_uuid = bytes(ffi.buffer(idp.driverUUID, 16)) if idp is not None else b""

    mps = None
    smb = by.get("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV")
    amd = by.get("VkPhysicalDeviceShaderCorePropertiesAMD")
    warps = None
    if smb is not None and smb.shaderSMCount:
        mps = int(smb.shaderSMCount)
        warps = int(smb.shaderWarpsPerSM) or None
    elif amd is not None and amd.computeUnitsPerShaderArray:
        mps = int(amd.shaderEngineCount * amd.shaderArraysPerEngineCount
                  * amd.computeUnitsPerShaderArray)

    device_type = DEVICE_TYPES.get(props.deviceType, "other")
    if device_type == "cpu":
        managed = "identity"
    elif "VK_EXT_external_memory_host" in exts:
        managed = "alias"
    else:
        managed = "none"

    info = DeviceInfo(
        index=index,
        name=vk.string(props.deviceName),
        driver_name=driver_name,
        driver_info=driver_info,
        driver_id=driver_id,
        api_version=device_api,
        driver_version=props.driverVersion,
        vendor_id=props.vendorID,
        device_id=props.deviceID,
        device_type=device_type,
        uuid=uuid,
        pci=(pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction) if pci is not None else None,
        subgroup_size=sg_size,
        min_subgroup_size=sg_min,
        max_subgroup_size=sg_max,
        required_subgroup_size_compute=bool(req_stages & compute_bit),
        subgroup_operations=_flag_names(vk, "VkSubgroupFeatureFlagBits", "VK_SUBGROUP_FEATURE_", ops),
        subgroup_in_compute=bool(stages & compute_bit),
        limits=limits,
        features=feats,
        float_controls=float_controls,
        extensions=exts,
        memory_heaps=heaps,
        memory_types=types,
        queue_families=families,
        compute_family=compute_family,
        multiprocessors=mps,
        managed_memory=managed,
        warps_per_multiprocessor=warps,
        driver_uuid=driver_uuid,
    )
    missing = _missing(info, api)
    usable = not any(m.startswith("required: ") for m in missing)
    return DeviceInfo(**{**info.__dict__, "missing": tuple(missing), "usable": usable})


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(_plain(v) for v in x)
    if isinstance(x, bytes):
        return x.hex()
    return x


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else name


def _queue_families(vk: Binding, pd: Any) -> tuple[QueueFamily, ...]:
    ffi, lib = vk.ffi, vk.lib
    n = ffi.new("uint32_t*")
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, ffi.NULL)
    arr = ffi.new("VkQueueFamilyProperties[]", n[0])
    lib.vkGetPhysicalDeviceQueueFamilyProperties(pd, n, arr)
    return tuple(
        QueueFamily(flags=_flag_names(vk, "VkQueueFlagBits", "VK_QUEUE_", arr[i].queueFlags),
                    count=arr[i].queueCount, timestamp_valid_bits=arr[i].timestampValidBits)
        for i in range(n[0]))


def _pick_compute_family(families: tuple[QueueFamily, ...]) -> int:
    """The compute family with timestamps, then one without graphics where it has several
    queues, then the most queues (the first such on a tie). CUDA's streams run at once, and
    on NVIDIA's driver (H100, 580) two kernels on queues of the graphics family do not (a
    kernel spinning until another stream's kernel sets a flag never ends), on queues of its
    compute-only family they do (.device spin test, stop 25)."""
    best, key = -1, None
    for i, f in enumerate(families):
        if "compute" not in f.flags:
            continue
        k = (f.timestamp_valid_bits > 0, "graphics" not in f.flags and f.count > 1, f.count)
        if key is None or k > key:
            best, key = i, k
    return best


def _memory(vk: Binding, pd: Any, exts: frozenset[str], api: tuple[int, int]
            ) -> tuple[tuple[MemoryHeap, ...], tuple[MemoryType, ...]]:
    lib = vk.lib
    mp2 = vk.new("VkPhysicalDeviceMemoryProperties2")
    budget = None
    if api >= (1, 1) and "VK_EXT_memory_budget" in exts:
        budget = vk.new("VkPhysicalDeviceMemoryBudgetPropertiesEXT")
        mp2.pNext = budget
    if api >= (1, 1):
        lib.vkGetPhysicalDeviceMemoryProperties2(pd, mp2)
    else:
        lib.vkGetPhysicalDeviceMemoryProperties(pd, vk.ffi.addressof(mp2.memoryProperties))
    mp = mp2.memoryProperties
    heaps = tuple(
        MemoryHeap(size=mp.memoryHeaps[i].size,
                   device_local=bool(mp.memoryHeaps[i].flags & lib.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT),
                   budget=budget.heapBudget[i] if budget is not None else None,
                   usage=budget.heapUsage[i] if budget is not None else None)
        for i in range(mp.memoryHeapCount))
    types = tuple(
        MemoryType(heap=mp.memoryTypes[i].heapIndex,
                   flags=_flag_names(vk, "VkMemoryPropertyFlagBits", "VK_MEMORY_PROPERTY_",
                                     mp.memoryTypes[i].propertyFlags))
        for i in range(mp.memoryTypeCount))
    return heaps, types


def _missing(info: DeviceInfo, api: tuple[int, int]) -> list[str]:
    required: list[str] = []
    wanted: list[str] = []
    if api < F.MIN_API:
        required.append(f"Vulkan {F.MIN_API[0]}.{F.MIN_API[1]} (the device offers "
                        f"{info.api_version[0]}.{info.api_version[1]})")
    if info.compute_family < 0:
        required.append("a compute queue")
    for feat in F.FEATURES:
        if not info.features.get(feat.name):
            (required if feat.need == F.REQUIRED else wanted).append(f"{feat.name}: {feat.why}")
    if not info.subgroup_in_compute:
        wanted.append("subgroup operations in compute shaders: warp collectives")
    lacking = [op for op in F.SUBGROUP_OPS_WANTED if op not in info.subgroup_operations]
    if lacking:
        wanted.append(f"subgroup operations {', '.join(lacking)}: warp collectives")
    if not info.warp_subgroups():
        wanted.append(f"32-wide subgroups (the device gives {info.min_subgroup_size}.."
                      f"{info.max_subgroup_size}): warp collectives go through workgroup memory")
    for name, cuda, what in F.LIMITS_WANTED:
        have = getattr(info.limits, name)
        if have < cuda:
            wanted.append(f"{name} {cuda} (the device gives {have}): {what}")
    if info.limits.timestamp_valid_bits == 0:
        wanted.append("timestamps on the compute queue: cuEventElapsedTime")
    for ext, why in F.EXTENSIONS:
        if ext not in info.extensions:
            wanted.append(f"{ext}: {why}")
    return [f"required: {m}" for m in required] + wanted
