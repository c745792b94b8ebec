// printf("%s") of strings a kernel built in its local and shared memory (cuda-samples'
// cdpSimplePrint indents its lines from a local char buffer): for test_public_programs.py
#include <cstdio>

__global__ void say(int depth) {
    __shared__ char tag[8];
    char indent[32];
    for (int i = 0; i < depth; ++i) {
        indent[2 * i] = '|';
        indent[2 * i + 1] = ' ';
    }
    indent[2 * depth] = '\0';
    if (threadIdx.x == 0) {
        for (int i = 0; i < 3; ++i) tag[i] = 'a' + blockIdx.x;
        tag[3] = '\0';
    }
    __syncthreads();
    if (threadIdx.x == 1) printf("%sblock %d %s %d\n", indent, blockIdx.x, tag, depth + threadIdx.x);
}

int main() {
    say<<<1, 2>>>(3);
    cudaDeviceSynchronize();
    say<<<1, 2>>>(0);
    cudaError_t e = cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorName(e));
    return e != cudaSuccess;
}
