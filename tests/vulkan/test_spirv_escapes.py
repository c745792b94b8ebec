"""spv.Op* escapes and LLVM atomics on the device: global and shared atomics (32/64-bit,
compare-and-swap loops, float add), a shared-memory reduction with barriers, subgroup
operations, the clock."""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll
from spvrun import Ptr, device, run
from spvtools import F32, I1, I32, I64, VOID, Kernel, translate_valid

DEVICE, WORKGROUP, SUBGROUP = 1, 2, 3
RELAXED = 0
ACQ_REL_WG = 0x8 | 0x100  # AcquireRelease | WorkgroupMemory
LOCAL = 64


def c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def test_global_atomic_add_returns_distinct_old_values() -> None:
    k = Kernel()
    b = k.b
    counter, out = k.push_ptr(0), k.push_ptr(8)
    i = k.global_id(LOCAL)
    old = k.op("OpAtomicIAdd", I32, [counter, DEVICE, RELAXED, c32(1)])
    b.store(old, k.element(out, i, I32)).align = 4
    b.ret_void()
    sh = translate_valid(k)
    n = LOCAL * 40
    cnt, olds = run(sh, (40, 1, 1), [Ptr(np.zeros(1, np.uint32)), Ptr(np.zeros(n, np.uint32))])
    assert cnt[0] == n
    assert np.array_equal(np.sort(olds), np.arange(n, dtype=np.uint32))


def test_64_bit_atomics_and_atomicrmw() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    i = k.global_id(LOCAL)
    v = b.zext(i, I64)
    big = b.add(b.shl(v, ll.Constant(I64, 32)), v)
    k.op("OpAtomicIAdd", I64, [p, DEVICE, RELAXED, big])
    b.atomic_rmw("umax", k.element(p, c32(1), I64), big, "monotonic")
    b.atomic_rmw("xor", k.element(p, c32(2), I32), i, "monotonic")
    b.atomic_rmw("min", k.element(p, c32(6), I32), b.sub(c32(1000), i), "monotonic")
    b.ret_void()
    sh = translate_valid(k)
    assert "Int64Atomics" in sh.capabilities and "shaderBufferInt64Atomics" in sh.features
    n = LOCAL * 8
    init = np.zeros(4, np.uint64)
    init[3] = 0x7FFFFFFF  # word 6 (as i32), the min target
    (res,) = run(sh, (8, 1, 1), [Ptr(init)])
    ids = np.arange(n, dtype=np.uint64)
    assert res[0] == int(np.sum((ids << np.uint64(32)) + ids))
    assert res[1] == ((n - 1) << 32) + n - 1
    words = res.view(np.uint32)
    assert words[4] == np.bitwise_xor.reduce(ids.astype(np.uint32))
    assert words[6] == 1000 - (n - 1)


def test_cmpxchg_loop_float_max_in_shared_and_global() -> None:
    """An atomic float maximum by compare-and-swap, as the isa layer builds it: LLVM cmpxchg
    in a loop on shared memory, then one per workgroup on global memory."""
    k = Kernel()
    b = k.b
    src, dst = k.push_ptr(0), k.push_ptr(8)
    sh_t = ll.ArrayType(I32, 1)
    shared = ll.GlobalVariable(k.module, sh_t, "cuport.shared", addrspace=3)
    slot = b.gep(shared, [c32(0), c32(0)], source_etype=sh_t)
    lid = k.builtin("LocalInvocationIndex")
    i = k.global_id(LOCAL)
    x = b.load(k.element(src, i, F32), typ=F32, align=4)
    init, l1, d1 = k.block("init"), k.block("cas1"), k.block("done1")
    go = k.block("go")
    b.cbranch(b.icmp_unsigned("==", lid, c32(0)), init, go)
    b.position_at_end(init)
    k.store(ll.Constant(I32, 0xFF800000), slot)  # -inf
    b.branch(go)
    b.position_at_end(go)
    k.op("OpControlBarrier", VOID, [WORKGROUP, WORKGROUP, ACQ_REL_WG])
    first = b.load(slot, typ=I32)
    b.branch(l1)
    b.position_at_end(l1)
    cur = b.phi(I32)
    cur.add_incoming(first, go)
    bigger = b.fcmp_ordered(">", x, b.bitcast(cur, F32))
    new = b.select(bigger, b.bitcast(x, I32), cur)
    res = b.cmpxchg(slot, cur, new, "monotonic", "monotonic")
    cur.add_incoming(b.extract_value(res, 0), l1)
    b.cbranch(b.extract_value(res, 1), d1, l1)
    b.position_at_end(d1)
    k.op("OpControlBarrier", VOID, [WORKGROUP, WORKGROUP, ACQ_REL_WG])
    leader, out, end = k.block("leader"), k.block("out"), k.block("end")
    b.cbranch(b.icmp_unsigned("==", lid, c32(0)), leader, end)
    b.position_at_end(leader)
    m = b.load(slot, typ=I32)
    g0 = b.load(dst, typ=I32, align=4)
    b.branch(out)
    b.position_at_end(out)
    gcur = b.phi(I32)
    gcur.add_incoming(g0, leader)
    gnew = b.select(b.fcmp_ordered(">", b.bitcast(m, F32), b.bitcast(gcur, F32)), m, gcur)
    r2 = b.cmpxchg(dst, gcur, gnew, "monotonic", "monotonic")
    gcur.add_incoming(b.extract_value(r2, 0), out)
    b.cbranch(b.extract_value(r2, 1), end, out)
    b.position_at_end(end)
    b.ret_void()
    sh = translate_valid(k)
    n = LOCAL * 16
    data = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    _, got = run(sh, (16, 1, 1), [Ptr(data), Ptr(np.array([-np.inf], np.float32))])
    assert got[0] == data.max()


def test_float_atomic_add() -> None:
    k = Kernel()
    b = k.b
    p = k.push_ptr(0)
    k.op("OpAtomicFAddEXT", F32, [p, DEVICE, RELAXED, ll.Constant(F32, 0.5)])
    b.ret_void()
    sh = translate_valid(k)
    assert "AtomicFloat32AddEXT" in sh.capabilities and "SPV_EXT_shader_atomic_float_add" in sh.extensions
    assert "shaderBufferFloat32AtomicAdd" in sh.features
    (res,) = run(sh, (10, 1, 1), [Ptr(np.zeros(1, np.float32))])
    assert res[0] == 0.5 * LOCAL * 10


def test_shared_memory_tree_reduction_with_barriers() -> None:
    local = 256
    k = Kernel()
    b = k.b
    src, dst = k.push_ptr(0), k.push_ptr(8)
    sh_t = ll.ArrayType(I32, local)
    shared = ll.GlobalVariable(k.module, sh_t, "cuport.shared", addrspace=3)
    lid = k.builtin("LocalInvocationIndex")
    gid = k.builtin("WorkgroupId", "x")
    i = b.add(b.mul(gid, c32(local)), lid)
    mine = b.gep(shared, [c32(0), lid], source_etype=sh_t)
    k.store(b.load(k.element(src, i, I32), typ=I32, align=4), mine)
    entry = b.block
    head, body, add, nxt, done = (k.block(x) for x in ("head", "body", "add", "next", "done"))
    b.branch(head)
    b.position_at_end(head)
    s = b.phi(I32)
    s.add_incoming(c32(local // 2), entry)
    b.cbranch(b.icmp_unsigned(">", s, c32(0)), body, done)
    b.position_at_end(body)
    k.op("OpControlBarrier", VOID, [WORKGROUP, WORKGROUP, ACQ_REL_WG])
    b.cbranch(b.icmp_unsigned("<", lid, s), add, nxt)
    b.position_at_end(add)
    other = b.load(b.gep(shared, [c32(0), b.add(lid, s)], source_etype=sh_t), typ=I32)
    k.store(b.add(b.load(mine, typ=I32), other), mine)
    b.branch(nxt)
    b.position_at_end(nxt)
    s.add_incoming(b.lshr(s, c32(1)), nxt)
    b.branch(head)
    b.position_at_end(done)
    lead, end = k.block("lead"), k.block("end")
    b.cbranch(b.icmp_unsigned("==", lid, c32(0)), lead, end)
    b.position_at_end(lead)
    b.store(b.load(mine, typ=I32), k.element(dst, gid, I32)).align = 4
    b.branch(end)
    b.position_at_end(end)
    b.ret_void()
    sh = translate_valid(k, (local, 1, 1))
    groups = 12
    data = np.random.default_rng(5).integers(0, 1000, groups * local, dtype=np.uint32)
    _, got = run(sh, (groups, 1, 1), [Ptr(data), Ptr(np.zeros(groups, np.uint32))])
    assert np.array_equal(got, data.reshape(groups, local).sum(axis=1).astype(np.uint32))


def test_subgroup_operations() -> None:
    k = Kernel()
    b = k.b
    src, out = k.push_ptr(0), k.push_ptr(8)
    i = k.global_id(LOCAL)
    x = b.load(k.element(src, i, I32), typ=I32, align=4)
    lane = k.builtin("SubgroupLocalInvocationId")
    size = k.builtin("SubgroupSize")
    odd = b.trunc(x, I1)
    v4 = ll.VectorType(I32, 4)
    ballot = k.op("OpGroupNonUniformBallot", v4, [SUBGROUP, odd])
    count = k.op("OpGroupNonUniformBallotBitCount", I32, [SUBGROUP, 0, ballot])  # Reduce
    total = k.op("OpGroupNonUniformIAdd", I32, [SUBGROUP, 0, x])  # Reduce
    prefix = k.op("OpGroupNonUniformIAdd", I32, [SUBGROUP, 2, x])  # ExclusiveScan
    nxt = k.op("OpGroupNonUniformShuffle", I32, [SUBGROUP, x, b.urem(b.add(lane, c32(1)), size)])
    allodd = b.zext(k.op("OpGroupNonUniformAll", I1, [SUBGROUP, odd]), I32)
    anyodd = b.zext(k.op("OpGroupNonUniformAny", I1, [SUBGROUP, odd]), I32)
    elect = b.zext(k.op("OpGroupNonUniformElect", I1, [SUBGROUP]), I32)
    umax = k.op("OpGroupNonUniformUMax", I32, [SUBGROUP, 0, x])
    for j, v in enumerate((size, lane, b.extract_element(ballot, c32(0)), count, total, prefix, nxt,
                           allodd, anyodd, elect, umax)):
        b.store(v, k.element(out, b.add(b.mul(i, c32(11)), c32(j)), I32)).align = 4
    b.ret_void()
    sh = translate_valid(k)
    assert set(sh.subgroup_operations) == {"basic", "ballot", "arithmetic", "shuffle", "vote"}
    groups = 4
    n = LOCAL * groups
    data = np.random.default_rng(6).integers(0, 1 << 20, n, dtype=np.uint32)
    data[:LOCAL] = 1  # a whole workgroup odd: all-true votes in every subgroup of it
    _, got = run(sh, (groups, 1, 1), [Ptr(data), Ptr(np.zeros(n * 11, np.uint32))])
    got = got.reshape(n, 11)
    w = int(got[0, 0])
    assert w in (4, 8, 16, 32, 64) and (got[:, 0] == w).all()
    sub = data.reshape(-1, w)
    r = got.reshape(-1, w, 11)
    assert (r[:, :, 1] == np.arange(w)).all()
    odd = (sub & 1).astype(bool)
    if w <= 32:
        bits = (odd * (1 << np.arange(w, dtype=np.uint64))).sum(axis=1).astype(np.uint32)
        assert (r[:, :, 2] == bits[:, None]).all()
    assert (r[:, :, 3] == odd.sum(axis=1)[:, None]).all()
    assert (r[:, :, 4] == sub.sum(axis=1, dtype=np.uint32)[:, None]).all()
    assert (r[:, :, 5] == (np.cumsum(sub, axis=1, dtype=np.uint32) - sub)).all()
    assert (r[:, :, 6] == np.roll(sub, -1, axis=1)).all()
    assert (r[:, :, 7] == odd.all(axis=1)[:, None]).all()
    assert (r[:, :, 8] == odd.any(axis=1)[:, None]).all()
    assert (r[:, :, 9].sum(axis=1) == 1).all()
    assert (r[:, :, 10] == sub.max(axis=1)[:, None]).all()


def test_clock() -> None:
    if not device().info.features.get("shaderDeviceClock"):
        import pytest
        pytest.skip("no shaderDeviceClock")
    k = Kernel()
    b = k.b
    out = k.push_ptr(0)
    t0 = k.op("OpReadClockKHR", I64, [DEVICE])
    acc = b.mul(b.trunc(t0, I32), c32(3))
    t1 = k.op("OpReadClockKHR", I64, [DEVICE])
    b.store(b.sub(t1, t0), out).align = 8
    b.store(b.zext(acc, I64), k.element(out, c32(1), I64)).align = 8
    b.ret_void()
    sh = translate_valid(k, (1, 1, 1))
    assert "ShaderClockKHR" in sh.capabilities and "SPV_KHR_shader_clock" in sh.extensions
    (res,) = run(sh, (1, 1, 1), [Ptr(np.zeros(2, np.uint64))])
    assert res[0] < 10**12  # t1 >= t0 (a wrapped difference would be huge)


def _shared_retype(elem, n_elems, write_t, read_t, local=64):
    """Each invocation stores its input as write_t at slot lid of shared memory seen as an
    array of write_t, a barrier, then reads slot lid as read_t of the array seen as read_t."""
    k = Kernel()
    b = k.b
    src, dst = k.push_ptr(0), k.push_ptr(8)
    sh_t = ll.ArrayType(elem, n_elems)
    shared = ll.GlobalVariable(k.module, sh_t, "cuport.shared", addrspace=3)
    lid = k.builtin("LocalInvocationIndex")
    gid = k.builtin("WorkgroupId", "x")
    i = b.add(b.mul(gid, c32(local)), lid)
    v = b.load(k.element(src, i, write_t), typ=write_t, align=4)
    k.store(v, b.gep(shared, [c32(0), lid], source_etype=ll.ArrayType(write_t, 1)))
    k.op("OpControlBarrier", VOID, [WORKGROUP, WORKGROUP, ACQ_REL_WG])
    base = b.gep(shared, [c32(0), c32(0)], source_etype=sh_t)
    r = b.load(b.gep(base, [lid], source_etype=read_t), typ=read_t)
    b.store(r, k.element(dst, i, read_t)).align = 4
    b.ret_void()
    return translate_valid(k, (local, 1, 1))


def test_shared_memory_seen_through_other_types() -> None:
    from llvmlite import ir as llir
    v4f = llir.VectorType(F32, 4)
    rng = np.random.default_rng(8)
    cases = [(I32, 64 * 2, I64, I64, np.uint64), (I32, 64 * 4, v4f, v4f, np.float32),
             (ll.IntType(8), 64 * 4, I32, F32, np.uint32), (I32, 64, I32, F32, np.uint32),
             (ll.IntType(8), 64 * 2, ll.IntType(16), ll.IntType(16), np.uint16)]
    for elem, n, wt, rt, dt in cases:
        sh = _shared_retype(elem, n, wt, rt)
        per = {I64: 1, v4f: 4}.get(wt, 1)
        data = rng.integers(0, 2**16, 64 * 2 * per, dtype=np.uint32).astype(dt) if dt != np.float32 else \
            rng.standard_normal(64 * 2 * 4).astype(np.float32)
        _, out = run(sh, (2, 1, 1), [Ptr(data), Ptr(np.zeros_like(data))])
        assert out.tobytes() == data.tobytes(), (elem, wt, rt)
