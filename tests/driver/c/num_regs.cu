// CU_FUNC_ATTRIBUTE_NUM_REGS as programs read it (cudaFuncGetAttributes): a kernel keeping
// many values live reports more registers than a trivial one, and __maxnreg__ (PTX .maxnreg,
// what numba-cuda's max_registers gives) caps the count. Prints "PASS" or the counts.
#include <cstdio>
#include <cuda_runtime.h>

#define BODY                                                                 \
    double v[24];                                                             \
    for (int k = 0; k < 24; k++) v[k] = x[k];                                 \
    for (int i = 0; i < n; i++)                                               \
        for (int k = 0; k < 24; k++) v[k] = v[k] * v[(k + 1) % 24] + v[(k + 7) % 24]; \
    double s = 0;                                                             \
    for (int k = 0; k < 24; k++) s += v[k] * (k + 1);                         \
    x[0] = s;

__global__ void heavy(double* x, int n) { BODY }
__global__ void __maxnreg__(40) capped(double* x, int n) { BODY }
__global__ void trivial(int* x) { x[threadIdx.x] = 1; }

int main() {
    cudaFuncAttributes h, c, t;
    if (cudaFuncGetAttributes(&h, heavy) || cudaFuncGetAttributes(&c, capped) ||
        cudaFuncGetAttributes(&t, trivial)) {
        printf("cudaFuncGetAttributes failed\n");
        return 1;
    }
    bool ok = h.numRegs > 40 && c.numRegs <= 40 && c.numRegs > 0 && t.numRegs > 0 &&
              t.numRegs < h.numRegs && h.numRegs <= 255;
    if (ok) printf("PASS\n");
    else printf("FAIL heavy %d capped %d trivial %d\n", h.numRegs, c.numRegs, t.numRegs);
    return ok ? 0 : 1;
}
