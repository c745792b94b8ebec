"""What a Vulkan device may refuse by design (README: "Devices"), as the words of the refusal
(CUDA_ERROR_NOT_SUPPORTED, 801): tests skip these with the message on such a device, and fail
on anything else. lavapipe's 8-wide subgroups refuse warp collectives in code that part of the
block may skip, and devices that run a workgroup in lock step refuse divergent barriers and
spin loops between threads of a block."""

VULKAN_LIMITS = ("a warp collective", "a warp barrier (bar.warp.sync) in code",
                 "a CTA barrier in code that",
                 "a loop that waits for another thread of the block",
                 "a guarded shfl",
                 "a guarded vote", "a guarded activemask", "a guarded match")


def device_limit(device: str, status: int, message: str) -> bool:
    """A refusal that the Vulkan device `device` may make by design (not the CPU's)."""
    return device != "cpu" and status == 801 and any(w in message for w in VULKAN_LIMITS)


def devices() -> list[str]:
    """The devices tests run on: the CPU, and the first Vulkan device where there is one
    (lavapipe in CI)."""
    from cuport.backends.vulkan import runtime

    return ["cpu"] + (["vulkan"] if runtime.devices() else [])
