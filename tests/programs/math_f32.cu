// math_f32: single-precision math library and intrinsics against the host's
// double-precision libm, each within the error bound that the CUDA Math API
// documents (bound vs the correctly rounded result, plus 1 ulp of slack);
// IEEE operations, roundings, conversions and NaN rules bit-exact.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
    double uniform(double lo, double hi) { return lo + (hi - lo) * ((next() >> 8) * (1.0 / 16777216.0)); }
    double log_uniform(double lo, double hi) { return exp(uniform(log(lo), log(hi))); }
};

enum Func { EXPF, LOGF, SINF, COSF, POWF, SQRTF, RSQRTF, DIV, FMAF, FAST_EXP, FAST_DIV, FAST_SIN,
            FAST_LOG, FMINF, FMAXF, F2I_RN, F2I_RZ, F2I_RD, F2I_RU, F2U_RN, RINTF, ROUNDF, MUL_RZ,
            MUL_RU, MUL_RD, U2F_RZ, I2F_RN, SATURATE, NFUNC };
enum Check { EXACT, ULP, ULP_FAST_EXP, ABS };
struct Spec { const char* name; Check check; double bound; };
static const Spec specs[NFUNC] = {
    {"expf", ULP, 2}, {"logf", ULP, 1}, {"sinf", ULP, 2}, {"cosf", ULP, 2}, {"powf", ULP, 8},
    {"sqrtf", EXACT, 0}, {"rsqrtf", ULP, 2}, {"x/y", EXACT, 0}, {"fmaf", EXACT, 0},
    {"__expf", ULP_FAST_EXP, 2}, {"__fdividef", ULP, 2}, {"__sinf", ABS, 0x1p-21},
    {"__logf", ABS, 0x1p-21}, {"fminf", EXACT, 0}, {"fmaxf", EXACT, 0},
    {"__float2int_rn", EXACT, 0}, {"__float2int_rz", EXACT, 0}, {"__float2int_rd", EXACT, 0},
    {"__float2int_ru", EXACT, 0}, {"__float2uint_rn", EXACT, 0}, {"rintf", EXACT, 0},
    {"roundf", EXACT, 0}, {"__fmul_rz", EXACT, 0}, {"__fmul_ru", EXACT, 0}, {"__fmul_rd", EXACT, 0},
    {"__uint2float_rz", EXACT, 0}, {"__int2float_rn", EXACT, 0}, {"__saturatef", EXACT, 0}};

// One function per blockIdx.y; inputs and results are raw 32-bit words.
__global__ void math_kernel(const unsigned* in, unsigned* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, f = blockIdx.y;
    if (i >= n) return;
    const unsigned* w = in + (size_t)3 * (f * n + i);
    const float a = __uint_as_float(w[0]), b = __uint_as_float(w[1]), c = __uint_as_float(w[2]);
    float r = 0.0f;
    int ri = 0;
    bool is_int = false;
    switch (f) {
    case EXPF: r = expf(a); break;              case LOGF: r = logf(a); break;
    case SINF: r = sinf(a); break;              case COSF: r = cosf(a); break;
    case POWF: r = powf(a, b); break;           case SQRTF: r = sqrtf(a); break;
    case RSQRTF: r = rsqrtf(a); break;          case DIV: r = a / b; break;
    case FMAF: r = fmaf(a, b, c); break;        case FAST_EXP: r = __expf(a); break;
    case FAST_DIV: r = __fdividef(a, b); break; case FAST_SIN: r = __sinf(a); break;
    case FAST_LOG: r = __logf(a); break;        case FMINF: r = fminf(a, b); break;
    case FMAXF: r = fmaxf(a, b); break;         case RINTF: r = rintf(a); break;
    case ROUNDF: r = roundf(a); break;          case SATURATE: r = __saturatef(a); break;
    case MUL_RZ: r = __fmul_rz(a, b); break;    case MUL_RU: r = __fmul_ru(a, b); break;
    case MUL_RD: r = __fmul_rd(a, b); break;    case U2F_RZ: r = __uint2float_rz(w[0]); break;
    case I2F_RN: r = __int2float_rn((int)w[0]); break;
    case F2I_RN: ri = __float2int_rn(a); is_int = true; break;
    case F2I_RZ: ri = __float2int_rz(a); is_int = true; break;
    case F2I_RD: ri = __float2int_rd(a); is_int = true; break;
    case F2I_RU: ri = __float2int_ru(a); is_int = true; break;
    case F2U_RN: ri = (int)__float2uint_rn(a); is_int = true; break;
    }
    out[(size_t)f * n + i] = is_int ? (unsigned)ri : __float_as_uint(r);
}

static float as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned as_bits(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static float toward(float f, double exact, int dir) {  // f = nearest float to exact; dir: 0 rz, 1 ru, -1 rd
    if (dir == 0 && fabs((double)f) > fabs(exact)) return nextafterf(f, 0.0f);
    if (dir == 1 && (double)f < exact) return nextafterf(f, INFINITY);
    if (dir == -1 && (double)f > exact) return nextafterf(f, -INFINITY);
    return f;
}
static unsigned f2i(float a, double rounded, bool is_unsigned) {  // PTX cvt: saturate, NaN -> 0
    if (std::isnan(a)) return 0u;
    if (is_unsigned) return rounded <= 0.0 ? 0u : rounded >= 4294967295.0 ? 0xffffffffu : (unsigned)rounded;
    if (rounded >= 2147483647.0) return 0x7fffffffu;
    if (rounded <= -2147483648.0) return 0x80000000u;
    return (unsigned)(int)rounded;
}

// The exact result in double (or the integer word) for function f.
static double reference(int f, float a, float b, float c, unsigned w0, unsigned* bits) {
    double x = a, y = b;
    switch (f) {
    case EXPF: case FAST_EXP: return exp(x);
    case LOGF: case FAST_LOG: return log(x);
    case SINF: case FAST_SIN: return sin(x);
    case COSF: return cos(x);
    case POWF: return pow(x, y);
    case RSQRTF: return 1.0 / sqrt(x);
    case FAST_DIV: return x / y;
    case SQRTF: *bits = as_bits(sqrtf(a)); break;
    case DIV: *bits = as_bits(a / b); break;
    case FMAF: *bits = as_bits(fmaf(a, b, c)); break;
    case FMINF: *bits = as_bits(fminf(a, b)); break;
    case FMAXF: *bits = as_bits(fmaxf(a, b)); break;
    case F2I_RN: *bits = f2i(a, rint(x), false); break;
    case F2I_RZ: *bits = f2i(a, trunc(x), false); break;
    case F2I_RD: *bits = f2i(a, floor(x), false); break;
    case F2I_RU: *bits = f2i(a, ceil(x), false); break;
    case F2U_RN: *bits = f2i(a, rint(x), true); break;
    case RINTF: *bits = as_bits(rintf(a)); break;
    case ROUNDF: *bits = as_bits(roundf(a)); break;
    case MUL_RZ: *bits = as_bits(toward((float)(x * y), x * y, 0)); break;  // x * y is exact in double
    case MUL_RU: *bits = as_bits(toward((float)(x * y), x * y, 1)); break;
    case MUL_RD: *bits = as_bits(toward((float)(x * y), x * y, -1)); break;
    case U2F_RZ: *bits = as_bits(toward((float)(double)w0, (double)w0, 0)); break;
    case I2F_RN: *bits = as_bits((float)(int)w0); break;
    case SATURATE: *bits = as_bits(std::isnan(a) ? 0.0f : fminf(fmaxf(a, 0.0f), 1.0f)); break;
    }
    return 0.0;
}

static const float specials[][3] = {
    {INFINITY, 2, 1}, {-INFINITY, 3, 1}, {NAN, 2, 1}, {0.0f, 0.5f, 1}, {1.0f, 1.0f, 1}, {-1.0f, 2.0f, 1},
    {2.5f, NAN, 1}, {-2.5f, -3.0f, 1}, {0.5f, 1e-3f, 1}, {-0.5f, 7.0f, 1}, {1.5f, -1.5f, 1},
    {3e9f, 2.0f, 1}, {-3e9f, 2.0f, 1}, {4.5e9f, 2.0f, 1}, {2147483520.0f, 1, 1}, {-2147483648.0f, 1, 1},
    {1e6f, 3, 1}, {-3e7f, 3, 1}, {100.0f, 2, 1}, {-110.0f, 2, 1}, {1e-40f, 2, 1}, {4294967040.0f, 1, 1}};

int main() {
    const int n = 16384, block = 128;
    const int nspecial = sizeof(specials) / sizeof(specials[0]);
    std::vector<unsigned> in((size_t)3 * NFUNC * n), out((size_t)NFUNC * n);
    Lcg rng{20250101u};
    for (int f = 0; f < NFUNC; ++f)
        for (int i = 0; i < n; ++i) {
            float a, b, c = (float)rng.uniform(-100, 100);
            double sign = (rng.next() & 256) ? 1.0 : -1.0;
            switch (f) {
            case EXPF: a = (float)rng.uniform(-30, 30); b = 0; break;
            case LOGF: case SQRTF: case RSQRTF: a = (float)rng.log_uniform(1e-30, 1e30); b = 0; break;
            case SINF: case COSF: a = (float)rng.uniform(-50, 50); b = 0; break;
            case POWF: a = (float)rng.uniform(0.1, 10); b = (float)rng.uniform(-8, 8); break;
            case FAST_EXP: a = (float)rng.uniform(-10, 10); b = 0; break;
            case FAST_SIN: a = (float)rng.uniform(-M_PI, M_PI); b = 0; break;
            case FAST_LOG: a = (float)rng.uniform(0.5, 2.0); b = 0; break;
            case DIV: case FAST_DIV: case MUL_RZ: case MUL_RU: case MUL_RD: case FMAF:
                a = (float)(sign * rng.log_uniform(1e-3, 1e6)); b = (float)(rng.log_uniform(1e-2, 1e3));
                if (rng.next() & 512) b = -b;
                break;
            case U2F_RZ: case I2F_RN: a = as_float(rng.next()); b = 0; break;
            case F2U_RN: a = (float)rng.uniform(-10, 5e9); b = 0; break;
            default:  // roundings, conversions, min/max: halves and quarters hit the ties
                a = (float)(rng.next() % 3 == 0 ? (int)(rng.next() % 4001) / 4.0 - 500 : rng.uniform(-5e9, 5e9));
                b = (float)rng.uniform(-600, 600);
                break;
            }
            bool special_ok = f != FAST_EXP && f != FAST_SIN && f != FAST_LOG && f != FAST_DIV &&
                              f != SINF && f != COSF && f != U2F_RZ && f != I2F_RN;
            if (i < nspecial && special_ok) { a = specials[i][0]; b = specials[i][1]; c = specials[i][2]; }
            if ((f == SINF || f == COSF) && i < 4) a = specials[16 + i % 2][0] * (i < 2 ? 1.0f : 0.3f);
            unsigned* w = &in[(size_t)3 * (f * n + i)];
            w[0] = as_bits(a); w[1] = as_bits(b); w[2] = as_bits(c);
        }
    unsigned *din, *dout;
    CHECK(cudaMalloc(&din, in.size() * sizeof(unsigned)));
    CHECK(cudaMalloc(&dout, out.size() * sizeof(unsigned)));
    CHECK(cudaMemcpy(din, in.data(), in.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    math_kernel<<<dim3((n + block - 1) / block, NFUNC), block>>>(din, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));

    for (int f = 0; f < NFUNC; ++f) {
        double worst = 0.0;
        for (int i = 0; i < n; ++i) {
            const unsigned* w = &in[(size_t)3 * (f * n + i)];
            const float a = as_float(w[0]), b = as_float(w[1]), c = as_float(w[2]);
            const unsigned got_bits = out[(size_t)f * n + i];
            const float got = as_float(got_bits);
            unsigned want_bits = 0;
            const double exact = reference(f, a, b, c, w[0], &want_bits);
            const Spec& s = specs[f];
            bool ok;
            double err = 0.0;
            if (s.check == EXACT) {
                const bool int_result = f >= F2I_RN && f <= F2U_RN;  // any NaN matches any NaN
                ok = got_bits == want_bits || (!int_result && std::isnan(got) && std::isnan(as_float(want_bits)));
            } else if (std::isnan(exact) || std::isinf((float)exact)) {  // NaN, or overflows float
                ok = std::isnan(exact) ? std::isnan(got) : got == (float)exact;
            } else if (s.check == ABS) {
                err = fabs((double)got - exact);
                ok = err <= s.bound;
            } else {
                int e = 0;
                if (exact != 0.0) frexp(exact, &e);  // |exact| in [2^(e-1), 2^e)
                double ulp = ldexp(1.0, (exact == 0.0 || e - 24 < -149) ? -149 : e - 24);
                double bound = s.check == ULP_FAST_EXP ? 2.0 + floor(fabs(1.173 * a)) : s.bound;
                err = fabs((double)got - exact) / ulp;
                ok = err <= bound + 1.0;
            }
            if (err > worst) worst = err;
            if (!ok) {
                printf("FAIL: %s(%.9g, %.9g, %.9g) = %.9g [0x%08x], expected %.9g [0x%08x]\n", s.name, a, b,
                       c, got, got_bits, s.check == EXACT ? as_float(want_bits) : exact, want_bits);
                return 1;
            }
        }
        if (specs[f].check != EXACT)
            printf("%-16s worst error %.3g %s\n", specs[f].name, worst, specs[f].check == ABS ? "abs" : "ulp");
    }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    printf("PASS\n");
    return 0;
}
