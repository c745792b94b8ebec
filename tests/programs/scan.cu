// scan: multi-block inclusive prefix sum of ints in three kernels: block scans
// in shared memory, a single-block scan of the block sums (in chunks, with a
// carry), then each block adds the sum of the blocks before it.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s failed at %s:%d: %s\n", #call,    \
                    __FILE__, __LINE__, cudaGetErrorString(err_));            \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

struct Lcg {
    unsigned state;
    unsigned next() { state = state * 1664525u + 1013904223u; return state; }
};

#define SCAN_BLOCK 256
#define SUMS_BLOCK 1024

// Hillis-Steele inclusive scan of s[0 .. blockDim.x) in place.
__device__ void block_inclusive_scan(int* s) {
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        int t = threadIdx.x >= offset ? s[threadIdx.x - offset] : 0;
        __syncthreads();
        s[threadIdx.x] += t;
        __syncthreads();
    }
}

__global__ void scan_blocks(const int* in, int* out, int n, int* block_sums) {
    __shared__ int s[SCAN_BLOCK];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0;
    __syncthreads();
    block_inclusive_scan(s);
    if (i < n) out[i] = s[threadIdx.x];
    if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = s[threadIdx.x];
}

// One block scans all m block sums, SUMS_BLOCK at a time, carrying the total.
__global__ void scan_block_sums(int* sums, int m) {
    __shared__ int s[SUMS_BLOCK];
    __shared__ int carry;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int base = 0; base < m; base += blockDim.x) {
        int i = base + threadIdx.x;
        s[threadIdx.x] = i < m ? sums[i] : 0;
        __syncthreads();
        block_inclusive_scan(s);
        if (i < m) sums[i] = s[threadIdx.x] + carry;
        __syncthreads();  // every thread has read carry before it changes
        if (threadIdx.x == blockDim.x - 1) carry += s[threadIdx.x];
        __syncthreads();
    }
}

__global__ void add_offsets(int* out, int n, const int* scanned_sums) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x > 0 && i < n) out[i] += scanned_sums[blockIdx.x - 1];
}

int main() {
    const int n = 500009;
    const int blocks = (n + SCAN_BLOCK - 1) / SCAN_BLOCK;  // 1954: two chunks in kernel 2
    Lcg rng{5};
    std::vector<int> in(n), out(n);
    for (auto& v : in) v = (int)((rng.next() >> 8) % 151u) - 50;  // [-50, 100]

    int *din, *dout, *dsums;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CHECK(cudaMalloc(&dsums, blocks * sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));

    scan_blocks<<<blocks, SCAN_BLOCK>>>(din, dout, n, dsums);
    CHECK(cudaGetLastError());
    scan_block_sums<<<1, SUMS_BLOCK>>>(dsums, blocks);
    CHECK(cudaGetLastError());
    add_offsets<<<blocks, SCAN_BLOCK>>>(dout, n, dsums);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));

    long long acc = 0;
    for (int i = 0; i < n; ++i) {
        acc += in[i];
        if (out[i] != acc) {
            printf("FAIL: prefix[%d] = %d, expected %lld (block %d)\n", i, out[i], acc, i / SCAN_BLOCK);
            return 1;
        }
    }
    printf("%d elements in %d blocks, total %lld\n", n, blocks, acc);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dsums));
    printf("PASS\n");
    return 0;
}
