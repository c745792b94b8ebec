"""What a translated kernel asks of a Vulkan device, in the names the runtime reports
(runtime.DeviceInfo: `features`, `float_controls`, `subgroup_operations`): a table from the
SPIR-V capabilities declared, plus the uses whose feature depends on the storage class
(64-bit and float atomics on buffers or shared memory) that the translator records."""

from __future__ import annotations

# capability -> device feature (VkPhysicalDevice*Features member)
CAPABILITY_FEATURES = {
    "Int64": "shaderInt64",
    "Int16": "shaderInt16",
    "Int8": "shaderInt8",
    "Float16": "shaderFloat16",
    "Float64": "shaderFloat64",
    "StorageBuffer8BitAccess": "storageBuffer8BitAccess",
    "StorageBuffer16BitAccess": "storageBuffer16BitAccess",
    "StoragePushConstant8": "storagePushConstant8",
    "StoragePushConstant16": "storagePushConstant16",
    "PhysicalStorageBufferAddresses": "bufferDeviceAddress",
    "VulkanMemoryModel": "vulkanMemoryModel",
    "VulkanMemoryModelDeviceScope": "vulkanMemoryModelDeviceScope",
}

# capability -> subgroup operation class (VkSubgroupFeatureFlagBits, lower case)
CAPABILITY_SUBGROUP_OPS = {
    "GroupNonUniform": "basic",
    "GroupNonUniformVote": "vote",
    "GroupNonUniformArithmetic": "arithmetic",
    "GroupNonUniformBallot": "ballot",
    "GroupNonUniformShuffle": "shuffle",
    "GroupNonUniformShuffleRelative": "shuffle_relative",
    "GroupNonUniformClustered": "clustered",
    "GroupNonUniformQuad": "quad",
}

# float-control execution mode -> VkPhysicalDeviceFloatControlsProperties member prefix
MODE_PROPERTIES = {
    "SignedZeroInfNanPreserve": "shaderSignedZeroInfNanPreserveFloat",
    "DenormPreserve": "shaderDenormPreserveFloat",
    "DenormFlushToZero": "shaderDenormFlushToZeroFloat",
    "RoundingModeRTE": "shaderRoundingModeRTEFloat",
}

# (atomic kind, storage class) -> feature
ATOMIC_FEATURES = {
    ("int64", "PhysicalStorageBuffer"): "shaderBufferInt64Atomics",
    ("int64", "Workgroup"): "shaderSharedInt64Atomics",
    ("fadd32", "PhysicalStorageBuffer"): "shaderBufferFloat32AtomicAdd",
    ("fadd32", "Workgroup"): "shaderSharedFloat32AtomicAdd",
    ("fadd64", "PhysicalStorageBuffer"): "shaderBufferFloat64AtomicAdd",
    ("fadd64", "Workgroup"): "shaderSharedFloat64AtomicAdd",
    ("fminmax32", "PhysicalStorageBuffer"): "shaderBufferFloat32AtomicMinMax",
    ("fminmax32", "Workgroup"): "shaderSharedFloat32AtomicMinMax",
    ("fminmax64", "PhysicalStorageBuffer"): "shaderBufferFloat64AtomicMinMax",
    ("fminmax64", "Workgroup"): "shaderSharedFloat64AtomicMinMax",
}


def atomic_kind(opname: str, width: int, is_float: bool) -> str | None:
    if is_float:
        if opname == "OpAtomicFAddEXT":
            return f"fadd{width}"
        if opname in ("OpAtomicFMinEXT", "OpAtomicFMaxEXT"):
            return f"fminmax{width}"
        return None
    return "int64" if width == 64 else None


def requirements(capabilities, execution_modes, uses) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(device features, float-control properties, subgroup operation classes) needed."""
    feats = {CAPABILITY_FEATURES[c] for c in capabilities if c in CAPABILITY_FEATURES}
    feats |= set(uses)
    props = {f"{MODE_PROPERTIES[m]}{w}" for m, w in execution_modes if m in MODE_PROPERTIES}
    ops = {CAPABILITY_SUBGROUP_OPS[c] for c in capabilities if c in CAPABILITY_SUBGROUP_OPS}
    return tuple(sorted(feats)), tuple(sorted(props)), tuple(sorted(ops))
