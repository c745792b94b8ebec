"""The exceptions the runtime raises; the backend maps them to CUresult codes.

VulkanUnavailable: no loader, no driver or no usable device (CUDA_ERROR_NO_DEVICE).
OutOfDeviceMemory: an allocation the device refused (CUDA_ERROR_OUT_OF_MEMORY).
DeviceLost: the driver reported VK_ERROR_DEVICE_LOST; the device is unusable from then on
(CUDA_ERROR_LAUNCH_FAILED / ILLEGAL_ADDRESS, as a GPU fault is).
Unsupported: the device lacks what a request needs (CUDA_ERROR_NOT_SUPPORTED).
VulkanError: any other failing Vulkan call, with the call's name and the VkResult's name.
"""

from __future__ import annotations


class VulkanError(Exception):
    """A Vulkan call failed: `call` is the function's name, `result` the VkResult (int)."""

    def __init__(self, message: str, call: str = "", result: int = 0) -> None:
        super().__init__(message)
        self.call = call
        self.result = result


class VulkanUnavailable(VulkanError):
    """No Vulkan loader, driver or device to run on; the message says which and why."""


class OutOfDeviceMemory(VulkanError):
    """The device (or host, for host-visible memory) had no room for an allocation."""


class DeviceLost(VulkanError):
    """The driver lost the device (a fault, a hang, a reset): every later call fails too."""


class Unsupported(VulkanError):
    """The device cannot do what was asked (a feature, a limit); the message names it."""
