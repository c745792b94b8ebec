"""Test support: run a translated kernel on the first usable Vulkan device (lavapipe here and
in CI) through cuport's Vulkan runtime, or skip with the reason."""

from __future__ import annotations

import struct

import numpy as np
import pytest

_dev = None


def device():
    global _dev
    if _dev is None:
        import vkrt_support
        _dev = vkrt_support.device()
    return _dev


class Ptr:
    """A push-constant argument that is a device buffer holding `array` (copied in, and out
    again after the run)."""

    def __init__(self, array: np.ndarray):
        self.array = np.ascontiguousarray(array)


_modes: dict | None = None


def device_float_modes() -> dict:
    """The FloatModes fields that describe the device's subnormals, as the backend sets them
    (spirv/probe.py subnormal_modes, with the probe run here; CUPORT_VK_FLUSH32 as there)."""
    global _modes
    if _modes is None:
        import os

        from cuport.backends.vulkan.spirv.probe import subnormal_modes

        dev = device()
        _modes = subnormal_modes(dev.info.float_controls, os.environ.get("CUPORT_VK_FLUSH32", ""),
                                 lambda preserve: _probe_subnormals(dev, preserve),
                                 os.environ.get("CUPORT_VK_FMA32", ""))
    return _modes


def on_device(float_modes=None):
    """`float_modes` (default FloatModes()) with the device's subnormal handling."""
    import dataclasses

    from cuport.backends.vulkan.spirv import FloatModes

    return dataclasses.replace(float_modes or FloatModes(), **device_float_modes())


def _probe_subnormals(dev, preserve: bool) -> tuple[bool, bool, bool]:
    from cuport.backends.vulkan.spirv import (
        subnormal_probe_flushes,
        subnormal_probe_push,
        subnormal_probe_shader,
    )

    sh = subnormal_probe_shader(preserve)
    buf = dev.alloc(64)
    try:
        s = dev.stream()
        s.dispatch(dev.pipeline(sh.spirv, sh.entry, sh.local_size, sh.push_size), (1, 1, 1),
                   subnormal_probe_push(buf.address))
        out = np.zeros(48, np.uint8)
        s.copy_to_host(out, buf.address)
        s.synchronize()
        return subnormal_probe_flushes(out.tobytes())
    finally:
        dev.free(buf)


def run(shader, groups: tuple[int, int, int], args: list) -> list:
    """Dispatch `shader` over `groups` workgroups. `args` are laid out in the push block in
    order, each at its natural alignment: Ptr (an 8-byte device address), or (fmt, value)
    with a struct format ("I", "Q", "f", ...). Returns the arrays of the Ptr arguments after
    the run, in order."""
    dev = device()
    for cap in ("Float64", "Int64Atomics"):
        if cap in shader.capabilities and cap == "Float64" and not dev.info.features.get("shaderFloat64", True):
            pytest.skip("the device has no shaderFloat64")
    push = bytearray()
    bufs = []
    try:
        for a in args:
            if isinstance(a, Ptr):
                buf = dev.alloc(max(a.array.nbytes, 4))
                bufs.append((buf, a))
                fmt, value = "Q", buf.address
            else:
                fmt, value = a
            size = struct.calcsize(fmt)
            push += b"\0" * (-len(push) % size)
            push += struct.pack("<" + fmt, value)
        s = dev.stream()
        for buf, a in bufs:
            if a.array.nbytes:
                s.copy_to_device(buf.address, a.array)
        pipe = dev.pipeline(shader.spirv, shader.entry, shader.local_size, max(shader.push_size, len(push)))
        s.dispatch(pipe, groups, bytes(push))
        out = []
        for buf, a in bufs:
            r = np.empty_like(a.array)
            if r.nbytes:
                s.copy_to_host(r, buf.address)
            out.append(r)
        s.synchronize()
        return out
    finally:
        for buf, _ in bufs:
            dev.free(buf)
