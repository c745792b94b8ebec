// device_heap: device-side malloc/free and new/delete, checking what CUDA guarantees. The heap
// is set by cudaDeviceSetLimit before any kernel uses it (the limit read back is the heap's size:
// an H100 answers 4 MiB for 1 MiB asked). Every thread mallocs 4080-byte blocks until malloc
// returns NULL (all 16-byte aligned, disjoint, filled and checked, the total within the heap);
// all freed (and free(NULL)) and taken again; a request larger than the heap is NULL. Per-thread
// linked lists built with new in one kernel, read back and deleted in another; a buffer malloc'ed
// in one kernel read by a later one (memory from device malloc may not be given to cudaMemcpy:
// an H100 refuses it); 256 threads x 300 rounds of malloc/check/free of mixed sizes, far more
// than the heap in total, never NULL. The limit is not changed after a malloc kernel (whether
// that is refused is the driver's).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        cudaError_t err_ = (call);                                            \
        if (err_ != cudaSuccess) {                                            \
            fprintf(stderr, "CUDA error: %s failed at %s:%d: %s\n", #call,    \
                    __FILE__, __LINE__, cudaGetErrorString(err_));            \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

static const size_t HEAP = 1 << 20;
static const int BLOCK_BYTES = 4080;
static const int MAX_PER_THREAD = 64;

// every thread takes blocks until malloc says NULL; each block is filled with its owner's tag
__global__ void exhaust(int** blocks, int* counts, int* misaligned) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int n = 0;
    while (n < MAX_PER_THREAD) {
        int* p = (int*)malloc(BLOCK_BYTES);
        if (p == nullptr) break;
        if ((uintptr_t)p % 16 != 0) atomicAdd(misaligned, 1);
        for (int i = 0; i < BLOCK_BYTES / 4; i++) p[i] = t * 1000 + n;
        blocks[t * MAX_PER_THREAD + n] = p;
        n++;
    }
    counts[t] = n;
}

// each block still holds its owner's tag (no two blocks overlap); then free it (and NULL)
__global__ void check_and_free(int** blocks, const int* counts, int* bad, int free_them) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int n = 0; n < counts[t]; n++) {
        int* p = blocks[t * MAX_PER_THREAD + n];
        for (int i = 0; i < BLOCK_BYTES / 4; i += 17)
            if (p[i] != t * 1000 + n) atomicAdd(bad, 1);
        if (free_them) free(p);
    }
    free(nullptr);
}

__global__ void too_large(void** out, size_t bytes) {
    out[0] = malloc(bytes);
    out[1] = malloc(0x7fffffffffffffffull);
}

struct Node {
    int value;
    Node* next;
};

__global__ void build_lists(Node** heads, int len_mod) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    Node* head = nullptr;
    int len = 1 + t % len_mod;
    for (int i = 0; i < len; i++) {
        Node* x = new Node;
        x->value = t * 100 + i;
        x->next = head;
        head = x;
    }
    heads[t] = head;
}

__global__ void sum_and_delete(Node** heads, long long* sums, int* lengths) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    Node* h = heads[t];
    long long s = 0;
    int n = 0;
    while (h != nullptr) {
        Node* next = h->next;
        s += h->value;
        n++;
        delete h;
        h = next;
    }
    sums[t] = s;
    lengths[t] = n;
}

__global__ void read_buffer(float* const* where, float* out, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = (*where)[i];
}

__global__ void make_buffer(float** where, int n) {
    float* p = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; i++) p[i] = 0.5f * i;
    *where = p;
}

__global__ void free_buffer(float** where) { free(*where); }

__global__ void churn(int rounds, int* failures, int* nulls) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int r = 0; r < rounds; r++) {
        int words = 4 + (t * 7 + r * 13) % 300;  // 16 .. 1212 bytes
        int* p = (int*)malloc(words * sizeof(int));
        if (p == nullptr) { atomicAdd(nulls, 1); continue; }
        for (int i = 0; i < words; i++) p[i] = t ^ (r << 12) ^ i;
        for (int i = 0; i < words; i++)
            if (p[i] != (t ^ (r << 12) ^ i)) atomicAdd(failures, 1);
        free(p);
    }
}

int main() {
    int fails = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, HEAP));
    size_t got = 0;
    CHECK(cudaDeviceGetLimit(&got, cudaLimitMallocHeapSize));
    printf("heap limit %zu bytes\n", got);

    // malloc'ed in a kernel, copied by the host
    float** where;
    CHECK(cudaMalloc(&where, sizeof(float*)));
    const int NB = 5000;
    make_buffer<<<1, 1>>>(where, NB);
    float* copy;
    CHECK(cudaMalloc(&copy, sizeof(float) * NB));
    read_buffer<<<1, 256>>>(where, copy, NB);
    CHECK(cudaGetLastError());
    std::vector<float> hb(NB);
    CHECK(cudaMemcpy(hb.data(), copy, sizeof(float) * NB, cudaMemcpyDeviceToHost));
    int buf_bad = 0;
    for (int i = 0; i < NB; i++) buf_bad += hb[i] != 0.5f * i;
    printf("device-malloc'ed memory read by a later kernel: %d wrong\n", buf_bad);
    fails += buf_bad != 0;

    const int T = 256;
    int **blocks, *counts, *misaligned, *bad;
    CHECK(cudaMalloc(&blocks, sizeof(int*) * T * MAX_PER_THREAD));
    CHECK(cudaMalloc(&counts, sizeof(int) * T));
    CHECK(cudaMalloc(&misaligned, sizeof(int)));
    CHECK(cudaMalloc(&bad, sizeof(int)));
    CHECK(cudaMemset(misaligned, 0, sizeof(int)));
    CHECK(cudaMemset(bad, 0, sizeof(int)));
    long long total[2];
    for (int round = 0; round < 2; round++) {
        exhaust<<<T / 64, 64>>>(blocks, counts, misaligned);
        CHECK(cudaGetLastError());
        check_and_free<<<T / 64, 64>>>(blocks, counts, bad, 1);
        CHECK(cudaDeviceSynchronize());
        std::vector<int> c(T);
        CHECK(cudaMemcpy(c.data(), counts, sizeof(int) * T, cudaMemcpyDeviceToHost));
        total[round] = 0;
        for (int x : c) total[round] += x;
    }
    int h_mis = 0, h_bad = 0;
    CHECK(cudaMemcpy(&h_mis, misaligned, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&h_bad, bad, sizeof(int), cudaMemcpyDeviceToHost));
    long long bytes = total[0] * BLOCK_BYTES;
    // within the heap, and a fair part of it (allocators keep headers and round sizes up)
    bool exhaust_ok = bytes <= (long long)got && bytes >= (long long)got / 4 && total[1] > 0 &&
                      h_mis == 0 && h_bad == 0;
    printf("exhaustion: %s (blocks of %d bytes until NULL, twice; aligned and disjoint: %s)\n",
           exhaust_ok ? "ok" : "WRONG", BLOCK_BYTES, h_mis == 0 && h_bad == 0 ? "yes" : "no");
    if (!exhaust_ok) {
        printf("  first %lld blocks (%lld bytes of a %zu-byte heap), then %lld; misaligned %d, "
               "overwritten %d\n", total[0], bytes, got, total[1], h_mis, h_bad);
        fails++;
    }

    void** out;
    CHECK(cudaMalloc(&out, 2 * sizeof(void*)));
    too_large<<<1, 1>>>(out, 2 * got);
    void* h_out[2];
    CHECK(cudaMemcpy(h_out, out, sizeof(h_out), cudaMemcpyDeviceToHost));
    bool large_ok = h_out[0] == nullptr && h_out[1] == nullptr;
    printf("a request larger than the heap: %s\n", large_ok ? "NULL" : "WRONG (not NULL)");
    fails += !large_ok;

    // linked lists across two kernels
    const int L = 1024, LEN_MOD = 9;
    Node** heads;
    long long* sums;
    int* lengths;
    CHECK(cudaMalloc(&heads, sizeof(Node*) * L));
    CHECK(cudaMalloc(&sums, sizeof(long long) * L));
    CHECK(cudaMalloc(&lengths, sizeof(int) * L));
    int list_bad = 0;
    for (int rep = 0; rep < 3; rep++) {
        build_lists<<<L / 128, 128>>>(heads, LEN_MOD);
        CHECK(cudaGetLastError());
        sum_and_delete<<<L / 128, 128>>>(heads, sums, lengths);
        CHECK(cudaDeviceSynchronize());
        std::vector<long long> s(L);
        std::vector<int> n(L);
        CHECK(cudaMemcpy(s.data(), sums, sizeof(long long) * L, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(n.data(), lengths, sizeof(int) * L, cudaMemcpyDeviceToHost));
        for (int t = 0; t < L; t++) {
            int len = 1 + t % LEN_MOD;
            long long want = (long long)t * 100 * len + (long long)len * (len - 1) / 2;
            if (n[t] != len || s[t] != want) list_bad++;
        }
    }
    printf("linked lists (new in one kernel, read and deleted in the next, 3 times): %d wrong\n", list_bad);
    fails += list_bad != 0;

    // many times more than the heap, reused
    int *failures, *nulls;
    CHECK(cudaMalloc(&failures, sizeof(int)));
    CHECK(cudaMalloc(&nulls, sizeof(int)));
    CHECK(cudaMemset(failures, 0, sizeof(int)));
    CHECK(cudaMemset(nulls, 0, sizeof(int)));
    const int R = 300;
    churn<<<4, 64>>>(R, failures, nulls);
    CHECK(cudaDeviceSynchronize());
    int h_fail = 0, h_nulls = 0;
    CHECK(cudaMemcpy(&h_fail, failures, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&h_nulls, nulls, sizeof(int), cudaMemcpyDeviceToHost));
    printf("churn (256 threads x %d rounds of malloc/check/free): %d wrong, %d NULL\n", R, h_fail, h_nulls);
    fails += h_fail != 0 || h_nulls != 0;

    free_buffer<<<1, 1>>>(where);
    CHECK(cudaDeviceSynchronize());
    printf(fails ? "FAIL: %d checks\n" : "PASS\n", fails);
    return fails ? 1 : 0;
}
