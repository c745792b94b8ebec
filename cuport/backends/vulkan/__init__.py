"""The Vulkan compute backend: PTX kernels as SPIR-V compute shaders on any Vulkan 1.2+ GPU."""
