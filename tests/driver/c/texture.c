/* CUDA arrays, texture and surface objects through cuport's libcuda.so.1, as a C client
 * calls them: descriptors, round trips through the Get functions, NVIDIA's error codes for
 * bad descriptors, copies into layered and mipmapped arrays, and kernels (the CPU backend)
 * reading through resource views.
 * `texture LIBRARY layout`: sizes and offsets of the descriptor structs, one per line.
 * `texture LIBRARY objects`: the checks; prints PASS. */
#include <stddef.h>

#include "../../capi/c/harness.h"

#define API(X)                                                                              \
    X(cuInit) X(cuCtxCreate) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)  \
    X(cuMemcpyDtoH) X(cuMemcpy2D) X(cuMemcpy3D) X(cuMemcpyAtoH) X(cuArrayCreate)            \
    X(cuArray3DCreate) X(cuArray3DGetDescriptor) X(cuArrayDestroy) X(cuMipmappedArrayCreate) \
    X(cuMipmappedArrayGetLevel) X(cuMipmappedArrayDestroy) X(cuTexObjectCreate)              \
    X(cuTexObjectDestroy) X(cuTexObjectGetResourceDesc) X(cuTexObjectGetTextureDesc)         \
    X(cuTexObjectGetResourceViewDesc) X(cuSurfObjectCreate) X(cuSurfObjectDestroy)           \
    X(cuSurfObjectGetResourceDesc) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuLaunchKernel)

#define DECL(fn) static __typeof__(fn) *p_##fn;
API(DECL)

static void load_all(void)
{
#define LOAD(fn) p_##fn = (__typeof__(fn) *)sym(XSTR(fn));
    API(LOAD)
}

static void layout(void)
{
#define F(type, field) printf(#type " " #field " %zu\n", offsetof(type, field))
    printf("CUDA_RESOURCE_DESC size %zu\n", sizeof(CUDA_RESOURCE_DESC));
    F(CUDA_RESOURCE_DESC, resType);
    F(CUDA_RESOURCE_DESC, res.linear.devPtr);
    F(CUDA_RESOURCE_DESC, res.linear.format);
    F(CUDA_RESOURCE_DESC, res.linear.numChannels);
    F(CUDA_RESOURCE_DESC, res.linear.sizeInBytes);
    F(CUDA_RESOURCE_DESC, res.pitch2D.width);
    F(CUDA_RESOURCE_DESC, res.pitch2D.height);
    F(CUDA_RESOURCE_DESC, res.pitch2D.pitchInBytes);
    F(CUDA_RESOURCE_DESC, flags);
    printf("CUDA_TEXTURE_DESC size %zu\n", sizeof(CUDA_TEXTURE_DESC));
    F(CUDA_TEXTURE_DESC, filterMode);
    F(CUDA_TEXTURE_DESC, flags);
    F(CUDA_TEXTURE_DESC, maxAnisotropy);
    F(CUDA_TEXTURE_DESC, mipmapFilterMode);
    F(CUDA_TEXTURE_DESC, mipmapLevelBias);
    F(CUDA_TEXTURE_DESC, minMipmapLevelClamp);
    F(CUDA_TEXTURE_DESC, maxMipmapLevelClamp);
    F(CUDA_TEXTURE_DESC, borderColor);
    printf("CUDA_RESOURCE_VIEW_DESC size %zu\n", sizeof(CUDA_RESOURCE_VIEW_DESC));
    F(CUDA_RESOURCE_VIEW_DESC, width);
    F(CUDA_RESOURCE_VIEW_DESC, depth);
    F(CUDA_RESOURCE_VIEW_DESC, firstMipmapLevel);
    F(CUDA_RESOURCE_VIEW_DESC, lastLayer);
}

/* point-samples texel (1, 0) of layer 0 (a2d) and level 0 (2d, explicit lod 0), and queries */
static const char PTX[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry layers(.param .u64 t, .param .u64 out)\n{\n"
    "  .reg .b32 %r<4>; .reg .f32 %f<8>; .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out]; mov.b32 %r1, 0;\n"
    "  mov.f32 %f5, 0f3FC00000; mov.f32 %f6, 0f3F000000;\n"
    "  tex.a2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %f5, %f6, %f6}];\n"
    "  txq.array_size.b32 %r2, [%rd1]; txq.width.b32 %r3, [%rd1];\n"
    "  st.global.f32 [%rd2], %f1; st.global.u32 [%rd2+4], %r2; st.global.u32 [%rd2+8], %r3;\n"
    "  ret;\n}\n"
    ".visible .entry levels(.param .u64 t, .param .u64 out)\n{\n"
    "  .reg .b32 %r<4>; .reg .f32 %f<8>; .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out];\n"
    "  mov.f32 %f5, 0f3E800000; mov.f32 %f6, 0f00000000;\n"
    "  tex.level.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f5}], %f6;\n"
    "  txq.num_mipmap_levels.b32 %r2, [%rd1]; txq.width.b32 %r3, [%rd1];\n"
    "  st.global.f32 [%rd2], %f1; st.global.u32 [%rd2+4], %r2; st.global.u32 [%rd2+8], %r3;\n"
    "  ret;\n}\n";

struct Probe { float value; unsigned a, b; };

static struct Probe probe(CUmodule mod, const char *kernel, CUtexObject tex)
{
    CUfunction f;
    CUdeviceptr out;
    struct Probe p = {-1, 0, 0};
    OK(p_cuModuleGetFunction(&f, mod, kernel));
    OK(p_cuMemAlloc(&out, sizeof p));
    void *args[] = {&tex, &out};
    OK(p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL));
    OK(p_cuMemcpyDtoH(&p, out, sizeof p));
    OK(p_cuMemFree(out));
    return p;
}

static CUDA_RESOURCE_DESC array_res(CUarray a)
{
    CUDA_RESOURCE_DESC r;
    memset(&r, 0, sizeof r);
    r.resType = CU_RESOURCE_TYPE_ARRAY;
    r.res.array.hArray = a;
    return r;
}

static void test_arrays(void)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {4, 4, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP}, got;
    CUarray a;
    OK(p_cuArray3DCreate(&a, &d));
    OK(p_cuArray3DGetDescriptor(&got, a));
    CHECK(got.Width == 4 && got.Depth == 6 && got.Flags == CUDA_ARRAY3D_CUBEMAP);
    OK(p_cuArrayDestroy(a));
    d.Height = 5; /* faces must be square */
    EXPECT(p_cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.Height = 4;
    d.Depth = 5; /* six faces */
    EXPECT(p_cuArray3DCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
    d.Flags |= CUDA_ARRAY3D_LAYERED;
    d.Depth = 12; /* two cubes */
    OK(p_cuArray3DCreate(&a, &d));
    OK(p_cuArrayDestroy(a));
    CUDA_ARRAY3D_DESCRIPTOR bad[] = {
        {8, 0, 3, CU_AD_FORMAT_FLOAT, 1, 0},              /* 1D with a depth */
        {8, 8, 0, CU_AD_FORMAT_FLOAT, 3, 0},              /* three channels */
        {8, 8, 0, (CUarray_format)0x77, 1, 0},            /* no such format */
        {8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0x4000},         /* no such flag */
        {0, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0},              /* no width */
        {200000, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0},         /* past MAXIMUM_TEXTURE1D_WIDTH */
        {8, 8, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED}, /* layered without layers */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT(p_cuArray3DCreate(&a, &bad[i]), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR sparse = {8, 8, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE};
    EXPECT(p_cuArray3DCreate(&a, &sparse), CUDA_ERROR_NOT_SUPPORTED);
    CUDA_ARRAY3D_DESCRIPTOR bc = {8, 8, 0, CU_AD_FORMAT_BC1_UNORM, 1, 0};
    EXPECT(p_cuArray3DCreate(&a, &bc), CUDA_ERROR_NOT_SUPPORTED);

    /* a 3D copy into a layered array lands layer after layer, rows dense */
    CUDA_ARRAY3D_DESCRIPTOR ld = {3, 2, 4, CU_AD_FORMAT_UNSIGNED_INT16, 2, CUDA_ARRAY3D_LAYERED};
    OK(p_cuArray3DCreate(&a, &ld));
    unsigned short src[4][2][8], back[4][2][3][2];
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 8; x++) src[z][y][x] = (unsigned short)(z * 1000 + y * 100 + x);
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = sizeof src[0][0];
    c.srcHeight = 2;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = 3 * 4;
    c.Height = 2;
    c.Depth = 4;
    OK(p_cuMemcpy3D(&c));
    OK(p_cuMemcpyAtoH(back, a, 0, sizeof back));
    int same = 1;
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++)
                same &= back[z][y][x][0] == src[z][y][2 * x] && back[z][y][x][1] == src[z][y][2 * x + 1];
    CHECK(same);
    OK(p_cuArrayDestroy(a));

    /* mipmapped arrays: levels halve, each level is an array the copies accept */
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR md = {16, 6, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    EXPECT(p_cuMipmappedArrayCreate(&m, &md, 6), CUDA_ERROR_INVALID_VALUE); /* 16 wide: 5 levels */
    OK(p_cuMipmappedArrayCreate(&m, &md, 5));
    CUarray level;
    unsigned widths[] = {16, 8, 4, 2, 1}, heights[] = {6, 3, 1, 1, 1};
    for (unsigned k = 0; k < 5; k++) {
        OK(p_cuMipmappedArrayGetLevel(&level, m, k));
        OK(p_cuArray3DGetDescriptor(&got, level));
        CHECK(got.Width == widths[k] && got.Height == heights[k] && got.Depth == 0);
    }
    EXPECT(p_cuMipmappedArrayGetLevel(&level, m, 5), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuMipmappedArrayGetLevel(&level, m, 1));
    EXPECT(p_cuArrayDestroy(level), CUDA_ERROR_INVALID_VALUE); /* destroy the mipmapped array */
    float lv[3][8], lb[3][8];
    for (int i = 0; i < 24; i++) lv[i / 8][i % 8] = (float)i;
    CUDA_MEMCPY2D c2;
    memset(&c2, 0, sizeof c2);
    c2.srcMemoryType = CU_MEMORYTYPE_HOST;
    c2.srcHost = lv;
    c2.srcPitch = sizeof lv[0];
    c2.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c2.dstArray = level;
    c2.WidthInBytes = sizeof lv[0];
    c2.Height = 3;
    OK(p_cuMemcpy2D(&c2));
    OK(p_cuMemcpyAtoH(lb, level, 0, sizeof lb));
    CHECK(memcmp(lv, lb, sizeof lb) == 0);
    c2.Height = 4; /* level 1 has 3 rows */
    EXPECT(p_cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
    OK(p_cuMipmappedArrayDestroy(m));
    EXPECT(p_cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
}

static void test_texture_objects(void)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {4, 2, 5, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED};
    CUarray a;
    OK(p_cuArray3DCreate(&a, &d));
    float texels[5][2][4];
    for (int l = 0; l < 5; l++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 4; x++) texels[l][y][x] = (float)(100 * l + 10 * y + x);
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = texels;
    c.srcPitch = sizeof texels[0][0];
    c.srcHeight = 2;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = sizeof texels[0][0];
    c.Height = 2;
    c.Depth = 5;
    OK(p_cuMemcpy3D(&c));

    CUDA_RESOURCE_DESC res = array_res(a), res_back;
    CUDA_TEXTURE_DESC td, td_back;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = CU_TR_ADDRESS_MODE_BORDER;
    td.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    td.filterMode = CU_TR_FILTER_MODE_POINT;
    td.borderColor[2] = 0.5f;
    td.maxMipmapLevelClamp = 3.0f;
    CUDA_RESOURCE_VIEW_DESC view, view_back;
    memset(&view, 0, sizeof view);
    view.width = 4;
    view.height = 2;
    view.depth = 5;
    view.firstLayer = 2;
    view.lastLayer = 3;
    CUtexObject t, plain;
    OK(p_cuTexObjectCreate(&t, &res, &td, &view));
    CHECK(t != 0);
    OK(p_cuTexObjectGetResourceDesc(&res_back, t));
    CHECK(memcmp(&res, &res_back, sizeof res) == 0);
    OK(p_cuTexObjectGetTextureDesc(&td_back, t));
    CHECK(memcmp(&td, &td_back, sizeof td) == 0);
    OK(p_cuTexObjectGetResourceViewDesc(&view_back, t));
    CHECK(memcmp(&view, &view_back, sizeof view) == 0);
    OK(p_cuTexObjectCreate(&plain, &res, &td, NULL));
    EXPECT(p_cuTexObjectGetResourceViewDesc(&view_back, plain), CUDA_ERROR_INVALID_VALUE);

    CUmodule mod;
    OK(p_cuModuleLoadData(&mod, PTX));
    struct Probe p = probe(mod, "layers", t); /* layer 0 of the view is layer 2 */
    CHECK(p.value == 201.0f && p.a == 2 && p.b == 4);
    p = probe(mod, "layers", plain);
    CHECK(p.value == 1.0f && p.a == 5 && p.b == 4);
    OK(p_cuTexObjectDestroy(t));
    EXPECT(p_cuTexObjectDestroy(t), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuTexObjectGetTextureDesc(&td_back, t), CUDA_ERROR_INVALID_VALUE);

    /* a view of mip levels 1..3: its level 0 is the array's level 1 */
    CUmipmappedArray m;
    CUDA_ARRAY3D_DESCRIPTOR md = {8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    OK(p_cuMipmappedArrayCreate(&m, &md, 4));
    for (unsigned k = 0; k < 4; k++) {
        CUarray level;
        float fill[64];
        for (int i = 0; i < 64; i++) fill[i] = 10.0f * k + (float)i;
        OK(p_cuMipmappedArrayGetLevel(&level, m, k));
        CUDA_MEMCPY2D c2;
        memset(&c2, 0, sizeof c2);
        c2.srcMemoryType = CU_MEMORYTYPE_HOST;
        c2.srcHost = fill;
        c2.srcPitch = (8 >> k) * sizeof(float);
        c2.dstMemoryType = CU_MEMORYTYPE_ARRAY;
        c2.dstArray = level;
        c2.WidthInBytes = (8 >> k) * sizeof(float);
        c2.Height = 8 >> k;
        OK(p_cuMemcpy2D(&c2));
    }
    CUDA_RESOURCE_DESC mres;
    memset(&mres, 0, sizeof mres);
    mres.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    mres.res.mipmap.hMipmappedArray = m;
    memset(&td, 0, sizeof td);
    td.maxMipmapLevelClamp = 10.0f;
    EXPECT(p_cuTexObjectCreate(&t, &mres, &td, NULL), CUDA_ERROR_INVALID_VALUE); /* normalized */
    td.flags = CU_TRSF_NORMALIZED_COORDINATES;
    memset(&view, 0, sizeof view);
    view.width = view.height = 8;
    view.firstMipmapLevel = 1;
    view.lastMipmapLevel = 3;
    OK(p_cuTexObjectCreate(&t, &mres, &td, &view));
    p = probe(mod, "levels", t); /* (0.25, 0.25) of the 4x4 level 1: texel (1, 1) */
    CHECK(p.value == 15.0f && p.a == 3 && p.b == 4);
    OK(p_cuTexObjectDestroy(t));
    view.lastMipmapLevel = 4;
    EXPECT(p_cuTexObjectCreate(&t, &mres, &td, &view), CUDA_ERROR_INVALID_VALUE);
    view.lastMipmapLevel = 2;
    view.format = CU_RES_VIEW_FORMAT_UINT_1X32; /* reinterpreting texels */
    EXPECT(p_cuTexObjectCreate(&t, &mres, &td, &view), CUDA_ERROR_NOT_SUPPORTED);
    view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
    view.width = 16;
    EXPECT(p_cuTexObjectCreate(&t, &mres, &td, &view), CUDA_ERROR_INVALID_VALUE);

    /* descriptors NVIDIA's driver refuses */
    EXPECT(p_cuTexObjectCreate(&t, NULL, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuTexObjectCreate(&t, &res, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CUDA_RESOURCE_DESC r2 = res;
    r2.resType = (CUresourcetype)9;
    EXPECT(p_cuTexObjectCreate(&t, &r2, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    r2 = res;
    r2.flags = 1;
    EXPECT(p_cuTexObjectCreate(&t, &r2, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    CUDA_TEXTURE_DESC t2 = td;
    t2.addressMode[1] = (CUaddress_mode)7;
    EXPECT(p_cuTexObjectCreate(&t, &res, &t2, NULL), CUDA_ERROR_INVALID_VALUE);
    t2 = td;
    t2.filterMode = (CUfilter_mode)2;
    EXPECT(p_cuTexObjectCreate(&t, &res, &t2, NULL), CUDA_ERROR_INVALID_VALUE);
    t2 = td;
    t2.flags = 0x100;
    EXPECT(p_cuTexObjectCreate(&t, &res, &t2, NULL), CUDA_ERROR_INVALID_VALUE);
    t2 = td;
    t2.flags = CU_TRSF_SEAMLESS_CUBEMAP; /* not a cubemap */
    EXPECT(p_cuTexObjectCreate(&t, &res, &t2, NULL), CUDA_ERROR_INVALID_VALUE);

    /* linear and pitched memory: alignment, pitch and bounds */
    CUdeviceptr mem;
    OK(p_cuMemAlloc(&mem, 64 * 1024));
    CUDA_RESOURCE_DESC lin;
    memset(&lin, 0, sizeof lin);
    lin.resType = CU_RESOURCE_TYPE_LINEAR;
    lin.res.linear.devPtr = mem;
    lin.res.linear.format = CU_AD_FORMAT_SIGNED_INT32;
    lin.res.linear.numChannels = 1;
    lin.res.linear.sizeInBytes = 4096;
    OK(p_cuTexObjectCreate(&t, &lin, &td, NULL));
    OK(p_cuTexObjectDestroy(t));
    lin.res.linear.devPtr = mem + 4; /* CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT is 512 */
    EXPECT(p_cuTexObjectCreate(&t, &lin, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    lin.res.linear.devPtr = mem;
    lin.res.linear.sizeInBytes = 128 * 1024; /* past the allocation */
    EXPECT(p_cuTexObjectCreate(&t, &lin, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    lin.res.linear.sizeInBytes = 4096;
    lin.res.linear.numChannels = 3;
    EXPECT(p_cuTexObjectCreate(&t, &lin, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    lin.res.linear.numChannels = 1;
    EXPECT(p_cuTexObjectCreate(&t, &lin, &td, &view), CUDA_ERROR_INVALID_VALUE); /* no views */
    CUDA_RESOURCE_DESC pitched;
    memset(&pitched, 0, sizeof pitched);
    pitched.resType = CU_RESOURCE_TYPE_PITCH2D;
    pitched.res.pitch2D.devPtr = mem;
    pitched.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT8;
    pitched.res.pitch2D.numChannels = 4;
    pitched.res.pitch2D.width = 100;
    pitched.res.pitch2D.height = 50;
    pitched.res.pitch2D.pitchInBytes = 416;
    OK(p_cuTexObjectCreate(&t, &pitched, &td, NULL));
    OK(p_cuTexObjectDestroy(t));
    pitched.res.pitch2D.pitchInBytes = 400; /* a row is 400 bytes, but 32-byte pitch alignment */
    EXPECT(p_cuTexObjectCreate(&t, &pitched, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    pitched.res.pitch2D.pitchInBytes = 384; /* shorter than a row */
    EXPECT(p_cuTexObjectCreate(&t, &pitched, &td, NULL), CUDA_ERROR_INVALID_VALUE);
    pitched.res.pitch2D.pitchInBytes = 1024;
    pitched.res.pitch2D.height = 100; /* 100 KiB past the 64 KiB allocation */
    EXPECT(p_cuTexObjectCreate(&t, &pitched, &td, NULL), CUDA_ERROR_INVALID_VALUE);

    /* surfaces need an array made for surface loads and stores */
    CUsurfObject s;
    EXPECT(p_cuSurfObjectCreate(&s, &res), CUDA_ERROR_INVALID_VALUE);
    EXPECT(p_cuSurfObjectCreate(&s, &lin), CUDA_ERROR_INVALID_VALUE);
    CUDA_ARRAY3D_DESCRIPTOR sd = {16, 16, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_SURFACE_LDST};
    CUarray sa;
    OK(p_cuArray3DCreate(&sa, &sd));
    CUDA_RESOURCE_DESC sres = array_res(sa);
    OK(p_cuSurfObjectCreate(&s, &sres));
    OK(p_cuSurfObjectGetResourceDesc(&res_back, s));
    CHECK(memcmp(&sres, &res_back, sizeof sres) == 0);
    EXPECT(p_cuTexObjectDestroy(s), CUDA_ERROR_INVALID_VALUE); /* a surface, not a texture */
    OK(p_cuSurfObjectDestroy(s));
    EXPECT(p_cuSurfObjectDestroy(s), CUDA_ERROR_INVALID_VALUE);

    OK(p_cuTexObjectDestroy(plain));
    OK(p_cuMipmappedArrayDestroy(m));
    OK(p_cuArrayDestroy(a));
    OK(p_cuArrayDestroy(sa));
    OK(p_cuMemFree(mem));
    EXPECT(p_cuTexObjectCreate(&t, &res, &td, NULL), CUDA_ERROR_INVALID_VALUE); /* array freed */
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBRARY layout|objects\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[2], "layout") == 0) {
        layout();
        return 0;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("FAIL dlopen: %s\n", dlerror()); return 2; }
    load_all();
    CUcontext ctx;
    OK(p_cuInit(0));
    OK(p_cuCtxCreate(&ctx, NULL, 0, 0));
    test_arrays();
    test_texture_objects();
    printf(failures ? "FAILED %d\n" : "PASS\n", failures);
    return failures ? 1 : 0;
}
