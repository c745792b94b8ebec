"""Records NVIDIA's host MT19937 generator (curandCreateGeneratorHost, whose bits are the
GPU's) for tests/libs/test_curand.py: windows of 16 values far into the sequence, which
curand_record.cu's H200 recording does not reach.

    python tests/libs/curand_mt19937_record.py LIBCURAND > tests/libs/recorded/curand_mt19937_host.txt

LIBCURAND: NVIDIA's libcurand.so.10 (PyPI's nvidia-curand: nvidia/cu13/lib/). One line
per window: `MT19937 seed call index v0 .. v15` (hex; floats as their bits), each from a
fresh generator that generated `index + 16` values in one call.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

SEEDS = (1234, 0x0123456789ABCDEF, 5, (1 << 32) + 5)
# the first values; a slot boundary (65536 threads); the end of the first round (65536
# threads * 78 words) and the start of the second; 2^24, in the fourth round
RAW_AT = (0, 65528, 5111800, 16777216)
TRANSFORMS = (("uniform", "curandGenerateUniform", np.float32, ()),
              ("uniform_double", "curandGenerateUniformDouble", np.float64, ()),
              ("normal", "curandGenerateNormal", np.float32, (0.0, 1.0)),
              ("normal_double", "curandGenerateNormalDouble", np.float64, (0.0, 1.0)),
              ("poisson_3.5", "curandGeneratePoisson", np.uint32, (3.5,)),
              ("poisson_5000", "curandGeneratePoisson", np.uint32, (5000.0,)))


def main(path: str) -> None:
    lib = ctypes.CDLL(path)

    def generator(seed: int) -> ctypes.c_void_p:
        g = ctypes.c_void_p()
        assert lib.curandCreateGeneratorHost(ctypes.byref(g), 142) == 0  # MT19937
        assert lib.curandSetPseudoRandomGeneratorSeed(g, ctypes.c_ulonglong(seed)) == 0
        return g

    def line(seed: int, call: str, index: int, values: np.ndarray) -> None:
        bits = values.view({4: np.uint32, 8: np.uint64}[values.itemsize])
        print(f"MT19937 {seed} {call} {index} " + " ".join(f"{int(v):x}" for v in bits))

    version = ctypes.c_int()
    lib.curandGetVersion(ctypes.byref(version))
    print("# python tests/libs/curand_mt19937_record.py LIBCURAND, LIBCURAND: "
          f"nvidia/cu13/lib/libcurand.so.10 of PyPI's nvidia-curand (cuRAND {version.value})")
    for seed in SEEDS:
        g = generator(seed)
        out = np.zeros(RAW_AT[-1] + 16, np.uint32)
        assert lib.curandGenerate(g, out.ctypes.data_as(ctypes.c_void_p),
                                  ctypes.c_size_t(len(out))) == 0
        lib.curandDestroyGenerator(g)
        for i in RAW_AT:
            line(seed, "raw", i, out[i:i + 16])
    for call, fn, dtype, extra in TRANSFORMS:
        g = generator(1234)
        out = np.zeros(16, dtype)
        if fn == "curandGeneratePoisson":
            args = [ctypes.c_double(extra[0])]
        else:
            kind = ctypes.c_float if dtype == np.float32 else ctypes.c_double
            args = [kind(x) for x in extra]
        assert getattr(lib, fn)(g, out.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(16),
                                *args) == 0
        lib.curandDestroyGenerator(g)
        line(1234, call, 0, out)


if __name__ == "__main__":
    main(sys.argv[1])
