#!/usr/bin/env bash
# The Vulkan runtime on a real GPU (the H200 host): loader, binding, tests, measurements.
#
# Run from the repository root on the device machine, with these folders carried (each
# ignored through .git/info/exclude):
#   .gl/   Debian's libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 (.deb)
#   .vk/   Debian's glslang-tools (.deb): glslangValidator compiles the tests' GLSL
#   .whl/  vulkan-1.3.275.1-py3-none-any.whl, cffi (cp312 manylinux) and pycparser wheels
# Writes into $OUT: vkrt_devices.json (tests/vulkan/record_gpu_runtime.py), vkrt_pytest.txt,
# vkrt_bench.txt and vkrt_bench.json. Takes about two minutes.
set -u
OUT=${OUT:-/tmp/vkrt-out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/vk && for f in .vk/*.deb; do dpkg -x "$f" /tmp/vk; done
export PATH=/tmp/vk/usr/bin:$PATH
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export XDG_RUNTIME_DIR=/tmp CUPORT_CACHE_DIR=/tmp/cuport-cache
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi
if [ -f "$egl" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES=$egl; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
timeout 120 python3 tests/vulkan/record_gpu_runtime.py "$OUT" 2>&1 | tee "$OUT/vkrt_record.txt"
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/vulkan/test_runtime_devices.py \
    tests/vulkan/test_runtime_memory.py tests/vulkan/test_runtime_dispatch.py \
    tests/vulkan/test_runtime_hostmap.py 2>&1 | tee "$OUT/vkrt_pytest.txt" | tail -40
timeout 240 python3 bench/vulkan_runtime.py --out "$OUT/vkrt_bench.json" 2>&1 \
    | tee "$OUT/vkrt_bench.txt"
