"""Instruction forms, one line a case: does cuport's validator accept what ptxas accepts?

Each case is one instruction in a kernel that declares registers of every type (%r32 is
.b32, %u32 .u32, %f32 .f32, %rd .b64, %p .pred, ...). The expectation is what ptxas 13.0
answers (sm_90); where ptxas is installed, the whole table is also assembled by it, one
kernel per case, so the table cannot drift from NVIDIA's assembler.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from cuport import ptx

OK, BAD = True, False

CASES = [
    # integer and float arithmetic: the type decides the registers it takes
    ("add.s32 %r32, %r32, %u32;", OK),
    ("add.u32 %r32, %f32, %r32;", BAD),
    ("add.f32 %f32, %r32, %f32;", OK),  # a .b32 register is any 32-bit value
    ("add.f32 %f32, %f32, 1;", BAD),  # integer literal for a float
    ("add.u32 %r32, %r32, 1.5;", BAD),
    ("add.f64 %f64, %f64, 0f3F800000;", OK),
    ("add.u32 %r32, %r32;", BAD),
    ("add.u32 %r32, %r32, %r32, %r32;", BAD),
    ("add %r32, %r32, %r32;", BAD),
    ("add.rn.u32 %r32, %r32, %r32;", BAD),
    ("add.sat.s32 %r32, %r32, %r32;", OK),
    ("add.sat.u32 %r32, %r32, %r32;", BAD),
    ("add.cc.u32 %r32, %r32, %r32;", OK),
    ("add.ftz.f64 %f64, %f64, %f64;", BAD),
    ("add.rn.rz.f32 %f32, %f32, %f32;", BAD),
    ("add.u32 _, %r32, 1;", BAD),
    ("add.u32 %r32, %tid.x, 1;", BAD),
    ("mul.lo.u32 %r32, %r32, %r32;", OK),
    ("mul.u32 %r32, %r32, %r32;", BAD),
    ("mul.wide.u32 %rd, %r32, %r32;", OK),
    ("mul.wide.u32 %r32, %r32, %r32;", BAD),
    ("mul.wide.u64 %rd, %rd, %rd;", BAD),
    ("mad.lo.cc.u32 %r32, %r32, %r32, %r32;", OK),
    ("mad.wide.s32 %rd, %r32, %r32, %rd;", OK),
    ("mad.wide.s32 %rd, %r32, %r32, %r32;", BAD),
    ("mad.f32 %f32, %f32, %f32, %f32;", BAD),
    ("fma.rn.f32 %f32, %f32, %f32, %f32;", OK),
    ("fma.f32 %f32, %f32, %f32, %f32;", BAD),
    ("div.rn.f32 %f32, %f32, %f32;", OK),
    ("div.f32 %f32, %f32, %f32;", BAD),
    ("div.approx.f64 %f64, %f64, %f64;", BAD),
    ("div.s32 %r32, %r32, %r32;", OK),
    ("abs.u32 %r32, %r32;", BAD),
    ("neg.s32 %r32, %r32;", OK),
    ("min.f32 %f32, %f32, %f32;", OK),
    ("min.b32 %r32, %r32, %r32;", BAD),
    ("min.s16x2 %r32, %r32, %r32;", OK),  # CUB's reductions in CuPy
    ("max.u16x2 %r32, %r32, %r32;", OK),
    ("max.relu.s16x2 %r32, %r32, %r32;", OK),
    ("min.s16x2 %rd, %rd, %rd;", BAD),
    ("mov.pred %p, -1;", OK),
    ("mov.pred %p, 2;", OK),
    ("sqrt.f32 %f32, %f32;", BAD),
    ("sqrt.approx.f32 %f32, %f32;", OK),
    ("rcp.approx.ftz.f64 %f64, %f64;", OK),
    ("sin.f32 %f32, %f32;", BAD),
    ("ex2.approx.ftz.f32 %f32, %f32;", OK),
    # bits
    ("shl.b32 %r32, %r32, 2;", OK),
    ("shl.u32 %r32, %r32, 2;", BAD),
    ("shl.b64 %rd, %rd, %r32;", OK),
    ("shl.b64 %rd, %rd, %rd;", BAD),
    ("and.pred %p, %p, %p;", OK),
    ("and.b32 %p, %p, %p;", BAD),
    ("popc.b64 %r32, %rd;", OK),
    ("popc.b64 %rd, %rd;", BAD),
    ("bfe.u32 %r32, %r32, 1, 2;", OK),
    ("prmt.b32 %r32, %r32, %r32, %r32;", OK),
    ("lop3.b32 %r32, %r32, %r32, %r32, 0x96;", OK),
    ("lop3.b32 %r32, %r32, %r32, %r32, %r32;", BAD),
    ("sub.u16x2 %r32, %r32, %r32;", BAD),
    ("add.u16x2 %r32, %r32, %r32;", OK),
    ("mad.lo.sat.s32 %r32, %r32, %r32, %r32;", BAD),
    ("vadd4.u32.u32.u32 %r32, %r32.b0123, %r32, %r32;", OK),
    ("lop3.or.b32 %r32|%p, %r32, %r32, %r32, 0x96, %q;", OK),
    ("lop3.or.b32 %r32, %r32, %r32, %r32, 0x96;", BAD),
    ("prmt.b32 %r32, %r32, %r32, %r32, %r32;", BAD),
    # comparisons and selection
    ("setp.eq.u32 %p|%q, %r32, 1;", OK),
    ("setp.eq.u32 %r32, %r32, 1;", BAD),
    ("setp.eq.u32 %p, %r32, 1, %q;", BAD),
    ("setp.eq.and.u32 %p, %r32, 1, !%q;", OK),
    ("setp.u32 %p, %r32, 1;", BAD),
    ("setp.lo.u32 %p, %r32, %r32;", OK),
    ("setp.lo.s32 %p, %r32, %r32;", BAD),
    ("setp.lt.b32 %p, %r32, %r32;", BAD),
    ("setp.equ.s32 %p, %r32, %r32;", BAD),
    ("setp.equ.f32 %p, %f32, %f32;", OK),
    ("selp.u32 %r32, 1, 2, !%p;", OK),
    ("selp.u32 %r32, 1, 2, %r32;", BAD),
    # moves and conversions
    ("mov.u32 %r32, %tid.x;", OK),
    # a hex float literal is bits for the .b type of its width (CUB's reductions in CuPy)
    ("mov.b32 %r32, 0f00000000;", OK),
    ("mov.b64 %rd, 0d3FF0000000000000;", OK),
    ("mov.u32 %u32, 0f3F800000;", BAD),
    ("mov.b64 %rd, 0f3F800000;", BAD),
    ("mov.u64 %rd, %tid.x;", BAD),
    ("mov.u16 %r16, %tid.x;", OK),
    ("mov.u64 %rd, g;", OK),
    ("mov.b64 {%r32, %u32}, %rd;", OK),
    ("mov.b64 {%r32, %r16}, %rd;", BAD),
    ("mov.b16 %r16, {%b8, 0};", OK),
    ("mov.f16 %f16, %f16;", BAD),
    ("cvt.u32.u32 %r32, %r32;", OK),
    ("cvt.rn.f32.f32 %f32, %f32;", BAD),
    ("cvt.rni.f32.f32 %f32, %f32;", OK),
    ("cvt.u32.f32 %r32, %f32;", BAD),
    ("cvt.rzi.u32.f32 %r32, %f32;", OK),
    ("cvt.rn.f32.u32 %f32, %r32;", OK),
    ("cvt.f32.f64 %f32, %f64;", BAD),
    ("cvt.f64.f32 %f64, %f32;", OK),
    ("cvt.u64.u32 %rd, %r32, %r32;", BAD),
    ("cvt.global.u32.u32 %r32, %r32;", BAD),
    ("cvt.rn.f16x2.f32 %r32, %f32, %f32;", OK),
    ("cvta.to.global.u64 %rd, %rd;", OK),
    ("cvta.wide.global.u64 %rd, %rd;", BAD),
    ("cvta.to.global.u32 %r32, %r32;", BAD),
    # memory
    ("ld.global.u32 %r32, [%rd];", OK),
    ("ld.global.u8 %r32, [%rd];", OK),  # wider destinations are allowed for ld
    ("ld.global.u32 %f32, [%rd];", BAD),
    ("ld.global.f32 %rd, [%rd];", OK),
    ("ld.global.u32 %r32, %rd;", BAD),
    ("ld.global.u32 %r32, [%f32];", BAD),
    ("ld.global.u32 %r32, [%r32];", BAD),  # a 32-bit generic/global address
    ("ld.shared.u32 %r32, [%r32];", OK),
    ("ld.global.v2.u32 {%r32, %u32}, [%rd];", OK),
    ("ld.global.v2.u32 {%r32, %u32, %s32}, [%rd];", BAD),
    ("ld.global.v2.u32 {%r32, %rd}, [%rd];", BAD),
    ("ld.global.v4.u32 {%r32, %u32, _, %s32}, [%rd];", OK),
    ("ld.global.v0.u32 %r32, [%rd];", BAD),
    ("ld.global.v8.u32 {%r32, %r32, %r32, %r32, %r32, %r32, %r32, %r32}, [%rd];", BAD),
    ("ld.global.nc.u32 %r32, [%rd];", OK),
    ("ld.relaxed.gpu.global.u32 %r32, [%rd];", OK),
    ("ld.global.relaxed.u32 %r32, [%rd];", BAD),
    ("ld.uni.global.u32 %r32, [%rd];", BAD),
    ("ld.gpu.global.u32 %r32, [%rd];", BAD),
    ("ld.volatile.gpu.global.u32 %r32, [%rd];", BAD),
    ("ld.acquire.gpu.global.u32 %r32, [%rd];", OK),
    ("st.global.u32 [%rd], %r32, %rd;", BAD),
    ("st.global.L2::cache_hint.u32 [%rd], %r32, %rd;", OK),
    ("ld.global.L1::evict_last.u32 %r32, [%rd];", OK),
    ("ld.global.u32 %r32, [p];", BAD),  # a kernel parameter is not global memory
    ("ld.param.u64 %rd, [p];", OK),
    ("ld.u64 %rd, [p];", BAD),
    ("ld.u32 %r32, [g];", OK),
    ("st.global.u32 [%rd], 5;", OK),
    ("st.global.nc.u32 [%rd], %r32;", BAD),
    ("st.local.v2.u32 [%rd], {%r32, %rd};", BAD),
    ("atom.global.add.u32 %r32, [%rd], %r32;", OK),
    ("atom.global.or.b32 %rd, [%rd], %r32;", BAD),
    ("atom.global.cas.b32 %r32, [%rd], %r32, %r32;", OK),
    ("atom.global.cas.b32 %r32, [%rd], %r32;", BAD),
    ("red.global.add.u32 [%rd], %r32;", OK),
    ("atom.globl.add.u32 %r32, [%rd], 1;", BAD),
    ("atom.shared.full.add.u32 %r32, [%rd], 1;", BAD),
    ("atom.lo.cas.b32 %r32, [%rd], %r32, %r32;", BAD),
    ("atom.global.ftz.exch.b32 %r32, [%rd], %r32;", BAD),
    ("atom.relaxed.gpu.global.add.u32 %r32, [%rd], 1;", OK),
    ("ld.const.f32 %f32, [c];", OK),
    ("ld.f32 %f32, [c];", BAD),
    ("{ .reg .b32 %z<4294967296>; }", BAD),
    ("{ .shared .b8 s[]; }", BAD),
    # control and synchronisation
    ("bra L;", OK),
    ("bra %r32;", BAD),
    ("bra.uni L;", OK),
    ("bra.b64.uni L;", BAD),
    ("bra M;", BAD),
    ("@%p bra L;", OK),
    ("@%r32 bra L;", BAD),
    ("bar.sync 0;", OK),
    ("bar.sync 16;", BAD),
    ("bar.sync 1, 32;", OK),
    ("bar.sync 1, 33;", BAD),
    ("bar.red.popc.u32 %r32, 0, %p;", OK),
    ("bar.red.popc %r32, 0, %p;", BAD),
    ("bar.red.or.u32 %r32, 0, %p;", BAD),
    ("bar.red.and.pred %p, 0, %q;", OK),
    ("bar.u8 0;", BAD),
    ("bar.uni 0;", BAD),
    ("bar.sync.aligned 0;", BAD),
    ("barrier.sync.aligned 0;", OK),
    ("bar.arrive 0, 32;", OK),
    ("bar.arrive 0;", BAD),
    ("bar.warp.sync -1;", OK),
    # cooperative_groups' generic sync() on sm_90 (cuda-samples simpleCooperativeGroups)
    ("barrier.cluster.arrive;", OK),
    ("barrier.cluster.arrive.release.aligned;", OK),
    ("barrier.cluster.arrive.relaxed;", OK),
    ("barrier.cluster.wait;", OK),
    ("barrier.cluster.wait.acquire.aligned;", OK),
    ("barrier.cluster.arrive.acquire;", BAD),
    ("barrier.cluster.wait.release;", BAD),
    ("barrier.cluster.wait.relaxed;", BAD),
    ("barrier.cluster.arrive.relaxed.release;", BAD),
    ("barrier.cluster.arrive 0;", BAD),
    ("barrier.cluster.wait 0;", BAD),
    ("barrier.cluster.sync;", BAD),
    ("mov.u32 %r32, %cluster_ctarank;", OK),
    ("mov.pred %p, %cluster_ctarank;", BAD),
    ("mov.pred %p, %is_explicit_cluster;", OK),
    ("mov.u32 %r32, %is_explicit_cluster;", BAD),
    ("bar.red.or.pred %p, 0, %r32;", BAD),
    ("bar.red.popc.u32 %rd, 0, %p;", BAD),
    ("bar.red.popc.u32 %r32, 0, !%p;", OK),
    ("bar.red.popc.u32 %r32, %u32, 64, %p;", OK),
    ("bar.sync %rd;", BAD),
    ("bar.sync 0, %rd;", BAD),
    ("{ .param .align 4 .b8 a[12]; call f, (a), %r32; }", BAD),
    ("add.s32 %r32, %r32, +4;", OK),
    ("shfl.sync.down.b32 %r32|%p, %r32, 1, 31, -1;", OK),
    ("shfl.sync.down.b32 %r32, %r32, 1, 31;", BAD),
    ("vote.sync.ballot.b32 %r32, %p, -1;", OK),
    ("vote.sync.ballot.b32 %r32, %r32, -1;", BAD),
    ("vote.sync.any.pred %p, !%q, %r32;", OK),
    ("vote.sync.any.pred %r32, %p, -1;", BAD),
    ("vote.sync.ballot.pred %p, %q, -1;", BAD),
    ("vote.sync.ballot.b32 %r32, %p, %f32;", BAD),
    ("shfl.sync.down.b32 %r32|%p, %r32, %u32, %f32, %r32;", OK),  # .b32 operands
    ("shfl.sync.idx.b32 _|%p, %r32, 0, 31, -1;", BAD),
    ("ld.global.u32 _, [%rd];", BAD),
    ("ld.global.v2.u32 {_, %r32}, [%rd];", OK),
    ("mov.b64 {_, %r32}, %rd;", OK),
    ("setp.eq.u32 _|%p, %r32, 0;", OK),
    ("atom.global.exch.b32 _, [%rd], %r32;", OK),
    ("{ .param .align 4 .b8 a[12]; call f, (a); }", OK),
    ("{ .param .align 8 .b8 a[12]; call f, (a); }", BAD),
    ("{ .param .align 4 .b8 a[12]; call.uni f, (a); }", OK),
    ("{ .param .align 4 .b8 a[12]; call.eq f, (a); }", BAD),
    ("atom.global.shared.add.u32 %r32, [%rd], %r32;", BAD),
    ("atom.global.add.rn.f32 %f32, [%rd], %f32;", BAD),
    ("{ .param .align 4 .b8 a[16]; call f, (a); }", BAD),
    ('.pragma "nounroll";', OK),
    (".pragma nounroll;", BAD),
    ('.pragma "nounroll" %r32;', BAD),
    ("membar.gl;", OK),
    ("xyz.u32 %r32, %r32;", BAD),
    ("add.q32 %r32, %r32, %r32;", BAD),
    ("add.s32 %r32, %r32, 100000000000000000000;", BAD),
    ("add.s32 %r32, %r32, 4294967296;", OK),
    ("add.s32 %r32, %zz, 1;", BAD),
    # special registers: read by mov and cvt only, as integers (fuzzing found these accepted)
    ("mov.u32 %r32, %tid.x;", OK),
    ("mov.u16 %r16, %ctaid.x;", OK),
    ("mov.u16 %r16, %laneid;", BAD),
    ("mov.f32 %f32, %tid.x;", BAD),
    ("mov.u64 %rd, %clock64;", OK),
    ("mov.u32 %r32, %clock64;", BAD),
    ("cvt.u64.u32 %rd, %laneid;", OK),
    ("cvt.rn.f32.s32 %f32, %laneid;", BAD),
    ("cvt.rn.f32.u32 %f32, %tid.x;", BAD),
    ("setp.eq.u32 %p, %tid.x, 0;", BAD),
    ("selp.u32 %r32, %tid.x, 0, %p;", BAD),
    # a branch to a function's name, even one that is a label's too
    ("bra L;", OK),
    ("bra f;", BAD),
    ("bra k0;", BAD),
    # a modifier twice (types may repeat), cvta.to of a symbol
    ("cvta.to.global.to.u64 %rd, %rd;", BAD),
    ("cvt.f32.f32 %f32, %f32;", OK),
    ("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 {%f32, %f32, %f32, %f32, %f32, %f32, "
     "%f32, %f32}, {%r32, %r32, %r32, %r32, %r32, %r32, %r32, %r32}, {%r32, %r32, %r32, %r32, "
     "%r32, %r32, %r32, %r32}, {%f32, %f32, %f32, %f32, %f32, %f32, %f32, %f32};", OK),
    ("cvta.to.global.u64 %rd, g;", BAD),
    ("cvta.global.u64 %rd, g;", OK),
    # volatile is for global and shared memory; immediate addresses for local memory only
    ("ld.volatile.param.u64 %rd, [p];", BAD),
    ("ld.volatile.const.f32 %f32, [c];", BAD),
    ("ld.volatile.global.u32 %r32, [%rd];", OK),
    ("st.global.u32 [72], %r32;", BAD),
    ("ld.u32 %r32, [72];", BAD),
    ("ld.local.u32 %r32, [72];", OK),
    # set names its destination's type and its sources'
    ("set.lt.u32 %r32, %r32, 16;", BAD),
    ("set.lt.u32.u32 %r32, %r32, 16;", OK),
    ("set.lt.and.f32.s32 %f32, %r32, 16, %p;", OK),
    # ld/ldu/st move halves as .b16 (fuzzing: ld.shared.bf16 was accepted)
    ("ld.global.f16 %f16, [%rd];", BAD),
    ("ld.global.b16 %f16, [%rd];", OK),
    ("ld.global.f16x2 %r32, [%rd];", BAD),
    ("st.global.bf16 [%rd], %r16;", BAD),
    ("ldu.global.f16 %f16, [%rd];", BAD),
    # cvt.sat between integers only where the value can be out of range
    ("cvt.sat.u64.u32 %rd, %r32;", BAD),
    ("cvt.sat.s64.u32 %rd, %r32;", BAD),
    ("cvt.sat.s32.s32 %r32, %s32;", BAD),
    ("cvt.sat.u64.s32 %rd, %r32;", OK),
    ("cvt.sat.s32.u32 %r32, %u32;", OK),
    ("cvt.sat.u16.u32 %r16, %r32;", OK),
    ("cvt.sat.u32.s16 %r32, %r16;", OK),
    # cvt.ftz where a type is f32
    ("cvt.ftz.s64.s32 %rd, %r32;", BAD),
    ("cvt.rzi.ftz.s64.f64 %rd, %f64;", BAD),
    ("cvt.rzi.ftz.s16.f16 %r16, %f16;", BAD),
    ("cvt.rzi.ftz.s64.f32 %rd, %f32;", OK),
    ("cvt.ftz.f64.f32 %f64, %f32;", OK),
    ("cvt.ftz.f32.bf16 %f32, %r16;", OK),
    # min/max of three: f32, sm_100 (this table is sm_90)
    ("max.f32 %f32, %f32, %f32, %f32;", BAD),
    ("min.s32 %r32, %r32, %r32, %r32;", BAD),
]

REGS = {"r32": "b32", "u32": "u32", "s32": "s32", "f32": "f32", "rd": "b64", "f64": "f64",
        "p": "pred", "q": "pred", "r16": "b16", "f16": "f16", "b8": "b8"}
HEAD = (".version 9.0\n.target sm_90\n.address_size 64\n.global .u32 g;\n.const .f32 c;\n"
        ".func f(.param .align 4 .b8 x[12]) { ret; }\n")


def kernel(i: int, line: str) -> str:
    regs = "".join(f"  .reg .{t} %{n};\n" for n, t in REGS.items())
    return (f".visible .entry k{i}(.param .u64 p)\n{{\n{regs}L:\n  {line}\n  ret;\n}}\n")


@pytest.mark.parametrize(("line", "expected"), CASES, ids=[c[0] for c in CASES])
def test_cuport(line, expected):
    try:
        ptx.load([HEAD + kernel(0, line)])
        accepted = True
    except ptx.PtxSyntaxError:
        accepted = False
    assert accepted == expected


def ptxas_refuses(path, text: str) -> bool:
    path.write_text(text)
    r = subprocess.run(["ptxas", "-arch=sm_90", str(path), "-o", "/dev/null"],
                       capture_output=True, text=True, timeout=120)
    return r.returncode != 0


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
def test_the_table_is_what_ptxas_says(tmp_path):
    """Each case assembled by ptxas on its own (a fatal error ends ptxas' reading)."""

    def refused(i: int) -> bool:
        return ptxas_refuses(tmp_path / f"case{i}.ptx", HEAD + kernel(0, CASES[i][0]))

    with ThreadPoolExecutor(4) as pool:
        verdicts = list(pool.map(refused, range(len(CASES))))
    wrong = [(line, "ptxas refuses" if bad else "ptxas accepts")
             for (line, expected), bad in zip(CASES, verdicts, strict=True) if bad == expected]
    assert not wrong, wrong


def test_constant_data_is_counted_with_its_alignment():
    """ptxas lays .const variables out aligned: 32 bytes, then 36 at 64 KiB, then 4 is 0x10028
    bytes, over the 64 KiB of a module (a fuzzed `.align 65536` was accepted)."""
    text = (".version 8.0\n.target sm_80\n.address_size 64\n.const .align 4 .b8 a[32];\n"
            ".const .align 65536 .b8 b[36];\n.const .align 4 .u32 c = 3;\n"
            ".visible .entry k() { ret; }\n")
    with pytest.raises(ptx.PtxSyntaxError, match=r"too much global constant data \(0x10028 bytes"):
        ptx.load([text])
    ptx.load([text.replace(".align 65536", ".align 16")])


def test_an_initialiser_names_only_variables_and_functions():
    """ptxas: "Invalid initial value symbol" (a fuzzed `%f8` in a .global table was an
    internal error at load)."""
    text = (".version 8.0\n.target sm_80\n.address_size 64\n"
            ".global .align 4 .b8 t[4] = {0, 0, %f8, 62};\n.visible .entry k() { ret; }\n")
    with pytest.raises(ptx.PtxSyntaxError, match="Invalid initial value symbol '%f8'"):
        ptx.load([text])


def test_an_entry_function_has_at_most_32764_bytes_of_parameters():
    """Laid out with their alignment (a fuzzed `.align 2147483648` parameter was accepted)."""
    text = (".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 a, "
            ".param .align 2147483648 .b8 b[16]) { ret; }\n")
    with pytest.raises(ptx.PtxSyntaxError, match=r"uses too much parameter space \(0x80000010 bytes"):
        ptx.load([text])
    ptx.load([text.replace("2147483648", "16")])


@pytest.mark.parametrize("text", [
    ".version 9.0\n.target sm_90\n.address_size.address_size 64\n",  # fuzzed
    ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() {\n.address_size 64\nret;\n}\n",
    ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k() {\n.version%p5 ret;\n}\n",
])
def test_version_target_and_address_size_are_module_directives(text):
    """ptxas: "Parsing error near '.address_size': syntax error" (each was accepted)."""
    with pytest.raises(ptx.PtxSyntaxError, match=r"Parsing error near '\.(address_size|version)'"):
        ptx.load([text])


def test_an_alignment_fits_32_bits():
    text = (".version 9.0\n.target sm_90\n.address_size 64\n"
            ".global .align 4294967296 .u32 g;\n.visible .entry k() { ret; }\n")
    with pytest.raises(ptx.PtxSyntaxError, match="Constant overflow"):
        ptx.load([text])
    ptx.load([text.replace("4294967296", "2147483648")])


PADDED = (".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n"
          "  .reg .b32 %r<16>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n"
          "  mov.u32 %r15, 7;\n  st.global.u32 [%rd1], %r015;\n  ret;\n}\n")


def test_a_register_number_with_leading_zeros_names_the_ranges_register(tmp_path):
    """ptxas reads %r015 as %r15 of %r<16> (a fuzzed mutant cuport refused), and refuses it
    where the range stops below 15."""
    import numpy as np

    import cuport

    out = np.zeros(1, np.uint32)
    cuport.Module(PADDED).kernel("k")(grid=1, block=1, args=(out,))
    assert out[0] == 7
    short = PADDED.replace("%r<16>", "%r<10>").replace("%r15, 7", "%r9, 7")
    with pytest.raises(ptx.PtxSyntaxError, match="Unknown symbol '%r015'"):
        ptx.load([short])
    if shutil.which("ptxas"):
        assert not ptxas_refuses(tmp_path / "padded.ptx", PADDED)
        assert ptxas_refuses(tmp_path / "short.ptx", short)
