// 5-point Jacobi sweep on an n x n grid, 16x16 blocks with a shared 18x18 tile (halo of one):
// out = 0.25 * (north + south + east + west) inside, the border copied.
#define T 16
__global__ void jacobi(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[T + 2][T + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * T + tx, y = blockIdx.y * T + ty;
  bool inside = x < n && y < n;
  tile[ty + 1][tx + 1] = inside ? in[y * n + x] : 0.0f;
  if (tx == 0) tile[ty + 1][0] = (x > 0 && y < n) ? in[y * n + x - 1] : 0.0f;
  if (tx == T - 1) tile[ty + 1][T + 1] = (x + 1 < n && y < n) ? in[y * n + x + 1] : 0.0f;
  if (ty == 0) tile[0][tx + 1] = (y > 0 && x < n) ? in[(y - 1) * n + x] : 0.0f;
  if (ty == T - 1) tile[T + 1][tx + 1] = (y + 1 < n && x < n) ? in[(y + 1) * n + x] : 0.0f;
  __syncthreads();
  if (!inside) return;
  if (x == 0 || y == 0 || x == n - 1 || y == n - 1) {
    out[y * n + x] = tile[ty + 1][tx + 1];
  } else {
    out[y * n + x] = 0.25f * (tile[ty][tx + 1] + tile[ty + 2][tx + 1] + tile[ty + 1][tx] + tile[ty + 1][tx + 2]);
  }
}
