// Launches return before their kernels end, and everything that must see a kernel's
// results waits for it (the CPU backend queues launches: backends/cpu/launch_queue.py).
// - handshake: a kernel spins on a flag in mapped host memory that the host sets only after
//   the launch returned; meanwhile the stream and an event recorded after it are not ready.
// - order: 600 launches (more than the queue holds at once), memsets and a device copy
//   between them, each seeing the work handed over before it.
// - small copies, done at once on the calling thread when nothing is pending, wait for a
//   pending kernel: an asynchronous one on the kernel's stream, and a synchronous one on
//   the legacy stream, which waits for the blocking stream the kernel runs on (a host
//   thread lets the kernel end 100 ms later); and for a host function pending on a blocking
//   stream, which writes the copy's source 100 ms later.
// - a trap after queued launches fails the next synchronise, naming the kernel.
#include <chrono>
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>

__global__ void wait_for(volatile int* flag, int* out)
{
    while (*flag == 0) {
    }
    *out = 1;
}

__global__ void add_one(int* counter) { *counter += 1; }

__global__ void trap() { __trap(); }

static void CUDART_CB later_seven(void* p)
{
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    *(int*)p = 7;
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)

int main()
{
    int *flag, *dflag, *out, *counter, *copy, host[2];
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    *flag = 0;
    CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMemset(out, 0, sizeof(int)));
    cudaEvent_t ev;
    CHECK(cudaEventCreate(&ev));

    wait_for<<<1, 1>>>(dflag, out);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, 0));
    cudaError_t stream = cudaStreamQuery(0), event = cudaEventQuery(ev);
    *flag = 1;  // only now can the kernel end
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaMemcpy(host, out, sizeof(int), cudaMemcpyDeviceToHost));
    printf("handshake: %s %s, then %d\n", cudaGetErrorName(stream), cudaGetErrorName(event),
           host[0]);

    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMalloc(&copy, sizeof(int)));
    CHECK(cudaMemset(counter, 0, sizeof(int)));
    for (int i = 0; i < 300; i++) add_one<<<1, 1>>>(counter);
    CHECK(cudaMemsetAsync(counter, 0, sizeof(int), 0));
    for (int i = 0; i < 300; i++) add_one<<<1, 1>>>(counter);
    CHECK(cudaMemcpyAsync(copy, counter, sizeof(int), cudaMemcpyDeviceToDevice, 0));
    for (int i = 0; i < 7; i++) add_one<<<1, 1>>>(counter);
    CHECK(cudaMemcpy(&host[0], counter, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&host[1], copy, sizeof(int), cudaMemcpyDeviceToHost));
    printf("order: %d %d\n", host[0], host[1]);

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int* pinned;
    CHECK(cudaMallocHost(&pinned, 2 * sizeof(int)));
    pinned[0] = pinned[1] = -1;
    CHECK(cudaMemset(out, 0, sizeof(int)));
    *flag = 0;
    wait_for<<<1, 1, 0, s>>>(dflag, out);
    CHECK(cudaMemcpyAsync(&pinned[0], out, sizeof(int), cudaMemcpyDeviceToHost, s));
    int early = pinned[0];  // -1: the copy waits for the kernel
    std::thread release([flag] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        *flag = 1;
    });
    CHECK(cudaMemcpy(&pinned[1], out, sizeof(int), cudaMemcpyDeviceToHost));  // legacy stream
    release.join();
    CHECK(cudaStreamSynchronize(s));
    int copied = pinned[0];
    pinned[0] = 0;
    CHECK(cudaLaunchHostFunc(s, later_seven, pinned));
    CHECK(cudaMemcpy(out, pinned, sizeof(int), cudaMemcpyHostToDevice));  // after the host function
    CHECK(cudaMemcpy(host, out, sizeof(int), cudaMemcpyDeviceToHost));
    printf("small copies: %d, then %d %d; after a host function %d\n", early, copied, pinned[1],
           host[0]);

    for (int i = 0; i < 50; i++) add_one<<<1, 1>>>(counter);
    trap<<<1, 1>>>();
    printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("synchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    return 0;
}
