// dynamic_parallelism: kernels launching kernels (CUDA 12 semantics; built -rdc=true,
// linked with libcudadevrt), as cuda-samples' cdp* programs do:
// - a launch tree three levels deep from every thread of the parent (the NULL stream),
//   each grid counting itself per level and checking its arguments;
// - a tail launch (cudaStreamTailLaunch) that sums what every block of its parent wrote,
//   and a fire-and-forget launch (cudaStreamFireAndForget), both done when the host's
//   launch is;
// - a recursive sum over halves in streams the kernel creates
//   (cudaStreamCreateWithFlags), each level combining its two children's results in a
//   tail launch, which runs after them;
// - a struct passed by value to a child, and a launch with 2048 threads per block, which
//   fails with cudaErrorInvalidConfiguration seen by cudaGetLastError in device code.
#include <cstdio>
#include <cstdlib>
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

static int failures = 0;
static void expect(const char* what, long long got, long long want) {
    if (got != want) {
        printf("FAIL: %s: %lld, expected %lld\n", what, got, want);
        failures++;
    }
}

// 1. level d grids have 2 blocks of 3 threads; every thread launches one grid of level d+1
__global__ void tree(int level, int max_level, int* counts, int* bad, int expect_parent) {
    if (threadIdx.x == 0) atomicAdd(&counts[level], 1);  // one count per block
    if (expect_parent != level - 1) atomicAdd(bad, 1);
    if (level < max_level) tree<<<2, 3>>>(level + 1, max_level, counts, bad, level);
}

// 2. every block writes its part, then thread 0 of block 0 launches the reduction as a
//    tail launch: it starts after every block of this grid is done
__global__ void sum_parts(const int* parts, int n, long long* out) {
    long long s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += parts[i];
    atomicAdd((unsigned long long*)out, (unsigned long long)s);
}
__global__ void mark(int* flag) { atomicExch(flag, 1234); }
__global__ void produce(int* parts, int per_block, long long* out, int* flag) {
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        parts[blockIdx.x * per_block + i] = (blockIdx.x + 1) * (i % 7);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        sum_parts<<<1, 64, 0, cudaStreamTailLaunch>>>(parts, gridDim.x * per_block, out);
        mark<<<1, 1, 0, cudaStreamFireAndForget>>>(flag);
    }
}

// 3. sum of in[0, n) into *out: halves in two created streams, combined by a tail launch
__global__ void add_pair(long long* out, const long long* pair) { *out = pair[0] + pair[1]; }
__global__ void tree_sum(const int* in, int n, long long* out, long long* scratch) {
    if (n <= 64) {
        if (threadIdx.x == 0) {
            long long s = 0;
            for (int i = 0; i < n; ++i) s += in[i];
            *out = s;
        }
        return;
    }
    if (threadIdx.x == 0) {
        int h = n / 2;
        long long* pair = scratch;  // this level's two results
        cudaStream_t a, b;
        cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
        cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
        // each half gets its own part of the scratch space (a size-m call needs 2m)
        tree_sum<<<1, 32, 0, a>>>(in, h, &pair[0], scratch + 2 + 0);
        tree_sum<<<1, 32, 0, b>>>(in + h, n - h, &pair[1], scratch + 2 + 2 * h);
        cudaStreamDestroy(a);
        cudaStreamDestroy(b);
        add_pair<<<1, 1, 0, cudaStreamTailLaunch>>>(out, pair);
    }
}

// 4. a struct by value, and a launch the device runtime refuses
struct Params {
    double scale;
    int offset;
    char tag[3];
    int* out;
};
__global__ void apply(Params p) {
    p.out[threadIdx.x] = (int)(p.scale * threadIdx.x) + p.offset + p.tag[0] + p.tag[2];
}
__global__ void launcher(int* out, int* error) {
    Params p = {2.5, 100, {'a', 'b', 'c'}, out};
    apply<<<1, 16>>>(p);
    cudaError_t ok = cudaGetLastError();
    apply<<<1, 2048>>>(p);  // more threads than a block may have
    cudaError_t bad = cudaGetLastError();
    error[0] = ok;
    error[1] = bad;
    error[2] = cudaGetLastError();  // read and reset: success now
}

int main() {
    int *counts, *bad;
    CHECK(cudaMalloc(&counts, 8 * sizeof(int)));
    CHECK(cudaMalloc(&bad, sizeof(int)));
    CHECK(cudaMemset(counts, 0, 8 * sizeof(int)));
    CHECK(cudaMemset(bad, 0, sizeof(int)));
    tree<<<2, 3>>>(0, 3, counts, bad, -1);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int hc[8], hb;
    CHECK(cudaMemcpy(hc, counts, sizeof hc, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hb, bad, sizeof hb, cudaMemcpyDeviceToHost));
    // level 0: 2 blocks; level d: 6^d grids of 2 blocks
    int grids = 1;
    for (int d = 0; d <= 3; ++d, grids *= 6) expect("blocks at a tree level", hc[d], 2 * grids);
    expect("children with wrong arguments", hb, 0);

    const int blocks = 5, per_block = 300;
    int *parts, *flag;
    long long* out;
    CHECK(cudaMalloc(&parts, blocks * per_block * sizeof(int)));
    CHECK(cudaMalloc(&out, sizeof(long long)));
    CHECK(cudaMalloc(&flag, sizeof(int)));
    CHECK(cudaMemset(out, 0, sizeof(long long)));
    CHECK(cudaMemset(flag, 0, sizeof(int)));
    produce<<<blocks, 128>>>(parts, per_block, out, flag);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long got, want = 0;
    int hf;
    CHECK(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hf, flag, sizeof hf, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b)
        for (int i = 0; i < per_block; ++i) want += (b + 1) * (i % 7);
    expect("tail launch sum", got, want);
    expect("fire-and-forget flag", hf, 1234);

    const int n = 5000;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 7919) % 1000 - 300;
    int* in;
    long long *total, *scratch;
    CHECK(cudaMalloc(&in, n * sizeof(int)));
    CHECK(cudaMalloc(&total, sizeof(long long)));
    CHECK(cudaMalloc(&scratch, 8 * n * sizeof(long long)));
    CHECK(cudaMemcpy(in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    tree_sum<<<1, 32>>>(in, n, total, scratch);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(&got, total, sizeof got, cudaMemcpyDeviceToHost));
    want = 0;
    for (int i = 0; i < n; ++i) want += h[i];
    expect("recursive sum", got, want);

    int *o, *err, ho[16], he[3];
    CHECK(cudaMalloc(&o, sizeof ho));
    CHECK(cudaMalloc(&err, sizeof he));
    launcher<<<1, 1>>>(o, err);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(ho, o, sizeof ho, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(he, err, sizeof he, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 16; ++t) expect("struct argument", ho[t], (int)(2.5 * t) + 100 + 'a' + 'c');
    expect("device-side error of a good launch", he[0], cudaSuccess);
    expect("device-side error of a 2048-thread block", he[1], cudaErrorInvalidConfiguration);
    expect("device-side error after reading it", he[2], cudaSuccess);
    puts(failures ? "FAIL" : "PASS");
    return failures != 0;
}
