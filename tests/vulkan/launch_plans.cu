// Launches the Vulkan backend records by the plan of their kernel and shape (backend.py
// LaunchPlan: the push constants after a launch's own 16 bytes, packed once per shape), each
// answer checked on the host: a kernel launched in turn with several grids, blocks and dynamic
// shared sizes sees the shape of each launch; memory allocated after a shape was planned (at
// addresses the plan's range check did not cover) is used by the next launch of that shape;
// launches of one shape with other arguments see their own; 3000 launches of one stream (more
// than the backend's 256 launch slots at once) run in order.
#include <cstdio>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

__global__ void shape(int* out) {
  extern __shared__ int scratch[];
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  if (dyn >= 4) scratch[0] = 7;
  __syncthreads();
  if (t == 0) {
    int* o = out + 4 * b;
    o[0] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
    o[1] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
    o[2] = dyn;
    o[3] = dyn >= 4 ? scratch[0] : -1;
  }
}

__global__ void fill(int* p, int v) { p[threadIdx.x] = v + threadIdx.x; }

__global__ void axpy(float* y, const float* x, float a, int n) {
  int i = threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void step(unsigned* x) { *x = *x * 2654435761u + 12345u; }

int main() {
  // shapes: each launch writes its own rows, which the host checks
  struct { dim3 grid, block; unsigned dyn; } shapes[] = {
    {dim3(1), dim3(32), 0}, {dim3(3), dim3(32), 0}, {dim3(1), dim3(32), 0},
    {dim3(2, 2), dim3(64), 0}, {dim3(3), dim3(32), 256}, {dim3(1), dim3(8, 4), 1024},
    {dim3(3), dim3(32), 0}, {dim3(2, 1, 2), dim3(32), 4}, {dim3(1), dim3(32), 0},
  };
  const int n = sizeof shapes / sizeof shapes[0];
  int* out;
  CHECK(cudaMalloc(&out, n * 64 * sizeof(int)));
  CHECK(cudaMemset(out, 0xff, n * 64 * sizeof(int)));
  for (int rounds = 0; rounds < 3; rounds++)
    for (int k = 0; k < n; k++)
      shape<<<shapes[k].grid, shapes[k].block, shapes[k].dyn>>>(out + 64 * k);
  int host[n * 64];
  CHECK(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int k = 0; k < n; k++) {
    dim3 g = shapes[k].grid, b = shapes[k].block;
    for (unsigned blk = 0; blk < g.x * g.y * g.z; blk++) {
      const int* o = host + 64 * k + 4 * blk;
      int want[4] = {(int)(g.x * 10000 + g.y * 100 + g.z), (int)(b.x * 10000 + b.y * 100 + b.z),
                     (int)shapes[k].dyn, shapes[k].dyn >= 4 ? 7 : -1};
      for (int f = 0; f < 4; f++) wrong += o[f] != want[f];
    }
  }
  printf("shapes: %d launches, %d wrong\n", 3 * n, wrong);

  // memory allocated after the shape's plan was made, above every address before it
  int *first, *later;
  CHECK(cudaMalloc(&first, 32 * sizeof(int)));
  for (int i = 0; i < 5; i++) fill<<<1, 32>>>(first, i);
  CHECK(cudaDeviceSynchronize());
  size_t big = 256u << 20;
  char* pad;
  CHECK(cudaMalloc(&pad, big));
  CHECK(cudaMalloc(&later, 32 * sizeof(int)));
  int* ends[2] = {(int*)(pad + big) - 32, later};  // (the new block's last words, and after it)
  for (int j = 0; j < 2; j++) fill<<<1, 32>>>(ends[j], 100 * (j + 1));
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int got[2][32];
  wrong = 0;
  for (int j = 0; j < 2; j++) {
    CHECK(cudaMemcpy(got[j], ends[j], sizeof got[j], cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) wrong += got[j][i] != 100 * (j + 1) + i;
  }
  printf("memory allocated after the plan: %d wrong\n", wrong);

  // one shape, other arguments each launch
  float *x, *y, hx[32], hy[32], want[32];
  for (int i = 0; i < 32; i++) { hx[i] = (float)i; want[i] = 1.0f; }
  CHECK(cudaMalloc(&x, sizeof hx));
  CHECK(cudaMalloc(&y, sizeof hy));
  CHECK(cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(y, want, sizeof want, cudaMemcpyHostToDevice));
  for (int k = 0; k < 40; k++) {
    float a = 0.25f * (k % 7) - 0.5f;
    int m = 8 + k % 25;
    axpy<<<1, 32>>>(y, x, a, m);
    for (int i = 0; i < m; i++) want[i] = a * hx[i] + want[i];
  }
  CHECK(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < 32; i++) wrong += hy[i] != want[i];
  printf("arguments: 40 launches, %d wrong\n", wrong);

  // more launches than slots, in order: each step depends on the one before
  unsigned *v, hv, wv = 1;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMalloc(&v, sizeof(unsigned)));
  CHECK(cudaMemcpy(v, &wv, sizeof wv, cudaMemcpyHostToDevice));
  for (int k = 0; k < 3000; k++) {
    step<<<1, 1, 0, s>>>(v);
    wv = wv * 2654435761u + 12345u;
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(&hv, v, sizeof hv, cudaMemcpyDeviceToHost));
  printf("order: 3000 launches, %s\n", hv == wv ? "as on the host" : "WRONG");
  return 0;
}
