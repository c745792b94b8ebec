"""CU_DEVICE_ATTRIBUTE_CLOCK_RATE is the rate of the clock %clock64 reads (Vulkan:
backends/vulkan/clock.py clock_rate_khz, measured when first asked and kept in the cache;
CPU: the TSC's rate, backends/cpu/clock.py, measured and kept alike), so that clock64() differences divided by it are
milliseconds, as CUDA programs take them. On an NVIDIA GPU %clock64 counts SM cycles and the
rate is the SM clock's; here only the ratio to the host's time is asserted, never a value.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402

LINE = re.compile(r"clock rate (\d+) kHz: (-?\d+) ticks = [\d.]+ ms, host [\d.]+ ms, ratio ([\d.]+)")


def _vulkan_info():
    from cuport.backends.vulkan import runtime

    infos = runtime.devices()
    if not infos:
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return infos[0]


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    nvcc = need_nvcc()
    exe = tmp_path_factory.mktemp("clock-rate") / "clock_rate"
    r = run([nvcc, "-O3", "-o", str(exe), str(HERE / "clock_rate.cu")], timeout=600)
    assert r.returncode == 0, r.stderr
    return exe


def _run(exe: Path, **env: str) -> tuple[int, float]:
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(**env), timeout=600)
    m = LINE.search(r.stdout)
    assert r.returncode == 0 and m and r.stdout.rstrip().endswith("PASS"), (env, r.stdout, r.stderr)
    return int(m.group(1)), float(m.group(3))


def test_clock64_over_clock_rate_is_host_time_on_the_cpu(program, tmp_path):
    """The counter's rate (not cpufreq's turbo maximum), measured in the first program and
    read from the cache in the second."""
    first, _ = _run(program, CUPORT_DEVICE="cpu", CUPORT_CACHE_DIR=str(tmp_path))
    second, _ = _run(program, CUPORT_DEVICE="cpu", CUPORT_CACHE_DIR=str(tmp_path))
    assert second == first


def test_a_cached_figure_that_is_not_a_number_is_measured_again(tmp_path, monkeypatch):
    from cuport.backends import cache

    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path))
    key = cache.make_key("test figure", "1")
    cache.store(key, b"-5", {"test figure": True})
    assert cache.measured(key, "test figure", lambda: 1234) == 1234
    assert cache.measured(key, "test figure", lambda: 99) == 1234  # (stored, then read)


def test_clock64_over_clock_rate_is_host_time_on_vulkan(program, tmp_path):
    """Measured in the first program (an empty cache), read from the cache in the second."""
    info = _vulkan_info()
    if not info.features.get("shaderSubgroupClock"):
        pytest.skip(f"{info.name} has no shader clock: %clock64 is refused there")
    first, _ = _run(program, CUPORT_DEVICE="vulkan", CUPORT_CACHE_DIR=str(tmp_path))
    second, _ = _run(program, CUPORT_DEVICE="vulkan", CUPORT_CACHE_DIR=str(tmp_path))
    assert second == first


def test_without_a_shader_clock_the_rate_is_0():
    """No shader clock: %clock64 is refused (lower.py), so there is no rate to give."""
    from cuport.backends.vulkan.attributes import device_attributes

    info = _vulkan_info()
    bare = dataclasses.replace(info, features={**info.features, "shaderSubgroupClock": False})
    assert device_attributes(bare)["CLOCK_RATE"] == 0


def test_aarch64_counter_is_the_virtual_counter():
    """On AArch64 the counter %clock64 reads and the CPU backend measures is CNTVCT_EL0,
    which user programs may read (PMCCNTR_EL0, the cycle counter, traps on Linux)."""
    import llvmlite.binding as llvm

    from cuport.backends.cpu import clock

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    m = llvm.parse_assembly(clock._IR)
    m.triple = "aarch64-unknown-linux-gnu"
    tm = llvm.Target.from_triple(m.triple).create_target_machine()
    asm = tm.emit_assembly(m)
    assert "cntvct_el0" in asm.lower() and "pmccntr" not in asm.lower()
