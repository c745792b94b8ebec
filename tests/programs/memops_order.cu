// Memsets and device-to-device copies in stream order with kernels: between two kernels on
// one stream, across streams through an event, 2-D, and many rounds of memset + kernel into
// one counter (a reduction's pattern). The Vulkan backend hands these to the device's queue
// on the calling thread (driver/copy.py, driver/stream.py submit_device). Self-checking
// against a host reference; prints one PASS or FAIL line.
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::printf("FAIL: %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); std::exit(1); } } while (0)

__global__ void fill(int* x, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i * v;
}
__global__ void add(int* x, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += v;
}
__global__ void sum(const int* x, int n, unsigned long long* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, (unsigned long long)x[i]);
}
__global__ void rows(const unsigned char* p, size_t pitch, int w, int h, int* out) {
  int r = threadIdx.x;
  if (r < h) { int s = 0; for (int c = 0; c < w; c++) s += p[r * pitch + c]; out[r] = s; }
}

static int bad = 0;
static void expect(const char* what, long long got, long long want) {
  if (got != want && bad++ < 5) std::printf("mismatch %s: %lld, expected %lld\n", what, got, want);
}

int main() {
  const int n = 1 << 20, b = 256, g = (n + b - 1) / b;
  int *d, *e, *f;
  CHECK(cudaMalloc(&d, n * 4)); CHECK(cudaMalloc(&e, n * 4)); CHECK(cudaMalloc(&f, n * 4));
  std::vector<int> h(n);

  // kernel, memset of half, kernel: the memset lands between the two
  fill<<<g, b>>>(d, n, 3);
  CHECK(cudaMemsetAsync(d, 0, n / 2 * 4));
  add<<<g, b>>>(d, n, 1);
  // a device-to-device copy, then a kernel that must not reach the copy
  CHECK(cudaMemcpyAsync(e, d, n * 4, cudaMemcpyDeviceToDevice));
  add<<<g, b>>>(d, n, 5);
  // a synchronous memset (asynchronous for device memory) after the copy
  CHECK(cudaMemset(e + n / 4, 0xFF, 16 * 4));
  CHECK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) expect("d", h[i], (i < n / 2 ? 0 : i * 3) + 6);
  CHECK(cudaMemcpy(h.data(), e, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++)
    expect("e", h[i], (i >= n / 4 && i < n / 4 + 16) ? -1 : (i < n / 2 ? 0 : i * 3) + 1);

  // across streams: B's memset waits for A's kernel through an event
  cudaStream_t sa, sb;
  cudaEvent_t ev;
  CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&ev));
  fill<<<g, b, 0, sa>>>(f, n, 2);
  CHECK(cudaEventRecord(ev, sa));
  CHECK(cudaStreamWaitEvent(sb, ev, 0));
  CHECK(cudaMemsetAsync(f, 0, 1000 * 4, sb));
  add<<<g, b, 0, sb>>>(f, n, 1);
  CHECK(cudaStreamSynchronize(sb));
  CHECK(cudaMemcpy(h.data(), f, n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) expect("f", h[i], (i < 1000 ? 0 : 2 * i) + 1);

  // a 2-D memset of a pitched allocation, read by a kernel
  unsigned char* p;
  size_t pitch;
  int* r;
  CHECK(cudaMallocPitch((void**)&p, &pitch, 100, 8));
  CHECK(cudaMalloc(&r, 8 * 4));
  CHECK(cudaMemset2DAsync(p, pitch, 0, pitch, 8));
  CHECK(cudaMemset2DAsync(p, pitch, 7, 100, 8));
  rows<<<1, 8>>>(p, pitch, (int)pitch, 8, r);
  CHECK(cudaMemcpy(h.data(), r, 8 * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 8; i++) expect("rows", h[i], 700);

  // many rounds of memset + kernel into one counter (a reduction's pattern)
  unsigned long long* out;
  CHECK(cudaMalloc(&out, 8));
  const int m = 1 << 14;  // the last 2^14 elements of d
  long long want = 0;
  for (int i = n - m; i < n; i++) want += i * 3 + 6;
  for (int k = 0; k < 200; k++) {
    CHECK(cudaMemsetAsync(out, 0, 8));
    sum<<<m / b, b>>>(d + n - m, m, out);
  }
  unsigned long long got;
  CHECK(cudaMemcpy(&got, out, 8, cudaMemcpyDeviceToHost));
  expect("sum", (long long)got, want);
  CHECK(cudaDeviceSynchronize());
  std::printf(bad ? "FAIL (%d mismatches)\n" : "PASS\n", bad);
  return bad ? 1 : 0;
}
