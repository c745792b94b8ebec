// A virtual call in a -rdc program: the device link adds libcudadevrt, and cuport took every
// function of the module with the call's number of parameters as a possible target, the
// device runtime's too; one of them calls a syscall cuport does not provide, so every
// kernel with a virtual call failed to compile (cuda-samples newdelete).
#include <cstdio>

struct Shape {
    __device__ virtual int area(int scale) const = 0;
};
struct Square : Shape {
    int side;
    __device__ Square(int s) : side(s) {}
    __device__ int area(int scale) const override { return side * side * scale; }
};
struct Rect : Shape {
    int w, h;
    __device__ Rect(int w_, int h_) : w(w_), h(h_) {}
    __device__ int area(int scale) const override { return w * h * scale; }
};

__global__ void areas(int *out)
{
    int i = threadIdx.x;
    Square s(i);
    Rect r(i, 3);
    const Shape *shape = (i % 2) ? (const Shape *)&s : (const Shape *)&r;
    out[i] = shape->area(2);
}

int main()
{
    int h[64], *d;
    cudaMalloc(&d, sizeof h);
    areas<<<1, 64>>>(d);
    cudaError_t e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < 64; i++) {
        int want = (i % 2) ? i * i * 2 : i * 3 * 2;
        if (h[i] != want) { printf("FAIL: out[%d] = %d, want %d\n", i, h[i], want); return 1; }
    }
    printf("PASS\n");
    return 0;
}
