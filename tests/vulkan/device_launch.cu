// device_launch: dynamic parallelism cases (CUDA 12 semantics; built -rdc=true, linked with
// libcudadevrt) for test_device_launch.py, which runs it on the CPU and on Vulkan and
// compares. Each part checks itself against a host reference (FAIL lines, PASS at the end)
// and prints what it saw, which both backends must print alike:
// - many: every thread of 4 blocks of 48 launches 3 grids in turn into its block's NULL
//   stream, and thread 0 of the grid one tail launch: every launch runs once with its own
//   arguments, a thread's launches in the order it made them, the tail launch last;
// - tail: a tail launch sums what every block of its parent wrote;
// - nested: a binary tree of launches 6 levels deep, each child checking what its parent
//   wrote before the launch;
// - params: a struct of mixed-size members by value, with char, short and double beside it,
//   and a kernel of 512 bytes of parameters;
// - depth: a kernel that launches itself until the device runtime refuses: 24 levels, then
//   cudaErrorLaunchMaxDepthExceeded in device code;
// - config: launches the device runtime refuses with cudaErrorInvalidConfiguration (2048
//   threads, a zero dimension, more threads than __launch_bounds__ allow) beside good ones;
// - v1: cudaGetParameterBuffer and cudaLaunchDevice called directly, a stream and an event
//   made in device code, cudaGetDevice and cudaGetDeviceCount in device code.
// An argument runs one part. With "exhaust" (run with CUPORT_VK_LAUNCH_QUEUE=4 on Vulkan: 4 records, 1 KiB of
// arena) it launches more than the queue holds and asks for more parameter memory than the
// arena has.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

static int failures = 0;
static void expect(const char* what, long long got, long long want) {
    if (got != want) {
        printf("FAIL: %s: %lld, expected %lld\n", what, got, want);
        failures++;
    }
}

template <typename T>
static T* device(size_t n) {
    T* p;
    CHECK(cudaMalloc(&p, n * sizeof(T)));
    CHECK(cudaMemset(p, 0, n * sizeof(T)));
    return p;
}

template <typename T>
static void host(T* dst, const T* src, size_t n) {
    CHECK(cudaMemcpy(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost));
}

static void run() {
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
}

// ---------------------------------------------------------------- many
constexpr int MANY_BLOCKS = 4, MANY_THREADS = 48, MANY_K = 3;
constexpr int MANY_N = MANY_BLOCKS * MANY_THREADS;
__global__ void note(int* log, int* next, int who) { log[atomicAdd(next, 1)] = who; }
__global__ void many(int* log, int* next, int* errors) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < MANY_K; ++k) note<<<1, 1>>>(log, next, t * 4 + k);
    errors[t] = cudaGetLastError();
    if (t == 0) note<<<1, 1, 0, cudaStreamTailLaunch>>>(log, next, -1);
}

static void test_many() {
    const int total = MANY_N * MANY_K + 1;
    int *log = device<int>(total + 8), *next = device<int>(1), *errors = device<int>(MANY_N);
    many<<<MANY_BLOCKS, MANY_THREADS>>>(log, next, errors);
    run();
    int hl[total + 8], hn, he[MANY_N];
    host(hl, log, total + 8);
    host(&hn, next, 1);
    host(he, errors, MANY_N);
    expect("many: launches run", hn, total);
    int seen[MANY_N * 4] = {0}, last[MANY_N], bad = 0;
    for (int t = 0; t < MANY_N; ++t) last[t] = -1;
    for (int i = 0; i < total - 1; ++i) {
        int who = hl[i], t = who / 4, k = who % 4;
        if (who < 0 || t >= MANY_N || k >= MANY_K || seen[who]++ || k != last[t] + 1) {
            bad++;
            continue;
        }
        last[t] = k;
    }
    for (int t = 0; t < MANY_N; ++t) {
        bad += last[t] != MANY_K - 1;
        bad += he[t] != cudaSuccess;
    }
    expect("many: launches out of a thread's order, lost or twice", bad, 0);
    expect("many: the tail launch ran last", hl[total - 1], -1);
    printf("many: %d launches, each thread's in its order, the tail launch last\n", hn);
}

// ---------------------------------------------------------------- tail
__global__ void sum(const int* parts, int n, long long* out) {
    long long s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += parts[i];
    atomicAdd((unsigned long long*)out, (unsigned long long)s);
}
__global__ void produce(int* parts, int per_block, long long* out) {
    for (int i = threadIdx.x; i < per_block; i += blockDim.x)
        parts[blockIdx.x * per_block + i] = (blockIdx.x + 1) * (i % 11) - 3;
    // launched by the first block, which may finish before the others have written
    if (blockIdx.x == 0 && threadIdx.x == 0)
        sum<<<1, 96, 0, cudaStreamTailLaunch>>>(parts, gridDim.x * per_block, out);
}

static void test_tail() {
    const int blocks = 7, per_block = 500;
    int* parts = device<int>(blocks * per_block);
    long long* out = device<long long>(1);
    produce<<<blocks, 64>>>(parts, per_block, out);
    run();
    long long got, want = 0;
    host(&got, out, 1);
    for (int b = 0; b < blocks; ++b)
        for (int i = 0; i < per_block; ++i) want += (b + 1) * (i % 11) - 3;
    expect("tail: sum of what every block wrote", got, want);
    printf("tail: %lld\n", got);
}

// ---------------------------------------------------------------- nested
constexpr int NEST_LEVELS = 6;
__global__ void branch(int level, int path, int* marks, int* bad) {
    // node `path` of `level`: 1-based heap numbering, the parent is path / 2
    if (level > 0 && marks[path / 2] != level) atomicAdd(bad, 1);  // the parent wrote level
    marks[path] = level + 1;
    if (level < NEST_LEVELS) {
        branch<<<1, 1>>>(level + 1, 2 * path, marks, bad);
        branch<<<1, 1>>>(level + 1, 2 * path + 1, marks, bad);
    }
}

static void test_nested() {
    const int nodes = 2 << NEST_LEVELS;
    int *marks = device<int>(nodes), *bad = device<int>(1);
    branch<<<1, 1>>>(0, 1, marks, bad);
    run();
    int hm[nodes], hb;
    host(hm, marks, nodes);
    host(&hb, bad, 1);
    int wrong = 0;
    for (int p = 1; p < nodes; ++p) {
        int level = 31 - __builtin_clz(p);
        wrong += hm[p] != level + 1;
    }
    expect("nested: nodes with the wrong mark", wrong, 0);
    expect("nested: children that did not see their parent's write", hb, 0);
    printf("nested: %d grids over %d levels\n", nodes - 1, NEST_LEVELS + 1);
}

// ---------------------------------------------------------------- params
struct Mixed {
    char a;
    double b;
    short c;
    int3 d;
    float e[3];
    char f[5];
    long long g;
    unsigned char h;
};
constexpr int BIG = 128;
struct Big {
    int v[BIG];
};
__global__ void echo(char x, Mixed m, short y, double z, long long* out) {
    out[0] = m.a;
    out[1] = (long long)(m.b * 1000);
    out[2] = m.c;
    out[3] = m.d.x;
    out[4] = m.d.y;
    out[5] = m.d.z;
    out[6] = (long long)(m.e[0] * 4) + (long long)(m.e[1] * 4) * 1000 + (long long)(m.e[2] * 4) * 1000000;
    out[7] = m.f[0] + 256 * m.f[4];
    out[8] = m.g;
    out[9] = m.h;
    out[10] = x;
    out[11] = y;
    out[12] = (long long)(z * 1000);
}
__global__ void echo_big(Big b, long long* out) {
    long long s = 0;
    for (int i = 0; i < BIG; ++i) s += (long long)b.v[i] * (i + 1);
    out[13] = s;
}
__global__ void pass_params(long long* out) {
    Mixed m = {'q', -2.125, -3000, make_int3(7, -8, 9), {0.25f, 1.5f, -2.75f}, {'x', 'y', 'z', 'w', 'v'},
               -123456789012345LL, 250};
    echo<<<1, 1>>>('!', m, 31000, 6.5, out);
    Big b;
    for (int i = 0; i < BIG; ++i) b.v[i] = i * 3 - 100;
    echo_big<<<1, 1>>>(b, out);
}

static void test_params() {
    long long* out = device<long long>(14);
    pass_params<<<1, 1>>>(out);
    run();
    long long h[14];
    host(h, out, 14);
    long long want[14] = {'q', -2125, -3000, 7, -8, 9, 1 + 6 * 1000 + (-11) * 1000000, 'x' + 256 * 'v',
                          -123456789012345LL, 250, '!', 31000, 6500, 0};
    for (int i = 0; i < BIG; ++i) want[13] += (long long)(i * 3 - 100) * (i + 1);
    for (int i = 0; i < 14; ++i) {
        char what[32];
        snprintf(what, sizeof what, "params: field %d", i);
        expect(what, h[i], want[i]);
    }
    printf("params:");
    for (long long v : h) printf(" %lld", v);
    printf("\n");
}

// ---------------------------------------------------------------- depth
__global__ void dive(int level, int* reached, int* errors) {
    atomicMax(reached, level);
    dive<<<1, 1>>>(level + 1, reached, errors);
    errors[level] = cudaGetLastError();
}

static void test_depth() {
    int *reached = device<int>(1), *errors = device<int>(32);
    dive<<<1, 1>>>(0, reached, errors);
    run();
    int hr, he[32];
    host(&hr, reached, 1);
    host(he, errors, 32);
    expect("depth: deepest level", hr, 23);
    for (int l = 0; l < 23; ++l) expect("depth: a launch below the limit", he[l], cudaSuccess);
    expect("depth: the launch at the limit", he[23], cudaErrorLaunchMaxDepthExceeded);
    printf("depth: %d levels, then error %d\n", hr + 1, he[23]);
}

// ---------------------------------------------------------------- config
__global__ void fill(int* out, int v) { atomicAdd(&out[v], 1); }
__global__ void __launch_bounds__(128) bounded(int* out, int v) { atomicAdd(&out[v], 1); }
__global__ void configs(int* out, int* errors) {
    fill<<<1, 2048>>>(out, 0);  // more threads than a block may have
    errors[0] = cudaGetLastError();
    fill<<<dim3(2, 0, 1), 32>>>(out, 1);  // a zero dimension
    errors[1] = cudaGetLastError();
    fill<<<1, dim3(1024, 2, 1)>>>(out, 2);
    errors[2] = cudaGetLastError();
    bounded<<<1, 256>>>(out, 3);  // more than __launch_bounds__(128)
    errors[3] = cudaGetLastError();
    bounded<<<3, 128>>>(out, 4);
    errors[4] = cudaGetLastError();
    fill<<<dim3(2, 3, 4), dim3(8, 4, 2)>>>(out, 5);
    errors[5] = cudaGetLastError();
    fill<<<1, dim3(32, 1, 0)>>>(out, 6);
    errors[6] = cudaGetLastError();
    errors[7] = cudaGetLastError();
}

static void test_config() {
    int *out = device<int>(8), *errors = device<int>(8);
    configs<<<1, 1>>>(out, errors);
    run();
    int ho[8], he[8];
    host(ho, out, 8);
    host(he, errors, 8);
    const int bad = cudaErrorInvalidConfiguration;
    int want_err[8] = {bad, bad, bad, bad, cudaSuccess, cudaSuccess, bad, cudaSuccess};
    int want_out[8] = {0, 0, 0, 0, 3 * 128, 24 * 64, 0, 0};
    for (int i = 0; i < 8; ++i) {
        expect("config: device-side error", he[i], want_err[i]);
        expect("config: threads that ran", ho[i], want_out[i]);
    }
    printf("config: errors");
    for (int e : he) printf(" %d", e);
    printf("\n");
}

// ---------------------------------------------------------------- v1
__global__ void add_to(int* p, int v) { atomicAdd(p, v); }
__global__ void v1(int* out, int* errors, unsigned long long* handles) {
    void* buf = cudaGetParameterBuffer(64, sizeof(int*) + sizeof(int));
    *(int**)buf = out;
    *(int*)((char*)buf + 8) = 5;
    // (what cudaLaunchDevice returns comes from the device runtime's SetLastError syscall;
    // the last error is what CUDA documents)
    cudaLaunchDevice((void*)add_to, buf, dim3(2), dim3(3), 0, 0);
    errors[0] = cudaGetLastError();
    cudaLaunchDevice((void*)add_to, buf, dim3(1), dim3(1), 0, 0);  // launched already
    errors[1] = cudaGetLastError();
    errors[2] = cudaGetLastError();
    cudaStream_t s1, s2;
    cudaEvent_t ev;
    errors[3] = cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    errors[4] = cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    errors[5] = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    handles[0] = (unsigned long long)s1;
    handles[1] = (unsigned long long)s2;
    handles[2] = (unsigned long long)ev;
    add_to<<<1, 4, 0, s1>>>(out + 1, 10);
    errors[6] = cudaEventRecord(ev, s1);
    errors[7] = cudaStreamWaitEvent(s2, ev, 0);
    add_to<<<1, 2, 0, s2>>>(out + 1, 100);
    errors[8] = cudaStreamDestroy(s1);
    errors[9] = cudaStreamDestroy(s2);
    errors[10] = cudaEventDestroy(ev);
    int dev = -1, count = -1;
    errors[11] = cudaGetDevice(&dev);
    errors[12] = cudaGetDeviceCount(&count);
    out[2] = dev;
    out[3] = count;
}

static void test_v1() {
    int *out = device<int>(4), *errors = device<int>(13);
    unsigned long long* handles = device<unsigned long long>(3);
    v1<<<1, 1>>>(out, errors, handles);
    run();
    int ho[4], he[13];
    unsigned long long hh[3];
    host(ho, out, 4);
    host(he, errors, 13);
    host(hh, handles, 3);
    expect("v1: the launch ran with its buffer", ho[0], 6 * 5);
    expect("v1: launches in made streams", ho[1], 4 * 10 + 2 * 100);
    expect("v1: cudaGetDevice", ho[2], 0);
    expect("v1: cudaGetDeviceCount", ho[3], 1);
    expect("v1: a first cudaLaunchDevice", he[0], cudaSuccess);
    expect("v1: a buffer launched twice", he[1], cudaErrorInvalidValue);
    expect("v1: the last error after reading it", he[2], cudaSuccess);
    for (int i = 3; i < 13; ++i) expect("v1: streams, events, devices", he[i], cudaSuccess);
    expect("v1: distinct stream handles", hh[0] != hh[1] && hh[0] && hh[1] && hh[2], 1);
    printf("v1: %d %d, errors", ho[0], ho[1]);
    for (int e : he) printf(" %d", e);
    printf("\n");
}

// ---------------------------------------------------------------- exhaust (CUPORT_VK_LAUNCH_QUEUE=4)
__global__ void flood(int* out, int* errors, int n) {
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
        add_to<<<1, 1>>>(out, 1);
        errors[i] = cudaGetLastError();
    }
}
__global__ void take_big(Big b, int* out) { atomicAdd(out, b.v[BIG - 1]); }
__global__ void flood_big(int* out, int* errors, int n) {
    Big b;
    for (int i = 0; i < BIG; ++i) b.v[i] = i;
#pragma unroll 1
    for (int i = 0; i < n; ++i) {
        take_big<<<1, 1>>>(b, out);
        errors[i] = cudaGetLastError();
    }
}

static void test_exhaust(int queue) {
    const int n = 6;
    int *out = device<int>(2), *errors = device<int>(2 * n);
    flood<<<1, 1>>>(out, errors, n);
    run();
    flood_big<<<1, 1>>>(out + 1, errors + n, 3);
    run();
    int ho[2], he[2 * n];
    host(ho, out, 2);
    host(he, errors, 2 * n);
    for (int i = 0; i < n; ++i)
        expect("exhaust: a launch into the queue", he[i],
               i < queue ? cudaSuccess : cudaErrorLaunchPendingCountExceeded);
    expect("exhaust: launches that ran", ho[0], queue);
    // 256 bytes of arena per place in the queue: one 512-byte buffer (and its 64-byte header)
    // fits in 1 KiB, a second does not
    for (int i = 0; i < 3; ++i)
        expect("exhaust: a buffer from the arena", he[n + i],
               i < 1 ? cudaSuccess : cudaErrorLaunchPendingCountExceeded);
    expect("exhaust: big launches that ran", ho[1], BIG - 1);
    printf("exhaust: %d of %d launches, errors", ho[0], n);
    for (int i = 0; i < n + 3; ++i) printf(" %d", he[i]);
    printf("\n");
}

int main(int argc, char** argv) {
    // one part by name, or all but "exhaust"
    const char* part = argc > 1 ? argv[1] : "";
    struct { const char* name; void (*run)(); } parts[] = {
        {"many", test_many}, {"tail", test_tail}, {"nested", test_nested}, {"params", test_params},
        {"depth", test_depth}, {"config", test_config}, {"v1", test_v1}};
    bool found = false;
    for (auto& p : parts)
        if (!*part || !strcmp(part, p.name)) {
            p.run();
            found = true;
        }
    if (!strcmp(part, "exhaust")) {
        test_exhaust(argc > 2 ? atoi(argv[2]) : 4);
        found = true;
    }
    if (!found) {
        printf("no part named %s\n", part);
        return 2;
    }
    puts(failures ? "FAIL" : "PASS");
    return failures != 0;
}
