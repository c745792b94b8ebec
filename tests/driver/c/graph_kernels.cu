// Kernels for the driver's graph tests (tests/driver/c/graph.c), run by the real CPU backend.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" __global__ void axpy(int *y, const int *x, int a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += a * x[i];
}

// One thread: appends value to the log (log[0] counts), so the log shows the order kernels ran.
extern "C" __global__ void append(int *log, int value)
{
    log[1 + log[0]] = value;
    log[0] += 1;
}

extern "C" __global__ void trap_kernel(int *p)
{
    if (p)
        __trap();
}
