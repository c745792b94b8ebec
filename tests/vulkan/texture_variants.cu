// Texture objects of different formats, filters and address modes through the same kernels,
// launched alternately: the Vulkan backend compiles a variant of a kernel per kind of object
// its texture parameters hold (passes/texture_params.py), so a variant shared by two kinds
// would sample one of them as the other (a uchar4 texel decoded as a float, a border read as
// a clamp) and fail here. Every answer is checked against a host model at coordinates where
// the linear filter's weights are 0, 1/2 or 1 and the texels small integers, so the exact
// result is the GPU's too. Prints one checksum per launch (the test compares the CPU and
// Vulkan backends' lines), then PASS or FAIL.
#include <cstdio>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                         \
    do {                                                                                 \
        cudaError_t e_ = (x);                                                            \
        if (e_ != cudaSuccess) {                                                         \
            printf("%s failed: %s\n", #x, cudaGetErrorString(e_));                       \
            return 2;                                                                    \
        }                                                                                \
    } while (0)

// one object, coordinates from memory
__global__ void sample(cudaTextureObject_t t, const float2 *xy, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(t, xy[i].x, xy[i].y);
}

// two objects: a launch may pass them either way round
__global__ void pair(cudaTextureObject_t a, cudaTextureObject_t b, const float2 *xy,
                     const float2 *uv, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 p = tex2D<float4>(a, xy[i].x, xy[i].y);
        float4 q = tex2D<float4>(b, uv[i].x, uv[i].y);
        out[2 * i] = p;
        out[2 * i + 1] = q;
    }
}

// the object read from memory: no variant knows it (the sampler reads its descriptor)
__global__ void indirect(const cudaTextureObject_t *ts, const int *which, const float2 *xy,
                         float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(ts[which[i]], xy[i].x, xy[i].y);
}

struct Kind {
    const char *name;
    int channels;       // 1, 2 or 4
    bool bytes;         // unsigned char channels read as normalized floats, else float
    bool linear;        // filter
    bool normalized;    // coordinates
    cudaTextureAddressMode mode;
    float border[4];
};

static const int W = 8, H = 4;  // powers of 2: normalized coordinates are exact

static float texel(const Kind &k, int x, int y, int c) {  // the image, per channel
    if (k.bytes) return (unsigned char)(x * 37 + y * 101 + c * 59 + 13) / 255.0f;
    return (float)((x * 7 + y * 3 + c * 5) % 11 - 3);
}

// channel c of the element at (x, y) after the address mode (border: the border color)
static float lookup(const Kind &k, int x, int y, int c) {
    if (c >= k.channels) return c == 3 ? 1.0f : 0.0f;
    if (k.mode == cudaAddressModeBorder && (x < 0 || x >= W || y < 0 || y >= H)) return k.border[c];
    if (k.mode == cudaAddressModeWrap) {
        x = ((x % W) + W) % W;
        y = ((y % H) + H) % H;
    } else {  // clamp (and border inside)
        x = x < 0 ? 0 : x >= W ? W - 1 : x;
        y = y < 0 ? 0 : y >= H ? H - 1 : y;
    }
    return texel(k, x, y, c);
}

static float4 model(const Kind &k, float u, float v) {
    float x = k.normalized ? u * W : u, y = k.normalized ? v * H : v;
    float r[4];
    for (int c = 0; c < 4; c++) {
        if (!k.linear) {
            r[c] = lookup(k, (int)floorf(x), (int)floorf(y), c);
            continue;
        }
        float xb = x - 0.5f, yb = y - 0.5f;
        int i = (int)floorf(xb), j = (int)floorf(yb);
        float a = xb - i, b = yb - j;  // 0 or 1/2 at the coordinates used
        r[c] = (1 - a) * (1 - b) * lookup(k, i, j, c) + a * (1 - b) * lookup(k, i + 1, j, c) +
               (1 - a) * b * lookup(k, i, j + 1, c) + a * b * lookup(k, i + 1, j + 1, c);
    }
    return make_float4(r[0], r[1], r[2], r[3]);
}

// coordinates where the filter's weights are 0, 1/2 or 1, inside and outside the image
static std::vector<float2> coords(const Kind &k, int n, int seed) {
    std::vector<float2> xy(n);
    unsigned s = 12345u + seed;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        int hx = (int)(s >> 8) % (4 * W + 8) - 2 * W - 4;  // half texels, -W-2 .. W+2
        int hy = (int)(s >> 20) % (4 * H + 8) - 2 * H - 4;
        float x = hx * 0.5f + (k.linear ? 0.0f : 0.25f), y = hy * 0.5f + (k.linear ? 0.0f : 0.25f);
        if (k.mode != cudaAddressModeWrap) {  // mostly inside, some beyond an edge
            x += W / 2;
            y += H / 2;
        }
        xy[i] = k.normalized ? make_float2(x / W, y / H) : make_float2(x, y);
    }
    return xy;
}

static cudaTextureObject_t make(const Kind &k, cudaArray_t *arr) {
    cudaChannelFormatDesc f;
    int ch = k.channels;
    if (k.bytes)
        f = cudaCreateChannelDesc(8, ch > 1 ? 8 : 0, ch > 2 ? 8 : 0, ch > 2 ? 8 : 0,
                                  cudaChannelFormatKindUnsigned);
    else
        f = cudaCreateChannelDesc(32, ch > 1 ? 32 : 0, ch > 2 ? 32 : 0, ch > 2 ? 32 : 0,
                                  cudaChannelFormatKindFloat);
    if (cudaMallocArray(arr, &f, W, H) != cudaSuccess) return 0;
    size_t elem = (k.bytes ? 1 : 4) * ch;
    std::vector<unsigned char> data(W * H * elem);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < ch; c++) {
                unsigned char *p = &data[(y * W + x) * elem];
                if (k.bytes)
                    p[c] = (unsigned char)(x * 37 + y * 101 + c * 59 + 13);
                else {
                    float v = texel(k, x, y, c);
                    memcpy(p + 4 * c, &v, 4);
                }
            }
    if (cudaMemcpy2DToArray(*arr, 0, 0, data.data(), W * elem, W * elem, H,
                            cudaMemcpyHostToDevice) != cudaSuccess)
        return 0;
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = *arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = k.mode;
    td.filterMode = k.linear ? cudaFilterModeLinear : cudaFilterModePoint;
    td.readMode = k.bytes ? cudaReadModeNormalizedFloat : cudaReadModeElementType;
    td.normalizedCoords = k.normalized;
    for (int c = 0; c < 4; c++) td.borderColor[c] = k.border[c];
    cudaTextureObject_t t = 0;
    if (cudaCreateTextureObject(&t, &rd, &td, nullptr) != cudaSuccess) return 0;
    return t;
}

static unsigned checksum(const std::vector<float4> &v) {
    unsigned h = 2166136261u;
    for (const float4 &f : v) {
        const unsigned char *p = (const unsigned char *)&f;
        for (size_t i = 0; i < sizeof f; i++) h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

static int bad = 0;

static void compare(const char *what, const std::vector<float4> &got, const std::vector<float4> &want) {
    int wrong = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const float *g = &got[i].x, *w = &want[i].x;
        bool differs = false;
        for (int c = 0; c < 4; c++)
            if (g[c] != w[c]) {
                if (wrong < 3)
                    printf("  %s[%zu].%c = %.9g, want %.9g\n", what, i, "xyzw"[c], g[c], w[c]);
                differs = true;
            }
        wrong += differs;
    }
    printf("%s: %d of %zu samples wrong, checksum %08x\n", what, wrong, got.size(), checksum(got));
    bad += wrong;
}

int main() {
    const Kind kinds[] = {
        {"float linear clamp", 1, false, true, false, cudaAddressModeClamp, {0, 0, 0, 0}},
        {"uchar4 point wrap normalized", 4, true, false, true, cudaAddressModeWrap, {0, 0, 0, 0}},
        {"float2 linear border normalized", 2, false, true, true, cudaAddressModeBorder, {2, -4, 0, 1}},
        {"float4 point border", 4, false, false, false, cudaAddressModeBorder, {0.5f, 1, 2, 3}},
    };
    const int K = 4, n = 300;
    cudaArray_t arrays[K];
    cudaTextureObject_t tex[K];
    for (int k = 0; k < K; k++) {
        tex[k] = make(kinds[k], &arrays[k]);
        if (!tex[k]) {
            printf("texture %s could not be made\n", kinds[k].name);
            return 2;
        }
    }
    float2 *d_xy, *d_uv;
    float4 *d_out;
    CHECK(cudaMalloc(&d_xy, n * sizeof(float2)));
    CHECK(cudaMalloc(&d_uv, n * sizeof(float2)));
    CHECK(cudaMalloc(&d_out, 2 * n * sizeof(float4)));
    std::vector<float4> got(n), got2(2 * n);

    // one kernel, the objects alternately: each kind twice, interleaved
    const int order[] = {0, 1, 2, 3, 1, 0, 3, 2};
    for (int step = 0; step < 8; step++) {
        const Kind &k = kinds[order[step]];
        std::vector<float2> xy = coords(k, n, step);
        CHECK(cudaMemcpy(d_xy, xy.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
        sample<<<(n + 127) / 128, 128>>>(tex[order[step]], d_xy, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float4), cudaMemcpyDeviceToHost));
        std::vector<float4> want(n);
        for (int i = 0; i < n; i++) want[i] = model(k, xy[i].x, xy[i].y);
        char what[96];
        snprintf(what, sizeof what, "sample %d (%s)", step, k.name);
        compare(what, got, want);
    }

    // two parameters, passed both ways round
    const int pairs[][2] = {{0, 1}, {1, 0}, {2, 3}, {3, 2}, {0, 1}};
    for (int step = 0; step < 5; step++) {
        const Kind &ka = kinds[pairs[step][0]], &kb = kinds[pairs[step][1]];
        std::vector<float2> xy = coords(ka, n, 100 + step), uv = coords(kb, n, 200 + step);
        CHECK(cudaMemcpy(d_xy, xy.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_uv, uv.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
        pair<<<(n + 63) / 64, 64>>>(tex[pairs[step][0]], tex[pairs[step][1]], d_xy, d_uv, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got2.data(), d_out, 2 * n * sizeof(float4), cudaMemcpyDeviceToHost));
        std::vector<float4> want(2 * n);
        for (int i = 0; i < n; i++) {
            want[2 * i] = model(ka, xy[i].x, xy[i].y);
            want[2 * i + 1] = model(kb, uv[i].x, uv[i].y);
        }
        char what[128];
        snprintf(what, sizeof what, "pair %d (%s, %s)", step, ka.name, kb.name);
        compare(what, got2, want);
    }

    // objects from memory, a different one per thread
    {
        cudaTextureObject_t *d_t;
        int *d_which;
        CHECK(cudaMalloc(&d_t, sizeof tex));
        CHECK(cudaMalloc(&d_which, n * sizeof(int)));
        CHECK(cudaMemcpy(d_t, tex, sizeof tex, cudaMemcpyHostToDevice));
        std::vector<int> which(n);
        std::vector<float2> xy(n);
        for (int i = 0; i < n; i++) {
            which[i] = (i * 7 + i / 5) % K;
            xy[i] = coords(kinds[which[i]], 1, 300 + i)[0];
        }
        CHECK(cudaMemcpy(d_which, which.data(), n * sizeof(int), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d_xy, xy.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
        indirect<<<(n + 127) / 128, 128>>>(d_t, d_which, d_xy, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float4), cudaMemcpyDeviceToHost));
        std::vector<float4> want(n);
        for (int i = 0; i < n; i++) want[i] = model(kinds[which[i]], xy[i].x, xy[i].y);
        compare("indirect (objects from memory)", got, want);
        CHECK(cudaFree(d_t));
        CHECK(cudaFree(d_which));
    }

    // an object destroyed and another made: the launch sees the new one's kind
    CHECK(cudaDestroyTextureObject(tex[0]));
    CHECK(cudaFreeArray(arrays[0]));
    tex[0] = make(kinds[1], &arrays[0]);
    {
        std::vector<float2> xy = coords(kinds[1], n, 400);
        CHECK(cudaMemcpy(d_xy, xy.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
        sample<<<(n + 127) / 128, 128>>>(tex[0], d_xy, d_out, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(float4), cudaMemcpyDeviceToHost));
        std::vector<float4> want(n);
        for (int i = 0; i < n; i++) want[i] = model(kinds[1], xy[i].x, xy[i].y);
        compare("sample after a new object", got, want);
    }

    for (int k = 0; k < K; k++) {
        CHECK(cudaDestroyTextureObject(tex[k]));
        CHECK(cudaFreeArray(arrays[k]));
    }
    if (bad) {
        printf("FAIL: %d samples differ from the model\n", bad);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
