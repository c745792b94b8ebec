"""Device enumeration: what devices() reports, and that no Vulkan means [] and a reason."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import vkrt_support  # noqa: F401  (sets XDG_RUNTIME_DIR and validation before Vulkan starts)
from vkrt_support import device, vkrt


def test_every_device_is_described():
    infos = vkrt.devices()
    if not infos:
        assert vkrt.unavailable_reason()
        return
    for d in infos:
        assert d.name and d.api_version >= (1, 0, 0)
        assert d.limits.max_workgroup_invocations >= 128  # Vulkan's minimum
        assert d.limits.max_push_constants >= 128
        assert d.memory_heaps and d.memory_types and d.queue_families
        assert d.min_subgroup_size <= d.subgroup_size <= d.max_subgroup_size
        assert all(isinstance(v, bool) for v in d.features.values())
        assert d.usable == (not any(m.startswith("required: ") for m in d.missing))
        if not d.warp_subgroups():
            assert any(m.startswith("32-wide subgroups") for m in d.missing)
        if d.limits.max_shared_memory < 48 * 1024:
            assert any(m.startswith("max_shared_memory") for m in d.missing)


def test_features_agree_with_the_vulkaninfo_tool():
    """What cuport reads matches what Vulkan's own tool prints for the same device."""
    import shutil

    dev = device()
    if shutil.which("vulkaninfo") is None:
        import pytest

        pytest.skip("vulkaninfo is not installed (Debian: vulkan-tools)")
    out = subprocess.run(["vulkaninfo"], capture_output=True, text=True,
                         env={**os.environ, "VK_LOADER_DEBUG": ""}).stdout
    info = dev.info
    assert info.name in out
    for name in ("bufferDeviceAddress", "timelineSemaphore", "shaderInt64", "shaderFloat64",
                 "subgroupSizeControl", "vulkanMemoryModel"):
        want = "true" if info.features[name] else "false"
        lines = [ln for ln in out.splitlines() if ln.strip().startswith(name + " ")]
        assert lines and all(ln.split("=")[1].strip() == want for ln in lines), (name, lines)
    def values(key: str) -> set[int]:
        return {int(ln.split("=")[1].split()[0], 0) for ln in out.splitlines()
                if ln.strip().startswith(key + " ")}

    assert values("maxComputeSharedMemorySize") == {info.limits.max_shared_memory}
    assert values("maxComputeWorkGroupInvocations") == {info.limits.max_workgroup_invocations}
    assert values("minSubgroupSize") == {info.min_subgroup_size}
    assert values("maxSubgroupSize") == {info.max_subgroup_size}
    assert values("maxPushConstantsSize") == {info.limits.max_push_constants}


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_no_python_package_means_no_devices_and_a_reason():
    r = _run("""
        import sys
        sys.modules["vulkan"] = None  # as if the package were not installed
        from cuport.backends.vulkan import runtime as vkrt
        print(vkrt.devices(), "|", vkrt.unavailable_reason())
        try:
            vkrt.open(0)
        except vkrt.VulkanUnavailable as e:
            print("open:", e)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[] | the Python package 'vulkan' is not installed")
    assert "open: no Vulkan device 0 (0 found" in r.stdout


def test_no_loader_library_means_no_devices_and_a_reason(tmp_path):
    # A 'vulkan' package whose import fails as the real one does without libvulkan.so.1.
    pkg = tmp_path / "vulkan"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise OSError('Cannot find Vulkan SDK version. Please ensure that it is installed')\n")
    r = _run(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from cuport.backends.vulkan import runtime as vkrt
        print(vkrt.devices(), "|", vkrt.unavailable_reason())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[] | the Vulkan loader libvulkan.so.1 could not be opened")


def test_no_driver_means_no_devices_and_a_reason(tmp_path):
    import pytest

    from cuport.backends.vulkan.runtime import binding

    try:
        binding.load()
    except vkrt.VulkanUnavailable as e:
        pytest.skip(f"needs the Vulkan loader: {e}")
    missing = str(tmp_path / "none.json")
    r = _run("""
        from cuport.backends.vulkan import runtime as vkrt
        print(vkrt.devices(), "|", vkrt.unavailable_reason())
    """, env={"VK_DRIVER_FILES": missing, "VK_ICD_FILENAMES": missing,
              "CUPORT_VK_VALIDATION": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[] | ")
    assert "no driver" in r.stdout or "reported no devices" in r.stdout, r.stdout


def test_opening_twice_shares_the_device():
    dev = device()
    assert vkrt.open(dev.info.index) is dev


def test_features_enabled_are_those_the_device_has():
    dev = device()
    for name, on in dev.enabled_features.items():
        assert on and dev.info.features[name]
    for name in ("bufferDeviceAddress", "timelineSemaphore", "vulkanMemoryModel", "shaderInt64"):
        assert dev.enabled_features.get(name)


def test_device_info_as_json_and_text():
    import json

    for d in vkrt.devices():
        back = json.loads(json.dumps(d.as_dict()))
        assert back["name"] == d.name and back["limits"]["max_shared_memory"] == d.limits.max_shared_memory
        assert back["missing"] == list(d.missing)
        lines = d.describe()
        assert lines[0].startswith(f"vulkan:{d.index}  {d.name}")
        assert sum(ln.startswith("  missing: ") for ln in lines) == len(d.missing)


def test_queue_family_setting():
    """CUPORT_VK_QUEUE_FAMILY picks the streams' queue family; one that cannot compute, or
    that does not exist, is refused naming those that can."""
    info = device().info
    computes = [i for i, f in enumerate(info.queue_families) if "compute" in f.flags]
    code = """
        from cuport.backends.vulkan import runtime as vkrt
        try:
            dev = vkrt.open(0)
            print("family", dev.queues[0].family, len(dev.queues))
        except vkrt.Unsupported as e:
            print("refused:", e)
    """
    r = _run(code, env={"CUPORT_VK_QUEUE_FAMILY": str(computes[-1])})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"family {computes[-1]} "), r.stdout
    bad = len(info.queue_families)
    r = _run(code, env={"CUPORT_VK_QUEUE_FAMILY": str(bad)})
    assert f"refused: CUPORT_VK_QUEUE_FAMILY='{bad}'" in r.stdout, (r.stdout, r.stderr)
    assert f"compute are {computes}" in r.stdout


def test_queue_family_choice():
    """Streams go to a compute-only family where it has several queues (NVIDIA's driver runs
    two kernels at once on those, not on its graphics family's: measured on an H100), else
    to the compute family with the most queues; timestamps first."""
    from cuport.backends.vulkan.runtime.properties import QueueFamily, _pick_compute_family

    def fams(*spec):
        return tuple(QueueFamily(flags=frozenset(f.split("+")), count=n, timestamp_valid_bits=t)
                     for f, n, t in spec)

    nvidia = fams(("graphics+compute+transfer", 16, 64), ("transfer", 2, 64),
                  ("compute+transfer", 8, 64), ("video_decode_khr+transfer", 7, 64))
    assert _pick_compute_family(nvidia) == 2
    radv = fams(("graphics+compute+transfer", 1, 64), ("compute+transfer", 4, 64))
    assert _pick_compute_family(radv) == 1
    lone = fams(("graphics+compute+transfer", 16, 64), ("compute+transfer", 1, 64))
    assert _pick_compute_family(lone) == 0
    assert _pick_compute_family(fams(("graphics+compute", 1, 0), ("compute", 4, 0), ("compute", 2, 36))) == 2
    assert _pick_compute_family(fams(("graphics+transfer", 1, 64))) == -1
