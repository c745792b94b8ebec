// Programmatic dependent launch (sm_90), as CUB's merge sort uses it through Thrust
// (cuda-samples segmentationTreeThrust): a producer signals that its dependants may start
// (griddepcontrol.launch_dependents), a consumer launched with the programmatic stream
// serialization attribute waits for its prerequisite grid (griddepcontrol.wait) before
// reading what the producer wrote. Prints PASS when every element is right.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void produce(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = 3 * i + 1;
  cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void consume(const int* data, int* out, int n) {
  cudaGridDependencySynchronize();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = data[n - 1 - i] * 2;
}

int main() {
  const int n = 1000;
  int *data, *out;
  cudaMalloc(&data, n * sizeof(int));
  cudaMalloc(&out, n * sizeof(int));
  cudaStream_t s;
  cudaStreamCreate(&s);
  produce<<<(n + 127) / 128, 128, 0, s>>>(data, n);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((n + 127) / 128);
  cfg.blockDim = dim3(128);
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaError_t e = cudaLaunchKernelEx(&cfg, consume, (const int*)data, out, n);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    std::printf("%s\n", cudaGetErrorName(e));
    return 2;
  }
  int h[n];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++)
    if (h[i] != 2 * (3 * (n - 1 - i) + 1)) {
      std::printf("FAIL at %d: %d\n", i, h[i]);
      return 1;
    }
  std::printf("PASS\n");
  return 0;
}
