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
