"""CUPORT_VK_STATS=1: the driver's own statistics of each compute pipeline cuport creates
(VK_KHR_pipeline_executable_properties: on NVIDIA's driver its registers per thread, the
figure that decides how many workgroups share a multiprocessor), printed to stderr as the
pipeline is made. For finding why a kernel runs slower than natively; nothing else reads
them."""

from __future__ import annotations

import os
import sys
from typing import Any


def wanted(dev: Any) -> bool:
    """Whether statistics are asked for and the device can give them."""
    if os.environ.get("CUPORT_VK_STATS", "") in ("", "0"):
        return False
    if dev.enabled_features.get("pipelineExecutableInfo"):
        return True
    if not getattr(dev, "_stats_refused", False):
        dev._stats_refused = True
        print(f"cuport: CUPORT_VK_STATS: {dev.info.name} has no pipelineExecutableInfo "
              "(VK_KHR_pipeline_executable_properties)", file=sys.stderr)
    return False


def _value(vk: Any, st: Any) -> str:
    lib = vk.lib
    fmt = st.format
    if fmt == lib.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
        return str(bool(st.value.b32))
    if fmt == lib.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
        return str(st.value.i64)
    if fmt == lib.VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
        return str(st.value.u64)
    return f"{st.value.f64:g}"


def _listed(vk: Any, fn: Any, what: str, h: Any, info: Any, ctype: str) -> Any:
    """Vulkan's two-call listing: how many, then that many `ctype` structs filled in."""
    ffi = vk.ffi
    n = ffi.new("uint32_t*")
    vk.check(fn(h, info, n, ffi.NULL), what)
    out = ffi.new(f"{ctype}[]", n[0])
    for i in range(n[0]):
        out[i].sType = vk.stype(ctype)
    vk.check(fn(h, info, n, out), what)
    return out


def report(vk: Any, dev: Any, pipeline: Any, entry: str, local_size: tuple[int, int, int]) -> None:
    """Print each executable's statistics of `pipeline` (made with CAPTURE_STATISTICS)."""
    ffi, cmd, h = vk.ffi, dev.cmd, dev.handle
    try:
        props = _listed(vk, cmd.vkGetPipelineExecutablePropertiesKHR,
                        "vkGetPipelineExecutablePropertiesKHR", h,
                        vk.new("VkPipelineInfoKHR", pipeline=pipeline),
                        "VkPipelineExecutablePropertiesKHR")
        for i, p in enumerate(props):
            ex = vk.new("VkPipelineExecutableInfoKHR", pipeline=pipeline, executableIndex=i)
            sts = _listed(vk, cmd.vkGetPipelineExecutableStatisticsKHR,
                          "vkGetPipelineExecutableStatisticsKHR", h, ex,
                          "VkPipelineExecutableStatisticKHR")
            figures = ", ".join(f"{ffi.string(s.name).decode()}={_value(vk, s)}" for s in sts)
            print(f"cuport: stats {entry} {local_size} [{ffi.string(p.name).decode()}]: "
                  f"{figures}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - a diagnostic: say why, never fail the launch
        print(f"cuport: CUPORT_VK_STATS: {entry}: {e}", file=sys.stderr)
