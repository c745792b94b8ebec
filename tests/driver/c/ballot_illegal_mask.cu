// __ballot_sync whose member mask lacks the calling lane: on an H100 the launch fails with
// cudaErrorIllegalInstruction, and the error is sticky (later calls that touch the device
// return it too). First a kernel whose mask is legal (a register mask holding each lane: the
// lanes up to the caller), then the illegal one: `register`
// (argument 1, the default) votes with the lanes below the caller (lane 0's mask is 0),
// `immediate` with the lower half-warp's mask from every lane, `uniform` likewise on a
// value every lane shares (cuport computes such a vote once for the warp).
#include <cstdio>
#include <cstring>

__global__ void legal(const int *x, unsigned *out)
{
    unsigned lane = threadIdx.x & 31;
    out[threadIdx.x] = __ballot_sync((2u << lane) - 1, x[threadIdx.x] > 0);
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
        int warp = i / 32 * 32, lane = i % 32;
        unsigned upto = 0;
        for (int j = 0; j <= lane; j++)
            if (x[warp + j] > 0) upto |= 1u << j;
        if (out[i] != upto) {
            printf("legal: thread %d: %08x, expected %08x\n", i, out[i], upto);
            bad = 1;
        }
    }
    printf("legal mask: %s\n", bad ? "FAIL" : cudaGetErrorName(e));
    if (strcmp(kind, "immediate") == 0)
        half_from_all<<<1, n>>>(d_x, d_out);
    else if (strcmp(kind, "uniform") == 0)
        half_from_all_uniform<<<1, n>>>(5, d_out);
    else
        below<<<1, n>>>(d_x, d_out);
    printf("launch: %s\n", cudaGetErrorName(cudaGetLastError()));
    printf("synchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
    void *p = nullptr;
    printf("then cudaMalloc: %s\n", cudaGetErrorName(cudaMalloc(&p, 16)));
    return 0;
}
