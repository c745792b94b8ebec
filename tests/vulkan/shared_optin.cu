// CUDA's shared-memory limits as a program sees them (an H200's: 48 KiB a block, 227 KiB by
// opt-in), the checks of cudaFuncSetAttribute and of launches, and blocks using the most
// shared memory a block may opt in to. test_big_shared.py runs it on the CPU and on Vulkan.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != cudaSuccess) {                                                      \
            printf("FAIL: %s: %s\n", #call, cudaGetErrorName(err_));                    \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define EXPECT(call, want)                                                              \
    do {                                                                                \
        cudaError_t err_ = (call);                                                      \
        if (err_ != (want)) {                                                           \
            printf("FAIL: %s: %s, expected %s\n", #call, cudaGetErrorName(err_),        \
                   cudaGetErrorName(want));                                             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

__global__ void fill_all(unsigned* out, int words) {
    extern __shared__ unsigned dyn[];
    __shared__ unsigned stat[4];
    if (threadIdx.x < 4) stat[threadIdx.x] = threadIdx.x + 1;
    for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = i * 2654435761u + blockIdx.x;
    __syncthreads();
    unsigned s = 0;
    for (int i = threadIdx.x; i < words; i += blockDim.x) s += dyn[words - 1 - i] ^ stat[i & 3];
    atomicAdd(&out[blockIdx.x], s);
}

int main() {
    int per_block = 0, optin = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlock, 0));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    printf("shared memory per block %d, by opt-in %d, per multiprocessor %d\n", per_block, optin, per_sm);
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, fill_all));
    const int stat = (int)fa.sharedSizeBytes;
    printf("fill_all: static %d, dynamic at most %d\n", stat, fa.maxDynamicSharedSizeBytes);
    if (fa.maxDynamicSharedSizeBytes != per_block - stat) {
        printf("FAIL: dynamic limit %d, expected %d\n", fa.maxDynamicSharedSizeBytes, per_block - stat);
        return 1;
    }
    const int blocks = 20, threads = 256;
    unsigned* dout;
    CHECK(cudaMalloc(&dout, blocks * sizeof(unsigned)));
    // over the default limit without opting in
    fill_all<<<blocks, threads, per_block - stat + 4>>>(dout, 1);
    EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    // more than the device has
    EXPECT(cudaFuncSetAttribute(fill_all, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - stat + 1),
           cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(fill_all, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - stat));
    CHECK(cudaFuncGetAttributes(&fa, fill_all));
    printf("fill_all: dynamic at most %d after opting in\n", fa.maxDynamicSharedSizeBytes);
    for (int dyn : {optin - stat, 100 * 1024, 1024}) {
        const int words = dyn / 4;
        CHECK(cudaMemset(dout, 0, blocks * sizeof(unsigned)));
        fill_all<<<blocks, threads, dyn>>>(dout, words);
        CHECK(cudaGetLastError());
        std::vector<unsigned> got(blocks);
        CHECK(cudaMemcpy(got.data(), dout, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; ++b) {
            unsigned want = 0;
            for (int i = 0; i < words; ++i) want += ((words - 1 - i) * 2654435761u + b) ^ (unsigned)((i & 3) + 1);
            if (got[b] != want) {
                printf("FAIL: %d bytes of dynamic shared memory: block %d sum %u, expected %u\n", dyn, b,
                       got[b], want);
                return 1;
            }
        }
        printf("%d bytes of dynamic shared memory: %d blocks right\n", dyn, blocks);
    }
    // the opt-in covers launches up to it, not beyond
    fill_all<<<blocks, threads, optin - stat + 4>>>(dout, 1);
    EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK(cudaFree(dout));
    printf("PASS\n");
    return 0;
}
