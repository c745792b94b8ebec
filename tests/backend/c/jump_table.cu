// A kernel with a jump table (a dense switch) and floating-point constants: in x86-64's
// small code model its machine code reaches both through 32-bit PC-relative offsets, and
// LLVM's JIT linker places code and read-only data apart (separate mappings), so a program
// aborted in RuntimeDyldELF (`isInt<32>(RealOffset)`) whenever they landed 2 GiB apart
// (HeCBench nqueen and pool, cuda-samples dmmaTensorCoreGemm).
__global__ void shade(const int *kind, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    switch (kind[i]) {
    case 0: v = v * 1.25f + 0.5f; break;
    case 1: v = v * -3.5f + 2.75f; break;
    case 2: v = v * 0.125f - 7.0f; break;
    case 3: v = v * 9.5f + 0.0625f; break;
    case 4: v = v * -0.375f + 11.0f; break;
    case 5: v = v * 6.75f - 1.5f; break;
    case 6: v = v * 0.875f + 3.25f; break;
    case 7: v = v * -12.5f - 0.25f; break;
    default: v = 0.0f;
    }
    y[i] = v;
}
