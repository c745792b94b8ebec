"""The PTX frontend: what it keeps, how it flattens scopes, and how it reports errors."""

from __future__ import annotations

import pytest

from cuport.ptx import ir
from cuport.ptx.lexer import PtxSyntaxError
from cuport.ptx.parser import parse

HEADER = ".version 9.0\n.target sm_75\n.address_size 64\n"


def test_module_directives_and_variables():
    m = parse(HEADER + """
.global .align 4 .u32 counter = 7;
.const .align 8 .f64 coeffs[3] = {0d3FF0000000000000, 0d4000000000000000, 0d4008000000000000};
.global .align 1 .b8 $str[6] = {104, 101, 108, 108, 111, 0};
.global .align 8 .u64 ptrs[2] = {generic($str), $str+2};
.extern .shared .align 16 .b8 dyn[];
.visible .global .align 4 .f32 table[2][3];
""")
    assert m.version == (9, 0) and m.target == ("sm_75",) and m.address_size == 64 and m.sm == 75
    v = {x.name: x for x in m.variables}
    assert v["counter"].init == [7] and v["counter"].space == "global"
    assert [f.value for f in v["coeffs"].init] == [1.0, 2.0, 3.0]
    assert v["$str"].size == 6
    assert v["ptrs"].init == [ir.SymAddr("$str", 0, True), ir.SymAddr("$str", 2)]
    assert v["dyn"].linkage == "extern" and v["dyn"].dims == (None,)
    assert v["table"].dims == (2, 3) and v["table"].size == 24 and v["table"].linkage == "visible"


def test_function_headers_params_and_performance_directives():
    m = parse(HEADER + """
.func (.param .b32 func_retval0) add1(.param .b32 add1_param_0);
.visible .entry k(
    .param .u64 .ptr .global .align 4 k_param_0,
    .param .align 8 .b8 k_param_1[24]
)
.maxntid 128, 1, 1
.minnctapersm 2
{
    .reg .b32 %r<3>;
    mov.u32 %r2, %r0;
    ret;
}
""")
    k = m.functions["k"]
    assert k.is_entry and k.maxntid == (128, 1, 1) and k.minnctapersm == 2
    assert [p.name for p in k.params] == ["k_param_0", "k_param_1"]
    assert k.params[0].ptr_space == "global" and k.params[0].align == 4
    assert k.params[1].size == 24 and k.params[1].align == 8
    assert k.regs == {"%r0": "b32", "%r2": "b32"}  # the registers used, as declared
    f = m.functions["add1"]
    assert not f.is_definition and [r.name for r in f.rets] == ["func_retval0"]


def test_instructions_operands_and_guards():
    m = parse(HEADER + """
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<3>;
    .reg .b32 %r<9>;
    .reg .b64 %rd<3>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [p];
    ld.global.v4.u32 {%r1, %r2, %r3, _}, [%rd1+16];
    setp.lt.and.s32 %p1|%p2, %r1, -5, %p0;
    @!%p1 bra $L__BB0_2;
    mov.f32 %f1, 0f3F800000;
    shfl.sync.down.b32 %r4|%p2, %r1, %r2, 31, -1;
$L__BB0_2:
    mov.u32 %r5, %tid.x;
    ret;
}
""")
    body = m.functions["k"].body
    ld = body[1]
    assert ld.op == "ld" and ld.mods == ("global", "v4", "u32")
    assert ld.args[0] == ir.Vec((ir.Reg("%r1"), ir.Reg("%r2"), ir.Reg("%r3"), ir.Sink()))
    assert ld.args[1] == ir.Mem(ir.Reg("%rd1"), 16)
    setp = body[2]
    assert setp.args[0] == ir.PredPair(ir.Reg("%p1"), ir.Reg("%p2")) and setp.args[2] == ir.Imm(-5)
    bra = body[3]
    assert bra.guard == ir.Reg("%p1") and bra.guard_neg and bra.args == [ir.Sym("$L__BB0_2")]
    assert body[4].args[1] == ir.FImm(1.0, 32, 0x3F800000)
    assert isinstance(body[6], ir.Label)
    assert body[7].args[1] == ir.Special("%tid.x")


def test_inline_asm_scopes_are_flattened_with_unique_names():
    m = parse(HEADER + """
.visible .entry k()
{
    .reg .b32 %r<2>;
    { .reg .pred p; setp.eq.u32 p, %r0, 0; @p add.u32 %r1, %r1, 1; LAB: @p bra LAB; }
    { .reg .pred p; setp.eq.u32 p, %r1, 0; LAB: @p bra LAB; }
    ret;
}
""")
    f = m.functions["k"]
    preds = [r for r, t in f.regs.items() if t == "pred"]
    assert len(preds) == 2 and len(set(preds)) == 2
    labels = [s.name for s in f.body if isinstance(s, ir.Label)]
    assert len(labels) == 2 and len(set(labels)) == 2
    branches = [s for s in f.body if isinstance(s, ir.Instr) and s.op == "bra"]
    assert [b.args[0].name for b in branches] == labels  # each branch goes to its own scope's label


def test_call_sequences_and_prototypes():
    m = parse(HEADER + """
.func (.param .b32 r) f(.param .b32 a) { ld.param.b32 %r1, [a]; st.param.b32 [r], %r1; ret; }
.visible .entry k(.param .u64 fp)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    {
    .param .b32 param0;
    st.param.b32 [param0+0], %r1;
    .param .b32 retval0;
    prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
    call (retval0), %rd1, (param0), prototype_0;
    ld.param.b32 %r2, [retval0+0];
    }
    ret;
}
""")
    k = m.functions["k"]
    assert "prototype_0" in k.prototypes and len(k.prototypes["prototype_0"].params) == 1
    call = next(s for s in k.body if isinstance(s, ir.Instr) and s.op == "call")
    assert isinstance(call.args[0], ir.Args) and call.args[1] == ir.Reg("%rd1")
    assert {v.name for v in k.locals if v.space == "param"} == {call.args[0].items[0].name, call.args[2].items[0].name}


def test_loc_and_file_are_kept_for_error_messages():
    m = parse(HEADER + """
.file 1 "/src/kern.cu"
.visible .entry k()
{
    .loc 1 42 7
    ret;
}
""")
    ret = m.functions["k"].body[0]
    assert m.files[1] == "/src/kern.cu" and ret.loc == (1, 42)


@pytest.mark.parametrize(
    "text, line, expected",
    [
        (".visible .entry k() { add.s32 %r1, %r2 %r3; ret; }", 4, "',' or ';'"),
        (".visible .entry k() {\n ret;\n", 6, "'}'"),
        (".global .u32 x = ;", 4, "a constant"),
        (".visible .entry k(.param .u64) { ret; }", 4, "a variable name"),
        (".bogus 3;", 4, "a directive"),
        (".visible .entry k() { ld.param.u64 %rd1, [p; ret; }", 4, "']'"),
    ],
)
def test_syntax_errors_name_the_line_and_what_was_expected(text, line, expected):
    with pytest.raises(PtxSyntaxError) as e:
        parse(HEADER + text)
    assert f"PTX line {line}" in str(e.value) or e.value.line == line
    assert expected in str(e.value)
