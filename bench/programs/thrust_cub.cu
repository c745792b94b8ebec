// What a Thrust/CUB program's first run costs: thrust::sort and sort_by_key of 32-bit keys,
// reduce, transform_reduce, count_if; cub::DeviceRadixSort (pairs and keys) and
// cub::DeviceReduce (sum, max). Every result is checked on the host; prints "ok" and the
// seconds spent in each part (the first run compiles every kernel it uses).
#include <cub/cub.cuh>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

struct square {
  __host__ __device__ long long operator()(int x) const { return (long long)x * x; }
};
struct is_odd {
  __host__ __device__ bool operator()(unsigned x) const { return x & 1; }
};

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define FAIL(...) do { printf(__VA_ARGS__); printf("\n"); return 1; } while (0)

int main() {
  const int n = 1 << 20;
  std::vector<unsigned> h(n);
  unsigned s = 12345;
  for (int i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; h[i] = s; }
  std::vector<unsigned> ref(h);
  std::sort(ref.begin(), ref.end());

  double t0 = now();
  thrust::device_vector<unsigned> d(h.begin(), h.end());
  thrust::sort(d.begin(), d.end());
  thrust::host_vector<unsigned> got = d;
  for (int i = 0; i < n; i++) if (got[i] != ref[i]) FAIL("thrust::sort wrong at %d", i);
  thrust::device_vector<unsigned> keys(h.begin(), h.end());
  thrust::device_vector<int> vals(n);
  thrust::sequence(vals.begin(), vals.end());
  thrust::sort_by_key(keys.begin(), keys.end(), vals.begin());
  thrust::host_vector<int> hv = vals;
  for (int i = 0; i < n; i += 97) if (h[hv[i]] != ref[i]) FAIL("thrust::sort_by_key wrong at %d", i);
  thrust::device_vector<int> x(n);
  thrust::sequence(x.begin(), x.end(), -n / 2);
  long long sum = thrust::reduce(x.begin(), x.end(), 0LL);
  long long sq = thrust::transform_reduce(x.begin(), x.end(), square(), 0LL, thrust::plus<long long>());
  long long odd = thrust::count_if(d.begin(), d.end(), is_odd());
  long long rs = 0, rq = 0, ro = 0;
  for (int i = 0; i < n; i++) { long long v = i - n / 2; rs += v; rq += v * v; ro += h[i] & 1; }
  if (sum != rs || sq != rq || odd != ro) FAIL("thrust reductions wrong: %lld %lld %lld", sum, sq, odd);
  double t1 = now();

  unsigned *k_in, *k_out;
  int *v_in, *v_out, *r;
  cudaMalloc(&k_in, n * 4); cudaMalloc(&k_out, n * 4);
  cudaMalloc(&v_in, n * 4); cudaMalloc(&v_out, n * 4); cudaMalloc(&r, 8);
  std::vector<int> hi(n);
  for (int i = 0; i < n; i++) hi[i] = i;
  cudaMemcpy(k_in, h.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(v_in, hi.data(), n * 4, cudaMemcpyHostToDevice);
  size_t bytes = 0, b2 = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, k_in, k_out, v_in, v_out, n);
  cub::DeviceRadixSort::SortKeys(nullptr, b2, k_in, k_out, n);
  bytes = std::max(bytes, b2);
  cub::DeviceReduce::Sum(nullptr, b2, v_in, r, n);
  bytes = std::max(bytes, b2);
  cub::DeviceReduce::Max(nullptr, b2, v_in, r, n);
  bytes = std::max(bytes, b2);
  void* temp;
  cudaMalloc(&temp, bytes);
  b2 = bytes;
  cub::DeviceRadixSort::SortPairs(temp, b2, k_in, k_out, v_in, v_out, n);
  std::vector<unsigned> hk(n);
  std::vector<int> hvals(n);
  cudaMemcpy(hk.data(), k_out, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hvals.data(), v_out, n * 4, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) if (hk[i] != ref[i] || h[hvals[i]] != ref[i]) FAIL("cub SortPairs wrong at %d", i);
  b2 = bytes;
  cub::DeviceRadixSort::SortKeys(temp, b2, k_in, k_out, n);
  cudaMemcpy(hk.data(), k_out, n * 4, cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) if (hk[i] != ref[i]) FAIL("cub SortKeys wrong at %d", i);
  int hr[2];
  b2 = bytes;
  cub::DeviceReduce::Sum(temp, b2, v_in, r, n);
  b2 = bytes;
  cub::DeviceReduce::Max(temp, b2, v_in, r + 1, n);
  cudaMemcpy(hr, r, 8, cudaMemcpyDeviceToHost);
  if (hr[0] != (int)((long long)n * (n - 1) / 2) || hr[1] != n - 1) FAIL("cub reductions wrong: %d %d", hr[0], hr[1]);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) FAIL("CUDA error: %s", cudaGetErrorString(e));
  double t2 = now();
  printf("ok thrust %.2f s cub %.2f s\n", t1 - t0, t2 - t1);
  return 0;
}
