"""Compute pipelines: a shader module, one push-constant range, no descriptor sets.

Kernels reach memory only through buffer device addresses, so the layout is the same for
every kernel apart from the push-constant size. Pipelines are reused when the SPIR-V and
the options are identical. Every pipeline allows vkCmdDispatchBase (grids larger than the
device's workgroup count are split; WorkgroupId then counts from the base, NumWorkgroups is
the piece's count, so a kernel must take the grid size from its push constants).

The driver's pipeline cache is kept on disk (CUPORT_CACHE_DIR/vulkan/) and loaded only from a
file that this user owns in a directory that this user owns, neither writable by anyone
else, whose header names this very device and driver (CUPORT_CACHE=0: not at all).
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import tempfile
import threading
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import exec_stats
from .errors import Unsupported, VulkanError

if TYPE_CHECKING:
    from .device import Device

SPIRV_MAGIC = 0x07230203


@dataclass(eq=False)
class Pipeline:
    handle: Any  # VkPipeline
    layout: Any  # VkPipelineLayout
    module: Any  # VkShaderModule
    entry: str
    local_size: tuple[int, int, int]
    push_size: int  # bytes of push constants the layout declares (a multiple of 4)
    required_subgroup_size: int | None
    key: bytes


def spirv_bytes(code: bytes | bytearray | memoryview | list[int] | array) -> bytes:
    """SPIR-V as little-endian bytes, from bytes or a sequence of 32-bit words; checked for the magic."""
    if isinstance(code, (bytes, bytearray, memoryview)):
        data = bytes(code)
    else:
        data = array("I", code).tobytes()
    if len(data) < 20 or len(data) % 4 or struct.unpack_from("<I", data)[0] != SPIRV_MAGIC:
        raise ValueError("not a SPIR-V module (little-endian words starting with 0x07230203)")
    return data


class Pipelines:
    """The pipelines of one device, and its VkPipelineCache."""

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.vk = dev.vk
        self._lock = threading.Lock()
        self._by_key: dict[bytes, Pipeline] = {}
        self._dirty = False
        self._path = self._cache_path()
        self.cache = self._create_cache(self._load())

    # -- pipelines ----------------------------------------------------------------------------------
    def get(self, spirv: Any, entry: str, local_size: tuple[int, int, int], push_size: int,
            required_subgroup_size: int | None = None, full_subgroups: bool = False) -> Pipeline:
        code = spirv_bytes(spirv)
        push = (push_size + 3) // 4 * 4
        key = hashlib.sha256(code + repr((entry, tuple(local_size), push, required_subgroup_size,
                                         full_subgroups)).encode()).digest()
        with self._lock:
            p = self._by_key.get(key)
            if p is None:
                self._check(local_size, push, required_subgroup_size, full_subgroups)
                p = self._create(code, entry, tuple(local_size), push, required_subgroup_size,
                                 full_subgroups, key)
                self._by_key[key] = p
                self._dirty = True
                from .device import exit_hook

                exit_hook("pipeline")  # after the driver's first compile (device.py)
            return p

    def _check(self, local_size: tuple[int, int, int], push: int, rss: int | None,
               full: bool) -> None:
        info = self.dev.info
        lim = info.limits
        x, y, z = local_size
        if min(local_size) < 1:
            raise ValueError(f"workgroup size {local_size} has a zero dimension")
        if x * y * z > lim.max_workgroup_invocations or any(
                a > b for a, b in zip(local_size, lim.max_workgroup_size, strict=True)):
            raise Unsupported(f"workgroup size {local_size} exceeds the device's limits "
                              f"({lim.max_workgroup_invocations} invocations, "
                              f"{lim.max_workgroup_size})", "vkCreateComputePipelines")
        if push > lim.max_push_constants:
            raise Unsupported(f"{push} bytes of push constants; the device allows "
                              f"{lim.max_push_constants}", "vkCreateComputePipelines")
        if rss is not None:
            if not self.dev.enabled_features.get("subgroupSizeControl") or \
                    not info.required_subgroup_size_compute:
                raise Unsupported("the device cannot require a subgroup size for compute "
                                  "(subgroupSizeControl)", "vkCreateComputePipelines")
            if rss & (rss - 1) or not info.min_subgroup_size <= rss <= info.max_subgroup_size:
                raise Unsupported(f"subgroup size {rss} asked for; the device gives "
                                  f"{info.min_subgroup_size}..{info.max_subgroup_size}",
                                  "vkCreateComputePipelines")
            if x * y * z > rss * lim.max_workgroup_subgroups:
                raise Unsupported(f"{x * y * z} invocations need more than the device's "
                                  f"{lim.max_workgroup_subgroups} subgroups of {rss}",
                                  "vkCreateComputePipelines")
        if full:
            if not self.dev.enabled_features.get("computeFullSubgroups"):
                raise Unsupported("the device cannot promise full subgroups "
                                  "(computeFullSubgroups)", "vkCreateComputePipelines")
            width = rss if rss is not None else info.max_subgroup_size
            if x % width:
                raise Unsupported(f"full subgroups need a workgroup x size that is a multiple "
                                  f"of {width}; it is {x}", "vkCreateComputePipelines")

    def _create(self, code: bytes, entry: str, local_size: tuple[int, int, int], push: int,
                rss: int | None, full: bool, key: bytes) -> Pipeline:
        vk, cmd, h = self.vk, self.dev.cmd, self.dev.handle
        ffi, lib = vk.ffi, vk.lib
        words = ffi.from_buffer("uint32_t[]", bytearray(code))
        smci = vk.new("VkShaderModuleCreateInfo", codeSize=len(code), pCode=words)
        mod = ffi.new("VkShaderModule*")
        vk.check(cmd.vkCreateShaderModule(h, smci, ffi.NULL, mod), "vkCreateShaderModule")
        layout = ffi.new("VkPipelineLayout*")
        try:
            rng = vk.new("VkPushConstantRange", stageFlags=lib.VK_SHADER_STAGE_COMPUTE_BIT,
                         offset=0, size=push)
            plci = vk.new("VkPipelineLayoutCreateInfo", pushConstantRangeCount=1 if push else 0,
                          pPushConstantRanges=rng if push else ffi.NULL)
            vk.check(cmd.vkCreatePipelineLayout(h, plci, ffi.NULL, layout),
                     "vkCreatePipelineLayout")
        except BaseException:
            cmd.vkDestroyShaderModule(h, mod[0], ffi.NULL)
            raise
        name = ffi.new("char[]", entry.encode())
        stage = vk.new("VkPipelineShaderStageCreateInfo", stage=lib.VK_SHADER_STAGE_COMPUTE_BIT,
                       module=mod[0], pName=name)
        required = None
        if rss is not None:
            required = vk.new("VkPipelineShaderStageRequiredSubgroupSizeCreateInfo",
                              requiredSubgroupSize=rss)
            stage.pNext = required
        if full:
            stage.flags = lib.VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT
        capture = exec_stats.wanted(self.dev)
        cpci = vk.new("VkComputePipelineCreateInfo", stage=stage[0], layout=layout[0],
                      flags=lib.VK_PIPELINE_CREATE_DISPATCH_BASE_BIT
                      | (lib.VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR if capture else 0))
        keep = (stage, name, required)  # noqa: F841 (what cpci.stage points to stays alive)
        pipe = ffi.new("VkPipeline*")
        try:
            vk.check(cmd.vkCreateComputePipelines(h, self.cache, 1, cpci, ffi.NULL, pipe),
                     "vkCreateComputePipelines")
        except BaseException:
            cmd.vkDestroyPipelineLayout(h, layout[0], ffi.NULL)
            cmd.vkDestroyShaderModule(h, mod[0], ffi.NULL)
            raise
        if capture:
            exec_stats.report(vk, self.dev, pipe[0], entry, local_size)
        return Pipeline(handle=pipe[0], layout=layout[0], module=mod[0], entry=entry,
                        local_size=local_size, push_size=push, required_subgroup_size=rss, key=key)

    def destroy(self, p: Pipeline) -> None:
        """Forget `p`; it is destroyed once the work queued so far (which may use it) has run."""
        with self._lock:
            if self._by_key.get(p.key) is not p:
                return
            del self._by_key[p.key]
        self.dev.defer(lambda: self._destroy(p))

    def _destroy(self, p: Pipeline) -> None:
        cmd, h, null = self.dev.cmd, self.dev.handle, self.vk.ffi.NULL
        cmd.vkDestroyPipeline(h, p.handle, null)
        cmd.vkDestroyPipelineLayout(h, p.layout, null)
        cmd.vkDestroyShaderModule(h, p.module, null)

    def close(self) -> None:
        self.save()
        with self._lock:
            for p in self._by_key.values():
                self._destroy(p)
            self._by_key.clear()
        self.dev.cmd.vkDestroyPipelineCache(self.dev.handle, self.cache, self.vk.ffi.NULL)

    # -- the driver's cache on disk ---------------------------------------------------------------------
    def _cache_path(self) -> Path | None:
        root = cache_root()
        if root is None:
            return None
        d = self.dev
        name = f"pipelines-{d.pipeline_cache_uuid.hex()}-{d.info.vendor_id:x}-{d.info.device_id:x}-" \
               f"{d.info.driver_version:x}.bin"
        return root / "vulkan" / name

    def _header_ok(self, data: bytes) -> bool:
        if len(data) < 32:
            return False
        size, version, vendor, device = struct.unpack_from("<IIII", data)
        return (size >= 32 and version == 1 and vendor == self.dev.info.vendor_id
                and device == self.dev.info.device_id
                and data[16:32] == self.dev.pipeline_cache_uuid)

    def _load(self) -> bytes:
        p = self._path
        if p is None:
            return b""
        try:
            if not (_private(p.parent) and _private(p, directory=False)):
                return b""
            data = p.read_bytes()
        except OSError:
            return b""
        return data if self._header_ok(data) else b""

    def _create_cache(self, data: bytes) -> Any:
        vk, ffi = self.vk, self.vk.ffi
        out = ffi.new("VkPipelineCache*")
        blob = ffi.from_buffer(data) if data else ffi.NULL
        ci = vk.new("VkPipelineCacheCreateInfo", initialDataSize=len(data), pInitialData=blob)
        r = self.dev.cmd.vkCreatePipelineCache(self.dev.handle, ci, ffi.NULL, out)
        if r < 0 and data:  # a cache the driver refuses: start empty
            ci.initialDataSize, ci.pInitialData = 0, ffi.NULL
            r = self.dev.cmd.vkCreatePipelineCache(self.dev.handle, ci, ffi.NULL, out)
        vk.check(r, "vkCreatePipelineCache")
        return out[0]

    def save(self) -> None:
        """Write the driver's cache if pipelines were made since it was read (best effort)."""
        p = self._path
        if p is None or not self._dirty:
            return
        vk, ffi, cmd, h = self.vk, self.vk.ffi, self.dev.cmd, self.dev.handle
        try:
            n = ffi.new("size_t*")
            vk.check(cmd.vkGetPipelineCacheData(h, self.cache, n, ffi.NULL), "vkGetPipelineCacheData")
            buf = ffi.new("char[]", n[0])
            vk.check(cmd.vkGetPipelineCacheData(h, self.cache, n, buf), "vkGetPipelineCacheData")
            data = bytes(ffi.buffer(buf, n[0]))
            if not self._header_ok(data):
                return
            p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _private(p.parent):
                return
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, p)
            self._dirty = False
        except (OSError, VulkanError):
            pass


def cache_root() -> Path | None:
    """cuport's cache directory, as backends/cache.py reads the same variables (kept apart
    so that this backend does not import the CPU one); None when CUPORT_CACHE turns it off."""
    if os.environ.get("CUPORT_CACHE", "1") in ("0", "off", "no"):
        return None
    env = os.environ.get("CUPORT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cuport"


def _private(path: Path, directory: bool = True) -> bool:
    """Owned by this user and writable by no one else (the project's rule for loaded files)."""
    st = path.lstat()
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    return kind_ok and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
