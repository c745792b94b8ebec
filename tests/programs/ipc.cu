// ipc: memory and an event shared with a child process (cudaIpcGetMemHandle,
// cudaIpcOpenMemHandle, cudaIpcCloseMemHandle, cudaIpcGetEventHandle,
// cudaIpcOpenEventHandle), as cuda-samples' simpleIPC uses them. The parent fills a
// buffer, records an interprocess event and starts a child (this program again) with
// both handles; the child opens them (the memory twice: the same pointer, counted),
// waits for the parent's event in its stream, transforms the buffer in place and
// records the event; the parent waits for the child's record through the same event
// and checks every element.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
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

static const int N = 3 << 20;  // 12 MiB of ints

__global__ void fill(unsigned* p, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = i * 2654435761u;
}

__global__ void transform(unsigned* p, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = p[i] * 3u + 1u;
}

static void to_hex(const void* data, size_t n, char* out) {
    for (size_t i = 0; i < n; ++i) sprintf(out + 2 * i, "%02x", ((const unsigned char*)data)[i]);
}

static void from_hex(const char* s, void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) sscanf(s + 2 * i, "%2hhx", (unsigned char*)data + i);
}

static int child(const char* mem_hex, const char* event_hex) {
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    from_hex(mem_hex, &mh, sizeof mh);
    from_hex(event_hex, &eh, sizeof eh);
    void *p = nullptr, *q = nullptr;
    CHECK(cudaIpcOpenMemHandle(&p, mh, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaIpcOpenMemHandle(&q, mh, cudaIpcMemLazyEnablePeerAccess));
    if (p != q) {
        printf("FAIL: the handle opened twice gave %p and %p\n", p, q);
        return 1;
    }
    cudaEvent_t ev;
    CHECK(cudaIpcOpenEventHandle(&ev, eh));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamWaitEvent(s, ev, 0));  // the parent's fill
    transform<<<64, 256, 0, s>>>((unsigned*)p, N);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaIpcCloseMemHandle(q));
    CHECK(cudaIpcCloseMemHandle(p));
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s));
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) return child(argv[2], argv[3]);

    unsigned* d;
    CHECK(cudaMalloc(&d, N * sizeof(unsigned)));
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventInterprocess));
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    CHECK(cudaIpcGetMemHandle(&mh, d));
    CHECK(cudaIpcGetEventHandle(&eh, ev));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    fill<<<64, 256, 0, s>>>(d, N);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s));

    char mem_hex[2 * sizeof mh + 1], event_hex[2 * sizeof eh + 1];
    to_hex(&mh, sizeof mh, mem_hex);
    to_hex(&eh, sizeof eh, event_hex);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len < 0) _exit(3);
        self[len] = 0;
        execl(self, self, "child", mem_hex, event_hex, (char*)nullptr);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("FAIL: the child exited with status %d\n", status);
        return 1;
    }
    CHECK(cudaEventSynchronize(ev));  // the child's record
    CHECK(cudaEventQuery(ev));
    unsigned* h = (unsigned*)malloc(N * sizeof(unsigned));
    CHECK(cudaMemcpy(h, d, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < N; ++i) bad += h[i] != (unsigned)i * 2654435761u * 3u + 1u;
    printf("child transformed %d of %d elements\n", N - bad, N);
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaFree(d));
    free(h);
    puts(bad ? "FAIL: wrong elements" : "PASS");
    return bad != 0;
}
