// textures: texture and surface objects, checked against a host model of the texture unit.
//
// The model is the CUDA Programming Guide's ("Texture Fetching": point sampling picks the
// texel under the coordinate; linear filtering subtracts half a texel and blends the two
// (four, eight) neighbours with weights "in 9-bit fixed point format with 8 bits of
// fractional value"; clamp, wrap, mirror and border act on texel indices) with the details
// an H200 showed (cuport/backends/cpu/texture_rt.py has the same rules; every filtered
// sample of this program is reproduced bit for bit):
// - coordinates: unnormalized x is exact; linear rounds (x - 0.5) * 256 to an integer,
//   ties up. A normalized u is truncated to 21 fraction bits (sizes up to 4096) and then
//   multiplied by the size exactly. In clamp mode the filter's coordinate is clamped to
//   [0, size - 1] before it is split into texel and weight.
// - weights, integers summing to 256: z splits first (256 - c, c), each part P along x into
//   q8(P a) and the rest, each (x, z) part P along y: for x = 1 into q8(P b) (y = 1) and the
//   rest, for x = 0 into q8(P (256 - b)) (y = 0) and the rest, q8(p) = (p + 128) >> 8.
// - f32 texels: those of nonzero weight are truncated to multiples of 2^(E - 27), E the
//   largest exponent among them; the weighted sum is exact and rounds once, ties away.
// - 8-bit texels read as normalized floats: filtered as 16-bit integers (k * 257),
//   n = (sum w t + 128) >> 8, result n / 65535.
// Every sample must match the model exactly; a failure also prints the value with exact
// (unquantized) weights, which the hardware's differs from by up to about a 1/256 weight step.
//
// Parts: a 2D float image rotated with bilinear filtering under wrap/mirror, border and
// clamp addressing (normalized coordinates); a bilinear resize of a uchar4 image read as
// normalized floats (unnormalized coordinates computed in the kernel); a 1D point-sampled
// lookup table from a CUDA array and tex1Dfetch from linear memory (zeros out of range);
// a 3D texture with trilinear filtering; surface writes, reads (boundary modes zero and
// clamp) and a texture reading what the surface wrote.
#include <algorithm>
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

// texel-space coordinate as fixed point with 8 fractional bits, minus half a texel when linear
static long long texel_fixed(float u, int n, bool normalized, bool linear) {
    if (std::isnan(u) || fabsf(u) < 1.17549435e-38f) u = 0.0f;  // denormals are zero
    if (std::isinf(u)) return u > 0 ? 2147483647LL : -2147483648LL;
    long long f;
    if (normalized) {
        long long q = (long long)floor((double)u * 2097152.0);  // 2^21, exact
        if (q > (1LL << 40)) q = 1LL << 40;
        if (q < -(1LL << 40)) q = -(1LL << 40);
        long long p = q * n;  // texel coordinate * 2^21
        f = linear ? (p + (1LL << 12)) >> 13 : p >> 13;  // arithmetic shift: floor
    } else {
        double s = (double)u * 256.0;  // exact
        f = (long long)floor(linear ? s + 0.5 : s);
    }
    if (linear) f -= 128;
    if (f > 2147483647LL) f = 2147483647LL;
    if (f < -2147483648LL) f = -2147483648LL;
    return f;
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

static int q8(int p) { return (p + 128) >> 8; }

// the corner weights (sum 256) for fractions a, b, c; corner bit k = the upper texel on axis k
static void corner_weights(int dims, const int* frac, int* w) {
    int a = frac[0], b = dims > 1 ? frac[1] : 0, c = dims > 2 ? frac[2] : 0;
    for (int k = 0; k < 8; k++) w[k] = 0;
    for (int z = 0; z < (dims > 2 ? 2 : 1); z++) {
        int zw = z ? c : 256 - c;
        int p1 = q8(zw * a), part[2] = {zw - p1, p1};
        for (int x = 0; x < 2; x++) {
            int p = part[x], lo, hi;
            if (x) {
                hi = q8(p * b);
                lo = p - hi;
            } else {
                lo = q8(p * (256 - b));
                hi = p - lo;
            }
            w[x | (z << 2)] += lo;  // corner bits: x, y, z
            if (dims > 1) w[x | 2 | (z << 2)] += hi;
        }
    }
}

// the f32 filter: truncate to multiples of 2^(E - 27), sum exactly, round once (ties away)
static float blend_f32(int n, const int* w, const float* v) {
    int emax = -1000;
    for (int k = 0; k < n; k++)
        if (w[k] && v[k] != 0.0f && fabsf(v[k]) >= 1.17549435e-38f) emax = std::max(emax, ilogbf(v[k]));
    if (emax == -1000) return 0.0f;
    long long s = 0;  // in units of 2^(emax - 27) / 256
    for (int k = 0; k < n; k++) {
        if (!w[k] || fabsf(v[k]) < 1.17549435e-38f) continue;
        s += (long long)w[k] * (long long)ldexp((double)v[k], 27 - emax);  // truncates
    }
    if (s == 0) return 0.0f;
    unsigned long long m = s < 0 ? -s : s;
    int len = 64 - __builtin_clzll(m), sh = len > 24 ? len - 24 : 0;
    if (sh) m = (m + (1ULL << (sh - 1))) >> sh;
    double r = ldexp((double)m, emax - 27 - 8 + sh);
    float out = (float)(s < 0 ? -r : r);  // exact (or infinite)
    return fabsf(out) < 1.17549435e-38f ? copysignf(0.0f, out) : out;
}

struct Model {
    int dims, size[3], channels;
    std::vector<float> texels;  // decoded values, [((z * h + y) * w + x) * channels + c]
    bool normalized, linear;
    cudaTextureAddressMode mode[3];
    float border[4];
    bool unorm8;  // 8-bit texels read as normalized floats (texels holds k / 255)

    // exact: the textbook bilinear/trilinear value (unquantized weights), for diagnostics
    void sample(const float* coord, bool exact, double* out) const {
        int i0[3] = {0, 0, 0}, frac[3] = {0, 0, 0};
        double a[3] = {0, 0, 0};
        for (int k = 0; k < dims; k++) {
            if (exact) {
                double x = normalized ? (double)coord[k] * size[k] : (double)coord[k];
                if (linear) x -= 0.5;
                i0[k] = (int)floor(x);
                a[k] = linear ? x - floor(x) : 0.0;
                continue;
            }
            long long f = texel_fixed(coord[k], size[k], normalized, linear);
            if (linear && mode[k] == cudaAddressModeClamp)
                f = f < 0 ? 0 : (f > (size[k] - 1) * 256LL ? (size[k] - 1) * 256LL : f);
            i0[k] = (int)(f >> 8);
            frac[k] = (int)(f & 255);
        }
        int w[8];
        if (linear && !exact) corner_weights(dims, frac, w);
        int ncorners = linear ? 1 << dims : 1;
        float vals[4][8];
        double wd[8];
        for (int corner = 0; corner < ncorners; corner++) {
            int idx[3] = {0, 0, 0};
            bool outside = false;
            wd[corner] = 1.0;
            for (int k = 0; k < dims; k++) {
                int hi = (corner >> k) & 1;
                wd[corner] *= hi ? a[k] : 1.0 - a[k];
                idx[k] = address(i0[k] + hi, size[k], mode[k]);
                outside |= idx[k] < 0;
            }
            for (int c = 0; c < channels; c++) {
                size_t at = (((size_t)idx[2] * size[1] + idx[1]) * size[0] + idx[0]) * channels + c;
                vals[c][corner] = outside ? border[c] : texels[at];
            }
        }
        for (int c = 0; c < channels; c++) {
            if (!linear) {
                out[c] = vals[c][0];
            } else if (exact) {
                out[c] = 0.0;
                for (int k = 0; k < ncorners; k++) out[c] += wd[k] * vals[c][k];
            } else if (unorm8) {
                long long s = 128;
                for (int k = 0; k < ncorners; k++) s += (long long)w[k] * lrint(vals[c][k] * 65535.0);
                out[c] = (float)(s >> 8) / 65535.0f;
            } else {
                out[c] = blend_f32(ncorners, w, vals[c]);
            }
        }
    }
};

static int failures = 0;

// compare n results (channels each) with the model at each coordinate, bit for bit
static void check(const char* what, const Model& m, const float* coords, int stride,
                  const float* got, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double ref[4];
        m.sample(coords + (size_t)i * stride, false, ref);
        bool ok = true;
        for (int c = 0; c < m.channels; c++) ok &= got[i * m.channels + c] == (float)ref[c];
        if (ok) continue;
        if (bad++ < 5) {
            double ex[4];
            m.sample(coords + (size_t)i * stride, true, ex);
            printf("  %s: sample %d at (%.9g, %.9g, %.9g): got %.9g, expected %.9g "
                   "(unquantized weights: %.9g)\n", what, i, coords[(size_t)i * stride],
                   m.dims > 1 ? coords[(size_t)i * stride + 1] : 0.f,
                   m.dims > 2 ? coords[(size_t)i * stride + 2] : 0.f, got[i * m.channels],
                   (float)ref[0], (float)ex[0]);
        }
    }
    printf("%s: %d of %d samples match the model bit for bit\n", what, n - bad, n);
    if (bad) failures++;
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
        check(md.name, m, &uv[0].x, 2, got.data(), N * N);
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
    m.unorm8 = true;
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
    check("uchar4 bilinear resize (normalized float reads)", m, &uv[0].x, 2, &got[0].x, OW * OH);
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
    check("1D point lookup table", m, x.data(), 1, got.data(), n);
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
    check("3D trilinear", m, &pts[0].x, 4, got.data(), n);
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
