// histogram: 256-bin byte histogram; each block counts into shared memory with
// shared atomics, then adds its bins to the global histogram with atomicAdd.
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

#define BINS 256

// Works for any block size: bins are cleared and flushed with a stride loop.
__global__ void histogram256(const unsigned char* data, int n, unsigned int* hist) {
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int c = local[b];
        if (c != 0) atomicAdd(&hist[b], c);
    }
}

int main() {
    const int n = 1000003;
    Lcg rng{99};
    std::vector<unsigned char> data(n);
    // Skewed distribution: heavy contention on a few bins, some bins empty.
    for (int i = 0; i < n; ++i) {
        unsigned r = rng.next() >> 16;
        if (r % 4 == 0) data[i] = 'e';
        else if (r % 4 == 1) data[i] = (unsigned char)(r >> 8) & 0x0f;
        else data[i] = (unsigned char)((r >> 4) % 200);  // bins 200..254 stay empty
    }
    data[n - 1] = 255;  // the very last element lands in the last bin

    unsigned char* dd;
    unsigned int* dh;
    CHECK(cudaMalloc(&dd, n));
    CHECK(cudaMalloc(&dh, BINS * sizeof(unsigned int)));
    CHECK(cudaMemcpy(dd, data.data(), n, cudaMemcpyHostToDevice));

    std::vector<unsigned int> ref(BINS, 0);
    for (int i = 0; i < n; ++i) ref[data[i]]++;

    // Three launch shapes: fewer threads than bins, exactly 256, more than 256.
    const int shapes[3][2] = {{45, 192}, {64, 256}, {23, 640}};
    std::vector<unsigned int> hist(BINS);
    for (int s = 0; s < 3; ++s) {
        CHECK(cudaMemset(dh, 0, BINS * sizeof(unsigned int)));
        histogram256<<<shapes[s][0], shapes[s][1]>>>(dd, n, dh);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(hist.data(), dh, BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < BINS; ++b) {
            if (hist[b] != ref[b]) {
                printf("FAIL: grid %d x block %d: bin %d = %u, expected %u\n",
                       shapes[s][0], shapes[s][1], b, hist[b], ref[b]);
                return 1;
            }
        }
    }
    printf("bin 'e' = %u, bin 255 = %u, bin 254 = %u\n", ref['e'], ref[255], ref[254]);
    CHECK(cudaFree(dd));
    CHECK(cudaFree(dh));
    printf("PASS\n");
    return 0;
}
