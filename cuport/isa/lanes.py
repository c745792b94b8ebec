"""LLVM IR written once for one thread or for the lanes of a warp together.

The texture unit (texture_sampler.py) is generated from the same Python code in two shapes:
per thread, every value a scalar (the Vulkan backend, and a CPU warp whose lanes sample
different textures), and per warp, what varies between lanes a `<N x T>` vector while what
one descriptor says stays scalar (the CPU backend: decisions on a texture's format and
modes then stay branches the whole warp takes once). `LaneBuilder` is llvmlite's IRBuilder
whose operations take scalars and vectors alike, splatting a scalar where it meets a
vector, and whose loads through a vector of addresses are gathers of the executing lanes.
Integer operations, comparisons and selects whose operands are scalar constants are folded
(constants come from a descriptor's fields that a kernel variant knows: texture_sampler.py),
so that what they decide needs no code.
"""

from __future__ import annotations

from llvmlite import ir as ll

from .types import I1, I32, I64, PTR, mangle, vec

_BINARY = ("add", "sub", "mul", "and_", "or_", "xor", "shl", "lshr", "ashr", "sdiv", "udiv",
           "srem", "urem", "fadd", "fsub", "fmul", "fdiv")
#: lanes per contiguous load where a gather's addresses follow each other (lanes.py
#: _runs_or_gather): 8, the shortest row of a warp in blocks 8, 16 or 32 wide
RUN = 8
_CASTS = ("zext", "sext", "trunc", "fpext", "fptrunc", "uitofp", "sitofp", "fptosi", "fptoui",
          "bitcast", "inttoptr", "ptrtoint")


def lanes_of(v: ll.Value) -> int:
    """1 for a scalar, N for an <N x T> vector."""
    return v.type.count if isinstance(v.type, ll.VectorType) else 1


def scalar_type(t: ll.Type) -> ll.Type:
    return t.element if isinstance(t, ll.VectorType) else t


class LaneBuilder:
    """An IRBuilder for values of one lane or of `lanes` lanes (see the module docstring).
    `mask` (<lanes x i1>, None per thread) is the lanes that execute: gathers read only
    those. Everything not defined here (blocks, branches, phis, calls, stores) is the
    IRBuilder's own."""

    def __init__(self, b: ll.IRBuilder, lanes: int = 1, mask: ll.Value | None = None) -> None:
        self.ir = b
        self.lanes = lanes
        self.mask = mask

    def __getattr__(self, name: str):
        return getattr(self.ir, name)

    # -- shapes
    def splat(self, v: ll.Value, n: int | None = None) -> ll.Value:
        """A scalar as a vector of n (default: the builder's) lanes; a vector as it is."""
        n = n or self.lanes
        if lanes_of(v) == n or n == 1:
            return v
        t = vec(v.type, n)
        if isinstance(v, ll.Constant) and not isinstance(v.constant, (list, type(None))) \
                and not isinstance(v.type, ll.PointerType):
            return ll.Constant(t, [v.constant] * n)
        undef = ll.Constant(t, ll.Undefined)
        one = self.ir.insert_element(undef, v, ll.Constant(I32, 0))
        return self.ir.shuffle_vector(one, undef, ll.Constant(vec(I32, n), [0] * n))

    def like(self, *vals: ll.Value) -> list[ll.Value]:
        """The values at the width of the widest of them."""
        n = max(lanes_of(v) for v in vals)
        return [self.splat(v, n) for v in vals]

    def type_of(self, t: ll.Type, n: int) -> ll.Type:
        return vec(t, n) if n > 1 else t

    def any(self, c: ll.Value) -> ll.Value:
        """Whether an i1 holds in any lane (of the executing ones where there is a mask)."""
        if lanes_of(c) == 1:
            return c
        n = lanes_of(c)
        if self.mask is not None:  # a select: a lane that does not execute may hold poison
            c = self.ir.select(self.mask, c, ll.Constant(c.type, [0] * n))
        bits = self.ir.bitcast(c, ll.IntType(n))
        return self.ir.icmp_unsigned("!=", bits, ll.Constant(ll.IntType(n), 0))

    # -- arithmetic
    def icmp_signed(self, op: str, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        folded = _fold_compare(op, x, y, True)
        return folded if folded is not None else self.ir.icmp_signed(op, *self.like(x, y), name=name)

    def icmp_unsigned(self, op: str, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        folded = _fold_compare(op, x, y, False)
        return folded if folded is not None else self.ir.icmp_unsigned(op, *self.like(x, y), name=name)

    def fcmp_ordered(self, op: str, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        return self.ir.fcmp_ordered(op, *self.like(x, y), name=name)

    def fcmp_unordered(self, op: str, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        return self.ir.fcmp_unordered(op, *self.like(x, y), name=name)

    def select(self, c: ll.Value, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        """A scalar condition picks whole values; a vector one lane by lane."""
        n = max(lanes_of(x), lanes_of(y), lanes_of(c))
        k = constant_int(c)
        if k is not None:
            return self.splat(x if k else y, n)
        x, y = self.splat(x, n), self.splat(y, n)
        return self.ir.select(c, x, y, name=name)

    def intrinsic(self, name: str, args: list[ll.Value], ret: ll.Type, overload_ret: bool = False,
                  immediate: tuple[ll.Value, ...] = ()) -> ll.Value:
        """llvm.`name` on args at a common width (then `immediate` arguments as they are),
        mangled by the first argument's type (by the result's first where overload_ret)."""
        args = self.like(*args)
        n = lanes_of(args[0])
        rt = self.type_of(ret, n)
        full = name + (f".{mangle(rt)}" if overload_ret else "") + f".{mangle(args[0].type)}"
        all_args = [*args, *immediate]
        module = self.ir.module
        try:
            fn = module.get_global(full)
        except KeyError:
            fn = ll.Function(module, ll.FunctionType(rt, [a.type for a in all_args]), name=full)
        return self.ir.call(fn, all_args)

    # -- memory
    def offset(self, base: ll.Value, off: ll.Value) -> ll.Value:
        """The address `off` (i64) bytes past `base`: a pointer, or a vector of them where
        either varies."""
        if lanes_of(base) == 1 and lanes_of(off) == 1:
            return self.ir.gep(base, [off], source_etype=ll.IntType(8))
        n = max(lanes_of(base), lanes_of(off))
        addr = self.add(self.ptrtoint(base, I64), off)
        return self.ir.inttoptr(self.splat(addr, n), vec(PTR, n))

    def load(self, ptr: ll.Value, name: str = "", align: int | None = None,
             typ: ll.Type | None = None, runs: bool | ll.Value = True) -> ll.Value:
        """A load, or a masked gather through a vector of addresses. A gather of 8- or 16-bit
        integers (which the CPU cannot gather: LLVM would make them 32 scalar loads, each
        behind its lane's test) gathers the 4-byte words that hold them, which lie in the
        same page: a 16-bit element must not straddle two words (2-byte aligned). `runs`:
        whether a gather of 4-byte elements may be loads of runs (_runs_or_gather), or
        (an i1) runs_of the addresses, already known."""
        if lanes_of(ptr) == 1:
            return self.ir.load(ptr, name=name, align=align, typ=typ)
        n = lanes_of(ptr)
        if isinstance(typ, ll.IntType) and typ.width in (8, 16):
            addr = self.ptrtoint(ptr, I64)
            word = self.load(self.inttoptr(self.and_(addr, ll.Constant(I64, ~3)), PTR), typ=I32,
                             runs=False)
            byte = self.and_(addr, ll.Constant(I64, 3))
            shift = self.trunc(self.shl(byte, ll.Constant(I64, 3)), I32)
            return self.trunc(self.lshr(word, shift), typ)
        vt = vec(typ, n)
        if align is None:
            align = typ.width // 8 if isinstance(typ, ll.IntType) else 4
        mask = self.mask if self.mask is not None else ll.Constant(vec(I1, n), [1] * n)

        def gather() -> ll.Value:
            return self.intrinsic("llvm.masked.gather", [ptr], typ, overload_ret=True,
                                  immediate=(ll.Constant(I32, align), mask, ll.Constant(vt, None)))

        if runs is False or typ != I32 or n % RUN:
            return gather()
        return self._runs_or_gather(ptr, typ, align, mask, gather,
                                    None if runs is True else runs)

    def freeze(self, v: ll.Value) -> ll.Value:
        """v with any poison or undef lanes fixed to some value (LLVM's freeze)."""
        frozen = ll.Instruction(self.ir.block, v.type, "freeze", [v])
        self.ir._insert(frozen)
        return frozen

    def runs_of(self, addr: ll.Value) -> ll.Value:
        """Whether the executing lanes' addresses (<n x i64>, or byte offsets from one base
        that do not wrap: i32 ones are half the vectors) follow each other 4 bytes apart in
        runs of RUN lanes (i1)."""
        n = lanes_of(addr)
        ir, it = self.ir, addr.type
        addr = self.freeze(addr)  # a lane that does not execute may hold poison
        lead = ir.shuffle_vector(addr, ll.Constant(it, ll.Undefined),
                                 ll.Constant(vec(I32, n), [i - i % RUN for i in range(n)]))
        step = ll.Constant(it, [4 * (i % RUN) for i in range(n)])
        follows = ir.icmp_unsigned("==", addr, ir.add(lead, step))
        mask = self.mask if self.mask is not None else ll.Constant(vec(I1, n), [1] * n)
        bad = ir.and_(mask, ir.not_(follows))
        return ir.icmp_unsigned("==", ir.bitcast(bad, ll.IntType(n)), ll.Constant(ll.IntType(n), 0))

    def _runs_or_gather(self, ptr: ll.Value, typ: ll.Type, align: int, mask: ll.Value,
                        gather, runs: ll.Value | None = None) -> ll.Value:
        """A gather of 4-byte elements whose executing lanes' addresses follow each other in
        runs of RUN lanes (a row of a block reading a row of texels) as RUN-lane masked
        loads, else the gather (a warp's 32-lane gather is 4 or 8 gather instructions of
        8 or 4 lanes, slow on every x86; the loads are 4). `runs`: runs_of the addresses
        where the caller knows it."""
        n = lanes_of(ptr)
        ir, it = self.ir, vec(I64, n)
        addr = self.freeze(ir.ptrtoint(ptr, it))  # a lane that does not execute may hold poison
        if runs is None:
            runs = self.runs_of(addr)
        fn = ir.block.parent
        loads, gathers, join = (fn.append_basic_block(x) for x in ("runs", "gather", "loaded"))
        ir.cbranch(runs, loads, gathers)
        ir.position_at_end(loads)
        rt = vec(typ, RUN)
        parts = []
        for r in range(0, n, RUN):
            at = ir.inttoptr(ir.extract_element(addr, ll.Constant(I32, r)), PTR)
            m = ir.shuffle_vector(mask, ll.Constant(mask.type, ll.Undefined),
                                  ll.Constant(vec(I32, RUN), list(range(r, r + RUN))))
            parts.append(self.intrinsic("llvm.masked.load", [at], rt, overload_ret=True,
                                        immediate=(ll.Constant(I32, align), m,
                                                   ll.Constant(rt, None))))
        while len(parts) > 1:  # concatenate pairwise
            w = lanes_of(parts[0])
            parts = [ir.shuffle_vector(parts[k], parts[k + 1],
                                       ll.Constant(vec(I32, 2 * w), list(range(2 * w))))
                     for k in range(0, len(parts), 2)]
        loaded, loads_end = parts[0], ir.block
        ir.branch(join)
        ir.position_at_end(gathers)
        gathered, gathers_end = gather(), ir.block
        ir.branch(join)
        ir.position_at_end(join)
        out = ir.phi(vec(typ, n))
        out.add_incoming(loaded, loads_end)
        out.add_incoming(gathered, gathers_end)
        return out


def constant_int(v: ll.Value) -> int | None:
    """The value of a scalar integer constant (unsigned, within its width), else None."""
    if isinstance(v, ll.Constant) and isinstance(v.type, ll.IntType) \
            and isinstance(v.constant, int):
        return v.constant & ((1 << v.type.width) - 1)
    return None


def _signed(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) else v


_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _fold_compare(op: str, x: ll.Value, y: ll.Value, signed: bool) -> ll.Value | None:
    a, b = constant_int(x), constant_int(y)
    if a is None or b is None:
        return None
    if signed:
        a, b = _signed(a, x.type.width), _signed(b, y.type.width)
    return ll.Constant(I1, int(_COMPARE[op](a, b)))


def _fold_binary(op: str, x: ll.Value, y: ll.Value) -> ll.Value | None:
    """op(x, y) where both are scalar integer constants (LLVM's wrapping semantics; nothing
    for a division by zero or an oversized shift, which stay instructions), or where one is
    the identity or the annihilator of a bitwise operation (x & 0, x | ~0 for i1 chains)."""
    a, b = constant_int(x), constant_int(y)
    if a is None and b is None:
        return None
    t = x.type if a is not None else y.type
    w = t.width
    ones = (1 << w) - 1
    if a is None or b is None:  # one constant: identities of and/or
        k, other = (a, y) if a is not None else (b, x)
        if lanes_of(other) != 1:
            return None
        if op == "and_":
            return ll.Constant(t, 0) if k == 0 else other if k == ones else None
        if op == "or_":
            return ll.Constant(t, ones) if k == ones else other if k == 0 else None
        return None
    sa, sb = _signed(a, w), _signed(b, w)
    if op in ("shl", "lshr", "ashr") and b >= w:
        return None
    if op in ("sdiv", "udiv", "srem", "urem") and b == 0:
        return None
    if op in ("sdiv", "srem") and sa == -(1 << (w - 1)) and sb == -1:
        return None
    q = abs(sa) // abs(sb) if op in ("sdiv", "srem") else 0
    q = -q if op in ("sdiv", "srem") and (sa < 0) != (sb < 0) else q
    r = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
         "and_": lambda: a & b, "or_": lambda: a | b, "xor": lambda: a ^ b,
         "shl": lambda: a << b, "lshr": lambda: a >> b, "ashr": lambda: sa >> b,
         "udiv": lambda: a // b, "urem": lambda: a % b,
         "sdiv": lambda: q, "srem": lambda: sa - q * sb}.get(op)
    return None if r is None else ll.Constant(t, r() & ones)


_FOLDS = ("add", "sub", "mul", "and_", "or_", "xor", "shl", "lshr", "ashr", "sdiv", "udiv",
          "srem", "urem")


def _binary(op: str):
    def fn(self: LaneBuilder, x: ll.Value, y: ll.Value, name: str = "") -> ll.Value:
        if op in _FOLDS:
            folded = _fold_binary(op, x, y)
            if folded is not None:
                return folded
        return getattr(self.ir, op)(*self.like(x, y), name=name)

    fn.__name__ = op
    return fn


def _cast(op: str):
    def fn(self: LaneBuilder, v: ll.Value, t: ll.Type, name: str = "") -> ll.Value:
        k = constant_int(v)
        if k is not None and op in ("zext", "sext", "trunc") and isinstance(t, ll.IntType):
            if op == "sext":
                k = _signed(k, v.type.width)
            return ll.Constant(t, k & ((1 << t.width) - 1))
        return getattr(self.ir, op)(v, self.type_of(t, lanes_of(v)), name=name)

    fn.__name__ = op
    return fn


for _op in _BINARY:
    setattr(LaneBuilder, _op, _binary(_op))
for _op in _CASTS:
    setattr(LaneBuilder, _op, _cast(_op))
