// Tiled single-precision matrix multiply C = A * B (n x n, row-major), 16x16 shared-memory tiles.
#define TILE 16
__global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += TILE) {
    As[ty][tx] = (row < n && k0 + tx < n) ? A[row * n + k0 + tx] : 0.0f;
    Bs[ty][tx] = (col < n && k0 + ty < n) ? B[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}
