// pipeline: chunks flow through kernels A -> B -> C on two streams with
// pinned host memory and cudaMemcpyAsync both ways; events time each stream
// and order a final kernel on stream 0 after all of stream 1's work.
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

__host__ __device__ unsigned stage_a(unsigned v) { return v * 2654435761u + 12345u; }
__host__ __device__ unsigned stage_b(unsigned v) { return v ^ (v >> 13) ^ (v << 5); }
__host__ __device__ unsigned stage_c(unsigned v) { return v % 100003u; }

__global__ void kernel_a(const unsigned* in, unsigned* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = stage_a(in[i]);
}
__global__ void kernel_b(unsigned* tmp, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tmp[i] = stage_b(tmp[i]);
}
__global__ void kernel_c(const unsigned* tmp, unsigned* out, int n, unsigned long long* chunk_sum) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = stage_c(tmp[i]);
        out[i] = v;
        atomicAdd(chunk_sum, (unsigned long long)v);
    }
}
__global__ void combine(const unsigned long long* chunk_sums, int chunks, unsigned long long* total) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        unsigned long long t = 0;
        for (int c = 0; c < chunks; ++c) t += chunk_sums[c] * (unsigned long long)(c + 1);
        *total = t;
    }
}

int main() {
    const int n = 1000000, chunk = 131072, block = 256;
    const int chunks = (n + chunk - 1) / chunk;  // 8, the last one partial
    unsigned *h_in, *h_out;
    unsigned long long* h_total;
    CHECK(cudaMallocHost(&h_in, n * sizeof(unsigned)));
    CHECK(cudaMallocHost(&h_out, n * sizeof(unsigned)));
    CHECK(cudaMallocHost(&h_total, sizeof(unsigned long long)));
    Lcg rng{77};
    for (int i = 0; i < n; ++i) h_in[i] = rng.next();
    *h_total = 0;

    unsigned *d_in, *d_tmp, *d_out;
    unsigned long long *d_sums, *d_total;
    CHECK(cudaMalloc(&d_in, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_tmp, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_out, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&d_sums, chunks * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&d_total, sizeof(unsigned long long)));

    cudaStream_t streams[2];
    cudaEvent_t start[2], stop[2];
    for (int s = 0; s < 2; ++s) {
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
        CHECK(cudaEventCreate(&start[s]));
        CHECK(cudaEventCreate(&stop[s]));
    }
    CHECK(cudaMemset(d_sums, 0, chunks * sizeof(unsigned long long)));
    CHECK(cudaDeviceSynchronize());  // non-blocking streams do not wait for the memset

    for (int s = 0; s < 2; ++s) CHECK(cudaEventRecord(start[s], streams[s]));
    for (int c = 0; c < chunks; ++c) {
        cudaStream_t st = streams[c % 2];
        const int off = c * chunk, len = (off + chunk <= n) ? chunk : n - off;
        const int grid = (len + block - 1) / block;
        CHECK(cudaMemcpyAsync(d_in + off, h_in + off, len * sizeof(unsigned), cudaMemcpyHostToDevice, st));
        kernel_a<<<grid, block, 0, st>>>(d_in + off, d_tmp + off, len);
        CHECK(cudaGetLastError());
        kernel_b<<<grid, block, 0, st>>>(d_tmp + off, len);
        CHECK(cudaGetLastError());
        kernel_c<<<grid, block, 0, st>>>(d_tmp + off, d_out + off, len, d_sums + c);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h_out + off, d_out + off, len * sizeof(unsigned), cudaMemcpyDeviceToHost, st));
    }
    for (int s = 0; s < 2; ++s) CHECK(cudaEventRecord(stop[s], streams[s]));
    // Stream 0 combines all chunk sums, so it must wait for stream 1's chunks.
    CHECK(cudaStreamWaitEvent(streams[0], stop[1], 0));
    combine<<<1, 32, 0, streams[0]>>>(d_sums, chunks, d_total);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h_total, d_total, sizeof(unsigned long long), cudaMemcpyDeviceToHost, streams[0]));
    CHECK(cudaStreamSynchronize(streams[1]));
    CHECK(cudaStreamSynchronize(streams[0]));
    for (int s = 0; s < 2; ++s) {
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start[s], stop[s]));
        printf("stream %d: %.3f ms\n", s, ms);
    }

    std::vector<unsigned long long> sums(chunks, 0);
    for (int i = 0; i < n; ++i) {
        unsigned want = stage_c(stage_b(stage_a(h_in[i])));
        if (h_out[i] != want) {
            printf("FAIL: out[%d] = %u, expected %u (chunk %d)\n", i, h_out[i], want, i / chunk);
            return 1;
        }
        sums[i / chunk] += want;
    }
    unsigned long long total = 0;
    for (int c = 0; c < chunks; ++c) total += sums[c] * (unsigned long long)(c + 1);
    printf("%d chunks, weighted total %llu\n", chunks, *h_total);
    if (*h_total != total) {
        printf("FAIL: weighted total %llu, expected %llu\n", *h_total, total);
        return 1;
    }
    for (int s = 0; s < 2; ++s) {
        CHECK(cudaEventDestroy(start[s]));
        CHECK(cudaEventDestroy(stop[s]));
        CHECK(cudaStreamDestroy(streams[s]));
    }
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_tmp));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_sums));
    CHECK(cudaFree(d_total));
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    CHECK(cudaFreeHost(h_total));
    printf("PASS\n");
    return 0;
}
