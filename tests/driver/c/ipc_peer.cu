// Both ends of CUDA IPC, driven line by line over stdin/stdout by tests/driver/test_ipc.py,
// so that the importer can be a separately started program that gets the handles through a
// pipe. Every command answers one line; CUDA failures answer the error's name.
//
//   ipc_peer export N      allocates N uints (element i = 7i+1), an interprocess event, and
//                          prints "MEM <hex>", "EVENT <hex>"; then commands:
//     gate V               queues on its stream: a host function that waits for "go", a kernel
//                          setting every element to V, a record of the event
//     go                   lets the gate pass and waits for the stream
//     check V              every element is V?
//     selfopen             opens its own memory handle (NVIDIA: invalid device context)
//     free                 cudaFree of the exported memory
//   ipc_peer import        reads "MEM <hex>" and "EVENT <hex>" lines; then commands:
//     open                 opens the memory handle twice: the same pointer?
//     openevent            opens the event handle
//     waitadd A            its stream waits for the event, then a kernel adds A to every element
//     check V / write V    reads every element / sets every element through its own pointer
//     close                closes the memory twice; then a copy from the pointer must fail
//   exit                   ends the program
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>
#include <cuda_runtime.h>

__global__ void set_all(unsigned* p, int n, unsigned v) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = v;
}

__global__ void add_all(unsigned* p, int n, unsigned a) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] += a;
}

__global__ void iota(unsigned* p, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = 7u * i + 1u;
}

static std::atomic<int> gate_open{0};

static void CUDART_CB gate(void*) {
    while (!gate_open.load()) usleep(1000);
}

static void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static bool failed(const char* what, cudaError_t e) {
    if (e == cudaSuccess) return false;
    say("%s error %s", what, cudaGetErrorName(e));
    cudaGetLastError();
    return true;
}

static void to_hex(const void* data, size_t n, char* out) {
    for (size_t i = 0; i < n; ++i) sprintf(out + 2 * i, "%02x", ((const unsigned char*)data)[i]);
}

static void from_hex(const char* s, void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) sscanf(s + 2 * i, "%2hhx", (unsigned char*)data + i);
}

static void check(const char* what, const unsigned* p, int n, unsigned v) {
    std::vector<unsigned> h(n);
    if (failed(what, cudaMemcpy(h.data(), p, n * sizeof(unsigned), cudaMemcpyDeviceToHost))) return;
    for (int i = 0; i < n; ++i)
        if (h[i] != v) {
            say("%s bad at %d: %u", what, i, h[i]);
            return;
        }
    say("%s ok", what);
}

static int exporter(int n) {
    unsigned* d;
    cudaEvent_t ev;
    cudaStream_t s;
    if (failed("setup", cudaMalloc(&d, n * sizeof(unsigned)))) return 1;
    iota<<<32, 256>>>(d, n);
    if (failed("setup", cudaDeviceSynchronize()) ||
        failed("setup", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess)) ||
        failed("setup", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)))
        return 1;
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    if (failed("MEM", cudaIpcGetMemHandle(&mh, d)) || failed("EVENT", cudaIpcGetEventHandle(&eh, ev)))
        return 1;
    char hex[2 * sizeof mh + 1];
    to_hex(&mh, sizeof mh, hex);
    say("MEM %s", hex);
    to_hex(&eh, sizeof eh, hex);
    say("EVENT %s", hex);
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        unsigned v = 0;
        if (sscanf(line, "gate %u", &v) == 1) {
            gate_open = 0;
            if (failed("GATED", cudaLaunchHostFunc(s, gate, nullptr))) continue;
            set_all<<<32, 256, 0, s>>>(d, n, v);
            if (!failed("GATED", cudaGetLastError()) && !failed("GATED", cudaEventRecord(ev, s)))
                say("GATED");
        } else if (strncmp(line, "go", 2) == 0) {
            gate_open = 1;
            if (!failed("WENT", cudaStreamSynchronize(s))) say("WENT");
        } else if (sscanf(line, "check %u", &v) == 1) {
            check("CHECK", d, n, v);
        } else if (strncmp(line, "selfopen", 8) == 0) {
            void* p;
            if (!failed("SELFOPEN", cudaIpcOpenMemHandle(&p, mh, cudaIpcMemLazyEnablePeerAccess)))
                say("SELFOPEN opened");
        } else if (strncmp(line, "free", 4) == 0) {
            if (!failed("FREED", cudaFree(d))) say("FREED");
        } else if (strncmp(line, "exit", 4) == 0) {
            return 0;
        } else {
            say("unknown command %s", line);
        }
    }
    return 0;
}

static int importer(int n) {
    char line[512], hex[512];
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    if (!fgets(line, sizeof line, stdin) || sscanf(line, "MEM %511s", hex) != 1) return 2;
    from_hex(hex, &mh, sizeof mh);
    if (!fgets(line, sizeof line, stdin) || sscanf(line, "EVENT %511s", hex) != 1) return 2;
    from_hex(hex, &eh, sizeof eh);
    unsigned* p = nullptr;
    cudaEvent_t ev;
    cudaStream_t s;
    if (failed("setup", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) return 1;
    while (fgets(line, sizeof line, stdin)) {
        unsigned v = 0;
        if (strncmp(line, "openevent", 9) == 0) {
            if (!failed("EVENT", cudaIpcOpenEventHandle(&ev, eh))) say("EVENT opened");
        } else if (strncmp(line, "open", 4) == 0) {
            void *a = nullptr, *b = nullptr;
            if (failed("OPEN", cudaIpcOpenMemHandle(&a, mh, cudaIpcMemLazyEnablePeerAccess)) ||
                failed("OPEN", cudaIpcOpenMemHandle(&b, mh, cudaIpcMemLazyEnablePeerAccess)))
                continue;
            p = (unsigned*)a;
            say(a == b ? "OPEN same pointer" : "OPEN different pointers");
        } else if (sscanf(line, "waitadd %u", &v) == 1) {
            if (failed("ADDED", cudaStreamWaitEvent(s, ev, 0))) continue;
            add_all<<<32, 256, 0, s>>>(p, n, v);
            if (!failed("ADDED", cudaGetLastError()) && !failed("ADDED", cudaStreamSynchronize(s)))
                say("ADDED");
        } else if (sscanf(line, "check %u", &v) == 1) {
            check("CHECK", p, n, v);
        } else if (sscanf(line, "write %u", &v) == 1) {
            set_all<<<32, 256, 0, s>>>(p, n, v);
            if (!failed("WROTE", cudaGetLastError()) && !failed("WROTE", cudaStreamSynchronize(s)))
                say("WROTE");
        } else if (strncmp(line, "close", 5) == 0) {
            if (failed("CLOSED", cudaIpcCloseMemHandle(p)) || failed("CLOSED", cudaIpcCloseMemHandle(p)))
                continue;
            unsigned x;
            cudaError_t e = cudaMemcpy(&x, p, sizeof x, cudaMemcpyDeviceToHost);
            cudaGetLastError();
            say("CLOSED, then a copy from it: %s", cudaGetErrorName(e));
        } else if (strncmp(line, "exit", 4) == 0) {
            return 0;
        } else {
            say("unknown command %s", line);
        }
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "export") == 0) return exporter(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "import") == 0) return importer(atoi(argv[2]));
    fprintf(stderr, "usage: %s export N | import N\n", argv[0]);
    return 2;
}
