// clock64() across a loop that the host times, turned into milliseconds as CUDA programs do:
// ticks / cudaDevAttrClockRate (kHz). PASS when that is within a factor of 2 of the host's
// time (a launch's latency only adds to the host's side; the loop is long enough to hide it).
#include <chrono>
#include <cstdio>

__global__ void spin(const volatile unsigned long long *trips, long long *ticks) {
    long long t0 = clock64();
    for (unsigned long long i = 0; i < *trips; ++i) {
    }
    long long t1 = clock64();
    *ticks = t1 - t0;
}

int main() {
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess || khz <= 0) {
        printf("clock rate %d kHz\nFAIL\n", khz);
        return 1;
    }
    unsigned long long *trips;
    long long *ticks;
    cudaMalloc(&trips, sizeof *trips);
    cudaMalloc(&ticks, sizeof *ticks);
    unsigned long long n = 16;
    cudaMemcpy(trips, &n, sizeof n, cudaMemcpyHostToDevice);
    spin<<<1, 1>>>(trips, ticks);  // loaded and compiled before the host times a launch
    cudaDeviceSynchronize();
    long long t = 0;
    double host_ms = 0;
    for (int tries = 0; tries < 40; ++tries) {
        cudaMemcpy(trips, &n, sizeof n, cudaMemcpyHostToDevice);
        auto h0 = std::chrono::steady_clock::now();
        spin<<<1, 1>>>(trips, ticks);
        if (cudaDeviceSynchronize() != cudaSuccess) {
            printf("launch failed: %s\nFAIL\n", cudaGetErrorString(cudaGetLastError()));
            return 1;
        }
        host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count();
        cudaMemcpy(&t, ticks, sizeof t, cudaMemcpyDeviceToHost);
        if (host_ms >= 100 && t > 0)  // (t <= 0: a clock that wrapped meanwhile; again)
            break;
        if (host_ms < 100)
            n *= 2;
    }
    double device_ms = (double)t / khz;
    double ratio = device_ms / host_ms;
    printf("clock rate %d kHz: %lld ticks = %.2f ms, host %.2f ms, ratio %.3f\n", khz, t,
           device_ms, host_ms, ratio);
    printf(ratio >= 0.5 && ratio <= 2.0 ? "PASS\n" : "FAIL\n");
    return ratio >= 0.5 && ratio <= 2.0 ? 0 : 1;
}
