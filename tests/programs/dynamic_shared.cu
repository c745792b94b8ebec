// dynamic_shared: extern __shared__ arrays sized at launch: segment reversal
// (float) at three block sizes, one buffer carved into a float and an int
// array, and a 64 KiB table (opt-in via cudaFuncSetAttribute) beside static
// shared memory.
#include <algorithm>
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

// Reverse each blockDim.x-long segment in place (the last one may be short).
__global__ void reverse_segments(float* data, int n) {
    extern __shared__ float seg[];
    const int base = blockIdx.x * blockDim.x, t = threadIdx.x;
    const int len = min((int)blockDim.x, n - base);
    if (t < len) seg[t] = data[base + t];
    __syncthreads();
    if (t < len) data[base + t] = seg[len - 1 - t];
}

// per_thread floats per thread, then one int per thread, in one dynamic buffer.
__global__ void float_int_mix(const float* in, float* out_f, int* out_i, int n, int per_thread) {
    extern __shared__ unsigned char smem[];
    float* fs = reinterpret_cast<float*>(smem);
    int* is = reinterpret_cast<int*>(smem + blockDim.x * per_thread * sizeof(float));
    const int t = threadIdx.x, total = blockDim.x * per_thread, base = blockIdx.x * total;
    int positives = 0;
    for (int k = 0; k < per_thread; ++k) {
        int j = k * blockDim.x + t, g = base + j;
        fs[j] = g < n ? in[g] : 0.0f;
        positives += fs[j] > 0.0f;
    }
    is[t] = positives;
    __syncthreads();
    for (int k = 0; k < per_thread; ++k) {
        int j = k * blockDim.x + t, g = base + j;
        if (g < n) out_f[g] = fs[j] + fs[(j + 1) % total];
    }
    out_i[blockIdx.x * blockDim.x + t] = is[t] + is[(t + 1) % blockDim.x];
}

// Per-block counts in a shared table of table_size words, flushed to global.
__global__ void big_table(const unsigned* keys, int n, int table_size, unsigned* counts, unsigned* touched) {
    extern __shared__ unsigned table[];
    __shared__ unsigned distinct;
    if (threadIdx.x == 0) distinct = 0;
    for (int k = threadIdx.x; k < table_size; k += blockDim.x) table[k] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&table[keys[i] % table_size], 1u);
    __syncthreads();
    for (int k = threadIdx.x; k < table_size; k += blockDim.x)
        if (table[k]) { atomicAdd(&counts[k], table[k]); atomicAdd(&distinct, 1u); }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(touched, distinct);
}

int main() {
    const int n = 100003;
    Lcg rng{64};
    std::vector<float> data(n), out(n);
    std::vector<unsigned> keys(n);
    for (auto& v : data) v = (float)((int)(rng.next() >> 8) % 2001 - 1000) * 0.125f;
    for (auto& k : keys) k = rng.next() >> 4;
    float *dd, *dout;
    int* dint;
    unsigned *dkeys, *dcounts, *dtouched;
    CHECK(cudaMalloc(&dd, n * sizeof(float)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMalloc(&dint, n * sizeof(int)));
    CHECK(cudaMalloc(&dkeys, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&dcounts, 16384 * sizeof(unsigned)));
    CHECK(cudaMalloc(&dtouched, sizeof(unsigned)));
    CHECK(cudaMemcpy(dkeys, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));

    for (int block : {64, 200, 512}) {
        CHECK(cudaMemcpy(dd, data.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        reverse_segments<<<(n + block - 1) / block, block, block * sizeof(float)>>>(dd, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out.data(), dd, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (int base = 0; base < n; base += block) {
            int len = std::min(block, n - base);
            for (int t = 0; t < len; ++t)
                if (out[base + t] != data[base + len - 1 - t]) {
                    printf("FAIL: reverse with block %d: [%d] = %g, expected %g\n", block, base + t,
                           out[base + t], data[base + len - 1 - t]);
                    return 1;
                }
        }
    }

    CHECK(cudaMemcpy(dd, data.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const int shapes[2][2] = {{128, 3}, {96, 5}};
    for (const auto& sh : shapes) {
        const int block = sh[0], per = sh[1], total = block * per, grid = (n + total - 1) / total;
        std::vector<int> got_i(grid * block);
        size_t bytes = (size_t)total * sizeof(float) + block * sizeof(int);
        float_int_mix<<<grid, block, bytes>>>(dd, dout, dint, n, per);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(got_i.data(), dint, grid * block * sizeof(int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < grid; ++b) {
            const int base = b * total;
            auto at = [&](int j) { return base + j < n ? data[base + j] : 0.0f; };
            std::vector<int> pos(block, 0);
            for (int j = 0; j < total; ++j) pos[j % block] += at(j) > 0.0f;
            for (int j = 0; j < total && base + j < n; ++j)
                if (out[base + j] != at(j) + at((j + 1) % total)) {
                    printf("FAIL: float_int_mix %dx%d: f[%d] = %g, expected %g\n", block, per, base + j,
                           out[base + j], at(j) + at((j + 1) % total));
                    return 1;
                }
            for (int t = 0; t < block; ++t)
                if (got_i[b * block + t] != pos[t] + pos[(t + 1) % block]) {
                    printf("FAIL: float_int_mix %dx%d: block %d int[%d] = %d, expected %d\n", block, per, b, t,
                           got_i[b * block + t], pos[t] + pos[(t + 1) % block]);
                    return 1;
                }
        }
    }

    CHECK(cudaFuncSetAttribute(big_table, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
    for (int table_size : {16384, 4001}) {
        const int grid = 13, block = 256;
        CHECK(cudaMemset(dcounts, 0, 16384 * sizeof(unsigned)));
        CHECK(cudaMemset(dtouched, 0, sizeof(unsigned)));
        big_table<<<grid, block, table_size * sizeof(unsigned)>>>(dkeys, n, table_size, dcounts, dtouched);
        CHECK(cudaGetLastError());
        std::vector<unsigned> counts(16384);
        unsigned touched = 0;
        CHECK(cudaMemcpy(counts.data(), dcounts, 16384 * sizeof(unsigned), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&touched, dtouched, sizeof(unsigned), cudaMemcpyDeviceToHost));
        std::vector<unsigned> want(16384, 0);
        std::vector<std::vector<char>> seen(grid, std::vector<char>(table_size, 0));
        unsigned want_touched = 0;
        for (int i = 0; i < n; ++i) {
            unsigned k = keys[i] % table_size;
            int b = (i / block) % grid;  // grid-stride: element i belongs to this block
            want[k]++;
            if (!seen[b][k]) { seen[b][k] = 1; want_touched++; }
        }
        for (int k = 0; k < 16384; ++k)
            if (counts[k] != want[k]) {
                printf("FAIL: big_table(%d) count[%d] = %u, expected %u\n", table_size, k, counts[k], want[k]);
                return 1;
            }
        if (touched != want_touched) {
            printf("FAIL: big_table(%d) touched %u entries, expected %u\n", table_size, touched, want_touched);
            return 1;
        }
        printf("table of %d words (%d bytes dynamic shared): %u block-entries touched\n", table_size,
               (int)(table_size * sizeof(unsigned)), touched);
    }
    CHECK(cudaFree(dd));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dint));
    CHECK(cudaFree(dkeys));
    CHECK(cudaFree(dcounts));
    CHECK(cudaFree(dtouched));
    printf("PASS\n");
    return 0;
}
