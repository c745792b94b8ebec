// stream_overlap: host operations on one stream wait only for what CUDA orders them
// after. A kernel on non-blocking stream A spins until the host sets a flag in mapped
// pinned memory; meanwhile non-blocking stream B runs a pageable cudaMemcpyAsync, a
// cudaMemsetAsync, a kernel, a host function and a pageable copy back, and the host
// synchronises B (cudaStreamSynchronize, cudaStreamQuery) while A's kernel still spins.
// Only then does the host set the flag. A GPU finishes this; a runtime whose B work
// waits for A's kernel would hang, so a watchdog thread of the host's sets the flag after
// 5 s with another payload (no device clock needed: a device's clock rate may be unknown)
// and the program says FAIL. (stream_legacy_order checks the order CUDA does keep.)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
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

enum { SEEN = 1 };
const int PAYLOAD = 4242, WATCHDOG_PAYLOAD = -1;

// Spins until *flag is non-zero; writes SEEN and the payload the host wrote before the flag.
__global__ void spin_until_set(volatile int* flag, volatile int* payload, int* result) {
    while (*flag == 0) {
    }
    __threadfence_system();
    result[0] = SEEN;
    result[1] = *payload;
}

// Sets the flag once: the main thread (payload PAYLOAD) or, after 5 s, the watchdog.
static std::atomic<bool> flag_set{false};
static void set_flag(int* flag_h, int payload) {
    if (flag_set.exchange(true)) return;
    flag_h[1] = payload;
    __sync_synchronize();
    ((volatile int*)flag_h)[0] = 1;
}

__global__ void add_index(int* data, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += k * i;
}

static void CUDART_CB note_host_func(void* data) { *(volatile int*)data = 7; }

int main() {
    bool ok = true;

    int *flag_h, *flag_d;
    CHECK(cudaHostAlloc(&flag_h, 2 * sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void**)&flag_d, flag_h, 0));
    flag_h[0] = 0;  // the flag
    flag_h[1] = 0;  // the payload, written before the flag
    int* d_result;
    CHECK(cudaMalloc(&d_result, 2 * sizeof(int)));
    CHECK(cudaMemset(d_result, 0, 2 * sizeof(int)));

    // (everything allocated before the spinning kernel starts)
    const int n = 1000;
    std::vector<int> in(n), out(n, -1);
    for (int i = 0; i < n; ++i) in[i] = 3 * i + 1;
    int* d_data;
    CHECK(cudaMalloc(&d_data, (n + 16) * sizeof(int)));
    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CHECK(cudaDeviceSynchronize());

    // B's work once before A's kernel starts: NVIDIA's runtime loads a module's kernels
    // lazily (CUDA_MODULE_LOADING=LAZY, the default), and loading add_index while A spins
    // may wait for the device (the CUDA programming guide's "Lazy Loading", on kernels that
    // spin until another kernel runs); measured on an H100, B's work then waited for A.
    CHECK(cudaMemcpyAsync(d_data, in.data(), n * sizeof(int), cudaMemcpyHostToDevice, b));
    CHECK(cudaMemsetAsync(d_data + n, 0, 16 * sizeof(int), b));
    add_index<<<(n + 127) / 128, 128, 0, b>>>(d_data, n, 0);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(b));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, spin_until_set));

    std::thread watchdog([flag_h] {
        for (int i = 0; i < 500 && !flag_set.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        set_flag(flag_h, WATCHDOG_PAYLOAD);
    });
    spin_until_set<<<1, 1, 0, a>>>(flag_d, flag_d + 1, d_result);
    CHECK(cudaGetLastError());

    CHECK(cudaMemcpyAsync(d_data, in.data(), n * sizeof(int), cudaMemcpyHostToDevice, b));
    CHECK(cudaMemsetAsync(d_data + n, 0x11, 16 * sizeof(int), b));
    add_index<<<(n + 127) / 128, 128, 0, b>>>(d_data, n, 5);
    CHECK(cudaGetLastError());
    volatile int host_func_ran = 0;
    CHECK(cudaLaunchHostFunc(b, note_host_func, (void*)&host_func_ran));
    CHECK(cudaMemcpyAsync(out.data(), d_data, n * sizeof(int), cudaMemcpyDeviceToHost, b));
    std::vector<int> tail(16, 0);
    CHECK(cudaMemcpyAsync(tail.data(), d_data + n, 16 * sizeof(int), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    cudaError_t b_query = cudaStreamQuery(b);
    cudaError_t a_query = cudaStreamQuery(a);  // still spinning: cudaErrorNotReady

    set_flag(flag_h, PAYLOAD);
    CHECK(cudaStreamSynchronize(a));
    watchdog.join();
    int result[2];
    CHECK(cudaMemcpy(result, d_result, sizeof(result), cudaMemcpyDeviceToHost));

    int bad = 0;
    for (int i = 0; i < n; ++i)
        if (out[i] != 3 * i + 1 + 5 * i) ++bad;
    for (int i = 0; i < 16; ++i)
        if (tail[i] != 0x11111111) ++bad;
    printf("stream B: %d of %d values right, host function %s, query %s\n", n + 16 - bad, n + 16,
           host_func_ran == 7 ? "ran" : "did not run", cudaGetErrorName(b_query));
    printf("stream A while B synchronised: %s\n", cudaGetErrorName(a_query));
    printf("stream A's kernel: %s, payload %d\n", result[0] == SEEN ? "saw the flag" : "did not run",
           result[1]);
    if (bad || host_func_ran != 7 || b_query != cudaSuccess) {
        printf("FAIL: stream B's work is wrong\n");
        ok = false;
    }
    if (a_query != cudaErrorNotReady) {
        printf("FAIL: stream A's spinning kernel was not pending while B was synchronised\n");
        ok = false;
    }
    if (result[0] != SEEN || result[1] != PAYLOAD) {
        printf("FAIL: stream B's work waited for stream A's kernel (the watchdog set the flag)\n");
        ok = false;
    }

    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaFree(d_data));
    CHECK(cudaFree(d_result));
    CHECK(cudaFreeHost(flag_h));
    if (ok) printf("PASS\n");
    return ok ? 0 : 1;
}
