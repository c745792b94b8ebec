// A kernel faults while the host polls its stream: every query after it answers the failure (the
// first as "an earlier asynchronous operation failed", the rest "unusable"), as a GPU's do.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void store_at(int* p) { *p = 1; }
int main() {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    store_at<<<1, 1, 0, s>>>((int*)0);
    cudaError_t first;
    while ((first = cudaStreamQuery(s)) == cudaErrorNotReady) {
    }
    int failed = 0;
    for (int i = 0; i < 50; i++)
        if (cudaStreamQuery(s) == cudaErrorIllegalAddress) failed++;
    cudaError_t sync = cudaStreamSynchronize(s);
    printf("first %s, then %d of 50 queries answered cudaErrorIllegalAddress, then %s\n",
           cudaGetErrorName(first), failed, cudaGetErrorName(sync));
    return 0;
}
