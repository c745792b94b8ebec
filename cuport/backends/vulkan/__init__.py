"""The Vulkan compute backend: PTX kernels as SPIR-V compute shaders on a Vulkan device."""
