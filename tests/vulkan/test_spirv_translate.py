"""llvmlite kernels built the way the Vulkan emitter builds them, translated to SPIR-V and
checked by spirv-val (Vulkan 1.2): straight-line integer and float code, global memory
through buffer device addresses, push constants, builtins, variables, control flow."""

from __future__ import annotations

import pytest
from llvmlite import ir as ll
from spvtools import F32, F64, I1, I8, I16, I32, I64, PTR, Kernel, disassemble, validate

from cuport.backends.vulkan.spirv import TranslateError


def translate_valid(k: Kernel, local=(64, 1, 1), **kw):
    """Translated and passed by spirv-val (skipped where it is not installed)."""
    sh = k.shader(local, **kw)
    validate(sh.spirv)
    return sh


def _vadd(t: ll.Type = F32) -> Kernel:
    k = Kernel("vadd")
    b = k.b
    a, bb, c = k.push_ptr(0), k.push_ptr(8), k.push_ptr(16)
    n = k.push(I32, 24)
    i = k.global_id(64)
    body, done = k.block("body"), k.block("done")
    b.cbranch(b.icmp_unsigned("<", i, n), body, done)
    b.position_at_end(body)
    x = b.load(k.element(a, i, t), typ=t, align=4)
    y = b.load(k.element(bb, i, t), typ=t, align=4)
    s = b.fadd(x, y) if t in (F32, F64) else b.add(x, y)
    b.store(s, k.element(c, i, t)).align = 4
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return k


def test_vadd_validates_and_reports() -> None:
    sh = translate_valid(_vadd())
    assert sh.push_size == 28
    assert "PhysicalStorageBufferAddresses" in sh.capabilities and "Int64" in sh.capabilities
    dis = disassemble(sh.spirv)
    assert "OpConvertUToPtr" in dis and "Aligned|NonPrivatePointer 4" in dis
    assert "NoContraction" in dis
    assert {"bufferDeviceAddress", "shaderInt64", "vulkanMemoryModel"} <= set(sh.features)
    assert sh.float_controls == ("shaderSignedZeroInfNanPreserveFloat32",)


@pytest.mark.parametrize("t", [I8, I16, I32, I64, F64], ids=str)
def test_vadd_types(t) -> None:
    translate_valid(_vadd(t))


def test_integer_ops() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    x = b.load(p, typ=I32, align=4)
    y = b.load(k.element(p, ll.Constant(I32, 1), I32), typ=I32, align=4)
    vals = [b.add(x, y), b.sub(x, y), b.mul(x, y), b.udiv(x, y), b.sdiv(x, y), b.urem(x, y),
            b.srem(x, y), b.shl(x, y), b.lshr(x, y), b.ashr(x, y), b.and_(x, y), b.or_(x, y),
            b.xor(x, y)]
    for op in ("==", "!=", "<", "<=", ">", ">="):
        vals.append(b.zext(b.icmp_unsigned(op, x, y), I32))
        vals.append(b.sext(b.icmp_signed(op, x, y), I32))
    w = b.zext(x, I64)
    vals.append(b.trunc(b.mul(w, b.sext(y, I64)), I32))
    vals.append(b.zext(b.trunc(x, I1), I32))
    vals.append(b.zext(b.trunc(x, I8), I32))
    vals.append(b.select(b.icmp_signed("<", x, y), x, y))
    for i, v in enumerate(vals):
        b.store(v, k.element(p, ll.Constant(I32, 2 + i), I32)).align = 4
    b.ret_void()
    translate_valid(k)


def test_float_ops_and_casts() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    x = b.load(p, typ=F32, align=4)
    y = b.load(k.element(p, ll.Constant(I32, 1), F32), typ=F32, align=4)
    vals = [b.fadd(x, y), b.fsub(x, y), b.fmul(x, y), b.fdiv(x, y), b.frem(x, y), b.fneg(x)]
    for op in ("==", "!=", "<", "<=", ">", ">=", "ord", "uno"):
        vals.append(b.uitofp(b.fcmp_ordered(op, x, y), F32))
        vals.append(b.sitofp(b.fcmp_unordered(op, x, y), F32))
    d = b.fpext(x, F64)
    vals.append(b.fptrunc(b.fmul(d, d), F32))
    vals.append(b.sitofp(b.fptosi(x, I32), F32))
    vals.append(b.uitofp(b.fptoui(x, I64), F32))
    vals.append(b.bitcast(b.add(b.bitcast(x, I32), ll.Constant(I32, 1)), F32))
    for i, v in enumerate(vals):
        b.store(v, k.element(p, ll.Constant(I32, 2 + i), F32)).align = 4
    b.ret_void()
    translate_valid(k)


def test_vectors() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    v2 = ll.VectorType(ll.IntType(16), 2)
    x = b.load(p, typ=I32, align=4)
    h = b.bitcast(x, v2)
    lo = b.extract_element(h, ll.Constant(I32, 0))
    hi = b.extract_element(h, ll.Constant(I32, 1))
    s = b.insert_element(h, b.add(lo, hi), ll.Constant(I32, 0))
    s = b.shuffle_vector(s, s, ll.Constant(ll.VectorType(I32, 2), [1, 0]))
    dyn = b.extract_element(s, b.and_(x, ll.Constant(I32, 1)))
    b.store(b.bitcast(s, I32), p).align = 4
    b.store(b.zext(dyn, I32), k.element(p, ll.Constant(I32, 1), I32)).align = 4
    v4 = ll.VectorType(I32, 4)
    q = b.load(k.element(p, ll.Constant(I32, 4), I32), typ=v4, align=16)
    b.store(q, k.element(p, ll.Constant(I32, 8), I32)).align = 16
    b.ret_void()
    translate_valid(k)


def test_alloca_and_shared() -> None:
    k = Kernel()
    b = k.b
    arr = ll.ArrayType(I32, 8)
    local = b.alloca(arr)
    shared = ll.GlobalVariable(k.module, ll.ArrayType(I32, 256), "cuport.shared", addrspace=3)
    i = k.builtin("LocalInvocationIndex")
    j = b.and_(i, ll.Constant(I32, 7))
    k.store(i, b.gep(local, [ll.Constant(I32, 0), j], source_etype=arr))
    v = b.load(b.gep(local, [ll.Constant(I32, 0), j], source_etype=arr), typ=I32)
    sp = b.gep(shared, [ll.Constant(I32, 0), i], source_etype=ll.ArrayType(I32, 256))
    k.store(v, sp)
    k.op("OpControlBarrier", ll.VoidType(), [2, 2, 0x108])
    w = b.load(b.gep(sp, [ll.Constant(I32, 1)], source_etype=I32), typ=I32)
    f = b.load(sp, typ=F32)
    out = k.push_ptr(0)
    b.store(b.add(w, b.bitcast(f, I32)), k.element(out, i, I32)).align = 4
    b.ret_void()
    sh = translate_valid(k)
    assert sh.shared_bytes == 1024


def test_loop_with_phi() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    n = k.push(I32, 8)
    entry = b.block
    head, body, done = k.block("head"), k.block("body"), k.block("done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32)
    acc = b.phi(F32)
    i.add_incoming(ll.Constant(I32, 0), entry)
    acc.add_incoming(ll.Constant(F32, 0.0), entry)
    b.cbranch(b.icmp_unsigned("<", i, n), body, done)
    b.position_at_end(body)
    x = b.load(k.element(p, i, F32), typ=F32, align=4)
    acc2 = b.fadd(acc, x)
    i2 = b.add(i, ll.Constant(I32, 1))
    i.add_incoming(i2, body)
    acc.add_incoming(acc2, body)
    b.branch(head)
    b.position_at_end(done)
    b.store(acc, p).align = 4
    b.ret_void()
    translate_valid(k)


def test_break_from_nested_loop_validates() -> None:
    """Two nested loops, the inner one leaving both: the dispatch variable path."""
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    n = k.push(I32, 8)
    entry = b.block
    oh, ih, ib, olatch, out = (k.block(x) for x in ("oh", "ih", "ib", "olatch", "out"))
    b.branch(oh)
    b.position_at_end(oh)
    i = b.phi(I32)
    i.add_incoming(ll.Constant(I32, 0), entry)
    b.branch(ih)
    b.position_at_end(ih)
    j = b.phi(I32)
    j.add_incoming(ll.Constant(I32, 0), oh)
    v = b.load(k.element(p, b.add(i, j), I32), typ=I32, align=4)
    b.cbranch(b.icmp_signed("<", v, ll.Constant(I32, 0)), out, ib)
    b.position_at_end(ib)
    j2 = b.add(j, ll.Constant(I32, 1))
    j.add_incoming(j2, ib)
    b.cbranch(b.icmp_unsigned("<", j2, n), ih, olatch)
    b.position_at_end(olatch)
    i2 = b.add(i, ll.Constant(I32, 1))
    i.add_incoming(i2, olatch)
    b.cbranch(b.icmp_unsigned("<", i2, n), oh, out)
    b.position_at_end(out)
    # i and v are used after the loops: defined inside, reached through the dispatch
    r = b.phi(I32)
    r.add_incoming(v, ih)
    r.add_incoming(i2, olatch)
    b.store(b.add(r, i), p).align = 4
    b.ret_void()
    translate_valid(k)


def test_switch() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    x = b.load(p, typ=I32, align=4)
    a, c, d, done = k.block("a"), k.block("c"), k.block("d"), k.block("done")
    sw = b.switch(x, d)
    sw.add_case(ll.Constant(I32, 1), a)
    sw.add_case(ll.Constant(I32, 5), c)
    sw.add_case(ll.Constant(I32, 7), a)
    for blk, val in ((a, 10), (c, 20), (d, 30)):
        b.position_at_end(blk)
        b.store(ll.Constant(I32, val), p).align = 4
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    translate_valid(k)


def test_builtins() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    names = [("LocalInvocationId", "x"), ("LocalInvocationId", "y"), ("WorkgroupId", "z"),
             ("NumWorkgroups", "x"), ("LocalInvocationIndex", None), ("SubgroupLocalInvocationId", None),
             ("SubgroupSize", None), ("SubgroupId", None), ("NumSubgroups", None)]
    for i, (n, c) in enumerate(names):
        b.store(k.builtin(n, c), k.element(p, ll.Constant(I32, i), I32)).align = 4
    b.ret_void()
    sh = translate_valid(k)
    assert "GroupNonUniform" in sh.capabilities


def test_error_names_instruction_and_line() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    x = b.load(p, typ=I32, align=4)
    bad = b.call(k.declare("some.function", I32, [I32]), [x])
    bad.cuport_line = 42
    b.ret_void()
    with pytest.raises(TranslateError) as e:
        k.shader()
    assert "some.function" in str(e.value) and "PTX line 42" in str(e.value)
    assert e.value.ptx_line == 42


def test_irreducible_names_the_branch() -> None:
    k = Kernel()
    b = k.b
    x = k.push(I32, 0)
    l1, l2, done = k.block("l1"), k.block("l2"), k.block("done")
    br = b.cbranch(b.icmp_unsigned("<", x, ll.Constant(I32, 3)), l1, l2)
    br.cuport_line = 17
    b.position_at_end(l1)
    b.cbranch(b.icmp_unsigned("<", x, ll.Constant(I32, 5)), l2, done)
    b.position_at_end(l2)
    b.cbranch(b.icmp_unsigned("<", x, ll.Constant(I32, 7)), l1, done)
    b.position_at_end(done)
    b.ret_void()
    with pytest.raises(TranslateError) as e:
        k.shader()
    assert "irreducible" in str(e.value) and "PTX line 17" in str(e.value)


def test_pointer_in_memory() -> None:
    k = Kernel()
    b = k.b
    pp = k.push_ptr(0)
    q = b.load(pp, typ=PTR, align=8)
    v = b.load(q, typ=I32, align=4)
    b.store(q, k.element(pp, ll.Constant(I32, 1), PTR)).align = 8
    b.store(v, pp).align = 4
    b.ret_void()
    translate_valid(k)


def test_volatile_accesses_are_made_visible_and_available() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    x = b.load(p, typ=I32, align=4)
    x.volatile = True
    sh_t = ll.ArrayType(I32, 4)
    g = ll.GlobalVariable(k.module, sh_t, "cuport.shared", addrspace=3)
    y = b.load(b.gep(g, [ll.Constant(I32, 0), ll.Constant(I32, 1)], source_etype=sh_t), typ=I32)
    y.volatile = True
    s = b.store(b.add(x, y), p)
    s.volatile = True
    s.align = 4
    b.ret_void()
    dis = disassemble(translate_valid(k).spirv)
    assert "Volatile|Aligned|MakePointerVisible|NonPrivatePointer 4" in dis
    assert "Volatile|Aligned|MakePointerAvailable|NonPrivatePointer 4" in dis
    assert "Volatile|MakePointerVisible|NonPrivatePointer" in dis


def _callee(k: Kernel, name: str = "sum_to") -> ll.Function:
    """i32 @sum_to(i32 n): 0 + 1 + ... + (n - 1), with a loop."""
    f = ll.Function(k.module, ll.FunctionType(I32, [I32]), name)
    f.linkage = "internal"
    b = ll.IRBuilder(f.append_basic_block("entry"))
    head, body, done = f.append_basic_block("head"), f.append_basic_block("body"), f.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32)
    acc = b.phi(I32)
    i.add_incoming(ll.Constant(I32, 0), f.blocks[0])
    acc.add_incoming(ll.Constant(I32, 0), f.blocks[0])
    b.cbranch(b.icmp_unsigned("<", i, f.args[0]), body, done)
    b.position_at_end(body)
    i.add_incoming(b.add(i, ll.Constant(I32, 1)), body)
    acc.add_incoming(b.add(acc, i), body)
    b.branch(head)
    b.position_at_end(done)
    b.ret(acc)
    return f


def test_calls_of_defined_functions() -> None:
    import numpy as np
    from spvrun import Ptr, run
    k = Kernel()
    b = k.b
    f = _callee(k)
    out = k.push_ptr(0)
    i = k.builtin("LocalInvocationIndex")
    r = b.add(b.call(f, [i]), b.call(f, [ll.Constant(I32, 3)]))
    b.store(r, k.element(out, i, I32)).align = 4
    b.ret_void()
    sh = translate_valid(k, (64, 1, 1))
    (got,) = run(sh, (1, 1, 1), [Ptr(np.zeros(64, np.uint32))])
    n = np.arange(64)
    assert np.array_equal(got, (n * (n - 1) // 2 + 3).astype(np.uint32))


def test_a_defined_function_with_several_results() -> None:
    """em.outline's functions return a literal struct (insertvalue into undef, ret), the
    caller takes its members (extractvalue); a branch in the callee sets them on two paths,
    and one is used in the other block (the translator's demotion across blocks)."""
    import numpy as np
    from spvrun import Ptr, run
    k = Kernel()
    st = ll.LiteralStructType([I32, F32, I64])
    f = ll.Function(k.module, ll.FunctionType(st, [I32, F32]), "cuport.outlined.pair")
    f.linkage = "internal"
    fb = ll.IRBuilder(f.append_basic_block("entry"))
    odd, even = f.append_basic_block("odd"), f.append_basic_block("even")
    x, y = f.args
    sq = fb.mul(x, x)
    agg = fb.insert_value(ll.Constant(st, ll.Undefined), sq, 0)
    fb.cbranch(fb.trunc(x, I1), odd, even)
    fb.position_at_end(odd)
    a1 = fb.insert_value(fb.insert_value(agg, fb.fmul(y, ll.Constant(F32, 3.0)), 1), fb.zext(sq, I64), 2)
    fb.ret(a1)
    fb.position_at_end(even)
    a2 = fb.insert_value(fb.insert_value(agg, y, 1), ll.Constant(I64, 1 << 40), 2)
    fb.ret(a2)
    b = k.b
    out = k.push_ptr(0)
    i = k.builtin("LocalInvocationIndex")
    r = b.call(f, [i, b.uitofp(i, F32)])
    v = b.add(b.add(b.extract_value(r, 0), b.fptoui(b.extract_value(r, 1), I32)),
              b.trunc(b.lshr(b.extract_value(r, 2), ll.Constant(I64, 32)), I32))
    b.store(v, k.element(out, i, I32)).align = 4
    b.ret_void()
    sh = translate_valid(k, (64, 1, 1))
    (got,) = run(sh, (1, 1, 1), [Ptr(np.zeros(64, np.uint32))])
    n = np.arange(64)
    assert np.array_equal(got, np.where(n % 2, n * n + 3 * n, n * n + n + 256).astype(np.uint32))


def test_recursion_is_refused() -> None:
    k = Kernel()
    f = ll.Function(k.module, ll.FunctionType(I32, [I32]), "rec")
    fb = ll.IRBuilder(f.append_basic_block("entry"))
    c = fb.call(f, [f.args[0]])
    c.cuport_line = 9
    fb.ret(c)
    k.b.call(f, [ll.Constant(I32, 1)])
    k.b.ret_void()
    with pytest.raises(TranslateError) as e:
        k.shader()
    assert "recursive call of @rec" in str(e.value) and "PTX line 9" in str(e.value)


def test_constant_table_global() -> None:
    """A constant table in addrspace 0 (the isa layer's sRGB decode table) is a Private
    variable every invocation reads."""
    import numpy as np
    from spvrun import Ptr, run
    k = Kernel()
    b = k.b
    t = ll.ArrayType(F32, 16)
    table = ll.GlobalVariable(k.module, t, "table")
    table.global_constant = True
    table.initializer = ll.Constant(t, [float(i) * 0.5 for i in range(16)])
    out = k.push_ptr(0)
    i = k.builtin("LocalInvocationIndex")
    v = b.load(b.gep(table, [ll.Constant(I32, 0), b.and_(i, ll.Constant(I32, 15))]), typ=F32)
    b.store(v, k.element(out, i, F32)).align = 4
    b.ret_void()
    sh = translate_valid(k, (64, 1, 1))
    (got,) = run(sh, (1, 1, 1), [Ptr(np.zeros(64, np.float32))])
    assert np.array_equal(got, (np.arange(64) % 16 * 0.5).astype(np.float32))


def test_types_of_temporary_llvmlite_types() -> None:
    """The type cache must not mistake a new llvmlite type for a dead one whose id() it
    reuses (on the H200 host an i64 load was bitcast to a uvec3 that way)."""
    import importlib

    tr_mod = importlib.import_module("cuport.backends.vulkan.spirv.translate")

    k = Kernel()
    k.b.ret_void()
    tr = tr_mod._Translator(k.module, k.fn, (1, 1, 1), tr_mod.FloatModes())
    m = tr.m  # the module's own type table, deduplicated by structure
    v3, v4, arr = m.t_vector(tr.ty(I32), 3), m.t_vector(tr.ty(F32), 4), m.t_array(tr.ty(I64), 8)
    for _ in range(50):  # llvmlite makes a new object for each vector or array type
        assert tr.ty(ll.VectorType(I32, 3)) == v3
        assert tr.ty(ll.VectorType(F32, 4)) == v4
        assert tr.ty(ll.ArrayType(I64, 8)) == arr
