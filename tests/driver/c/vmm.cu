// Virtual memory management as cuda-samples vectorAddMMAP uses it (it waived on
// CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED 0): reserve a range, create
// physical allocations, map them, set access, run a kernel over the range, and a second
// mapping of one allocation shows the same bytes. Then the refusals: cudaFree of mapped
// memory, a map over a mapping, a misaligned size, unmapping part of a mapping.
#include <cuda.h>
#include <cstdio>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_; cuGetErrorName(r_, &s_); \
    printf("%s: %s\n", #x, s_); return 2; } } while (0)

static const char *name(CUresult r) { const char *s; cuGetErrorName(r, &s); return s; }

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main()
{
    CK(cuInit(0));
    cudaFree(0);  // the runtime's primary context, current
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    int vmm = 0;
    CK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    printf("vmm %d\n", vmm);

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    printf("granularity %zu\n", gran);

    // three arrays of n floats in one reserved range, two physical allocations behind it
    const int n = 1 << 20;  // 4 MiB an array
    size_t bytes = (n * sizeof(float) + gran - 1) / gran * gran;
    CUdeviceptr base;
    CK(cuMemAddressReserve(&base, 4 * bytes, 0, 0, 0));
    CUmemGenericAllocationHandle h1, h2;
    CK(cuMemCreate(&h1, 2 * bytes, &prop, 0));
    CK(cuMemCreate(&h2, bytes, &prop, 0));
    CK(cuMemMap(base, 2 * bytes, 0, h1, 0));
    CK(cuMemMap(base + 2 * bytes, bytes, 0, h2, 0));
    CK(cuMemMap(base + 3 * bytes, bytes, 0, h2, 0));  // h2 again: an alias of c
    CK(cuMemRelease(h1));  // the memory stays while mapped
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(base, 4 * bytes, &access, 1));
    unsigned long long flags = 0;
    CK(cuMemGetAccess(&flags, &prop.location, base + bytes));
    printf("access %llu\n", flags);

    float *a = (float *)base, *b = (float *)(base + bytes), *c = (float *)(base + 2 * bytes);
    float *alias = (float *)(base + 3 * bytes);
    float *h = new float[n];
    for (int i = 0; i < n; i++) h[i] = i;
    cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice);
    for (int i = 0; i < n; i++) h[i] = 0.5f * i;
    cudaMemcpy(b, h, n * sizeof(float), cudaMemcpyHostToDevice);
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    cudaError_t e = cudaMemcpy(h, alias, n * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) { printf("%s\n", cudaGetErrorName(e)); return 2; }
    for (int i = 0; i < n; i++)
        if (h[i] != 1.5f * i) { printf("FAIL: alias[%d] = %g, want %g\n", i, h[i], 1.5f * i); return 1; }

    CUmemGenericAllocationHandle back;
    CK(cuMemRetainAllocationHandle(&back, (void *)(c + 5)));
    printf("retained the handle of c: %d\n", back == h2);
    CK(cuMemRelease(back));

    // refusals
    printf("cudaFree of mapped memory: %s\n", cudaGetErrorName(cudaFree(a)));
    cudaGetLastError();
    printf("cuMemMap over a mapping: %s\n", name(cuMemMap(base, bytes, 0, h2, 0)));
    CUmemGenericAllocationHandle h3;
    printf("cuMemCreate of granularity + 1 bytes: %s\n", name(cuMemCreate(&h3, gran + 1, &prop, 0)));
    printf("cuMemUnmap of half a mapping: %s\n", name(cuMemUnmap(base, bytes)));

    CK(cuMemUnmap(base, 4 * bytes));
    CK(cuMemRelease(h2));
    CK(cuMemAddressFree(base, 4 * bytes));
    printf("PASS\n");
    return 0;
}
