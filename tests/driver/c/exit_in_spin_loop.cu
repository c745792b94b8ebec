// exit_in_spin_loop: loops that wait on memory (a volatile read, an atomicCAS), whose lanes
// leave at different trips straight to the kernel's end. The CPU backend gives such a loop
// a yield point; a warp that stepped aside there with some lanes already finished came
// back with every lane it started with, and the finished ones ran the loop again: a
// compare-and-swap add counted twice (HeCBench atomicCAS, under contention: more workers
// than cores). The first kernel makes it certain with one worker (lane l takes 5*l+1 trips,
// past the 64th yield point); the second is the compare-and-swap loop itself.
#include <cstdio>

__global__ void trips(volatile int* flag, int* count) {
    int n = (threadIdx.x % 32) * 5 + 1, i = 0;
    do { atomicAdd(count, 1); i++; } while (i < n + *flag);
}

__global__ void cas_add(unsigned long long* p) {
    unsigned long long v = threadIdx.x + blockIdx.x * blockDim.x + 1;
    unsigned long long old, ret = *(volatile unsigned long long*)p;
    do { old = ret; } while ((ret = atomicCAS(p, old, old + v)) != old);
}

int main() {
    int *flag, *count, h = -1;
    unsigned long long *sum, hs = 0;
    cudaMalloc(&flag, 4); cudaMalloc(&count, 4); cudaMalloc(&sum, 8);
    cudaMemset(flag, 0, 4); cudaMemset(count, 0, 4); cudaMemset(sum, 0, 8);
    trips<<<4, 64>>>(flag, count);
    const unsigned long long blocks = 256, threads = 256, n = blocks * threads;
    cas_add<<<blocks, threads>>>(sum);
    cudaMemcpy(&h, count, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hs, sum, 8, cudaMemcpyDeviceToHost);
    int want = 4 * 2 * (5 * (31 * 32 / 2) + 32);
    printf("trips: %d of %d\n", h, want);
    printf("compare-and-swap sum: %s\n", hs == n * (n + 1) / 2 ? "exact" : "wrong");
    bool ok = h == want && hs == n * (n + 1) / 2;
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
