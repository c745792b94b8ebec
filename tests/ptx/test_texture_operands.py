"""Texture and surface operands `[tex, {coords}]`: what the parser makes of them."""

from __future__ import annotations

import pytest

from cuport.isa.operands import defs, uses
from cuport.ptx import ir
from cuport.ptx.lexer import PtxSyntaxError
from cuport.ptx.parser import parse

HEADER = ".version 8.0\n.target sm_75\n.address_size 64\n"


def body(text: str) -> list[ir.Instr]:
    m = parse(HEADER + """
.visible .entry k(.param .u64 t)
{
  .reg .b32 %r<8>; .reg .f32 %f<12>; .reg .b64 %rd<4>; .reg .b16 %rs<5>;
""" + text + "\n}\n")
    return [s for s in m.functions["k"].body if isinstance(s, ir.Instr)]


def test_texture_operands():
    tex2d, a2d, fetch, level, grad = body("""
  tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];
  tex.a2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %f5, %f6, %f6}];
  tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, %r5];
  tex.level.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], %f7;
  tex.grad.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}], {%f7, %f8}, {%f9, %f10};
""")
    a = tex2d.args[1]
    assert isinstance(a, ir.TexAddr) and isinstance(a, ir.Vec)
    assert a.image == ir.Reg("%rd1") and a.sampler is None
    assert a.coords == (ir.Reg("%f5"), ir.Reg("%f6"))
    assert a2d.args[1].coords[0] == ir.Reg("%r1")
    # a scalar 1D coordinate becomes a one-element vector
    assert fetch.args[1].coords == (ir.Reg("%r5"),)
    assert level.args[2] == ir.Reg("%f7")
    assert grad.args[2] == ir.Vec((ir.Reg("%f7"), ir.Reg("%f8")))
    assert tex2d.text() == "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}]"
    # the analyses see the coordinates and the handle as uses, the results as definitions
    assert [r.name for r in defs(tex2d)] == ["%f1", "%f2", "%f3", "%f4"]
    assert [r.name for r in uses(tex2d)] == ["%rd1", "%f5", "%f6"]


def test_surface_operands_and_independent_mode():
    st, ld, indep = body("""
  sust.b.2d.v4.b8.trap [%rd1, {%r1, %r2}], {%rs1, %rs2, %rs3, %rs4};
  suld.b.3d.b32.clamp {%r1}, [%rd1, {%r2, %r3, %r4, %r4}];
  tex.1d.v4.s32.f32 {%r1, %r2, %r3, %r4}, [tex_a, smpl_x, {%f1}];
""")
    assert defs(st) == [] and [r.name for r in uses(st)] == ["%rd1", "%r1", "%r2", "%rs1", "%rs2",
                                                             "%rs3", "%rs4"]
    assert [r.name for r in defs(ld)] == ["%r1"]
    assert [r.name for r in uses(ld)] == ["%rd1", "%r2", "%r3", "%r4", "%r4"]
    t = indep.args[1]
    assert t.image == ir.Sym("tex_a") and t.sampler == ir.Sym("smpl_x")
    assert t.coords == (ir.Reg("%f1"),)


def test_inner_scope_renames_inside_texture_operands():
    (ins,) = body("""
  { .reg .b32 %r1; tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, {%r1}]; }
""")
    assert ins.args[1].coords[0] == ins.args[0].items[0] != ir.Reg("%r1")


@pytest.mark.parametrize("bad", [
    "tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1+8, {%r1}];",
    "tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [%rd1, a, b, {%r1}];",
])
def test_malformed_texture_operands(bad):
    with pytest.raises(PtxSyntaxError):
        body(bad)
