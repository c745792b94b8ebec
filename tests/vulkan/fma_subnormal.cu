// f32 fma through subnormals (tests/vulkan/test_fma32_variants.py): each way of making
// fma exact (CUPORT_VK_FMA32) over a device whose Fma flushes must give the CPU backend's answers.
// `fma1` is one fma per thread; `chain` feeds each fma's result to the next as its addend
// and as a factor, and mixes in constants (normal and subnormal) and an integer converted.
__global__ void fma1(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaf(a[i], b[i], c[i]);
}

#define K 8
#define OUT 12
__global__ void chain(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = c[i];
#pragma unroll
  for (int k = 0; k < K; k++) {
    acc = fmaf(a[i * K + k], b[i * K + k], acc);
    out[i * OUT + k] = acc;
  }
  float x = fmaf(acc, 0x1.8p-140f, acc);              // a subnormal constant factor
  float y = fmaf(acc, 0x1p-126f, (float)(i % 3 - 1));  // a normal constant, an integer (-1, 0, 1)
  float z = fmaf(x, y, acc);                           // guarded results as factors and addend
  float w = fmaf(z, -0x1p-24f, z);                     // z's flag as both factor and addend
  out[i * OUT + K] = x;
  out[i * OUT + K + 1] = y;
  out[i * OUT + K + 2] = z;
  out[i * OUT + K + 3] = w;
}

// The error of a product (TwoProduct, as libdevice's accurate functions compute it): the
// product rounded, then the fma of the same factors less it. A backend must not merge the
// fma's product with the rounded one (the error would be 0).
__global__ void twoprod(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float p = __fmul_rn(a[i], b[i]);
  out[2 * i] = p;
  out[2 * i + 1] = __fmaf_rn(a[i], b[i], -p);
}

// `dot`: K2 products summed into one accumulator, unrolled, no partial sum read in between
// (a tiled matrix product's inner loop): the Vulkan backend checks such a run of fmas once
// and redoes it through the per-fma guard where the check fires (spirv/fma_chains.py). The
// partial sum after 8 terms is written last, so that a member's register is read after the
// chain too (the slow path must leave the exact value there).
#define K2 16
__global__ void dot(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = c[i], half = 0.0f;
#pragma unroll
  for (int k = 0; k < K2; k++) {
    acc = fmaf(a[i * K2 + k], b[i * K2 + k], acc);
    if (k == 7) half = acc;
  }
  out[2 * i] = acc;
  out[2 * i + 1] = half;
}

// `horner`: a polynomial by Horner's rule, each fma's result the next one's factor (as in
// libdevice's functions): a chain too, linked through a factor instead of the addend.
#define H 9
__global__ void horner(const float* x, const float* coef, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float xi = x[i];
  float r = coef[i * H];
#pragma unroll
  for (int k = 1; k < H; k++) r = fmaf(r, xi, coef[i * H + k]);
  out[i] = r;
}
