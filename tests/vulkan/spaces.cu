// Pointers stored to memory and read back, for test_spaces.py (address-space inference).
__device__ __noinline__ int triple(const int* p, int i) { return p[i] * 3; }
// the generic address of a local array stored to memory and read back by the same thread
extern "C" __global__ void escapes(const int* g, int* volatile* slot, int* out, int n) {
    int local[8];
    for (int i = 0; i < 8; ++i) local[i] = g[i] + i;
    slot[threadIdx.x] = local;
    int* p = slot[threadIdx.x];
    out[threadIdx.x] = p[(n + threadIdx.x) & 7] + triple(local, n & 7);
}
// a global address stored to memory and read back, beside a local array made generic
extern "C" __global__ void stays(const int* g, int* volatile* slot, int* out, int n) {
    int local[8];
    for (int i = 0; i < 8; ++i) local[i] = g[i] - i;
    slot[threadIdx.x] = (int*)g + 8;
    int* p = slot[threadIdx.x];
    out[threadIdx.x] = p[(n + threadIdx.x) & 7] + triple(local, n & 7);
}
