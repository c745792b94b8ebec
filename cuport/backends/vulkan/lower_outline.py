"""em.outline and em.outline_access (isa/api.py) for the Vulkan backend: each key's body
built once per kernel module as a function of the llvmlite module, a site a call of it.

cudaTensorCoreGemm's kernel has 2053 wmma.mma and 1541 wmma.load sites (its k loop
unrolled); built in place they made 2.6 million SPIR-V ids, which took cuport's translator
over 100 s and NVIDIA's compiler as long again. The translator makes each such function a
SPIR-V function (OpFunction, OpFunctionCall: spirv/translate.py call_defined); several
results come back as a struct.

While a body is built the emitter's per-function state is the callee's (`_Callee`): its
builder, its entry (stack slots and builtins go there, so Function variables the body
allocates live in the callee), its own cache of builtins and push constants. What the body
may not do in a function fails loudly: a failure exit (fail_if: the kernel's return block
is the caller's). Warp reads are the caller's: a call runs for the invocations that reach
it, as the body in place did (subgroup operations act on the invocations that execute the
call; emulated warps' workgroup-memory exchanges use the module's Workgroup variable and
need the whole block, as in place). Address checks in a body (an outline_access body's
accesses; any body's exchanges through shared memory kept in device memory, slices.py) are
noted in the callee's own two variables, returned, and noted at the site by the caller's
note_fault: the launch fails naming the PTX line of the site, not of the first site built.
An access that may reach local memory kept in a Function array (the kernel's variable, not
the callee's) is built in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir as ll

from ...isa.memory import Access, InPlace
from ...isa.types import I32, I64

_STATE = ("b", "llfn", "entry_builder", "_builtins", "_fault", "ret_bb")


@dataclass
class Outlined:
    """A built function: its results' types, and whether the last two are a noted fault."""

    fn: ll.Function
    types: tuple[ll.Type, ...]
    fault: bool


class _Elements:
    """isa/api.py's Elements inside an outline_access function: the access's element at
    offsets from `addr` (the function's parameter: the caller computed the address), in the
    space(s) `where` (_space_for's decision, part of the function's key)."""

    def __init__(self, em, acc: Access, where, addr: ll.Value) -> None:
        self.em, self.acc, self.where, self.addr = em, acc, where, addr

    def load(self, offsets: list[ll.Value], runs: int = 0) -> list[ll.Value]:
        return self.em.elements_at(self.acc, self.where, self.addr, offsets)

    def store(self, vals: list[ll.Value], offsets: list[ll.Value], runs: int = 0) -> None:
        self.em.elements_at(self.acc, self.where, self.addr, offsets, vals)


class OutlineOps:
    """Mixin of the VulkanEmitter."""

    def outline(self, key: str, args: list[ll.Value], body) -> list[ll.Value]:
        """body(args) as a function of the module built once per `key`, called (isa/api.py)."""
        return self._outlined(f"cuport.outlined.{key}", args, body, self._fault is not None)

    def outline_access(self, key: str, acc: Access, args: list[ll.Value], body) -> list[ll.Value]:
        """outline with memory: the function takes the access's address (computed here,
        from the caller's registers) and makes its loads and stores with it."""
        where = self._space_for(acc.space, acc.mem)
        spaces = (where,) if isinstance(where, str) else tuple(sorted(where))
        if "local" in spaces and self.local is not None:
            return body(InPlace(self, acc), args)  # (the kernel's Function array: see above)
        addr = self.address(acc.mem, acc.space)
        name = f"cuport.outlined.{key}.{'.'.join(spaces)}.{acc.t}"

        def build(params: list[ll.Value]) -> list[ll.Value]:
            return body(_Elements(self, acc, where, params[0]), params[1:])

        return self._outlined(name, [addr, *args], build, self._fault is not None)

    def _outlined(self, name: str, args: list[ll.Value], body: Callable, checks: bool) -> list[ll.Value]:
        done = self._outlined_fns.get(name)
        if done is None:
            done = self._outlined_fns[name] = self._build(name, [a.type for a in args], body, checks)
        call = self.b.call(done.fn, args)
        if not done.types:
            return []
        outs = [self.b.extract_value(call, i) for i in range(len(done.types))]
        if done.fault:
            line, address = outs[-2:]
            outs = outs[:-2]
            self.note_fault(self.b.icmp_unsigned("!=", line, ll.Constant(I32, 0)), address)
        return outs

    def _build(self, name: str, types: list[ll.Type], body: Callable, checks: bool) -> Outlined:
        """The function: built with the emitter's per-function state switched to it (its
        return type, known once the body is, set at the end)."""
        fn = ll.Function(self.llmod, ll.FunctionType(ll.VoidType(), types), name=name)
        fn.linkage = "internal"
        entry, start = fn.append_basic_block("entry"), fn.append_basic_block("body")
        eb = ll.IRBuilder(entry)  # before the branch: stack slots and builtins
        ll.IRBuilder(entry).branch(start)
        saved = {n: getattr(self, n) for n in _STATE}
        self.b, self.llfn, self.entry_builder, self._builtins = ll.IRBuilder(start), fn, eb, {}
        self.ret_bb = None  # (no failure exit: fail_if would need the kernel's)
        if checks:
            self._fault = (eb.alloca(I32, name="fault_line"), eb.alloca(I64, name="fault_address"))
            eb.store(ll.Constant(I32, 0), self._fault[0])
            eb.store(ll.Constant(I64, 0), self._fault[1])
        try:
            outs = body(list(fn.args))
            if checks:
                outs = [*outs, self.b.load(self._fault[0]), self.b.load(self._fault[1])]
            rt = ll.LiteralStructType([v.type for v in outs]) if outs else ll.VoidType()
            if outs:
                agg = ll.Constant(rt, ll.Undefined)
                for i, v in enumerate(outs):
                    agg = self.b.insert_value(agg, v, i)
                self.b.ret(agg)
            else:
                self.b.ret_void()
        finally:
            for n, v in saved.items():
                setattr(self, n, v)
        fn.ftype = ll.FunctionType(rt, types)  # (llvmlite keeps the type in three places)
        fn.type = fn.ftype.as_pointer()
        fn.return_value = ll.values.ReturnValue(fn, rt)
        return Outlined(fn, tuple(v.type for v in outs), checks)

    def in_outlined(self, fn: ll.Function):
        """The emitter's state switched to the outlined function `fn` (a pass that adds code
        to it: folds.py's push constant goes into its entry)."""
        return _Switched(self, fn)


class _Switched:
    def __init__(self, em, fn: ll.Function) -> None:
        self.em, self.fn = em, fn

    def __enter__(self):
        em = self.em
        self.saved = {n: getattr(em, n) for n in _STATE}
        entry = self.fn.blocks[0]
        eb = ll.IRBuilder(entry)
        eb.position_before(entry.terminator)
        em.b, em.llfn, em.entry_builder, em._builtins, em.ret_bb = eb, self.fn, eb, {}, None
        return em

    def __exit__(self, *exc) -> None:
        for n, v in self.saved.items():
            setattr(self.em, n, v)


__all__ = ["OutlineOps", "Outlined"]
