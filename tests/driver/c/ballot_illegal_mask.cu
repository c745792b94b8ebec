// __ballot_sync whose member mask lacks the calling lane. First a kernel whose masks are
// legal (each half-warp calls with its own half's mask, in a register), then one of:
// `register` (argument 1, the default): the lanes below the caller (lane 0's mask is 0);
// `next`: the next lane only (never empty, never the caller); `zero`: an empty mask in a
// register every lane shares; `immediate`: the lower half-warp's mask from every lane;
// `uniform`: likewise, voting on a value every lane shares. On an H100 (recorded
// 2026-12-06) `register` fails the launch with cudaErrorIllegalInstruction, sticky (later
// calls that touch the device return it too); `immediate` and `uniform` run (their
// results are undefined and not printed).
#include <cstdio>
#include <cstring>

__global__ void legal(const int *x, unsigned *out)
{
    unsigned lane = threadIdx.x & 31;
    out[threadIdx.x] = __ballot_sync(lane < 16 ? 0x0000ffffu : 0xffff0000u, x[threadIdx.x] > 0);
}

__global__ void next(const int *x, unsigned *out)
{
    unsigned lane = threadIdx.x & 31;
    out[threadIdx.x] = __ballot_sync(1u << ((lane + 1) & 31), x[threadIdx.x] > 0);
}

__global__ void zero(const int *x, unsigned mask, unsigned *out)
{
    out[threadIdx.x] = __ballot_sync(mask, x[threadIdx.x] > 0);
}

__global__ void below(const int *x, unsigned *out)
{
    unsigned lane = threadIdx.x & 31;
    out[threadIdx.x] = __ballot_sync((1u << lane) - 1, x[threadIdx.x] > 0);
}

__global__ void half_from_all(const int *x, unsigned *out)
{
    out[threadIdx.x] = __ballot_sync(0x0000ffffu, x[threadIdx.x] > 0);
}

__global__ void half_from_all_uniform(int n, unsigned *out)
{
    out[threadIdx.x] = __all_sync(0x0000ffffu, n > 0);
}

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "register";
    const int n = 64;
    int x[n];
    unsigned out[n];
    for (int i = 0; i < n; i++) x[i] = (i * 37 % 11) - 4;
    int *d_x;
    unsigned *d_out;
    cudaMalloc(&d_x, sizeof x);
    cudaMalloc(&d_out, sizeof out);
    cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice);
    legal<<<1, n>>>(d_x, d_out);
    cudaError_t e = cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
    int bad = e != cudaSuccess;
    for (int i = 0; i < n && !bad; i++) {
        int warp = i / 32 * 32, half = i % 32 < 16 ? 0 : 16;
        unsigned want = 0;
        for (int j = half; j < half + 16; j++)
            if (x[warp + j] > 0) want |= 1u << j;
        if (out[i] != want) {
            printf("legal: thread %d: %08x, expected %08x\n", i, out[i], want);
            bad = 1;
        }
    }
    printf("legal mask: %s\n", bad ? "FAIL" : cudaGetErrorName(e));
    if (strcmp(kind, "immediate") == 0)
        half_from_all<<<1, n>>>(d_x, d_out);
    else if (strcmp(kind, "uniform") == 0)
        half_from_all_uniform<<<1, n>>>(5, d_out);
    else if (strcmp(kind, "next") == 0)
        next<<<1, n>>>(d_x, d_out);
    else if (strcmp(kind, "zero") == 0)
        zero<<<1, n>>>(d_x, 0u, d_out);
    else
        below<<<1, n>>>(d_x, d_out);
    printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("synchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    void *p = nullptr;
    printf("then cudaMalloc: %s\n", cudaGetErrorName(cudaMalloc(&p, 16)));
    return 0;
}
