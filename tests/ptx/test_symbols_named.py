"""ir.symbols_named: the one walk that the validator, the call graph, the linker and the
passes use to find the variables and functions an instruction names."""

from __future__ import annotations

from cuport.ptx import ir
from cuport.ptx.callgraph import address_taken, named_symbols
from cuport.ptx.parser import parse

# nvcc's spelling of each place a symbol stands (call sequence as nvcc -rdc writes it)
PTX = """
.version 8.0
.target sm_90
.address_size 64
.global .texref tref;
.global .align 4 .b8 table[16];
.shared .align 4 .b8 buf[64];
.global .align 8 .u64 vtable[1] = {generic(helper)};
.func (.param .b32 r) helper(.param .b32 a)
{
  .reg .b32 %r<2>;
  ld.param.b32 %r1, [a];
  st.param.b32 [r], %r1;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<4>; .reg .f32 %f<6>; .reg .b64 %rd<4>;
  mov.u64 %rd1, buf;
  ld.global.u32 %r1, [table+4];
  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tref, {%r1}];
  {
  .param .b32 param0;
  st.param.b32 [param0], %r1;
  .param .b32 retval0;
  call.uni (retval0), helper, (param0);
  ld.param.b32 %r2, [retval0];
  }
  ld.param.u64 %rd2, [out];
  st.global.u32 [%rd2], %r2;
  ret;
}
"""


def test_each_place_a_symbol_stands():
    m = parse(PTX)
    body = [s for s in m.functions["k"].body if isinstance(s, ir.Instr)]
    by_op = {}
    for s in body:
        by_op.setdefault(s.op, []).append(ir.symbols_named(s.args))
    assert by_op["mov"] == [{"buf"}]  # a symbol as a value
    assert by_op["ld"][0] == {"table"}  # an address's base, with an offset
    assert by_op["tex"] == [{"tref"}]  # the texture inside [tex, {coords}]
    # the target and the argument lists (the parser renames the inner scope's variables)
    assert [{n.split("$")[0] for n in c} for c in by_op["call"]] == [{"retval0", "helper", "param0"}]
    assert by_op["st"][-1] == set()  # registers only
    assert ir.symbols_named(m.variables[-1].init) == {"helper"}  # generic(f) in an initialiser
    # the readers built on it: the kernel's names, and the functions whose address is taken
    # (a call's own target is not an address taken)
    assert {"buf", "table", "tref", "helper", "out"} <= named_symbols(m.functions["k"])
    assert address_taken(m) == {"helper"}
