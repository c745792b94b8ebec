// graph_conditional: conditional graph nodes, as cuda-samples graphConditionalNodes
// uses them. Kernels set the condition with cudaGraphSetConditional; the nodes are
// - IF with an else body, chosen by the parity of a value in device memory;
// - WHILE over a body that counts a device counter down (the handle's default 1,
//   applied at each launch by cudaGraphCondAssignDefault, makes it run at least once),
//   with an IF nested in the body (every third pass adds 100);
// - SWITCH over three bodies (a value of 3 or more runs none);
// - a WHILE added to a capturing stream (cudaStreamGetCaptureInfo, cudaGraphAddNode,
//   cudaStreamUpdateCaptureDependencies) whose body is captured with
//   cudaStreamBeginCaptureToGraph.
// Each graph is launched several times with new inputs; the results are checked.
#include <cstdio>
#include <cstdlib>
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
static void expect(const char* what, int got, int want) {
    if (got != want) {
        printf("FAIL: %s: %d, expected %d\n", what, got, want);
        failures++;
    }
}

__global__ void set_from(const int* v, cudaGraphConditionalHandle h, int mod) {
    cudaGraphSetConditional(h, mod ? (unsigned)(*v % mod) : (unsigned)*v);
}
__global__ void put(int* out, int value) { *out = value; }
__global__ void add(int* out, int value) { atomicAdd(out, value); }

// one WHILE pass: counter--, sum += counter, the loop goes on while counter > 0;
// the nested IF's condition: the counter is a multiple of 3
__global__ void count_down(int* counter, int* sum, cudaGraphConditionalHandle loop,
                           cudaGraphConditionalHandle every_third) {
    int c = --*counter;
    *sum += c;
    cudaGraphSetConditional(loop, c > 0);
    cudaGraphSetConditional(every_third, c % 3 == 0);
}

static cudaGraphNode_t kernel_node(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n,
                                   void* fn, void** args) {
    cudaGraphNodeParams p = {cudaGraphNodeTypeKernel};
    p.kernel.func = fn;
    p.kernel.gridDim = dim3(1);
    p.kernel.blockDim = dim3(1);
    p.kernel.kernelParams = args;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
    return node;
}

static cudaGraphNode_t conditional(cudaGraph_t g, const cudaGraphNode_t* deps, size_t n,
                                   cudaGraphConditionalHandle h, cudaGraphConditionalNodeType t,
                                   unsigned size, cudaGraph_t* bodies) {
    cudaGraphNodeParams p = {cudaGraphNodeTypeConditional};
    p.conditional.handle = h;
    p.conditional.type = t;
    p.conditional.size = size;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
    for (unsigned i = 0; i < size; ++i) bodies[i] = p.conditional.phGraph_out[i];
    return node;
}

static int read(const int* d) {
    int h;
    CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    return h;
}
static void write(int* d, int v) { CHECK(cudaMemcpy(d, &v, sizeof v, cudaMemcpyHostToDevice)); }

static void if_else(int* v, int* out) {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g));
    int mod = 2;
    void* a_args[] = {&v, &h, &mod};
    cudaGraphNode_t a = kernel_node(g, nullptr, 0, (void*)set_from, a_args);
    cudaGraph_t bodies[2];
    conditional(g, &a, 1, h, cudaGraphCondTypeIf, 2, bodies);
    int odd = 1, even = 2;
    void* odd_args[] = {&out, &odd};
    void* even_args[] = {&out, &even};
    kernel_node(bodies[0], nullptr, 0, (void*)put, odd_args);
    kernel_node(bodies[1], nullptr, 0, (void*)put, even_args);
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (int value = 0; value < 5; ++value) {
        write(v, value);
        write(out, 0);
        CHECK(cudaGraphLaunch(x, 0));
        CHECK(cudaStreamSynchronize(0));
        expect("IF/else body run", read(out), value % 2 ? 1 : 2);
    }
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
}

static void while_loop(int* counter, int* sum) {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle loop, every_third;
    CHECK(cudaGraphConditionalHandleCreate(&loop, g, 1, cudaGraphCondAssignDefault));
    CHECK(cudaGraphConditionalHandleCreate(&every_third, g));
    cudaGraph_t body;
    conditional(g, nullptr, 0, loop, cudaGraphCondTypeWhile, 1, &body);
    void* args[] = {&counter, &sum, &loop, &every_third};
    cudaGraphNode_t step = kernel_node(body, nullptr, 0, (void*)count_down, args);
    cudaGraph_t then;
    conditional(body, &step, 1, every_third, cudaGraphCondTypeIf, 1, &then);
    int hundred = 100;
    void* add_args[] = {&sum, &hundred};
    kernel_node(then, nullptr, 0, (void*)add, add_args);
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    const int starts[] = {10, 1, 7, 0};
    for (int start : starts) {
        write(counter, start);
        write(sum, 0);
        CHECK(cudaGraphLaunch(x, 0));
        CHECK(cudaStreamSynchronize(0));
        // passes run with the counter going from start-1 down to 0 (one pass at least)
        int want = 0, c = start;
        do {
            c--;
            want += c + (c % 3 == 0 ? 100 : 0);
        } while (c > 0);
        expect("WHILE sum", read(sum), want);
    }
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
}

static void switch_node(int* v, int* out) {
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g));
    int mod = 0;
    void* a_args[] = {&v, &h, &mod};
    cudaGraphNode_t a = kernel_node(g, nullptr, 0, (void*)set_from, a_args);
    cudaGraph_t bodies[3];
    conditional(g, &a, 1, h, cudaGraphCondTypeSwitch, 3, bodies);
    int values[3] = {11, 22, 33};
    void* args[3][2];
    for (int i = 0; i < 3; ++i) {
        args[i][0] = &out;
        args[i][1] = &values[i];
        kernel_node(bodies[i], nullptr, 0, (void*)put, args[i]);
    }
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (int value = 0; value < 5; ++value) {
        write(v, value);
        write(out, -1);
        CHECK(cudaGraphLaunch(x, 0));
        CHECK(cudaStreamSynchronize(0));
        expect("SWITCH body run", read(out), value < 3 ? values[value] : -1);
    }
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
}

__global__ void captured_step(int* counter, int* sum, cudaGraphConditionalHandle h) {
    if (*counter > 0) {
        *sum += *counter;
        --*counter;
    }
    cudaGraphSetConditional(h, *counter);
}

static void captured_while(int* counter, int* sum) {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    cudaGraph_t g;
    const cudaGraphNode_t* deps;
    size_t ndeps;
    CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g));
    captured_step<<<1, 1, 0, s>>>(counter, sum, h);  // sets the condition before the loop
    CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
    cudaGraph_t body;
    cudaGraphNode_t loop = conditional(g, deps, ndeps, h, cudaGraphCondTypeWhile, 1, &body);
    CHECK(cudaStreamUpdateCaptureDependencies(s, &loop, nullptr, 1, cudaStreamSetCaptureDependencies));
    add<<<1, 1, 0, s>>>(sum, 1000);  // after the loop
    CHECK(cudaStreamEndCapture(s, &g));

    cudaStream_t b;
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCaptureToGraph(b, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    captured_step<<<1, 1, 0, b>>>(counter, sum, h);
    CHECK(cudaStreamEndCapture(b, nullptr));

    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    const int starts[] = {0, 5, 12};
    for (int start : starts) {
        write(counter, start);
        write(sum, 0);
        CHECK(cudaGraphLaunch(x, s));
        CHECK(cudaStreamSynchronize(s));
        expect("captured WHILE sum", read(sum), start * (start + 1) / 2 + 1000);
        expect("captured WHILE counter", read(counter), 0);
    }
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(s));
}

int main() {
    int *a, *b;
    CHECK(cudaMalloc(&a, sizeof(int)));
    CHECK(cudaMalloc(&b, sizeof(int)));
    if_else(a, b);
    while_loop(a, b);
    switch_node(a, b);
    captured_while(a, b);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    puts(failures ? "FAIL" : "PASS");
    return failures != 0;
}
