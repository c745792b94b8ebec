"""ld / st / cvta / isspacep on one thread's own memory (PTX ISA §9.7.9.8-17).

Each row writes its input(s) to a word of its own and reads back: in global memory (the
row's input slot %addr0, free once the inputs are loaded), a function-scope .shared array,
a .local array, or any of them through a generic address made by cvta. What is checked:
widths and sign/zero extension, the element order of vector accesses, the memory-model
forms (.volatile, .relaxed/.acquire/.release with scopes, .nc, ldu, cache hints), and the
state-space tests of isspacep. Accesses where lanes interact are in test_memory.py.
"""

from ptxgen import Case

M32 = 0xFFFFFFFF
DECLS = ".shared .align 16 .b8 slots[4096]; .local .align 16 .b8 lbuf[16];"

#: per space: (setup that leaves the row's address in %addr5, the space qualifier)
SPACES = {
    "global": ("mov.u64 %addr5, %addr0;", ".global"),
    "shared": ("cvt.u64.u32 %addr4, %tid.x; shl.b64 %addr4, %addr4, 4; mov.u64 %addr5, slots; "
               "add.u64 %addr5, %addr5, %addr4;", ".shared"),
    "local": ("mov.u64 %addr5, lbuf;", ".local"),
    "generic_global": ("mov.u64 %addr5, %addr0;", ""),
    "generic_shared": ("cvt.u64.u32 %addr4, %tid.x; shl.b64 %addr4, %addr4, 4; mov.u64 %addr5, slots; "
                       "add.u64 %addr5, %addr5, %addr4; cvta.shared.u64 %addr5, %addr5;", ""),
    "generic_local": ("mov.u64 %addr5, lbuf; cvta.local.u64 %addr5, %addr5;", ""),
}


def _s(bits: int, n: int) -> int:
    bits &= (1 << n) - 1
    return bits - (1 << n) if bits >> (n - 1) else bits


def mem_case(space: str, body: str, dsts, srcs, inputs, expect, note: str = "") -> Case:
    """`body` uses {sp} for the space qualifier and [%addr5] for the row's memory."""
    setup, sp = SPACES[space]
    return Case(f"{setup} {body.replace('{sp}', sp)}", dsts, srcs, inputs, expect, note=note, extra_decls=DECLS)


CASES: list[Case] = []

for space in SPACES:
    # widths: a store of the low bits, a load with sign or zero extension into wider registers
    for x in (0x7F, 0x80, 0xFF, 0x1234_56F0):
        CASES.append(mem_case(space, "st{sp}.u8 [%addr5], %s0; ld{sp}.s8 %d0, [%addr5]; ld{sp}.u8 %d1, [%addr5];",
                              ["s32", "u32"], ["u32"], [x], [_s(x, 8), x & 0xFF]))
    for x in (0x7FFF, 0x8000, 0xFFFF_ABCD):
        CASES.append(mem_case(space, "st{sp}.u16 [%addr5], %s0; ld{sp}.s16 %d0, [%addr5]; ld{sp}.u16 %d1, [%addr5];",
                              ["s32", "u32"], ["u32"], [x], [_s(x, 16), x & 0xFFFF]))
    x = 0x8000_0001
    CASES.append(mem_case(space, "st{sp}.u32 [%addr5], %s0; ld{sp}.s32 %d0, [%addr5];", ["s64"], ["u32"], [x],
                          [_s(x, 32)]))
    CASES.append(mem_case(space, "st{sp}.b64 [%addr5], %s0; ld{sp}.f64 %d0, [%addr5];", ["f64"], ["b64"],
                          [0x400921FB54442D18], [3.141592653589793]))
    # vector element order: element i at byte offset i * size
    CASES.append(mem_case(space, "st{sp}.v2.u16 [%addr5], {%s0, %s1}; ld{sp}.u32 %d0, [%addr5];",
                          ["u32"], ["u16", "u16"], [0x1111, 0xBEEF], [0xBEEF_1111]))
    CASES.append(mem_case(space, "st{sp}.v4.u8 [%addr5], {%s0, %s1, %s0, %s1}; ld{sp}.u32 %d0, [%addr5];",
                          ["u32"], ["u16", "u16"], [0x12, 0x1AB], [0xAB12_AB12]))
    CASES.append(mem_case(space, "st{sp}.u32 [%addr5], %s0; ld{sp}.v2.u16 {%d0, %d1}, [%addr5];",
                          ["u16", "u16"], ["u32"], [0xCAFE_F00D], [0xF00D, 0xCAFE]))
    CASES.append(mem_case(space, "st{sp}.u32 [%addr5], %s0; ld{sp}.v4.u8 {%d0, %d1, %d2, %d3}, [%addr5];",
                          ["u16"] * 4, ["u32"], [0x8877_6655], [0x55, 0x66, 0x77, 0x88]))
    CASES.append(mem_case(space, "st{sp}.v2.b32 [%addr5], {%s0, %s1}; ld{sp}.b64 %d0, [%addr5];",
                          ["b64"], ["b32", "b32"], [0x0123_4567, 0x89AB_CDEF], [0x89AB_CDEF_0123_4567]))
    CASES.append(mem_case(space, "st{sp}.v2.f32 [%addr5], {%s0, %s0}; ld{sp}.v2.f32 {%d0, _}, [%addr5];",
                          ["f32"], ["f32"], [1.5], [1.5]))
    if space not in ("global", "generic_global"):  # 16 bytes: more than a row's global slot
        CASES.append(mem_case(
            space, "st{sp}.v4.b32 [%addr5], {%s0, %s1, %s1, %s0}; ld{sp}.v2.b64 {%d0, %d1}, [%addr5];",
            ["b64", "b64"], ["b32", "b32"], [7, 9], [(9 << 32) | 7, (7 << 32) | 9]))
        CASES.append(mem_case(
            space, "st{sp}.v2.b64 [%addr5], {%s0, %s1}; ld{sp}.v4.b32 {%d0, %d1, %d2, %d3}, [%addr5];",
            ["b32"] * 4, ["b64", "b64"], [0x1_0000_0002, 0x3_0000_0004], [2, 1, 4, 3]))
    # memory-model forms: the values are those of plain accesses
    for ld_q, st_q in [(".volatile", ".volatile"), (".relaxed.gpu", ".relaxed.gpu"), (".acquire.gpu", ".release.gpu"),
                       (".relaxed.sys", ".release.cta"), (".acquire.cta", ".relaxed.cta")]:
        if space.endswith("local"):
            continue  # .volatile and the ordered forms exist for global and shared memory only
        CASES.append(mem_case(space, f"st{st_q}{{sp}}.u32 [%addr5], %s0; ld{ld_q}{{sp}}.u32 %d0, [%addr5];",
                              ["u32"], ["u32"], [0xA5A5_0001], [0xA5A5_0001]))
        CASES.append(mem_case(space, f"st{st_q}{{sp}}.b64 [%addr5], %s0; ld{ld_q}{{sp}}.s16 %d0, [%addr5];",
                              ["s32"], ["b64"], [0x8001], [_s(0x8001, 16)]))
    if space in ("global", "shared", "generic_shared", "generic_global"):
        CASES.append(mem_case(space, "st.relaxed.gpu{sp}.v2.u32 [%addr5], {%s0, %s1}; "
                              "ld.relaxed.gpu{sp}.v2.u32 {%d1, %d0}, [%addr5];",
                              ["u32", "u32"], ["u32", "u32"], [1, 2], [2, 1]))

# cache hints and the read-only / uniform paths (global only)
for body, want in [
    ("st.global.u32 [%addr5], %s0; ld.global.nc.u32 %d0, [%addr5];", 0x1357_9BDF),
    ("st.global.cs.u32 [%addr5], %s0; ld.global.cg.u32 %d0, [%addr5];", 0x1357_9BDF),
    ("st.global.wb.u32 [%addr5], %s0; ld.global.L1::evict_last.u32 %d0, [%addr5];", 0x1357_9BDF),
    ("st.global.u32 [%addr5], %s0; ld.global.nc.L1::no_allocate.L2::256B.u32 %d0, [%addr5];", 0x1357_9BDF),
    ("st.global.u32 [%addr5], %s0; ldu.global.u32 %d0, [%addr5];", 0x1357_9BDF),
    ("st.global.u32 [%addr5], %s0; prefetch.global.L2 [%addr5]; ld.global.lu.u32 %d0, [%addr5];", 0x1357_9BDF),
]:
    CASES.append(mem_case("global", body, ["u32"], ["u32"], [0x1357_9BDF], [want]))
CASES.append(mem_case("global", "st.global.u32 [%addr5], %s0; ld.global.nc.s8 %d0, [%addr5+1];",
                      ["s32"], ["u32"], [0x0000_9000], [_s(0x90, 8)]))
CASES.append(mem_case("global", "st.global.u32 [%addr5], %s0; ld.global.nc.v2.u16 {%d0, %d1}, [%addr5];",
                      ["u16", "u16"], ["u32"], [0x0002_0001], [1, 2]))

# cvta round trips: generic → space → generic gives the same address; a space address
# converted to generic and back reads the same word
for space, q in [("shared", "shared"), ("local", "local")]:
    setup, _ = SPACES[space]
    CASES.append(Case(
        f"{setup} st.{q}.u32 [%addr5], %s0; cvta.{q}.u64 %addr4, %addr5; ld.u32 %d0, [%addr4]; "
        f"cvta.to.{q}.u64 %addr3, %addr4; ld.{q}.u32 %d1, [%addr3]; st.u32 [%addr4], %s1; ld.{q}.u32 %d2, [%addr5];",
        ["u32", "u32", "u32"], ["u32", "u32"], [0x600D_F00D, 0xBAD_CAFE], [0x600D_F00D, 0x600D_F00D, 0xBAD_CAFE],
        extra_decls=DECLS))
CASES.append(Case(
    "mov.u64 %addr5, %addr0; cvta.to.global.u64 %addr4, %addr5; st.global.u32 [%addr4], %s0; cvta.global.u64 %addr3, "
    "%addr4; ld.u32 %d0, [%addr3];", ["u32"], ["u32"], [0x77], [0x77], extra_decls=DECLS))

# isspacep on generic addresses of each space (row input is unused)
_GENERIC = {
    "global": "mov.u64 %addr5, %addr0;",
    "shared": SPACES["generic_shared"][0],
    "local": SPACES["generic_local"][0],
}
for where, setup in _GENERIC.items():
    want = [int(where == s) for s in ("global", "shared", "local")]
    CASES.append(Case(
        f"{setup} isspacep.global %d0, %addr5; isspacep.shared %d1, %addr5; isspacep.local %d2, %addr5; "
        "isspacep.const %d3, %addr5;",
        ["pred", "pred", "pred", "pred"], ["u32"], [0], want + [0], extra_decls=DECLS))
