"""Record what NVIDIA's driver answers to the bad-PTX cases, on a machine with a GPU.

    python3 tests/ptx/record_gpu.py            # writes $OUT/h200_ptx_errors.json

Needs nvcc and NVIDIA's libcuda.so.1 (no cuport, no pytest): the kernel of
tests/ptx/bad_ptx_cases.py is compiled with `nvcc -ptx -arch=sm_90`, each case is loaded
with cuModuleLoadDataEx with both JIT logs, and the code, the logs and the log sizes the
driver writes back are recorded; where the load works, what cuModuleGetFunction, a launch
(1 block of 64 threads) and cuCtxSynchronize answer too. Takes well under a minute. Commit
the file as tests/ptx/gpu/h200_ptx_errors.json: test_validate.py then runs the same script
against cuport's libcuda.so.1 (`--library PATH --out FILE`) and compares the two records.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bad_ptx_cases import CASES, EXTRA, SOURCE, edit  # noqa: E402

CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 3, 4
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6


def record(library: str) -> dict:
    """Every case through `library`'s cuModuleLoadDataEx (and a launch where it loads)."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "k.cu").write_text(SOURCE)
        subprocess.run(["nvcc", "-ptx", "-O2", "-arch=sm_90", "-o", f"{d}/k.ptx", f"{d}/k.cu"],
                       check=True)
        base = (Path(d) / "k.ptx").read_text()
    cu = ctypes.CDLL(library)
    ctx = ctypes.c_void_p()
    assert cu.cuInit(0) == 0
    dev = ctypes.c_int()
    assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    name = ctypes.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    version = ctypes.c_int()
    cu.cuDriverGetVersion(ctypes.byref(version))
    cases = [(n, edit(base, p, r)) for n, p, r, *_ in CASES] + \
        [(n, edit(base, p, r)) for n, p, r in EXTRA] + [("good", base)]
    results = {}
    for case, text in cases:
        elog = ctypes.create_string_buffer(8192)
        ilog = ctypes.create_string_buffer(8192)
        opts = (ctypes.c_int * 4)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                  CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 4)(ctypes.addressof(elog), 8192, ctypes.addressof(ilog), 8192)
        mod = ctypes.c_void_p()
        data = ctypes.create_string_buffer(text.encode())
        code = cu.cuModuleLoadDataEx(ctypes.byref(mod), data, 4, opts, vals)
        rec = {"load": code, "error_log": elog.value.decode("utf-8", "replace"),
               "error_log_size": vals[1] or 0, "info_log": ilog.value.decode("utf-8", "replace"),
               "info_log_size": vals[3] or 0}
        if code == 0:
            fn = ctypes.c_void_p()
            rec["get_function"] = cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"scale")
            if rec["get_function"] == 0:
                buf = ctypes.c_uint64()
                cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(4096))
                out_p, in_p, n = ctypes.c_uint64(buf.value), ctypes.c_uint64(buf.value + 2048), \
                    ctypes.c_int(64)
                args = (ctypes.c_void_p * 3)(ctypes.addressof(out_p), ctypes.addressof(in_p),
                                             ctypes.addressof(n))
                rec["launch"] = cu.cuLaunchKernel(fn, 1, 1, 1, 64, 1, 1, 0, None, args, None)
                rec["synchronize"] = cu.cuCtxSynchronize()
                cu.cuMemFree_v2(buf)
            cu.cuModuleUnload(mod)
        results[case] = rec
        print(case, rec["load"], rec.get("launch"), rec["error_log"][:120].replace("\n", " | "),
              file=sys.stderr, flush=True)
    return {"device": name.value.decode(), "driver": version.value, "cases": results}


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", default="libcuda.so.1", help="the libcuda.so.1 to ask")
    ap.add_argument("--out", type=Path, default=None,
                    help="the file to write (default $OUT/h200_ptx_errors.json)")
    a = ap.parse_args(argv)
    out = a.out or Path(os.environ.get("OUT", ".")) / "h200_ptx_errors.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record(a.library), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
