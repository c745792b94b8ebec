// textures: texture and surface objects, checked against a host model of the texture unit.
//
// The model follows the CUDA Programming Guide ("Texture Fetching"): a normalized
// coordinate is scaled by the size (f32 multiply); the texel-space coordinate becomes
// fixed point with 8 fractional bits, rounded to nearest (Snap below); point sampling picks
// the texel under it; linear filtering subtracts half a texel and blends the two (four,
// eight) neighbours with weights k/256 ("9-bit fixed point with 8 bits of fractional
// value"); clamp, wrap, mirror and border act on texel indices. Filtered results may differ
// from the model's exact weighted sum by the rounding of the hardware's arithmetic: the
// tolerance is 2e-6 absolute for values in [0, 1], while unquantized weights would be off
// by up to 1/512 of the neighbours' difference and truncated weights by up to 1/256.
// Point samples, integer reads and surfaces are compared exactly.
//
// Parts: a 2D float image rotated with bilinear filtering under wrap/mirror, border and
// clamp addressing (normalized coordinates); a bilinear resize of a uchar4 image read as
// normalized floats (unnormalized coordinates computed in the kernel); a 1D point-sampled
// lookup table from a CUDA array and tex1Dfetch from linear memory (zeros out of range);
// a 3D texture with trilinear filtering; surface writes, reads (boundary modes zero and
// clamp) and a texture reading what the surface wrote.
#include <cmath>
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

struct Lcg {
    unsigned state;
    unsigned next() { state = state * 1664525u + 1013904223u; return state; }
    float uniform() { return (next() >> 8) * (1.0f / 16777216.0f); }  // [0, 1)
};

// ---------------------------------------------------------------- kernels

__global__ void sample1d(cudaTextureObject_t t, const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, x[i]);
}

__global__ void fetch1d(cudaTextureObject_t t, const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(t, x[i]);
}

__global__ void sample2d(cudaTextureObject_t t, const float2* uv, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, uv[i].x, uv[i].y);
}

// bilinear resize: output pixel centres mapped to input texel space (no fused multiply-add,
// so the host computes the same coordinates)
__global__ void resize(cudaTextureObject_t t, float4* out, int w, int h, float sx, float sy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float u = __fmul_rn(__fadd_rn((float)x, 0.5f), sx);
    float v = __fmul_rn(__fadd_rn((float)y, 0.5f), sy);
    out[y * w + x] = tex2D<float4>(t, u, v);
}

__global__ void sample3d(cudaTextureObject_t t, const float4* p, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float>(t, p[i].x, p[i].y, p[i].z);
}

__device__ uchar4 pattern(int x, int y) {
    return make_uchar4(x, y, (x * 7) ^ y, 255 - x);
}

// every thread of a wider grid writes; the ones past the right edge are dropped
__global__ void fill_surface(cudaSurfaceObject_t s, cudaSurfaceObject_t f, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (y >= h) return;
    surf2Dwrite(pattern(x, y), s, x * 4, y, cudaBoundaryModeZero);
    surf2Dwrite((float)(x * 1000 + y), f, x * 4, y, cudaBoundaryModeZero);
}

__global__ void read_surface(cudaSurfaceObject_t s, cudaSurfaceObject_t f, cudaTextureObject_t t,
                             uchar4* via_surface, uchar4* via_texture, float* edges, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= w || y >= h) return;
    via_surface[y * w + x] = surf2Dread<uchar4>(s, x * 4, y);
    via_texture[y * w + x] = tex2D<uchar4>(t, x + 0.5f, y + 0.5f);
    // out of bounds: .zero reads 0, .clamp the nearest element
    edges[2 * (y * w + x)] = surf2Dread<float>(f, (x + 3) * 4, y - 2, cudaBoundaryModeZero);
    edges[2 * (y * w + x) + 1] = surf2Dread<float>(f, (x + 3) * 4, y - 2, cudaBoundaryModeClamp);
}

// ---------------------------------------------------------------- host model

enum Snap { NEAREST, TRUNCATE, EXACT };
// the model checked; the other two are computed to explain a failure
// (cuport/backends/cpu/texture_rt.py SNAP says the same)
static const Snap MODEL = NEAREST;
static const char* SNAP_NAMES[] = {"8-bit rounded weights", "8-bit truncated weights",
                                   "unquantized weights"};

// texel-space coordinate -> first texel and the weight of the next one
static void split(float u, bool linear, Snap snap, int* i, double* a) {
    if (snap == EXACT) {
        double x = linear ? (double)u - 0.5 : (double)u;
        *i = (int)floor(x);
        *a = linear ? x - floor(x) : 0.0;
        return;
    }
    double s = (double)u * 256.0;  // exact
    long long f = snap == NEAREST ? llrint(s) : (long long)floor(s);  // llrint: half to even
    if (linear) f -= 128;
    long long whole = f >= 0 ? f / 256 : -((-f + 255) / 256);
    *i = (int)whole;
    *a = linear ? (double)(f - whole * 256) / 256.0 : 0.0;
}

// texel index under an address mode, -1 for a border texel
static int address(int i, int n, cudaTextureAddressMode mode) {
    switch (mode) {
    case cudaAddressModeWrap: return ((i % n) + n) % n;
    case cudaAddressModeMirror: {
        int m = ((i % (2 * n)) + 2 * n) % (2 * n);
        return m >= n ? 2 * n - 1 - m : m;
    }
    case cudaAddressModeBorder: return (i >= 0 && i < n) ? i : -1;
    default: return i < 0 ? 0 : (i >= n ? n - 1 : i);
    }
}

struct Model {
    int dims, size[3], channels;
    std::vector<float> texels;  // decoded values, [((z * h + y) * w + x) * channels + c]
    bool normalized, linear;
    cudaTextureAddressMode mode[3];
    float border[4];

    void sample(const float* coord, Snap snap, double* out) const {
        int i0[3] = {0, 0, 0};
        double a[3] = {0, 0, 0};
        for (int k = 0; k < dims; k++) {
            float u = normalized ? coord[k] * (float)size[k] : coord[k];  // f32 multiply
            split(u, linear, snap, &i0[k], &a[k]);
        }
        for (int c = 0; c < channels; c++) out[c] = 0.0;
        for (int corner = 0; corner < (linear ? 1 << dims : 1); corner++) {
            double w = 1.0;
            int idx[3] = {0, 0, 0};
            bool outside = false;
            for (int k = 0; k < dims; k++) {
                int hi = (corner >> k) & 1;
                w *= hi ? a[k] : 1.0 - a[k];
                idx[k] = address(i0[k] + hi, size[k], mode[k]);
                outside |= idx[k] < 0;
            }
            if (w == 0.0) continue;
            for (int c = 0; c < channels; c++) {
                size_t at = (((size_t)idx[2] * size[1] + idx[1]) * size[0] + idx[0]) * channels + c;
                out[c] += w * (outside ? border[c] : texels[at]);
            }
        }
    }
};

static int failures = 0;

// compare n results (channels each) with the model at each coordinate
static void check(const char* what, const Model& m, const float* coords, int stride,
                  const float* got, int n, double tol) {
    int bad[3] = {0, 0, 0};
    int shown = 0;
    for (int i = 0; i < n; i++) {
        for (Snap s : {NEAREST, TRUNCATE, EXACT}) {
            double ref[4];
            m.sample(coords + (size_t)i * stride, s, ref);
            bool ok = true;
            for (int c = 0; c < m.channels; c++)
                ok &= fabs((double)got[i * m.channels + c] - (float)ref[c]) <= tol;
            if (ok) continue;
            bad[s]++;
            if (s == MODEL && shown++ < 5) {
                double tr[4], ex[4];
                m.sample(coords + (size_t)i * stride, TRUNCATE, tr);
                m.sample(coords + (size_t)i * stride, EXACT, ex);
                printf("  %s: sample %d at (%.9g, %.9g, %.9g): got %.9g, expected %.9g "
                       "(truncated weights: %.9g, unquantized: %.9g)\n", what, i,
                       coords[(size_t)i * stride], m.dims > 1 ? coords[(size_t)i * stride + 1] : 0.f,
                       m.dims > 2 ? coords[(size_t)i * stride + 2] : 0.f, got[i * m.channels],
                       (float)ref[0], (float)tr[0], (float)ex[0]);
            }
        }
    }
    if (bad[MODEL]) {
        failures++;
        printf("%s: %d of %d samples differ from the model; agreement by weight model:", what,
               bad[MODEL], n);
        for (int s = 0; s < 3; s++) printf(" %s %d/%d;", SNAP_NAMES[s], n - bad[s], n);
        printf("\n");
    }
}

static cudaTextureObject_t texture(cudaResourceDesc& res, cudaTextureAddressMode m0,
                                   cudaTextureAddressMode m1, cudaTextureAddressMode m2,
                                   cudaTextureFilterMode filter, cudaTextureReadMode read,
                                   bool normalized, float border = 0.0f) {
    cudaTextureDesc td = {};
    td.addressMode[0] = m0;
    td.addressMode[1] = m1;
    td.addressMode[2] = m2;
    td.filterMode = filter;
    td.readMode = read;
    td.normalizedCoords = normalized;
    for (int c = 0; c < 4; c++) td.borderColor[c] = border;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &res, &td, nullptr));
    return t;
}

static cudaResourceDesc array_resource(cudaArray_t a) {
    cudaResourceDesc r = {};
    r.resType = cudaResourceTypeArray;
    r.res.array.array = a;
    return r;
}

template <class T> static T* to_device(const std::vector<T>& v) {
    T* d;
    CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <class T> static std::vector<T> to_host(const T* d, size_t n) {
    std::vector<T> v(n);
    CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

static int blocks(int n) { return (n + 127) / 128; }

// ---------------------------------------------------------------- parts

static void rotate_2d(Lcg& rng) {
    const int W = 61, H = 47, N = 64;
    Model m{2, {W, H, 1}, 1, std::vector<float>(W * H), true, true};
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            m.texels[y * W + x] = 0.5f + 0.3f * sinf(0.37f * x) * cosf(0.23f * y) + 0.2f * rng.uniform();
    cudaChannelFormatDesc ch = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &ch, W, H));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, m.texels.data(), W * sizeof(float), W * sizeof(float), H,
                              cudaMemcpyHostToDevice));
    // output pixels rotated by 30 degrees about the centre and scaled by 1.3: corners fall
    // outside [0, 1), so the address modes matter
    std::vector<float2> uv(N * N);
    const float c = cosf(0.5235988f), s = sinf(0.5235988f);
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            float px = (x + 0.5f) / N - 0.5f, py = (y + 0.5f) / N - 0.5f;
            uv[y * N + x] = make_float2(0.5f + 1.3f * (c * px - s * py), 0.5f + 1.3f * (s * px + c * py));
        }
    float2* duv = to_device(uv);
    float* dout;
    CHECK(cudaMalloc(&dout, N * N * sizeof(float)));
    cudaResourceDesc res = array_resource(arr);
    struct { cudaTextureAddressMode x, y; const char* name; } modes[] = {
        {cudaAddressModeWrap, cudaAddressModeMirror, "2D rotation, wrap/mirror"},
        {cudaAddressModeBorder, cudaAddressModeBorder, "2D rotation, border"},
        {cudaAddressModeClamp, cudaAddressModeClamp, "2D rotation, clamp"},
    };
    for (auto& md : modes) {
        cudaTextureObject_t t = texture(res, md.x, md.y, cudaAddressModeClamp, cudaFilterModeLinear,
                                        cudaReadModeElementType, true, 0.25f);
        sample2d<<<blocks(N * N), 128>>>(t, duv, dout, N * N);
        CHECK(cudaGetLastError());
        std::vector<float> got = to_host(dout, N * N);
        m.mode[0] = md.x;
        m.mode[1] = md.y;
        m.border[0] = 0.25f;
        check(md.name, m, &uv[0].x, 2, got.data(), N * N, 2e-6);
        CHECK(cudaDestroyTextureObject(t));
    }
    CHECK(cudaFree(duv));
    CHECK(cudaFree(dout));
    CHECK(cudaFreeArray(arr));
}

static void resize_uchar4(Lcg& rng) {
    const int W = 40, H = 30, OW = 67, OH = 53;
    std::vector<uchar4> img(W * H);
    Model m{2, {W, H, 1}, 4, std::vector<float>(W * H * 4), false, true};
    for (int i = 0; i < W * H; i++) {
        unsigned r = rng.next();
        img[i] = make_uchar4(r >> 24, r >> 16, r >> 8, r);
        const unsigned char* b = &img[i].x;
        for (int c = 0; c < 4; c++) m.texels[i * 4 + c] = b[c] / 255.0f;
    }
    cudaChannelFormatDesc ch = cudaCreateChannelDesc<uchar4>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &ch, W, H));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), W * sizeof(uchar4), W * sizeof(uchar4), H,
                              cudaMemcpyHostToDevice));
    cudaResourceDesc res = array_resource(arr);
    cudaTextureObject_t t = texture(res, cudaAddressModeClamp, cudaAddressModeClamp,
                                    cudaAddressModeClamp, cudaFilterModeLinear,
                                    cudaReadModeNormalizedFloat, false);
    float4* dout;
    CHECK(cudaMalloc(&dout, OW * OH * sizeof(float4)));
    const float sx = (float)W / OW, sy = (float)H / OH;
    resize<<<dim3((OW + 15) / 16, (OH + 15) / 16), dim3(16, 16)>>>(t, dout, OW, OH, sx, sy);
    CHECK(cudaGetLastError());
    std::vector<float4> got = to_host(dout, OW * OH);
    std::vector<float2> uv(OW * OH);
    for (int y = 0; y < OH; y++)
        for (int x = 0; x < OW; x++)
            uv[y * OW + x] = make_float2(((float)x + 0.5f) * sx, ((float)y + 0.5f) * sy);
    m.mode[0] = m.mode[1] = cudaAddressModeClamp;
    check("uchar4 bilinear resize (normalized float reads)", m, &uv[0].x, 2, &got[0].x, OW * OH,
          2e-6);
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFree(dout));
    CHECK(cudaFreeArray(arr));
}

static void lookup_tables(Lcg& rng) {
    const int N = 256;
    Model m{1, {N, 1, 1}, 1, std::vector<float>(N), false, false};
    for (int i = 0; i < N; i++) m.texels[i] = rng.uniform() * 100.0f - 50.0f;
    cudaChannelFormatDesc ch = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &ch, N, 0));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, m.texels.data(), N * sizeof(float), N * sizeof(float), 1,
                              cudaMemcpyHostToDevice));
    cudaResourceDesc res = array_resource(arr);
    cudaTextureObject_t t = texture(res, cudaAddressModeClamp, cudaAddressModeClamp,
                                    cudaAddressModeClamp, cudaFilterModePoint,
                                    cudaReadModeElementType, false);
    // lookups inside texels (never near their edges), and past both ends (clamped)
    const int n = 1000;
    std::vector<float> x(n);
    for (int i = 0; i < n; i++) x[i] = (float)((int)(rng.next() % 300) - 20) + 0.125f + 0.25f * (i % 4);
    float* dx = to_device(x);
    float* dout;
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    sample1d<<<blocks(n), 128>>>(t, dx, dout, n);
    CHECK(cudaGetLastError());
    std::vector<float> got = to_host(dout, n);
    m.mode[0] = cudaAddressModeClamp;
    check("1D point lookup table", m, x.data(), 1, got.data(), n, 0.0);
    CHECK(cudaDestroyTextureObject(t));

    // tex1Dfetch from linear memory: integer indices, zeros out of range
    std::vector<int> table(1000), idx(n);
    for (int i = 0; i < 1000; i++) table[i] = (int)rng.next();
    for (int i = 0; i < n; i++) idx[i] = (int)(rng.next() % 1100) - 50;
    int* dtable = to_device(table);
    int* didx = to_device(idx);
    int* dres;
    CHECK(cudaMalloc(&dres, n * sizeof(int)));
    cudaResourceDesc lin = {};
    lin.resType = cudaResourceTypeLinear;
    lin.res.linear.devPtr = dtable;
    lin.res.linear.desc = cudaCreateChannelDesc<int>();
    lin.res.linear.sizeInBytes = 1000 * sizeof(int);
    cudaTextureObject_t tl = texture(lin, cudaAddressModeClamp, cudaAddressModeClamp,
                                     cudaAddressModeClamp, cudaFilterModePoint,
                                     cudaReadModeElementType, false);
    fetch1d<<<blocks(n), 128>>>(tl, didx, dres, n);
    CHECK(cudaGetLastError());
    std::vector<int> fetched = to_host(dres, n);
    for (int i = 0; i < n; i++) {
        int want = idx[i] >= 0 && idx[i] < 1000 ? table[idx[i]] : 0;
        if (fetched[i] != want) {
            if (failures++ < 10)
                printf("tex1Dfetch(%d) = %d, expected %d\n", idx[i], fetched[i], want);
        }
    }
    CHECK(cudaDestroyTextureObject(tl));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dtable));
    CHECK(cudaFree(didx));
    CHECK(cudaFree(dres));
    CHECK(cudaFreeArray(arr));
}

static void volume_3d(Lcg& rng) {
    const int W = 9, H = 7, D = 5, n = 2000;
    Model m{3, {W, H, D}, 1, std::vector<float>(W * H * D), true, true};
    for (auto& v : m.texels) v = rng.uniform();
    cudaChannelFormatDesc ch = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMalloc3DArray(&arr, &ch, make_cudaExtent(W, H, D)));
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(m.texels.data(), W * sizeof(float), W, H);
    p.dstArray = arr;
    p.extent = make_cudaExtent(W, H, D);
    p.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&p));
    cudaResourceDesc res = array_resource(arr);
    cudaTextureObject_t t = texture(res, cudaAddressModeClamp, cudaAddressModeWrap,
                                    cudaAddressModeMirror, cudaFilterModeLinear,
                                    cudaReadModeElementType, true);
    std::vector<float4> pts(n);
    for (auto& q : pts) q = make_float4(rng.uniform() * 1.4f - 0.2f, rng.uniform() * 1.4f - 0.2f,
                                        rng.uniform() * 1.4f - 0.2f, 0.0f);
    float4* dp = to_device(pts);
    float* dout;
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    sample3d<<<blocks(n), 128>>>(t, dp, dout, n);
    CHECK(cudaGetLastError());
    std::vector<float> got = to_host(dout, n);
    m.mode[0] = cudaAddressModeClamp;
    m.mode[1] = cudaAddressModeWrap;
    m.mode[2] = cudaAddressModeMirror;
    check("3D trilinear", m, &pts[0].x, 4, got.data(), n, 2e-6);
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFree(dp));
    CHECK(cudaFree(dout));
    CHECK(cudaFreeArray(arr));
}

static void surfaces() {
    const int W = 37, H = 29;
    cudaChannelFormatDesc c4 = cudaCreateChannelDesc<uchar4>(), cf = cudaCreateChannelDesc<float>();
    cudaArray_t a4, af;
    CHECK(cudaMallocArray(&a4, &c4, W, H, cudaArraySurfaceLoadStore));
    CHECK(cudaMallocArray(&af, &cf, W, H, cudaArraySurfaceLoadStore));
    cudaResourceDesc r4 = array_resource(a4), rf = array_resource(af);
    cudaSurfaceObject_t s4, sf;
    CHECK(cudaCreateSurfaceObject(&s4, &r4));
    CHECK(cudaCreateSurfaceObject(&sf, &rf));
    cudaTextureObject_t t = texture(r4, cudaAddressModeClamp, cudaAddressModeClamp,
                                    cudaAddressModeClamp, cudaFilterModePoint,
                                    cudaReadModeElementType, false);
    fill_surface<<<dim3(2, H), 32>>>(s4, sf, W, H);  // 64 threads a row for 37 elements
    CHECK(cudaGetLastError());
    uchar4 *dsurf, *dtex;
    float* dedges;
    CHECK(cudaMalloc(&dsurf, W * H * sizeof(uchar4)));
    CHECK(cudaMalloc(&dtex, W * H * sizeof(uchar4)));
    CHECK(cudaMalloc(&dedges, 2 * W * H * sizeof(float)));
    read_surface<<<dim3(2, H), 32>>>(s4, sf, t, dsurf, dtex, dedges, W, H);
    CHECK(cudaGetLastError());
    std::vector<uchar4> vs = to_host(dsurf, W * H), vt = to_host(dtex, W * H);
    std::vector<float> edges = to_host(dedges, 2 * W * H);
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uchar4 want = make_uchar4(x, y, (x * 7) ^ y, 255 - x);
            const uchar4 &s = vs[y * W + x], &tv = vt[y * W + x];
            bool ok = s.x == want.x && s.y == want.y && s.z == want.z && s.w == want.w &&
                      tv.x == want.x && tv.y == want.y && tv.z == want.z && tv.w == want.w;
            int ex = x + 3, ey = y - 2;
            bool inside = ex < W && ey >= 0;
            int cx = ex < W ? ex : W - 1, cy = ey < 0 ? 0 : ey;
            ok &= edges[2 * (y * W + x)] == (inside ? (float)(ex * 1000 + ey) : 0.0f);
            ok &= edges[2 * (y * W + x) + 1] == (float)(cx * 1000 + cy);
            if (!ok && bad++ < 5)
                printf("surface (%d, %d): surf (%d %d %d %d) tex (%d %d %d %d) edges %g %g\n", x,
                       y, s.x, s.y, s.z, s.w, tv.x, tv.y, tv.z, tv.w, edges[2 * (y * W + x)],
                       edges[2 * (y * W + x) + 1]);
        }
    if (bad) {
        failures++;
        printf("surfaces: %d of %d elements wrong\n", bad, W * H);
    }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaDestroySurfaceObject(s4));
    CHECK(cudaDestroySurfaceObject(sf));
    CHECK(cudaFree(dsurf));
    CHECK(cudaFree(dtex));
    CHECK(cudaFree(dedges));
    CHECK(cudaFreeArray(a4));
    CHECK(cudaFreeArray(af));
}

int main() {
    Lcg rng{2024};
    rotate_2d(rng);
    resize_uchar4(rng);
    lookup_tables(rng);
    volume_3d(rng);
    surfaces();
    if (failures) {
        printf("FAIL: %d check(s) failed\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
