// virtual_calls: calls through function pointers as C++ device code makes them.
// 1. A class hierarchy (Shape: Circle, Rect, Tri) built in device memory by a kernel with
//    placement new and with device-side new (its vtable pointers set in device code); every
//    thread of a warp calls virtual area() and scale() on a different kind of object.
// 2. A table of device function pointers in a __device__ array with an initialiser, indexed
//    by data (divergent targets within a warp).
// 3. A device function pointer read on the host with cudaMemcpyFromSymbol and passed back as
//    a kernel argument.
// 4. Virtual calls that recurse: an expression tree (Num, Add, Mul) evaluated by virtual eval().
// Each result is checked against the host's computation of the same formulas.
#include <cstdio>
#include <cstdlib>
#include <new>

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    printf("CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
    exit(2); } } while (0)

struct Shape {
    float k;
    __device__ Shape(float k_) : k(k_) {}
    __device__ virtual ~Shape() {}
    __device__ virtual float area() const = 0;
    __device__ virtual void scale(float s) { k *= s; }
};
struct Circle : Shape {
    __device__ Circle(float r) : Shape(r) {}
    __device__ float area() const override { return 3.0f * k * k; }
};
struct Rect : Shape {
    float w;
    __device__ Rect(float h, float w_) : Shape(h), w(w_) {}
    __device__ float area() const override { return k * w; }
    __device__ void scale(float s) override { k *= s; w *= s; }
};
struct Tri : Shape {
    float b;
    __device__ Tri(float h, float b_) : Shape(h), b(b_) {}
    __device__ float area() const override { return 0.5f * k * b; }
    __device__ void scale(float s) override { k *= s; b *= 2.0f * s; }
};

static const int N = 1000;  // objects: kinds i % 3, sizes from i
// host model of the same objects
static float model_area(int i, int scaled) {
    float a = 1.0f + (i % 17), c = 2.0f + (i % 5), s = scaled ? 1.5f : 1.0f;
    switch (i % 3) {
    case 0: { float r = a * s; return 3.0f * r * r; }
    case 1: { float h = a * s, w = c * s; return h * w; }
    default: { float h = a * s, b = c * 2.0f * s; return 0.5f * h * (scaled ? b : c); }
    }
}

__global__ void build(unsigned char* pool, int stride, Shape** objs, int n, int heap) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = 1.0f + (i % 17), c = 2.0f + (i % 5);
    void* at = pool + (size_t)i * stride;
    Shape* s;
    if (heap && i % 2) {  // every other object from the device heap
        switch (i % 3) {
        case 0: s = new Circle(a); break;
        case 1: s = new Rect(a, c); break;
        default: s = new Tri(a, c); break;
        }
    } else {
        switch (i % 3) {
        case 0: s = new (at) Circle(a); break;
        case 1: s = new (at) Rect(a, c); break;
        default: s = new (at) Tri(a, c); break;
        }
    }
    objs[i] = s;
}
__global__ void areas(Shape** objs, float* out, int n, int scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (scale) objs[i]->scale(1.5f);
    out[i] = objs[i]->area();
}
__global__ void destroy(Shape** objs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i % 2) delete objs[i];
}

// 2 and 3: plain device function pointers
typedef int (*op_t)(int, int);
__device__ int op_add(int a, int b) { return a + b; }
__device__ int op_sub(int a, int b) { return a - b; }
__device__ int op_mul(int a, int b) { return a * b; }
__device__ int op_max(int a, int b) { return a > b ? a : b; }
__device__ op_t ops[4] = {op_add, op_sub, op_mul, op_max};
__device__ op_t chosen = op_mul;
static int host_op(int k, int a, int b) {
    switch (k) { case 0: return a + b; case 1: return a - b; case 2: return a * b; default: return a > b ? a : b; }
}
__global__ void apply_table(const int* sel, const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = ops[sel[i] & 3](x[i], i);
}
__global__ void apply_one(op_t f, const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(x[i], 7);
}

// 4: an expression tree, evaluated by recursive virtual calls
struct Expr {
    __device__ virtual int eval(int x) const = 0;
};
struct Num : Expr {
    int v;
    __device__ Num(int v_) : v(v_) {}
    __device__ int eval(int x) const override { return v < 0 ? x : v; }  // -1: the variable
};
struct Add : Expr {
    const Expr *l, *r;
    __device__ Add(const Expr* a, const Expr* b) : l(a), r(b) {}
    __device__ int eval(int x) const override { return l->eval(x) + r->eval(x); }
};
struct Mul : Expr {
    const Expr *l, *r;
    __device__ Mul(const Expr* a, const Expr* b) : l(a), r(b) {}
    __device__ int eval(int x) const override { return l->eval(x) * r->eval(x); }
};
// (x + 3) * (x * x + 2) + 5, built in one thread, evaluated by all
__global__ void tree(unsigned char* pool, const Expr** root) {
    unsigned char* p = pool;
    auto put = [&](auto obj) { auto* q = new (p) decltype(obj)(obj); p += 64; return q; };
    const Expr* x = put(Num(-1));
    const Expr* e = put(Add(put(Mul(put(Add(x, put(Num(3)))), put(Add(put(Mul(x, x)), put(Num(2)))))), put(Num(5))));
    *root = e;
}
__global__ void eval_tree(const Expr* const* root, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (*root)->eval(i - n / 2);
}

int main() {
    int bad = 0;
    // 1
    unsigned char* pool;
    Shape** objs;
    float* d_area;
    const int stride = 64;
    CHECK(cudaMalloc(&pool, (size_t)N * stride));
    CHECK(cudaMalloc(&objs, N * sizeof(Shape*)));
    CHECK(cudaMalloc(&d_area, N * sizeof(float)));
    float area[N];
    for (int heap = 0; heap < 2; heap++) {
        build<<<(N + 127) / 128, 128>>>(pool, stride, objs, N, heap);
        CHECK(cudaGetLastError());
        for (int scaled = 0; scaled < 2; scaled++) {
            areas<<<(N + 127) / 128, 128>>>(objs, d_area, N, scaled);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpy(area, d_area, sizeof area, cudaMemcpyDeviceToHost));
            int wrong = 0;
            for (int i = 0; i < N; i++)
                if (area[i] != model_area(i, scaled)) wrong++;
            printf("virtual area(), %s objects, %s: %d of %d wrong\n", heap ? "placed and heap" : "placed",
                   scaled ? "after virtual scale()" : "as built", wrong, N);
            bad += wrong;
        }
        if (heap) { destroy<<<(N + 127) / 128, 128>>>(objs, N); CHECK(cudaGetLastError()); }
    }
    // 2 and 3
    int sel[N], x[N], got[N];
    for (int i = 0; i < N; i++) { sel[i] = (i * 7 + i / 5) % 4; x[i] = (i * 37) % 101 - 50; }
    int *d_sel, *d_x, *d_out;
    CHECK(cudaMalloc(&d_sel, sizeof sel)); CHECK(cudaMalloc(&d_x, sizeof x)); CHECK(cudaMalloc(&d_out, sizeof got));
    CHECK(cudaMemcpy(d_sel, sel, sizeof sel, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_x, x, sizeof x, cudaMemcpyHostToDevice));
    apply_table<<<(N + 127) / 128, 128>>>(d_sel, d_x, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != host_op(sel[i], x[i], i);
    printf("function pointer table, divergent targets: %d of %d wrong\n", wrong, N);
    bad += wrong;
    op_t f;
    CHECK(cudaMemcpyFromSymbol(&f, chosen, sizeof f));
    apply_one<<<(N + 127) / 128, 128>>>(f, d_x, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < N; i++) wrong += got[i] != x[i] * 7;
    printf("function pointer from the host as an argument: %d of %d wrong\n", wrong, N);
    bad += wrong;
    // 4
    const Expr** root;
    CHECK(cudaMalloc(&root, sizeof(Expr*)));
    tree<<<1, 1>>>(pool, root);
    CHECK(cudaGetLastError());
    eval_tree<<<(N + 127) / 128, 128>>>(root, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < N; i++) { int v = i - N / 2; wrong += got[i] != (v + 3) * (v * v + 2) + 5; }
    printf("recursive virtual eval() of an expression tree: %d of %d wrong\n", wrong, N);
    bad += wrong;
    CHECK(cudaDeviceSynchronize());
    if (bad) { printf("FAIL: %d wrong results\n", bad); return 1; }
    printf("PASS\n");
    return 0;
}
