// 17-tap row convolution reading its image through a 2D float texture, linearly filtered,
// unnormalized coordinates (convolutionTexture's access pattern): the coordinates are texel
// centres, so the filter returns texels, and the work is the texture unit's.
#define R 8
__global__ void texconv(cudaTextureObject_t src, const float* __restrict__ taps, float* __restrict__ dst,
                        int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float sum = 0.0f;
  for (int k = -R; k <= R; k++) sum += tex2D<float>(src, x + k + 0.5f, y + 0.5f) * taps[R - k];
  dst[y * w + x] = sum;
}
