// Events recorded behind queued launches (on a Vulkan device, a place in the device's queue:
// driver/stream.py DeviceMark), as a CUDA program sees them:
// - an event is reached once the work before it has run, not the work after it: the host
//   synchronises with an event while a kernel launched after it spins on a flag that the
//   host sets only afterwards (waiting for that kernel too would never end);
// - the event is not ready while a kernel before it runs;
// - another stream waiting for the event sees the work before it (100 launches) while the
//   event's stream goes on, and the time between two events is not negative;
// - once its stream is synchronised, an event recorded there is reached (cudaEventQuery,
//   cudaEventElapsedTime), whatever thread tells the event so has not run yet;
// - a kernel's trap before the event is the event synchronisation's error.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void wait_for(volatile int* flag, int* out)
{
    while (*flag == 0) {
    }
    *out = 1;
}

__global__ void add_one(int* counter) { *counter += 1; }

__global__ void trap() { __trap(); }

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)

int main()
{
    int *flag, *dflag, *out, *counter, *copy, host[2];
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer(&dflag, flag, 0));
    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMalloc(&counter, 2 * sizeof(int)));
    CHECK(cudaMalloc(&copy, sizeof(int)));
    CHECK(cudaMemset(counter, 0, sizeof(int)));
    cudaStream_t s, s2;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t start, ev;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&ev));

    *flag = 0;
    add_one<<<1, 1, 0, s>>>(counter);
    CHECK(cudaEventRecord(ev, s));
    wait_for<<<1, 1, 0, s>>>(dflag, out);
    CHECK(cudaEventSynchronize(ev));
    cudaError_t query = cudaStreamQuery(s);
    *flag = 1;
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(&host[0], counter, sizeof(int), cudaMemcpyDeviceToHost));
    printf("event before a spinning kernel: reached, the stream %s, counter %d\n",
           cudaGetErrorName(query), host[0]);

    cudaEvent_t quiet;
    CHECK(cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming));
    *flag = 0;
    wait_for<<<1, 1, 0, s>>>(dflag, out);
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaEventRecord(quiet, s));
    cudaError_t before = cudaEventQuery(ev), quiet_before = cudaEventQuery(quiet);
    *flag = 1;
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaEventSynchronize(quiet));
    printf("event after a spinning kernel: %s %s, then %s %s\n", cudaGetErrorName(before),
           cudaGetErrorName(quiet_before), cudaGetErrorName(cudaEventQuery(ev)),
           cudaGetErrorName(cudaEventQuery(quiet)));

    CHECK(cudaMemset(counter, 0, 2 * sizeof(int)));
    CHECK(cudaEventRecord(start, s));
    for (int i = 0; i < 100; i++) add_one<<<1, 1, 0, s>>>(counter);
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaStreamWaitEvent(s2, ev, 0));
    CHECK(cudaMemcpyAsync(copy, counter, sizeof(int), cudaMemcpyDeviceToDevice, s2));
    for (int i = 0; i < 100; i++) add_one<<<1, 1, 0, s>>>(counter + 1);  // (s2 reads counter)
    CHECK(cudaMemcpyAsync(&host[0], copy, sizeof(int), cudaMemcpyDeviceToHost, s2));
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaEventSynchronize(ev));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, ev));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(&host[1], counter + 1, sizeof(int), cudaMemcpyDeviceToHost));
    printf("another stream waiting for the event: %d; after it %d; elapsed %s\n", host[0], host[1],
           ms >= 0 ? "not negative" : "negative");

    int late = 0;
    cudaEvent_t untimed;  // (no time kept: marked only when asked)
    CHECK(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
    for (int i = 0; i < 100; i++) {
        add_one<<<1, 1, 0, s>>>(counter);
        CHECK(cudaEventRecord(ev, s));
        add_one<<<1, 1, 0, s>>>(counter);
        CHECK(cudaEventRecord(untimed, s));
        CHECK(cudaStreamSynchronize(s));
        late += (cudaEventQuery(ev) != cudaSuccess) + (cudaEventQuery(untimed) != cudaSuccess);
    }
    printf("events reached once their stream is synchronised: %d late\n", late);

    trap<<<1, 1, 0, s>>>();
    CHECK(cudaEventRecord(quiet, s));  // (marked by the synchronisation itself)
    printf("event after a trap: %s\n", cudaGetErrorName(cudaEventSynchronize(quiet)));
    return 0;
}
