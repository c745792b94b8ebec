"""The devices cuport presents, cuInit and cuDriverGetVersion.

`CUPORT_DEVICE` chooses them: `cpu`, `vulkan` or `vulkan:N` (a Vulkan device,
backends/vulkan), `auto`, or a comma-separated list of these, presented in that order, so
that multi-GPU programs see cuDeviceGetCount > 1. Unset (or `auto`), it is the first real
GPU a Vulkan driver presents that cuport can run on, else the CPU (`default_device`). Each
device reaches its backend through `Device.backend()`.

The attribute table answers every CUdevice_attribute with a value that is true of
the CPU backend (one multiprocessor per core the process may run on, warp size 32,
1024 threads a block, 48 KiB of static shared memory and 227 KiB by opt-in,
unified addressing, managed and pageable memory shared with the host) or, for
features cuport does not offer (clusters, multicast, fabric handles), 0. The L2 is
the CPU's last-level cache; L2 persistence and access-policy windows are accepted
as the hints they are. The compute capability is 9.0 unless CUPORT_CC says otherwise.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from functools import cache

from cuport.capi import table, types
from cuport.driver.api import implements
from cuport.driver.errors import CudaError, E

DRIVER_VERSION = 13050  # the newest runtime whose start-up protocol cuport serves
_initialized = False


def initialized() -> bool:
    return _initialized


def driver_version() -> int:
    return int(os.environ.get("CUPORT_DRIVER_VERSION", DRIVER_VERSION))


def compute_capability() -> tuple[int, int]:
    """CUPORT_CC as "8.6", "86" or "sm_86"; 9.0 by default."""
    text = os.environ.get("CUPORT_CC", "9.0").strip().lower().removeprefix("sm_")
    m = re.fullmatch(r"(\d+)\.(\d)|(\d+)(\d)", text)
    if not m:
        raise CudaError(E.INVALID_VALUE, f"CUPORT_CC={text!r} is not a compute capability "
                                         "(write it as 8.6, 86 or sm_86)")
    major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return int(major), int(minor)


def _cpuinfo(key: str) -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def core_count() -> int:
    """Cores this process may run on: one multiprocessor each."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _clock_khz() -> int:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        mhz = _cpuinfo("cpu MHz")
        return int(float(mhz) * 1000) if mhz else 1_000_000


def _cache_bytes() -> int:
    """The largest cache of the first CPU (its last level), from sysfs: Python's
    os.sysconf does not know _SC_LEVEL3_CACHE_SIZE."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        entries = []
    for entry in entries:
        try:
            with open(f"{base}/{entry}/type") as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(f"{base}/{entry}/size") as f:
                text = f.read().strip()
        except OSError:
            continue
        m = re.fullmatch(r"(\d+)([KMG]?)", text)
        if m:
            best = max(best, int(m.group(1)) * units.get(m.group(2), 1))
    if best:
        return best
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if size > 0:
            return size
    return 0


def l2_bytes() -> int:
    """What cuport reports as the L2: the CPU's last-level cache (4 MiB if unknown)."""
    return _cache_bytes() or (4 << 20)


def persisting_l2_max(l2: int) -> int:
    """The largest L2 set-aside for persisting accesses: three quarters of the L2, as an
    A100 reports (30 MiB of 40). On a CPU it is a hint that changes nothing."""
    return l2 * 3 // 4 // 65536 * 65536


#: The largest access-policy window (cudaAccessPolicyWindow.num_bytes), as A100/H100 report.
MAX_ACCESS_POLICY_WINDOW = 134213632


def total_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def available_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


STATIC_SHARED_PER_BLOCK = 48 * 1024
OPTIN_SHARED_PER_BLOCK = 227 * 1024
SHARED_PER_MULTIPROCESSOR = 228 * 1024
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)

# Every CUdevice_attribute (without the CU_DEVICE_ATTRIBUTE_ prefix): a value, or a
# function of the device. Names the enum gives twice share one value.
ATTRIBUTES: dict[str, int | object] = {
    "MAX_THREADS_PER_BLOCK": MAX_THREADS_PER_BLOCK,
    "MAX_BLOCK_DIM_X": MAX_BLOCK_DIM[0], "MAX_BLOCK_DIM_Y": MAX_BLOCK_DIM[1],
    "MAX_BLOCK_DIM_Z": MAX_BLOCK_DIM[2],
    "MAX_GRID_DIM_X": MAX_GRID_DIM[0], "MAX_GRID_DIM_Y": MAX_GRID_DIM[1],
    "MAX_GRID_DIM_Z": MAX_GRID_DIM[2],
    "MAX_SHARED_MEMORY_PER_BLOCK": STATIC_SHARED_PER_BLOCK,
    "TOTAL_CONSTANT_MEMORY": 64 * 1024,
    "WARP_SIZE": 32,
    "MAX_PITCH": 2**31 - 1,
    "MAX_REGISTERS_PER_BLOCK": 65536,
    "CLOCK_RATE": lambda d: d.clock_khz,
    "TEXTURE_ALIGNMENT": 512,
    "GPU_OVERLAP": 1,
    "MULTIPROCESSOR_COUNT": lambda d: d.multiprocessors,
    "KERNEL_EXEC_TIMEOUT": 0,
    "INTEGRATED": 1,  # device memory is host memory
    "CAN_MAP_HOST_MEMORY": 1,
    "COMPUTE_MODE": 0,  # CU_COMPUTEMODE_DEFAULT
    "MAXIMUM_TEXTURE1D_WIDTH": 131072,
    "MAXIMUM_TEXTURE2D_WIDTH": 131072, "MAXIMUM_TEXTURE2D_HEIGHT": 65536,
    "MAXIMUM_TEXTURE3D_WIDTH": 16384, "MAXIMUM_TEXTURE3D_HEIGHT": 16384,
    "MAXIMUM_TEXTURE3D_DEPTH": 16384,
    "MAXIMUM_TEXTURE2D_LAYERED_WIDTH": 32768, "MAXIMUM_TEXTURE2D_LAYERED_HEIGHT": 32768,
    "MAXIMUM_TEXTURE2D_LAYERED_LAYERS": 2048,
    "SURFACE_ALIGNMENT": 512,
    "CONCURRENT_KERNELS": 1,
    "ECC_ENABLED": 0,
    "PCI_BUS_ID": 0, "PCI_DEVICE_ID": 0,
    "TCC_DRIVER": 0,
    "MEMORY_CLOCK_RATE": 0,  # not known for host memory
    "GLOBAL_MEMORY_BUS_WIDTH": 64,
    "L2_CACHE_SIZE": lambda d: d.cache_bytes,
    "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
    "ASYNC_ENGINE_COUNT": 1,
    "UNIFIED_ADDRESSING": 1,
    "MAXIMUM_TEXTURE1D_LAYERED_WIDTH": 32768, "MAXIMUM_TEXTURE1D_LAYERED_LAYERS": 2048,
    "CAN_TEX2D_GATHER": 1,
    "MAXIMUM_TEXTURE2D_GATHER_WIDTH": 32768, "MAXIMUM_TEXTURE2D_GATHER_HEIGHT": 32768,
    "MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE": 8192, "MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE": 8192,
    "MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE": 32768,
    "PCI_DOMAIN_ID": 0,
    "TEXTURE_PITCH_ALIGNMENT": 32,
    "MAXIMUM_TEXTURECUBEMAP_WIDTH": 32768,
    "MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH": 32768,
    "MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS": 2046,
    "MAXIMUM_SURFACE1D_WIDTH": 32768,
    "MAXIMUM_SURFACE2D_WIDTH": 131072, "MAXIMUM_SURFACE2D_HEIGHT": 65536,
    "MAXIMUM_SURFACE3D_WIDTH": 16384, "MAXIMUM_SURFACE3D_HEIGHT": 16384,
    "MAXIMUM_SURFACE3D_DEPTH": 16384,
    "MAXIMUM_SURFACE1D_LAYERED_WIDTH": 32768, "MAXIMUM_SURFACE1D_LAYERED_LAYERS": 2048,
    "MAXIMUM_SURFACE2D_LAYERED_WIDTH": 32768, "MAXIMUM_SURFACE2D_LAYERED_HEIGHT": 32768,
    "MAXIMUM_SURFACE2D_LAYERED_LAYERS": 2048,
    "MAXIMUM_SURFACECUBEMAP_WIDTH": 32768,
    "MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH": 32768,
    "MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS": 2046,
    "MAXIMUM_TEXTURE1D_LINEAR_WIDTH": 2**27,
    "MAXIMUM_TEXTURE2D_LINEAR_WIDTH": 131072, "MAXIMUM_TEXTURE2D_LINEAR_HEIGHT": 65000,
    "MAXIMUM_TEXTURE2D_LINEAR_PITCH": 2**21 - 32,
    "MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH": 32768, "MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT": 32768,
    "COMPUTE_CAPABILITY_MAJOR": lambda d: compute_capability()[0],
    "COMPUTE_CAPABILITY_MINOR": lambda d: compute_capability()[1],
    "MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH": 32768,
    "STREAM_PRIORITIES_SUPPORTED": 1,
    "GLOBAL_L1_CACHE_SUPPORTED": 1,
    "LOCAL_L1_CACHE_SUPPORTED": 1,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": SHARED_PER_MULTIPROCESSOR,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
    "MANAGED_MEMORY": 1,
    "MULTI_GPU_BOARD": 0,
    "MULTI_GPU_BOARD_GROUP_ID": 0,
    "HOST_NATIVE_ATOMIC_SUPPORTED": 1,  # the same memory, the same atomics
    "SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO": 2,
    "PAGEABLE_MEMORY_ACCESS": 1,
    "CONCURRENT_MANAGED_ACCESS": 1,
    "COMPUTE_PREEMPTION_SUPPORTED": 0,
    "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM": 1,
    "CAN_USE_STREAM_MEM_OPS_V1": 0,
    "CAN_USE_64_BIT_STREAM_MEM_OPS_V1": 0,
    "CAN_USE_STREAM_WAIT_VALUE_NOR_V1": 0,
    "COOPERATIVE_LAUNCH": 1,  # all blocks of the grid resident at once (launch.py)
    "COOPERATIVE_MULTI_DEVICE_LAUNCH": 0,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": OPTIN_SHARED_PER_BLOCK,
    "CAN_FLUSH_REMOTE_WRITES": 0,
    "HOST_REGISTER_SUPPORTED": 1,
    "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES": 1,
    "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST": 1,
    "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 1,  # host pages (vmm.py); not on Vulkan
    "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED": 0,
    "HANDLE_TYPE_WIN32_HANDLE_SUPPORTED": 0,
    "HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED": 0,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
    "GENERIC_COMPRESSION_SUPPORTED": 0,
    "MAX_PERSISTING_L2_CACHE_SIZE": lambda d: persisting_l2_max(d.cache_bytes),
    "MAX_ACCESS_POLICY_WINDOW_SIZE": MAX_ACCESS_POLICY_WINDOW,
    "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED": 0,
    "RESERVED_SHARED_MEMORY_PER_BLOCK": 0,
    "SPARSE_CUDA_ARRAY_SUPPORTED": 0,
    "READ_ONLY_HOST_REGISTER_SUPPORTED": 1,
    "TIMELINE_SEMAPHORE_INTEROP_SUPPORTED": 0,
    "MEMORY_POOLS_SUPPORTED": 1,  # cuMemAllocAsync and pools (mempool.py)
    "GPU_DIRECT_RDMA_SUPPORTED": 0,
    "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS": 0,
    "GPU_DIRECT_RDMA_WRITES_ORDERING": 0,
    "MEMPOOL_SUPPORTED_HANDLE_TYPES": 0,
    "CLUSTER_LAUNCH": 0,
    "DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED": 0,
    "CAN_USE_64_BIT_STREAM_MEM_OPS": 0,
    "CAN_USE_STREAM_WAIT_VALUE_NOR": 0,
    "DMA_BUF_SUPPORTED": 0,
    "IPC_EVENT_SUPPORTED": 1,  # ipc.py
    "MEM_SYNC_DOMAIN_COUNT": 1,
    "TENSOR_MAP_ACCESS_SUPPORTED": 0,
    "HANDLE_TYPE_FABRIC_SUPPORTED": 0,
    "UNIFIED_FUNCTION_POINTERS": 0,
    "NUMA_CONFIG": 0,  # CU_DEVICE_NUMA_CONFIG_NONE
    "NUMA_ID": -1,
    "MULTICAST_SUPPORTED": 0,
    "MPS_ENABLED": 0,
    "HOST_NUMA_ID": -1,
    "D3D12_CIG_SUPPORTED": 0,
    "MEM_DECOMPRESS_ALGORITHM_MASK": 0,
    "MEM_DECOMPRESS_MAXIMUM_LENGTH": 0,
    "VULKAN_CIG_SUPPORTED": 0,
    "GPU_PCI_DEVICE_ID": 0,
    "GPU_PCI_SUBSYSTEM_ID": 0,
    "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 0,
    "HOST_NUMA_MEMORY_POOLS_SUPPORTED": 0,
    "HOST_NUMA_MULTINODE_IPC_SUPPORTED": 0,
    "HOST_MEMORY_POOLS_SUPPORTED": 0,
    "HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED": 0,
    "HOST_ALLOC_DMA_BUF_SUPPORTED": 0,
    "ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED": 0,
}


@cache
def attribute_codes() -> dict[int, str]:
    """CUdevice_attribute value -> our table's key (the first name the enum gives it)."""
    out: dict[int, str] = {}
    for name, value in table.enums()["CUdevice_attribute"].items():
        key = name.removeprefix("CU_DEVICE_ATTRIBUTE_")
        if key in ATTRIBUTES and value not in out:
            out[value] = key
    return out


@dataclass(frozen=True)
class Device:
    ordinal: int
    name: str
    uuid: bytes
    multiprocessors: int
    clock_khz: int
    cache_bytes: int
    kind: str = "cpu"  # the backend: cpu | vulkan
    index: int = 0  # the backend's own device number
    overrides: tuple = ()  # (attribute key, value) pairs where the device differs from the CPU's
    memory_bytes: int = 0  # 0: the machine's memory

    def attribute(self, code: int) -> int:
        key = attribute_codes().get(code)
        if key is None:
            raise CudaError(E.INVALID_VALUE, f"{code} is not a CUdevice_attribute cuport knows")
        return self.value(key)

    def value(self, key: str) -> int:
        """The attribute named `key` (ATTRIBUTES' names) for this device."""
        for k, v in self.overrides:
            if k == key:
                return v(self) if callable(v) else v  # (a function: what costs to learn)
        value = ATTRIBUTES[key]
        return value(self) if callable(value) else value

    def backend(self):
        """The backend that runs this device's modules and owns its memory (looked up once:
        every launch and copy asks)."""
        b = self.__dict__.get("_backend")
        if b is None:
            from cuport.driver import module  # (imports this module)

            b = module.backend_for(self)
            object.__setattr__(self, "_backend", b)  # (a cache, not a field)
        return b

    def loaded_backend(self):
        """This device's backend if it was made (module.loaded_backend), else None."""
        b = self.__dict__.get("_backend")  # (made by backend(): asked before every copy)
        if b is not None:
            return b
        from cuport.driver import module

        return module.loaded_backend(self)

    def total_memory(self) -> int:
        return self.memory_bytes or total_memory()

    @property
    def pci_bus_id(self) -> str:
        return f"{0:04x}:{0:02x}:{0:02x}.0"


def _cpu_device(ordinal: int) -> Device:
    model = _cpuinfo("model name") or os.uname().machine
    try:
        machine_id = open("/etc/machine-id").read().strip()
    except OSError:
        machine_id = os.uname().nodename
    uuid = hashlib.md5(f"cuport:{model}:{machine_id}".encode()).digest()
    return Device(ordinal, f"cuport CPU ({model})", uuid, core_count(), _clock_khz(), l2_bytes(),
                  overrides=(("CLOCK_RATE", _cpu_clock_rate),))


def _cpu_clock_rate(d: Device) -> int:
    """The rate of the counter %clock64 reads, measured when a program asks (x86-64), else
    the frequency the CPU reports (backends/cpu/clock.py)."""
    from cuport.backends.cpu import clock

    return clock.clock_rate_khz() if clock.measurable() else d.clock_khz


def _vulkan_device(ordinal: int, index: int) -> Device:
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.attributes import device_attributes

    infos = runtime.devices()
    if index >= len(infos):
        why = f"there are {len(infos)} Vulkan devices" + (f" ({runtime.unavailable_reason()})"
                                                         if not infos else "")
        raise CudaError(E.NO_DEVICE, f"CUPORT_DEVICE asks for vulkan:{index}, but {why}")
    info = infos[index]
    runtime.at_shut_down(_shut_down)
    attrs = device_attributes(info)
    memory = attrs.pop("_memory_bytes")
    # (clock_khz 0: the CLOCK_RATE override answers, measured when asked)
    return Device(ordinal, f"cuport Vulkan ({info.name})", bytes(info.uuid), attrs["MULTIPROCESSOR_COUNT"],
                  0, attrs["L2_CACHE_SIZE"], "vulkan", index,
                  tuple(sorted(attrs.items())), memory)


def on_shut_down() -> None:
    """Called when a Vulkan device is about to be closed at the end of a Python program
    (capi/runtime.py replaces it: every later call is then answered without Python, as
    after the interpreter's end)."""


def _shut_down() -> None:
    on_shut_down()  # (looked up at the call: capi replaces it)


#: device files through which a GPU's Vulkan driver reaches it (Linux DRM render nodes,
#: NVIDIA's, WSL's, AMD's compute node); where none exists no GPU is looked for, since
#: loading the Vulkan loader and its drivers costs every program ~0.15 s (lavapipe alone)
_GPU_NODES = ("/dev/dri/renderD*", "/dev/nvidia[0-9]*", "/dev/dxg", "/dev/kfd")


@cache
def default_device() -> tuple[str, int]:
    """The device a program gets when CUPORT_DEVICE does not say: the first discrete GPU a
    Vulkan driver presents that cuport can run on (`DeviceInfo.usable`), else the first such
    integrated GPU, else the CPU. A CPU Vulkan driver (lavapipe) is never the default: the
    CPU backend is faster than it. The Vulkan backend passes the whole program suite on
    NVIDIA's driver (tests/programs, H100 and H200); the CPU stays a setting away."""
    if sys.platform != "darwin" and not any(glob.glob(p) for p in _GPU_NODES):
        return ("cpu", 0)
    try:
        from cuport.backends.vulkan import runtime

        infos = runtime.devices()
    except Exception:  # noqa: BLE001 - no loader, no driver, a broken one: the CPU it is
        return ("cpu", 0)
    for kind in ("discrete", "integrated"):
        for info in infos:
            if info.usable and info.device_type == kind:
                return ("vulkan", info.index)
    return ("cpu", 0)


def device_spec() -> list[tuple[str, int]]:
    """CUPORT_DEVICE as [(kind, index)]: cpu, vulkan, vulkan:N or auto, comma-separated."""
    text = os.environ.get("CUPORT_DEVICE", "auto").strip() or "auto"
    out = []
    for part in text.split(","):
        kind, _, idx = part.strip().lower().partition(":")
        if (kind not in ("cpu", "vulkan", "auto") or (idx and not idx.isdigit())
                or (kind in ("cpu", "auto") and idx)):
            raise CudaError(E.INVALID_VALUE, f"CUPORT_DEVICE={text!r}: {part!r} is not a device "
                                             "(write cpu, vulkan, vulkan:N or auto, comma-separated)")
        out.append(default_device() if kind == "auto" else (kind, int(idx or 0)))
    return out


@cache
def devices() -> tuple[Device, ...]:
    out = []
    for kind, index in device_spec():
        ordinal = len(out)
        out.append(_cpu_device(ordinal) if kind == "cpu" else _vulkan_device(ordinal, index))
    return tuple(out)


def get(ordinal: int) -> Device:
    if not 0 <= ordinal < len(devices()):
        raise CudaError(E.INVALID_DEVICE, f"device {ordinal} does not exist "
                                          f"(cuport presents {len(devices())} device)")
    return devices()[ordinal]


# -- API ------------------------------------------------------------------------------

@implements("cuInit", before_init=True)
def init(flags: int) -> None:
    global _initialized
    if flags != 0:
        raise CudaError(E.INVALID_VALUE, f"flags must be 0, not {flags}")
    compute_capability()  # a bad CUPORT_CC fails here, once, with its reason
    _initialized = True


@implements("cuDriverGetVersion", before_init=True)
def get_driver_version() -> int:
    return driver_version()


@implements("cuDeviceGetCount")
def device_count() -> int:
    return len(devices())


@implements("cuDeviceGet")
def device_get(ordinal: int) -> int:
    return get(ordinal).ordinal


@implements("cuDeviceGetName")
def device_name(buffer: int, length: int, dev: int) -> None:
    name = get(dev).name.encode()
    if buffer == 0 or length <= 0:
        raise CudaError(E.INVALID_VALUE, "name buffer is NULL or its length is not positive")
    data = name[: length - 1] + b"\0"
    types.write_bytes(buffer, data)


@implements("cuDeviceGetUuid", "cuDeviceGetUuid_v2")
def device_uuid(address: int, dev: int) -> None:
    if address == 0:
        raise CudaError(E.INVALID_VALUE, "uuid is NULL")
    types.write_bytes(address, get(dev).uuid)


@implements("cuDeviceTotalMem_v2")
def device_total_mem(dev: int) -> int:
    return get(dev).total_memory()


@implements("cuDeviceGetAttribute")
def device_attribute(attrib: int, dev: int) -> int:
    return get(dev).attribute(attrib)


@implements("cuDeviceComputeCapability")
def device_compute_capability(dev: int) -> tuple[int, int]:
    get(dev)
    return compute_capability()


@implements("cuDeviceGetProperties")
def device_properties(address: int, dev: int) -> None:
    d = get(dev)
    if address == 0:
        raise CudaError(E.INVALID_VALUE, "prop is NULL")
    p = types.struct_at(address, "CUdevprop")
    p.maxThreadsPerBlock = MAX_THREADS_PER_BLOCK
    p.maxThreadsDim = list(MAX_BLOCK_DIM)
    p.maxGridSize = list(MAX_GRID_DIM)
    p.sharedMemPerBlock = STATIC_SHARED_PER_BLOCK
    p.totalConstantMemory = ATTRIBUTES["TOTAL_CONSTANT_MEMORY"]
    p.SIMDWidth = 32
    p.memPitch = ATTRIBUTES["MAX_PITCH"]
    p.regsPerBlock = ATTRIBUTES["MAX_REGISTERS_PER_BLOCK"]
    p.clockRate = d.value("CLOCK_RATE")
    p.textureAlign = ATTRIBUTES["TEXTURE_ALIGNMENT"]


@implements("cuDeviceGetPCIBusId")
def device_pci_bus_id(buffer: int, length: int, dev: int) -> None:
    text = get(dev).pci_bus_id.encode()
    if buffer == 0 or length <= 0:
        raise CudaError(E.INVALID_VALUE, "pciBusId buffer is NULL or its length is not positive")
    types.write_bytes(buffer, text[: length - 1] + b"\0")


@implements("cuDeviceGetByPCIBusId")
def device_by_pci_bus_id(bus_id: str | None) -> int:
    for d in devices():
        if bus_id and bus_id.lower() in (d.pci_bus_id, d.pci_bus_id[5:]):
            return d.ordinal
    raise CudaError(E.INVALID_DEVICE, f"no device at PCI bus id {bus_id!r}")


@implements("cuDeviceCanAccessPeer")
def device_can_access_peer(dev: int, peer: int) -> int:
    get(dev)
    get(peer)
    return 0


@implements("cuDeviceGetExecAffinitySupport")
def device_exec_affinity_support(kind: int, dev: int) -> int:
    get(dev)
    return 0
