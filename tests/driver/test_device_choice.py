"""Which devices a program gets: CUPORT_DEVICE, and with it unset, a real GPU where there is
one (driver/device.py default_device)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from cuport.driver import device
from cuport.driver.errors import CudaError


@dataclasses.dataclass
class FakeInfo:
    index: int
    device_type: str
    usable: bool = True


def _default(monkeypatch, infos, nodes=("/dev/dri/renderD128",), platform="linux"):
    from cuport.backends.vulkan import runtime

    device.default_device.cache_clear()
    monkeypatch.setattr(device.glob, "glob", lambda pattern: [n for n in nodes if
                                                              n.startswith(pattern.split("*")[0].split("[")[0])])
    monkeypatch.setattr(device.sys, "platform", platform)
    monkeypatch.setattr(runtime, "devices", lambda: list(infos))
    try:
        return device.default_device()
    finally:
        device.default_device.cache_clear()


def test_a_discrete_gpu_before_an_integrated_one_and_never_a_cpu_driver(monkeypatch):
    infos = [FakeInfo(0, "cpu"), FakeInfo(1, "integrated"), FakeInfo(2, "discrete")]
    assert _default(monkeypatch, infos) == ("vulkan", 2)
    assert _default(monkeypatch, infos[:2]) == ("vulkan", 1)
    assert _default(monkeypatch, infos[:1]) == ("cpu", 0)  # lavapipe: the CPU backend is faster


def test_a_gpu_cuport_cannot_run_on_is_not_the_default(monkeypatch):
    infos = [FakeInfo(0, "discrete", usable=False), FakeInfo(1, "virtual")]
    assert _default(monkeypatch, infos) == ("cpu", 0)


def test_no_gpu_device_file_means_no_vulkan_probe(monkeypatch):
    def boom():
        raise AssertionError("the Vulkan loader was loaded on a machine with no GPU")

    from cuport.backends.vulkan import runtime

    device.default_device.cache_clear()
    monkeypatch.setattr(device.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(device.sys, "platform", "linux")
    monkeypatch.setattr(runtime, "devices", boom)
    try:
        assert device.default_device() == ("cpu", 0)
    finally:
        device.default_device.cache_clear()
    # macOS has no device files for its GPUs: there the drivers are always asked
    assert _default(monkeypatch, [FakeInfo(0, "integrated")], nodes=(), platform="darwin") == ("vulkan", 0)
    assert _default(monkeypatch, [FakeInfo(0, "discrete")], nodes=("/dev/nvidia0",)) == ("vulkan", 0)


def test_a_broken_vulkan_setup_falls_back_to_the_cpu(monkeypatch):
    from cuport.backends.vulkan import runtime

    def broken():
        raise OSError("libvulkan.so.1: cannot open shared object file")

    device.default_device.cache_clear()
    monkeypatch.setattr(device.glob, "glob", lambda pattern: ["/dev/dri/renderD128"])
    monkeypatch.setattr(runtime, "devices", broken)
    try:
        assert device.default_device() == ("cpu", 0)
    finally:
        device.default_device.cache_clear()


@pytest.mark.parametrize("text, spec", [
    ("cpu", [("cpu", 0)]),
    ("vulkan", [("vulkan", 0)]),
    ("Vulkan:2, cpu", [("vulkan", 2), ("cpu", 0)]),
    ("auto,cpu", [("default", 0), ("cpu", 0)]),
])
def test_cuport_device_lists_devices_in_order(monkeypatch, text, spec):
    monkeypatch.setenv("CUPORT_DEVICE", text)
    want = [device.default_device() if k == "default" else (k, i) for k, i in spec]
    assert device.device_spec() == want


@pytest.mark.parametrize("text", ["gpu", "cpu:1", "vulkan:x", "auto:0"])
def test_a_bad_cuport_device_is_invalid_value_naming_it(monkeypatch, text):
    monkeypatch.setenv("CUPORT_DEVICE", text)
    with pytest.raises(CudaError) as e:
        device.device_spec()
    assert e.value.code == 1 and repr(text) in str(e.value)  # CUDA_ERROR_INVALID_VALUE


def test_info_names_the_default_device():
    env = {k: v for k, v in __import__("os").environ.items() if k != "CUPORT_DEVICE"}
    r = subprocess.run([sys.executable, "-m", "cuport.cli", "info"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    kind, index = device.default_device()
    marked = [line for line in r.stdout.splitlines() if "the default" in line]
    assert len(marked) == 1, r.stdout
    assert marked[0].strip().startswith("cpu" if kind == "cpu" else f"vulkan:{index}")
