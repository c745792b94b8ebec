"""What cuport asks of a Vulkan device: feature structs, features, extensions and limits, as tables.

Each feature row names the Vulkan member, the structs it can live in (the core struct
first, then the extension struct a device without that core version uses), whether cuport
cannot run without it (REQUIRED) or loses something (WANTED), and what is lost. The same
tables decide what `devices()` reports missing and what `open()` enables: exactly the
features listed here that the device has.
"""

from __future__ import annotations

from dataclasses import dataclass

REQUIRED = "required"
WANTED = "wanted"

MIN_API = (1, 2)  # buffer device addresses, timeline semaphores, the memory model: core in 1.2


@dataclass(frozen=True)
class FeatureStruct:
    ctype: str
    core: tuple[int, int] | None = None  # chained on devices of this version or later
    extension: str | None = None  # else chained when the device has this extension ...
    promoted: tuple[int, int] | None = None  # ... and is older than the version that made it core


FEATURE_STRUCTS = (
    FeatureStruct("VkPhysicalDeviceVulkan11Features", core=(1, 2)),
    FeatureStruct("VkPhysicalDeviceVulkan12Features", core=(1, 2)),
    FeatureStruct("VkPhysicalDeviceVulkan13Features", core=(1, 3)),
    FeatureStruct("VkPhysicalDeviceSubgroupSizeControlFeaturesEXT",
                  extension="VK_EXT_subgroup_size_control", promoted=(1, 3)),
    FeatureStruct("VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
                  extension="VK_EXT_shader_atomic_float"),
    FeatureStruct("VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT",
                  extension="VK_EXT_shader_atomic_float2"),
    FeatureStruct("VkPhysicalDeviceShaderClockFeaturesKHR", extension="VK_KHR_shader_clock"),
    FeatureStruct("VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR",
                  extension="VK_KHR_shader_subgroup_uniform_control_flow"),
    FeatureStruct("VkPhysicalDeviceShaderSMBuiltinsFeaturesNV",
                  extension="VK_NV_shader_sm_builtins"),
    FeatureStruct("VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR",
                  extension="VK_KHR_pipeline_executable_properties"),
)

CORE10 = "VkPhysicalDeviceFeatures"  # VkPhysicalDeviceFeatures2.features
V11 = "VkPhysicalDeviceVulkan11Features"
V12 = "VkPhysicalDeviceVulkan12Features"
V13 = "VkPhysicalDeviceVulkan13Features"
SSC = "VkPhysicalDeviceSubgroupSizeControlFeaturesEXT"
AF = "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT"
AF2 = "VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT"
CLOCK = "VkPhysicalDeviceShaderClockFeaturesKHR"
SUCF = "VkPhysicalDeviceShaderSubgroupUniformControlFlowFeaturesKHR"
SMB = "VkPhysicalDeviceShaderSMBuiltinsFeaturesNV"
PEP = "VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR"


@dataclass(frozen=True)
class Feature:
    name: str  # the Vulkan struct member, also the key in DeviceInfo.features
    structs: tuple[str, ...]  # where it lives, first match wins
    need: str
    why: str  # what cuport cannot do without it


FEATURES = (
    Feature("bufferDeviceAddress", (V12,), REQUIRED, "a CUdeviceptr is a buffer device address"),
    Feature("timelineSemaphore", (V12,), REQUIRED, "streams and events are timeline semaphores"),
    Feature("vulkanMemoryModel", (V12,), REQUIRED, "kernels use the Vulkan memory model"),
    Feature("vulkanMemoryModelDeviceScope", (V12,), REQUIRED,
            "device-scope atomics and fences (membar.gl, atom.gpu)"),
    Feature("shaderInt64", (CORE10,), REQUIRED, "64-bit pointers and integers"),
    Feature("shaderInt16", (CORE10,), WANTED, "16-bit integer arithmetic"),
    Feature("shaderInt8", (V12,), WANTED, "8-bit integer arithmetic"),
    Feature("shaderFloat16", (V12,), WANTED, "f16 arithmetic"),
    Feature("shaderFloat64", (CORE10,), WANTED, "f64 arithmetic (kernels using it are refused)"),
    Feature("storageBuffer8BitAccess", (V12,), WANTED, "8-bit loads and stores of global memory"),
    Feature("storageBuffer16BitAccess", (V11,), WANTED, "16-bit loads and stores of global memory"),
    Feature("shaderBufferInt64Atomics", (V12,), WANTED, "64-bit atomics on global memory"),
    Feature("shaderSharedInt64Atomics", (V12,), WANTED, "64-bit atomics on shared memory"),
    Feature("shaderBufferFloat32AtomicAdd", (AF,), WANTED,
            "native f32 atomic add on global memory (else a compare-and-swap loop)"),
    Feature("shaderSharedFloat32AtomicAdd", (AF,), WANTED,
            "native f32 atomic add on shared memory (else a compare-and-swap loop)"),
    Feature("shaderBufferFloat64AtomicAdd", (AF,), WANTED,
            "native f64 atomic add on global memory (else a compare-and-swap loop)"),
    Feature("shaderSharedFloat64AtomicAdd", (AF,), WANTED,
            "native f64 atomic add on shared memory (else a compare-and-swap loop)"),
    Feature("shaderBufferFloat32AtomicMinMax", (AF2,), WANTED,
            "native f32 atomic min/max on global memory (else a compare-and-swap loop)"),
    Feature("shaderSharedFloat32AtomicMinMax", (AF2,), WANTED,
            "native f32 atomic min/max on shared memory (else a compare-and-swap loop)"),
    Feature("subgroupSizeControl", (V13, SSC), WANTED,
            "a required subgroup size of 32 (warps as subgroups)"),
    Feature("computeFullSubgroups", (V13, SSC), WANTED, "full subgroups in every workgroup"),
    Feature("shaderSubgroupExtendedTypes", (V12,), WANTED,
            "subgroup operations on 8-, 16- and 64-bit values"),
    Feature("shaderSubgroupClock", (CLOCK,), WANTED, "clock/clock64 (subgroup clock)"),
    Feature("shaderDeviceClock", (CLOCK,), WANTED, "globaltimer-like device clock"),
    Feature("shaderSubgroupUniformControlFlow", (SUCF,), WANTED,
            "the SubgroupUniformControlFlowKHR execution mode"),
    Feature("maintenance4", (V13,), WANTED, "LocalSizeId and maxBufferSize"),
    Feature("synchronization2", (V13,), WANTED,
            "pipeline barriers described by one struct (vkCmdPipelineBarrier2: less host time "
            "per launch)"),
    Feature("shaderSMBuiltins", (SMB,), WANTED, "%smid and %nsmid as the GPU's own"),
    Feature("pipelineExecutableInfo", (PEP,), WANTED,
            "the driver's statistics per kernel, such as its registers (CUPORT_VK_STATS=1)"),
)

# Device extensions enabled when present (features aside): what each gives cuport.
EXTENSIONS = (
    ("VK_EXT_external_memory_host",
     "host memory imported into the device: cuMemHostRegister, managed memory at one address"),
    ("VK_EXT_memory_budget", "free device memory (cuMemGetInfo)"),
    ("VK_KHR_external_memory_fd",
     "device memory shared with other processes (cuIpcGetMemHandle, cuIpcOpenMemHandle)"),
)

# Subgroup operation bits (VkSubgroupFeatureFlagBits) cuport's warp collectives use.
SUBGROUP_OPS_WANTED = ("basic", "vote", "ballot", "shuffle", "shuffle_relative", "arithmetic")

# Limits below CUDA's: (name in DeviceInfo.limits, CUDA's value, what is lost).
LIMITS_WANTED = (
    ("max_shared_memory", 48 * 1024, "48 KiB of workgroup memory: blocks with more shared memory "
                                     "keep it in device memory (slower)"),
    ("max_workgroup_invocations", 1024, "1024 threads per block"),
)


def struct_applies(s: FeatureStruct, api: tuple[int, int], extensions: frozenset[str]) -> bool:
    """Whether `s` may be chained for a device of version `api` with `extensions`."""
    if s.core is not None:
        return api >= s.core
    if s.promoted is not None and api >= s.promoted:
        return False
    return s.extension in extensions
