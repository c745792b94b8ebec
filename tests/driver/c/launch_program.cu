// A CUDA program with kernel launches: under `cuport run` with the fake backend it
// exercises what the runtime does at its first launch (cuLibraryLoadData on the
// program's fatbin, cuLibraryGetKernel, cuLaunchKernel with the CUkernel) and
// cudaMemcpyToSymbol / cudaMemcpyFromSymbol (cuLibraryGetGlobal).
#include <cstdio>
#include "kernels.cu"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main()
{
    const int n = 1000;
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) { a[i] = i; b[i] = 2 * i; }
    float *da, *db, *dc;
    CK(cudaMalloc(&da, sizeof a)); CK(cudaMalloc(&db, sizeof b)); CK(cudaMalloc(&dc, sizeof c));
    CK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    vadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (c[i] != 3.0f * i) { printf("c[%d] = %g\n", i, c[i]); return 1; }
    int before = 0, v = 100;
    CK(cudaMemcpyFromSymbol(&before, counter, sizeof before));
    CK(cudaMemcpyToSymbol(counter, &v, sizeof v));
    uses_shared<<<1, 256>>>(dc);
    CK(cudaMemcpy(c, dc, 256 * sizeof(float), cudaMemcpyDeviceToHost));
    printf("counter %d, c[0] %g, c[255] %g\n", before, c[0], c[255]);
    if (before != 7 || c[0] != 355.0f || c[255] != 100.0f) return 1;
    uses_shared<<<1, 2048>>>(dc);
    cudaError_t e = cudaGetLastError();
    printf("too many threads: %s\n", cudaGetErrorName(e));
    if (e != cudaErrorInvalidConfiguration && e != cudaErrorInvalidValue) return 1;
    CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dc));
    printf("PASS\n");
    return 0;
}
