"""What PyCUDA does, in ctypes (PyCUDA itself needs a source build): run under
`cuport run`, it compiles a kernel at run time with `nvcc --cubin -arch sm_XY` (no -o,
in a temporary directory), loads the file with cuModuleLoadData, launches it with the
CUDA 2.0 API (cuFuncSetBlockShape, cuParamSet*, cuLaunchGrid) and cleans up with
cuCtxDetach. Prints PASS or what went wrong."""

import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

cu = ctypes.CDLL("libcuda.so.1")
failures = []


def ok(name, code):
    if code != 0:
        failures.append(f"{name} returned {code}")


SOURCE = r"""
extern "C" __global__ void axpb(float *y, const float *x, float a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + blockIdx.y * 1000000;
    if (i < n) y[i] = a * x[i] + b;
}
"""

ok("cuInit", cu.cuInit(0))
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
ok("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
major, minor = ctypes.c_int(), ctypes.c_int()
ok("cuDeviceComputeCapability",
   cu.cuDeviceComputeCapability(ctypes.byref(major), ctypes.byref(minor), dev))
ok("cuCtxCreate", cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev))
attached = ctypes.c_void_p()
ok("cuCtxAttach", cu.cuCtxAttach(ctypes.byref(attached), 0))
if attached.value != ctx.value:
    failures.append("cuCtxAttach gave another context")

with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "kernel.cu"), "w") as f:
        f.write(SOURCE)
    arch = f"sm_{major.value}{minor.value}"
    r = subprocess.run(["nvcc", "--cubin", "-arch", arch, "kernel.cu"], cwd=tmp,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(1)
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    if "cuport" not in version:
        failures.append("nvcc --version does not say that cubins become PTX")
    with open(os.path.join(tmp, "kernel.cubin"), "rb") as f:
        image = f.read()

module, func = ctypes.c_void_p(), ctypes.c_void_p()
ok("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(module), image))
ok("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(func), module, b"axpb"))
n = 1000
x = np.arange(n, dtype=np.float32)
y = np.zeros(n, dtype=np.float32)
dx, dy = ctypes.c_uint64(), ctypes.c_uint64()
ok("cuMemAlloc", cu.cuMemAlloc_v2(ctypes.byref(dx), ctypes.c_size_t(x.nbytes)))
ok("cuMemAlloc", cu.cuMemAlloc_v2(ctypes.byref(dy), ctypes.c_size_t(y.nbytes)))
ok("cuMemcpyHtoD", cu.cuMemcpyHtoD_v2(dx, x.ctypes.data_as(ctypes.c_void_p),
                                      ctypes.c_size_t(x.nbytes)))
ok("cuFuncSetBlockShape", cu.cuFuncSetBlockShape(func, 128, 1, 1))
ok("cuFuncSetSharedSize", cu.cuFuncSetSharedSize(func, 0))
ok("cuParamSetv y", cu.cuParamSetv(func, 0, ctypes.byref(dy), 8))
ok("cuParamSetv x", cu.cuParamSetv(func, 8, ctypes.byref(dx), 8))
ok("cuParamSetf", cu.cuParamSetf(func, 16, ctypes.c_float(2.5)))
ok("cuParamSeti", cu.cuParamSeti(func, 20, ctypes.c_uint(7)))
ok("cuParamSetv n", cu.cuParamSetv(func, 24, ctypes.byref(ctypes.c_int(n)), 4))
ok("cuParamSetSize", cu.cuParamSetSize(func, 28))
ok("cuLaunchGrid", cu.cuLaunchGrid(func, (n + 127) // 128, 1))
ok("cuCtxSynchronize", cu.cuCtxSynchronize())
ok("cuMemcpyDtoH", cu.cuMemcpyDtoH_v2(y.ctypes.data_as(ctypes.c_void_p), dy,
                                      ctypes.c_size_t(y.nbytes)))
if not (y == 2.5 * x + 7).all():
    failures.append(f"wrong results: {y[:4]}")
ok("cuParamSetSize (short)", cu.cuParamSetSize(func, 8))
if cu.cuLaunchGrid(func, 1, 1) != 1:  # CUDA_ERROR_INVALID_VALUE: parameters missing
    failures.append("a launch with too few parameter bytes was accepted")
ok("cuCtxDetach", cu.cuCtxDetach(ctx))  # one use left: the context lives on
ok("cuCtxSynchronize", cu.cuCtxSynchronize())
ok("cuCtxDetach (last)", cu.cuCtxDetach(ctx))
if cu.cuCtxDetach(ctx) != 201 and cu.cuCtxDetach(ctx) != 400:
    failures.append("detaching a destroyed context succeeded")
print("\n".join(failures) or "PASS")
sys.exit(1 if failures else 0)
