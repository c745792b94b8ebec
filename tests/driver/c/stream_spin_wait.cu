// stream_spin_wait: a kernel on one non-blocking stream waits (spins on a volatile flag in
// device memory) for a kernel on another non-blocking stream, which CUDA does not order
// after it: both must run at once. Stream A's grid has more spinning blocks than a CPU has
// cores; stream B's kernel writes data, then the flag. Stream C waits for an event recorded
// on B after that kernel (cudaStreamWaitEvent) and sums the data. A runtime that runs B's
// kernel only after A's would spin for good: a host watchdog sets an abort flag in mapped
// pinned memory after 10 s, A's blocks then end, and the program says it timed out.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
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

const int WAITERS = 64, N = 256, FLAG = 42;

__global__ void wait_for_flag(volatile int* flag, volatile int* abort_flag, int* seen) {
    while (*flag == 0 && *abort_flag == 0) {
    }
    if (threadIdx.x == 0) seen[blockIdx.x] = *flag;
}

__global__ void write_then_flag(int* data, volatile int* flag) {
    data[threadIdx.x] = 3 * threadIdx.x + 1;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) *flag = FLAG;
}

__global__ void sum(const int* data, int* out) {
    if (threadIdx.x == 0) {
        int s = 0;
        for (int i = 0; i < N; ++i) s += data[i];
        *out = s;
    }
}

int main() {
    int *abort_h, *abort_d;
    CHECK(cudaHostAlloc(&abort_h, sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void**)&abort_d, abort_h, 0));
    *abort_h = 0;
    int *flag, *seen, *data, *out;
    CHECK(cudaMalloc(&flag, sizeof(int)));
    CHECK(cudaMalloc(&seen, WAITERS * sizeof(int)));
    CHECK(cudaMalloc(&data, N * sizeof(int)));
    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMemset(flag, 0, sizeof(int)));
    CHECK(cudaMemset(seen, 0, WAITERS * sizeof(int)));
    cudaStream_t a, b, c;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking));
    cudaEvent_t written;
    CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
    cudaFuncAttributes attr;  // (kernels loaded before A spins: CUDA's lazy loading)
    CHECK(cudaFuncGetAttributes(&attr, wait_for_flag));
    CHECK(cudaFuncGetAttributes(&attr, write_then_flag));
    CHECK(cudaFuncGetAttributes(&attr, sum));
    CHECK(cudaDeviceSynchronize());

    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
        for (int i = 0; i < 1000 && !finished.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!finished.load()) ((volatile int*)abort_h)[0] = 1;
    });
    wait_for_flag<<<WAITERS, 32, 0, a>>>(flag, abort_d, seen);
    CHECK(cudaGetLastError());
    write_then_flag<<<1, N, 0, b>>>(data, flag);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(written, b));
    CHECK(cudaStreamWaitEvent(c, written, 0));
    sum<<<1, 32, 0, c>>>(data, out);
    CHECK(cudaGetLastError());
    int total = 0;
    CHECK(cudaMemcpyAsync(&total, out, sizeof(int), cudaMemcpyDeviceToHost, c));
    CHECK(cudaStreamSynchronize(c));
    CHECK(cudaStreamSynchronize(a));
    finished = true;
    watchdog.join();
    int h_seen[WAITERS];
    CHECK(cudaMemcpy(h_seen, seen, sizeof(h_seen), cudaMemcpyDeviceToHost));
    int saw = 0;
    for (int i = 0; i < WAITERS; ++i) saw += h_seen[i] == FLAG;
    printf("waiting blocks that saw the flag: %d of %d\n", saw, WAITERS);
    printf("sum after the event: %d\n", total);
    bool ok = saw == WAITERS && total == 3 * N * (N - 1) / 2 + N && !*abort_h;
    if (*abort_h) printf("FAIL: timed out: stream B's kernel did not run beside stream A's\n");
    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(c));
    CHECK(cudaEventDestroy(written));
    CHECK(cudaFreeHost(abort_h));
    printf(ok ? "PASS\n" : "FAIL\n");
    return ok ? 0 : 1;
}
