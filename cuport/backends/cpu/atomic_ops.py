"""The CPU backend's atomics for a warp (atom, red; decoded by cuport/isa/atomics.py).

The lanes of a warp act one after another in lane order, so when several lanes hit one
address each sees the previous lane's result:
- global and generic addresses: every lane does a real LLVM atomic (`atomicrmw`,
  `cmpxchg`, or a compare-and-swap loop for operations LLVM lacks), because other worker
  threads run other blocks at the same time;
- shared addresses: only this worker thread touches the block's shared memory, so a
  plain load, combine and store per lane is atomic already;
- integer add to one address from the whole warp (the counter idiom): one atomic add of
  the warp's total, each lane's old value from an exclusive prefix sum in lane order.
`.scope` needs nothing: a CPU atomic is visible to every thread.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.atomics import Atomic, combine, kind
from ...isa.types import F32, F64, I1, I32, I64, vec
from ...ptx.ir import TYPE_BITS
from .memory_ops import for_each_lane, in_shared_window, lane_pointers

_FAIL = {"monotonic": "monotonic", "acquire": "acquire", "release": "monotonic", "acq_rel": "acquire"}

#: (op, kind) → the LLVM atomicrmw operation; kind is "s" / "u" / "b" / "f" (f32/f64)
_RMW = {
    ("add", "u"): "add", ("add", "s"): "add", ("add", "f"): "fadd",
    ("min", "s"): "min", ("min", "u"): "umin", ("max", "s"): "max", ("max", "u"): "umax",
    ("inc", "u"): "uinc_wrap", ("dec", "u"): "udec_wrap",
    ("and", "b"): "and", ("or", "b"): "or", ("xor", "b"): "xor",
    ("exch", "b"): "xchg", ("exch", "u"): "xchg", ("exch", "s"): "xchg",
}


def _cas_loop(em, p: ll.Value, et: ll.IntType, order: str, new_of) -> ll.Value:
    """Atomically replace *p by new_of(old) with a compare-and-swap loop; returns old."""
    b = em.b
    size = et.width // 8
    pre = b.block
    first = b.load_atomic(p, "monotonic", size, typ=et)
    loop = em.llfn.append_basic_block("cas")
    done = em.llfn.append_basic_block("cas_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(et)
    old.add_incoming(first, pre)
    new = new_of(old)
    res = b.cmpxchg(p, old, new, order, _FAIL[order])
    old.add_incoming(b.extract_value(res, 0), b.block)
    b.cbranch(b.extract_value(res, 1), done, loop)
    b.position_at_end(done)
    return old


def _one_lane(em, op: str, t: str, space: str, order: str, p: ll.Value, v: ll.Value,
              c: ll.Value | None) -> ll.Value:
    """Apply the operation at host address `p` for one lane; returns the old value (bits)."""
    b = em.b
    et = ll.IntType(TYPE_BITS[t])
    size = et.width // 8
    if space == "shared":
        old = b.load(p, typ=et, align=size)
        b.store(combine(b, op, t, old, v, c), p, align=size)
        return old
    if op == "cas":
        res = b.cmpxchg(p, v, c, order, _FAIL[order])
        return b.extract_value(res, 0)
    if op == "add" and t == "f32":
        # the GPU flushes subnormals of atom.add.f32 on global memory, not on shared
        if space == "global":
            ftz = ll.Constant(I1, 1)
        else:
            saved = em.vec
            em.vec = False
            ftz = b.not_(in_shared_window(em, b.ptrtoint(p, I64)))
            em.vec = saved
        return _cas_loop(em, p, et, order, lambda old: combine(b, op, t, old, v, c, ftz))
    name = _RMW.get((op, kind(t)))
    if name is None:
        return _cas_loop(em, p, et, order, lambda old: combine(b, op, t, old, v, c))
    if name == "fadd":
        ft = F64 if t == "f64" else F32
        r = b.atomic_rmw(name, p, b.bitcast(v, ft), order)
        return b.bitcast(r, et)
    return b.atomic_rmw(name, p, v, order)


def _exclusive_scan(em, x: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(exclusive prefix sums in lane order, total) of a 32-lane integer vector."""
    b = em.b
    zero = ll.Constant(x.type, None)
    incl = x
    s = 1
    while s < 32:
        idx = [i - s if i >= s else 32 for i in range(32)]
        incl = b.add(incl, b.shuffle_vector(incl, zero, ll.Constant(vec(I32), idx)))
        s *= 2
    return b.sub(incl, x), b.extract_element(incl, ll.Constant(I32, 31))


def atomic(em, a: Atomic) -> ll.Value | None:
    """Perform `a` for the executing lanes; the old values (bits) when `a.wants_old`."""
    b = em.b
    op, t, space, order, mem, v, c = a.op, a.t, a.space, a.order, a.mem, a.v, a.c
    ptrs = lane_pointers(em, mem, space)
    uniform = not isinstance(ptrs.type, ll.VectorType)
    exec_mask = em.exec_mask()

    if op == "add" and kind(t) in "us" and uniform:
        # the whole warp adds to one counter: one atomic, old values by prefix sum
        x = b.select(em.exec_mask_vec(), v, ll.Constant(v.type, None))
        before, total = _exclusive_scan(em, x)
        p = ptrs
        pre = b.block
        with b.if_then(b.icmp_unsigned("!=", exec_mask, ll.Constant(I32, 0))):
            base = _one_lane(em, op, t, space, order, p, total, None)
            then = b.block
        if not a.wants_old:
            return None
        phi = b.phi(total.type)
        phi.add_incoming(base, then)
        phi.add_incoming(ll.Constant(total.type, 0), pre)
        return b.add(em.splat(phi), before)

    def body(lane, accs):
        p = ptrs if uniform else b.extract_element(ptrs, lane)
        old = _one_lane(em, op, t, space, order, p, b.extract_element(v, lane),
                        b.extract_element(c, lane) if c is not None else None)
        return [b.insert_element(accs[0], old, lane)] if accs else []

    init = [ll.Constant(v.type, ll.Undefined)] if a.wants_old else []
    res = for_each_lane(em, exec_mask, init, body)
    return res[0] if a.wants_old else None
