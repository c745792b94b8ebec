// Asynchronous copies between device memory and pinned host memory, in stream order with
// launches (on a Vulkan device, copies in the device's queue: driver/memory.py
// queued_backend(pinned=True)):
// - 50 rounds of: pinned -> device, a kernel adding one, device -> pinned, a stream
//   synchronisation; each round's result is the host's new value plus one;
// - 32 MiB device -> pinned with no launch in flight, then a stream synchronisation: the
//   host sees every byte (the synchronisation waits for a copy that is not a launch);
// - a synchronous copy into pinned memory after a queued kernel has the kernel's result.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void add_one(int* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += 1;
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)

int main()
{
    const int n = 256;
    const size_t big = 32 << 20;
    int *in, *out, *d;
    unsigned char *pinned, *dbig;
    CHECK(cudaMallocHost(&in, n * sizeof(int)));
    CHECK(cudaMallocHost(&out, n * sizeof(int)));
    CHECK(cudaMallocHost(&pinned, big));
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMalloc(&dbig, big));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    int wrong = 0;
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < n; i++) in[i] = round * 1000 + i;
        CHECK(cudaMemcpyAsync(d, in, n * sizeof(int), cudaMemcpyHostToDevice, s));
        add_one<<<(n + 127) / 128, 128, 0, s>>>(d, n);
        CHECK(cudaMemcpyAsync(out, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        for (int i = 0; i < n; i++) wrong += out[i] != round * 1000 + i + 1;
    }
    printf("rounds through pinned memory: %d wrong\n", wrong);

    memset(pinned, 0, big);
    CHECK(cudaMemsetAsync(dbig, 0x5a, big, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpyAsync(pinned, dbig, big, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    size_t seen = 0;
    for (size_t i = 0; i < big; i++) seen += pinned[i] == 0x5a;
    printf("32 MiB into pinned memory: %s\n", seen == big ? "all there" : "missing bytes");

    add_one<<<(n + 127) / 128, 128, 0, s>>>(d, n);
    CHECK(cudaStreamSynchronize(s));
    add_one<<<(n + 127) / 128, 128>>>(d, n);
    CHECK(cudaMemcpy(out, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    printf("synchronous copy after a kernel: %d\n", out[7] - 49 * 1000);
    return 0;
}
