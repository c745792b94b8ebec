"""The bad-PTX cases of the reliability issue, as edits of a kernel nvcc makes.

Plain Python (no cuport, no pytest): tests/ptx/test_validate.py checks cuport against
them, tests/ptx/record_gpu.py records what NVIDIA's driver answers to them on a GPU.
"""

from __future__ import annotations

import re

SOURCE = r"""
__device__ float table[4] = {1, 2, 3, 4};
extern "C" __global__ void scale(float *out, const float *in, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x] * table[i & 3];
}
"""
INVALID_PTX, OUT_OF_MEMORY, INVALID_VALUE = 218, 2, 1


def edit(text: str, pattern: str, replacement: str) -> str:
    new, n = re.subn(pattern, replacement, text, count=1)
    assert n == 1, f"the kernel nvcc made has no {pattern!r}"
    return new


# (name, pattern, replacement, CUresult, words of the message, ptxas rejects it too)
CASES = [
    ("nesting", r"bar\.sync \t0;", "bar.sync \t0;" + "{" * 2000 + "}" * 2000, INVALID_PTX,
     "memory exhausted", True),
    ("array 10^25", r"// _ZZ", ".global .b8 g[10000000000000000000000000];\n// _ZZ", INVALID_PTX,
     "Constant overflow", True),
    ("array 2^50", r"// _ZZ", ".global .b8 g[1125899906842624];\n// _ZZ", OUT_OF_MEMORY,
     "bytes of memory", False),
    ("undeclared register", r"\.reg \.b32 \t%r<10>;", ".reg .b32 \t%r<0>;", INVALID_PTX,
     "Unknown symbol '%r", True),
    ("branch to nowhere", r"bra \t\$L__BB0_4;", "bra \t$L__BB0_9;", INVALID_PTX,
     "Unknown symbol '$L__BB0_9'", True),
    ("mangled suffix", r"add\.s64 \t%rd5", "add.rn \t%rd5", INVALID_PTX,
     "Unexpected instruction types", True),
    ("vector of 0", r"ld\.global\.f32 \t%f7", "ld.global.v0.f32 \t%f7", INVALID_PTX,
     "Unknown modifier '.v0'", True),
    ("operand types", r"shl\.b32 \t%r7, %r1, 2", "shl.b32 \t%r7, %rd1, 2", INVALID_PTX,
     "Arguments mismatch for instruction 'shl'", True),
    ("immediate 10^30", r"and\.b64  \t%rd7, %rd6, 12", "and.b64 %rd7, %rd6, "
     "1000000000000000000000000000000", INVALID_PTX, "Constant overflow", True),
    ("duplicate label", r"\$L__BB0_2:", "$L__BB0_2:\n$L__BB0_2:", INVALID_PTX,
     "Duplicate definition of label '$L__BB0_2'", True),
    ("align 0", r"\.shared \.align 4", ".shared .align 0", INVALID_PTX,
     "Alignment must be a power of two", True),
    ("address size", r"\.address_size 64", ".address_size 65536", INVALID_PTX,
     "Illegal value for .address_size", True),
    ("octal 09", r"and\.b64  \t%rd7, %rd6, 12", "and.b64 %rd7, %rd6, 09", INVALID_PTX,
     "Parsing error near '9'", True),
    ("5000 digits", r"and\.b64  \t%rd7, %rd6, 12", "and.b64 %rd7, %rd6, " + "9" * 5000,
     INVALID_PTX, "Constant overflow", True),
    ("float overflow", r"mov\.f32 \t%f7, 0f00000000", "mov.f32 \t%f7, 1.5e999", INVALID_PTX,
     "Constant overflow", True),
    ("duplicate registers", r"\.reg \.b32 \t%r<10>;", ".reg .b32 \t%r<10>;\n.reg .b32 %r3;",
     INVALID_PTX, "Duplicate definition of variable '%r3'", True),
    ("shared over 227 KiB", r"_ZZ5scaleE4tile\[512\]", "_ZZ5scaleE4tile[232452]", INVALID_PTX,
     "uses too much shared data", True),
    ("too much const", r"// _ZZ", ".const .b8 c[70000];\n// _ZZ", INVALID_PTX,
     "too much global constant data", True),
    ("missing .target", r"\.target sm_90\n", "", INVALID_PTX, ".target directive", True),
    ("unknown instruction", r"mul\.f32", "mul3.f32", INVALID_PTX,
     "Not a name of any known instruction: 'mul3'", True),
    ("barrier number", r"bar\.sync \t0", "bar.sync \t16", INVALID_PTX,
     "Barrier number '16' out of range", True),
]


def _used_local(size: int) -> tuple[str, str]:
    """An edit declaring `size` bytes of .local that the kernel really uses (a store and a
    load at different indices, so that ptxas keeps the array: its stack frame is `size`)."""
    return (r"(?s)(\.reg \.b64 \t%rd<13>;)(.*)(\tst\.global\.f32 \t\[%rd12\], %f6;)",
            rf"\1\n\t.local .align 4 .b8 big[{size}];\2\t{{ .reg .b64 %q, %o; mov.u64 %q, big; "
            r"mul.wide.u32 %o, %r1, 4; add.s64 %o, %q, %o; st.local.f32 [%o], %f6; "
            r"mul.wide.u32 %o, %r4, 4; add.s64 %o, %q, %o; ld.local.f32 %f6, [%o]; }\n\3")


# Cases whose answers on a GPU are recorded (tests/ptx/record_gpu.py) and compared with
# cuport's where cuport means to answer the same; test_validate.py lists where it does not
# on purpose: PTX newer than the driver's, targets above the device's (cuport translates
# whatever it implements). "too much shared" is too much for ptxas (48 KiB) but the H200's
# JIT loads and launches it.
EXTRA = [
    ("too much shared", r"_ZZ5scaleE4tile\[512\]", "_ZZ5scaleE4tile[60000]"),
    ("shared 227 KiB", r"_ZZ5scaleE4tile\[512\]", "_ZZ5scaleE4tile[232448]"),
    ("local 500000 used", *_used_local(500000)),
    ("local 600000 used", *_used_local(600000)),
    ("global 2^40", r"// _ZZ", ".global .b8 g[1099511627776];\n// _ZZ"),
    ("local 4 GiB", r"bar\.sync \t0;", ".local .align 4 .b8 big[4294967296];\n\tbar.sync \t0;\n"
     "\t{ .reg .b64 %q; mov.u64 %q, big; st.local.u32 [%q], %r1; }"),
    ("registers 2^31", r"\.reg \.b32 \t%r<10>;", ".reg .b32 \t%r<2147483648>;"),
    ("version 9.1", r"\.version 9\.0", ".version 9.1"),
    ("target sm_100", r"\.target sm_90", ".target sm_100"),
]
