#!/usr/bin/env bash
# cuport's SPIR-V on a real GPU (the H200 host, NVIDIA's Vulkan driver): the structured CFGs,
# instructions, intrinsics, atomics, subgroup operations, and the correctly rounded division,
# square root and fma, including the path that uses the device's own Fma where it is fused
# (lavapipe's is not, so that path is only checked here).
#
# Run from the repository root on the device machine with the same carried folders as
# tests/vulkan/gpu_check.sh (.gl/ the Vulkan loader and glvnd, .vk/ glslang-tools, .whl/ the
# vulkan, cffi and pycparser wheels); where .vk/ also holds Debian's spirv-tools .deb, every
# module is validated too. Writes $OUT/spirv_pytest.txt, $OUT/spirv_fma_probe.txt and
# $OUT/denormal_probe.txt (what the device does with subnormals, per operation, bare and as
# cuport translates it: every "cuport" line must say ok). Takes about three minutes.
set -u
OUT=${OUT:-/tmp/spirv-out}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/vk && for f in .vk/*.deb; do dpkg -x "$f" /tmp/vk; done
export PATH=/tmp/vk/usr/bin:$PATH LD_LIBRARY_PATH=/tmp/vk/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export XDG_RUNTIME_DIR=/tmp CUPORT_CACHE_DIR=/tmp/cuport-cache
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi
if [ -f "$egl" ]; then export __EGL_VENDOR_LIBRARY_FILENAMES=$egl; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
timeout 60 python3 - <<'PY' 2>&1 | tee "$OUT/spirv_fma_probe.txt"
import sys
sys.path.insert(0, "tests/vulkan")
import test_spirv_fpmath as t
print("fma fused (f32, f64):", t._probe())
PY
timeout 60 python3 tests/vulkan/denormal_probe.py > "$OUT/denormal_probe.txt" 2>&1
timeout 600 python3 -m pytest -q -p no:cacheprovider -rs tests/vulkan/test_spirv_cfg.py \
    tests/vulkan/test_spirv_ops.py tests/vulkan/test_spirv_escapes.py \
    tests/vulkan/test_spirv_fpmath.py tests/vulkan/test_spirv_translate.py \
    tests/vulkan/test_spirv_flush32.py tests/vulkan/test_memory_model.py \
    tests/vulkan/test_runtime_exit.py tests/vulkan/test_discrete_memory.py 2>&1 \
    | tee "$OUT/spirv_pytest.txt" | tail -40
