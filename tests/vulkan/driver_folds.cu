// Kernels whose answers lavapipe's compiler folded wrongly (quirks.py, folds.py): libdevice's
// sinf/tanf/cospif/sinpif multiply an infinite argument by a zero held in a register, the
// integer-to-integer cvt.sat widening a negative s32 compares the sign-extended value with 0.
#include <cmath>

extern "C" __global__ void trig(const float* x, float* out) {
    int i = threadIdx.x;
    out[4 * i] = sinf(x[i]);
    out[4 * i + 1] = tanf(x[i]);
    out[4 * i + 2] = cospif(x[i]);
    out[4 * i + 3] = sinpif(x[i]);
}

extern "C" __global__ void zero_operands(const float* x, float* out) {
    int i = threadIdx.x;
    float r;
    asm("{ .reg .f32 z; mov.f32 z, 0f00000000; mul.rn.f32 %0, %1, z; }" : "=f"(r) : "f"(x[i]));
    out[2 * i] = r;
    asm("add.rn.f32 %0, %1, 0f00000000;" : "=f"(r) : "f"(x[i]));
    out[2 * i + 1] = r;
}

extern "C" __global__ void sat_widen(const int* x, unsigned long long* out) {
    int i = threadIdx.x;
    unsigned long long r;
    asm("cvt.sat.u64.s32 %0, %1;" : "=l"(r) : "r"(x[i]));
    out[2 * i] = r;
    unsigned p;
    asm("{ .reg .s64 w; .reg .pred q; cvt.s64.s32 w, %1; setp.lt.s64 q, w, 7; selp.u32 %0, 1, 0, q; }"
        : "=r"(p) : "r"(x[i]));
    out[2 * i + 1] = p;
}
