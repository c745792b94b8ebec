"""Record what NVIDIA's driver answers where tests/capi checks cuport against it.

Run from the repository root on a machine with an NVIDIA GPU (its libcuda.so.1):

    python3 tests/capi/record_gpu.py $OUT/driver_answers.json

It takes a few seconds and writes one JSON object; commit it as
tests/capi/gpu_answers.json, which test_gpu_answers.py then compares cuport with (and
runs the same probes under cuport). Only ctypes and the standard library are needed.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

PROBES = """
import ctypes, json, os, sys
lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcuda.so.1")
u64, ptr, n = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int

def codes_in_child():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        d, ctx, count = u64(), ptr(), n()
        out = {"cuInit": lib.cuInit(0), "cuDeviceGetCount": lib.cuDeviceGetCount(ctypes.byref(count)),
               "cuCtxGetCurrent": lib.cuCtxGetCurrent(ctypes.byref(ctx)),
               "cuDevicePrimaryCtxRetain": lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0),
               "cuMemAlloc_v2": lib.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(64)),
               "cuDriverGetVersion": lib.cuDriverGetVersion(ctypes.byref(count))}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = os.read(r, 4096)
    os.waitpid(pid, 0)
    return json.loads(data)

answers = {}
answers["fork_before_cuInit"] = codes_in_child()
answers["cuMemFree_v2(0) before cuInit"] = lib.cuMemFree_v2(u64(0))
assert lib.cuInit(0) == 0
answers["cuMemFree_v2(0) without a context"] = lib.cuMemFree_v2(u64(0))
ctx = ptr()
answers["cuDevicePrimaryCtxRetain"] = lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
answers["cuMemFree_v2(0) with a context"] = (lib.cuCtxSetCurrent(ctx), lib.cuMemFree_v2(u64(0)))[1]
answers["cuMemFreeAsync(0) with a context"] = lib.cuMemFreeAsync(u64(0), ptr(0))
p0 = u64(1)
answers["cuMemAllocAsync of 0 bytes: code, pointer"] = [
    lib.cuMemAllocAsync(ctypes.byref(p0), ctypes.c_size_t(0), ptr(0)), p0.value]
answers["cuMemFreeHost(NULL)"] = lib.cuMemFreeHost(ptr(0))
answers["cuCtxSynchronize after them"] = lib.cuCtxSynchronize()
def drop():
    # (on a machine shared with other programs the host's free memory moves too: the
    # largest of three drops is taken)
    free0, free1, total, d = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t(), u64()
    lib.cuMemGetInfo_v2(ctypes.byref(free0), ctypes.byref(total))
    lib.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(1 << 30))
    lib.cuMemGetInfo_v2(ctypes.byref(free1), ctypes.byref(total))
    lib.cuMemFree_v2(d)
    return free0.value - free1.value
answers["cuMemGetInfo falls by 0.9 GiB or more on a 1 GiB allocation"] = \
    max(drop() for _ in range(3)) >= 0.9 * (1 << 30)
answers["fork_after_cuInit"] = codes_in_child()
lib.cuCtxSetCurrent(ptr(0))
dev = n()
answers["cuCtxGetDevice without a context"] = lib.cuCtxGetDevice(ctypes.byref(dev))
print(json.dumps(answers, indent=1, sort_keys=True))
"""


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("OUT", "."),
                                                            "driver_answers.json")
    import subprocess

    r = subprocess.run([sys.executable, "-c", PROBES], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        print(r.stdout, r.stderr, file=sys.stderr)
        return 1
    answers = json.loads(r.stdout)
    drv = ctypes.c_int()
    ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(drv))
    answers["driver_version"] = drv.value
    with open(out, "w") as f:
        json.dump(answers, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(answers, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
