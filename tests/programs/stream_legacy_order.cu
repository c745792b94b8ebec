// stream_legacy_order: the legacy default stream's implicit synchronisation, which a
// runtime that lets streams run concurrently must keep. Each case puts a slow kernel (a
// chain of dependent trips through global memory) first and a kernel that reads what it
// wrote second, on two streams that CUDA orders: the legacy stream then a blocking
// stream, a blocking stream then the legacy stream (also seen by a synchronous
// cudaMemcpy on the legacy stream, and by a host function there), the legacy stream then
// the per-thread default stream (a blocking stream) and back; and, through an event,
// two non-blocking streams (cudaStreamWaitEvent). A reader that ran early sees 0. Every
// stream is named, so the program means the same built with --default-stream legacy or
// per-thread.
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

// `rounds` dependent trips through global memory (one thread), then writes `value`.
__global__ void slow_write(volatile int* scratch, int* where, int value, int rounds) {
    for (int i = 0; i < rounds; ++i) scratch[0] = scratch[0] * 3 + 1;
    *where = value;
}

__global__ void copy_plus_one(const int* from, int* to) { *to = *from + 1; }

static void CUDART_CB read_on_host(void* data) {
    int* cell = (int*)data;  // mapped pinned memory: [0] written by a kernel, [1] by us
    cell[1] = ((volatile int*)cell)[0];
}

int main() {
    // (a Vulkan driver may end longer loops early: lavapipe's limit is 65535 passes)
    const int rounds = 50000;
    const int cases = 6;
    int *d_cell, *d_scratch, *pinned;
    CHECK(cudaMalloc(&d_cell, 2 * cases * sizeof(int)));
    CHECK(cudaMalloc(&d_scratch, cases * sizeof(int)));
    CHECK(cudaHostAlloc(&pinned, 2 * sizeof(int), cudaHostAllocMapped));
    int* pinned_d;
    CHECK(cudaHostGetDevicePointer((void**)&pinned_d, pinned, 0));
    pinned[0] = pinned[1] = 0;
    CHECK(cudaMemset(d_cell, 0, 2 * cases * sizeof(int)));
    CHECK(cudaMemset(d_scratch, 0, cases * sizeof(int)));
    cudaStream_t blocking, nb1, nb2;
    CHECK(cudaStreamCreate(&blocking));
    CHECK(cudaStreamCreateWithFlags(&nb1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&nb2, cudaStreamNonBlocking));
    cudaEvent_t done1;
    CHECK(cudaEventCreateWithFlags(&done1, cudaEventDisableTiming));
    CHECK(cudaDeviceSynchronize());

    int* c = d_cell;
    // 0: legacy stream -> blocking stream
    slow_write<<<1, 1, 0, cudaStreamLegacy>>>(d_scratch + 0, c + 0, 10, rounds);
    copy_plus_one<<<1, 1, 0, blocking>>>(c + 0, c + 1);
    // 1: blocking stream -> legacy stream, read by a synchronous copy on the default stream
    // (built with --default-stream per-thread, as the test does, the per-thread stream:
    // a blocking stream, which waits for the legacy stream)
    slow_write<<<1, 1, 0, blocking>>>(d_scratch + 1, c + 2, 20, rounds);
    copy_plus_one<<<1, 1, 0, cudaStreamLegacy>>>(c + 2, c + 3);
    int copied = 0;
    CHECK(cudaMemcpy(&copied, c + 3, sizeof(int), cudaMemcpyDeviceToHost));
    // 2: blocking stream -> a host function on the legacy stream
    slow_write<<<1, 1, 0, blocking>>>(d_scratch + 2, pinned_d, 30, rounds);
    CHECK(cudaLaunchHostFunc(cudaStreamLegacy, read_on_host, pinned));
    // 3: legacy stream -> per-thread default stream (a blocking stream)
    slow_write<<<1, 1, 0, cudaStreamLegacy>>>(d_scratch + 3, c + 6, 40, rounds);
    copy_plus_one<<<1, 1, 0, cudaStreamPerThread>>>(c + 6, c + 7);
    // 4: per-thread default stream -> legacy stream
    slow_write<<<1, 1, 0, cudaStreamPerThread>>>(d_scratch + 4, c + 8, 50, rounds);
    copy_plus_one<<<1, 1, 0, cudaStreamLegacy>>>(c + 8, c + 9);
    // 5: non-blocking stream -> non-blocking stream, through an event
    slow_write<<<1, 1, 0, nb1>>>(d_scratch + 5, c + 10, 60, rounds);
    CHECK(cudaEventRecord(done1, nb1));
    CHECK(cudaStreamWaitEvent(nb2, done1, 0));
    copy_plus_one<<<1, 1, 0, nb2>>>(c + 10, c + 11);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    int cell[2 * cases];
    CHECK(cudaMemcpy(cell, d_cell, sizeof(cell), cudaMemcpyDeviceToHost));
    cell[4] = pinned[0];
    cell[5] = pinned[1];
    const char* names[cases] = {"legacy -> blocking", "blocking -> legacy",
                                "blocking -> legacy host function", "legacy -> per-thread",
                                "per-thread -> legacy", "non-blocking -> event -> non-blocking"};
    bool ok = copied == 21;
    printf("blocking -> legacy cudaMemcpy: %d\n", copied);
    for (int i = 0; i < cases; ++i) {
        int want = 10 * (i + 1);
        bool right = cell[2 * i] == want && cell[2 * i + 1] == want + (i == 2 ? 0 : 1);
        printf("%s: %d -> %d\n", names[i], cell[2 * i], cell[2 * i + 1]);
        ok = ok && right;
    }

    CHECK(cudaEventDestroy(done1));
    CHECK(cudaStreamDestroy(blocking));
    CHECK(cudaStreamDestroy(nb1));
    CHECK(cudaStreamDestroy(nb2));
    CHECK(cudaFree(d_cell));
    CHECK(cudaFree(d_scratch));
    CHECK(cudaFreeHost(pinned));
    printf(ok ? "PASS\n" : "FAIL: a kernel ran before the work CUDA orders it after\n");
    return ok ? 0 : 1;
}
