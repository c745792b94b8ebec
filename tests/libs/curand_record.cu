// Records cuRAND's host API on a GPU, for tests/libs/test_curand.py: every generator type,
// the orderings, seeds and offsets CuPy and the CUDA samples use, every generation
// function, continued calls and odd counts. One line per call:
//   GEN ORDER seed offset dims call n param status hash first... | mid... | tail...
// where hash is a checksum of the whole output (the sum of word i times 2i+1, mod 2^64), `first` its first 64 words, `mid`
// the 16 words from 4088 on and `tail` its last 16 (words: 32-bit for float/uint outputs,
// 64-bit for double/long long), all hex; status is the call's curandStatus_t (the rest of
// the line is left out when it is not 0). Built by tests/libs/record_gpu.sh with NVIDIA's
// libcurand; not run by the suite (cuport's model of the order is checked against it).
#include <curand.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); exit(2); } } while (0)

struct Gen { curandRngType_t type; const char* name; bool quasi; };
static const Gen GENS[] = {
    {CURAND_RNG_PSEUDO_XORWOW, "XORWOW", false},
    {CURAND_RNG_PSEUDO_MRG32K3A, "MRG32K3A", false},
    {CURAND_RNG_PSEUDO_MTGP32, "MTGP32", false},
    {CURAND_RNG_PSEUDO_MT19937, "MT19937", false},
    {CURAND_RNG_PSEUDO_PHILOX4_32_10, "PHILOX4_32_10", false},
    {CURAND_RNG_QUASI_SOBOL32, "SOBOL32", true},
    {CURAND_RNG_QUASI_SCRAMBLED_SOBOL32, "SCRAMBLED_SOBOL32", true},
    {CURAND_RNG_QUASI_SOBOL64, "SOBOL64", true},
    {CURAND_RNG_QUASI_SCRAMBLED_SOBOL64, "SCRAMBLED_SOBOL64", true},
};
struct Order { int value; const char* name; };
static const Order ORDERS[] = {
    {-1, "NONE"}, {CURAND_ORDERING_PSEUDO_BEST, "PSEUDO_BEST"},
    {CURAND_ORDERING_PSEUDO_DEFAULT, "PSEUDO_DEFAULT"}, {CURAND_ORDERING_PSEUDO_SEEDED, "PSEUDO_SEEDED"},
    {CURAND_ORDERING_PSEUDO_LEGACY, "PSEUDO_LEGACY"}, {CURAND_ORDERING_PSEUDO_DYNAMIC, "PSEUDO_DYNAMIC"},
    {CURAND_ORDERING_QUASI_DEFAULT, "QUASI_DEFAULT"},
};
enum Call { RAW, LONGLONG, UNIFORM, UNIFORM_DOUBLE, NORMAL, NORMAL_DOUBLE, LOG_NORMAL,
            LOG_NORMAL_DOUBLE, POISSON };
static const char* CALLS[] = {"raw", "longlong", "uniform", "uniform_double", "normal",
                              "normal_double", "log_normal", "log_normal_double", "poisson"};

static void* dbuf;
static std::vector<unsigned char> hbuf;

struct Setup { const Gen* g; const Order* o; unsigned long long seed, offset; unsigned dims; bool host; };

static curandGenerator_t make(const Setup& s, int* status) {
    curandGenerator_t gen;
    *status = s.host ? curandCreateGeneratorHost(&gen, s.g->type) : curandCreateGenerator(&gen, s.g->type);
    if (*status) return 0;
    if (!s.g->quasi) *status = curandSetPseudoRandomGeneratorSeed(gen, s.seed);
    if (!*status && s.offset) *status = curandSetGeneratorOffset(gen, s.offset);
    if (!*status && s.g->quasi && s.dims > 1) *status = curandSetQuasiRandomGeneratorDimensions(gen, s.dims);
    if (!*status && s.o->value >= 0) *status = curandSetGeneratorOrdering(gen, (curandOrdering_t)s.o->value);
    return gen;
}

static void generate(curandGenerator_t gen, const Setup& s, Call c, size_t n, double param,
                     const char* tag) {
    size_t width = (c == UNIFORM_DOUBLE || c == NORMAL_DOUBLE || c == LOG_NORMAL_DOUBLE || c == LONGLONG) ? 8 : 4;
    void* out = s.host ? (void*)hbuf.data() : dbuf;
    int st = 0;
    switch (c) {
    case RAW: st = curandGenerate(gen, (unsigned*)out, n); break;
    case LONGLONG: st = curandGenerateLongLong(gen, (unsigned long long*)out, n); break;
    case UNIFORM: st = curandGenerateUniform(gen, (float*)out, n); break;
    case UNIFORM_DOUBLE: st = curandGenerateUniformDouble(gen, (double*)out, n); break;
    case NORMAL: st = curandGenerateNormal(gen, (float*)out, n, 0.0f, 1.0f); break;
    case NORMAL_DOUBLE: st = curandGenerateNormalDouble(gen, (double*)out, n, 0.0, 1.0); break;
    case LOG_NORMAL: st = curandGenerateLogNormal(gen, (float*)out, n, 0.5f, 0.75f); break;
    case LOG_NORMAL_DOUBLE: st = curandGenerateLogNormalDouble(gen, (double*)out, n, 0.5, 0.75); break;
    case POISSON: st = curandGeneratePoisson(gen, (unsigned*)out, n, param); break;
    }
    printf("%s %s %llu %llu %u %s %zu %g%s status %d", s.g->name, s.o->name, s.seed, s.offset,
           s.dims, CALLS[c], n, param, tag, st);
    if (st) { printf("\n"); return; }
    if (!s.host) {
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hbuf.data(), dbuf, n * width, cudaMemcpyDeviceToHost));
    }
    unsigned long long h = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long long w = 0;
        memcpy(&w, &hbuf[i * width], width);
        h += w * (2 * (unsigned long long)i + 1);
    }
    printf(" hash %016llx first", h);
    auto word = [&](size_t i) {
        if (width == 4) { unsigned w; memcpy(&w, &hbuf[i * 4], 4); printf(" %x", w); }
        else { unsigned long long w; memcpy(&w, &hbuf[i * 8], 8); printf(" %llx", w); }
    };
    for (size_t i = 0; i < 64 && i < n; i++) word(i);
    if (n >= 4104) { printf(" | mid"); for (size_t i = 4088; i < 4104; i++) word(i); }
    if (n > 64) { printf(" | tail"); for (size_t i = n - 16; i < n; i++) word(i); }
    printf("\n");
}

static void one(const Setup& s, Call c, size_t n, double param = 0) {
    int st;
    curandGenerator_t gen = make(s, &st);
    if (st) {
        printf("%s %s %llu %llu %u %s %zu %g setup status %d\n", s.g->name, s.o->name, s.seed,
               s.offset, s.dims, CALLS[c], n, param, st);
        if (gen) curandDestroyGenerator(gen);
        return;
    }
    generate(gen, s, c, n, param, "");
    curandDestroyGenerator(gen);
}

int main() {
    const size_t N = 1 << 18;
    CK(cudaMalloc(&dbuf, N * 8 * 4));
    hbuf.resize(N * 8 * 4);
    int version; curandGetVersion(&version);
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("# cuRAND %d on %s (%d SMs)\n", version, prop.name, prop.multiProcessorCount);
    const Order* none = &ORDERS[0];
    const double LAMBDAS[] = {0.5, 10.0, 100.0, 2000.0, 5000.0};
    for (const Gen& g : GENS) {
        if (!g.quasi) {
            for (unsigned long long seed : {0ull, 1234ull, 0x123456789abcdefull}) {
                Setup s{&g, none, seed, 0, 1, false};
                for (Call c : {RAW, UNIFORM, NORMAL, LOG_NORMAL}) one(s, c, N);
                for (Call c : {UNIFORM_DOUBLE, NORMAL_DOUBLE, LOG_NORMAL_DOUBLE}) one(s, c, N / 2);
                for (double l : LAMBDAS) one(s, POISSON, N / 4, l);
            }
            for (unsigned long long offset : {5ull, 4097ull, 100000ull}) {
                Setup s{&g, none, 1234, offset, 1, false};
                for (Call c : {RAW, UNIFORM, NORMAL}) one(s, c, N / 4);
                one(s, UNIFORM_DOUBLE, N / 8);
            }
            for (int o = 1; o <= 5; o++) {
                Setup s{&g, &ORDERS[o], 1234, 0, 1, false};
                one(s, RAW, N); one(s, NORMAL, N / 4); one(s, UNIFORM_DOUBLE, N / 8);
            }
            {   // one generator, calls in a row: do they continue one sequence?
                Setup s{&g, none, 1234, 0, 1, false};
                int st; curandGenerator_t gen = make(s, &st);
                if (!st) {
                    generate(gen, s, RAW, 1000, 0, " call1");
                    generate(gen, s, RAW, 3000, 0, " call2");
                    generate(gen, s, RAW, 4097 * 3 + 1, 0, " call3");
                    generate(gen, s, NORMAL, 2000, 0, " call4");
                    generate(gen, s, UNIFORM, 5000, 0, " call5");
                    generate(gen, s, NORMAL, 7, 0, " call6");
                    curandDestroyGenerator(gen);
                }
            }
            {   // past one round of every order's states (Philox's 65536 threads, MRG32k3a's
                // 81920 lanes, MTGP32's 192 blocks), calls ending part-way, then a new seed
                Setup s{&g, none, 11, 0, 1, false};
                int st; curandGenerator_t gen = make(s, &st);
                if (!st) {
                    generate(gen, s, RAW, 300001, 0, " big1");
                    generate(gen, s, UNIFORM_DOUBLE, 262150, 0, " big2");
                    generate(gen, s, NORMAL, 200002, 0, " big3");
                    generate(gen, s, POISSON, 100001, 3000, " big4");
                    generate(gen, s, NORMAL_DOUBLE, 70002, 0, " big5");
                    generate(gen, s, POISSON, 90001, 20, " big6");
                    int rs = curandSetPseudoRandomGeneratorSeed(gen, 12);
                    generate(gen, s, RAW, 5000, 0, rs ? " big7-reseed-failed" : " big7");
                    curandDestroyGenerator(gen);
                }
            }
            one(Setup{&g, none, 1234, 0, 1, false}, RAW, 4097 * 3 + 1);
            one(Setup{&g, none, 777, 0, 1, true}, RAW, N / 4);
            one(Setup{&g, none, 777, 0, 1, true}, NORMAL, N / 4);
        } else {
            bool wide = strstr(g.name, "64") != 0;
            for (unsigned dims : {1u, 3u, 100u})
                for (unsigned long long offset : {0ull, 7ull}) {
                    Setup s{&g, none, 0, offset, dims, false};
                    one(s, wide ? LONGLONG : RAW, (size_t)dims * 4096);
                    one(s, UNIFORM, (size_t)dims * 4096);
                    one(s, UNIFORM_DOUBLE, (size_t)dims * 2048);
                    one(s, NORMAL, (size_t)dims * 4096);
                    one(s, NORMAL_DOUBLE, (size_t)dims * 2048);
                    one(s, POISSON, (size_t)dims * 2048, 10.0);
                }
            one(Setup{&g, none, 0, 0, 3, false}, UNIFORM, 3 * 4096 + 1);  // not a multiple
            one(Setup{&g, &ORDERS[6], 0, 0, 2, false}, UNIFORM, 2 * 4096);
            one(Setup{&g, &ORDERS[2], 0, 0, 2, false}, UNIFORM, 2 * 4096);
            {
                Setup s{&g, none, 0, 0, 2, false};
                int st; curandGenerator_t gen = make(s, &st);
                if (!st) {
                    generate(gen, s, UNIFORM, 2 * 1000, 0, " call1");
                    generate(gen, s, UNIFORM, 2 * 3000, 0, " call2");
                    curandDestroyGenerator(gen);
                }
            }
            one(Setup{&g, none, 0, 0, 5, true}, UNIFORM, 5 * 1024);
        }
    }
    printf("END\n");
    return 0;
}
