"""Directed rounding of f64 operations on the CPU: the host FPU in the asked mode.

f64 results have no wider format to lean on (isa/fprt.py does f32 exactly in f64), so
`strict` calls a small `noinline strictfp` helper that sets the host's rounding mode
(`llvm.set.rounding`), runs the constrained intrinsic with the matching rounding metadata
and restores the mode. The helper is a function of its own so the optimiser cannot move
ordinary arithmetic into the window where the mode differs.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.fprt import CONSTRAINED_ROUNDING
from ...isa.types import mangle

# host rounding mode numbers of llvm.set.rounding
_HOST_MODE = {"rn": 1, "rz": 0, "rp": 2, "rm": 3}


def strict(em, op: str, args: list, mode: str, ret: ll.Type | None = None) -> ll.Value:
    """`op` (fadd fsub fmul fdiv fma sqrt sitofp uitofp) in rounding mode `mode`, done by the
    host FPU inside a strictfp helper function that switches the mode and restores it."""
    mc = em.mc
    rt = ret if ret is not None else args[0].type
    key = f"cuport.fp.{op}.{mode}." + ".".join(mangle(a.type) for a in args) + "." + mangle(rt)
    fn = mc.llmod.globals.get(key)
    if fn is None:
        md = ll.MetaDataType()
        fn = ll.Function(mc.llmod, ll.FunctionType(rt, [a.type for a in args]), name=key)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        set.add(fn.attributes, "strictfp")
        bb = ll.IRBuilder(fn.append_basic_block("entry"))
        i32 = ll.IntType(32)
        get = mc.declare("llvm.get.rounding", i32, [])
        setr = mc.declare("llvm.set.rounding", ll.VoidType(), [i32])
        old = bb.call(get, [])
        set.add(old.attributes, "strictfp")
        c = bb.call(setr, [ll.Constant(i32, _HOST_MODE[mode])])
        set.add(c.attributes, "strictfp")
        cname = f"llvm.experimental.constrained.{op}.{mangle(rt)}"
        if op in ("sitofp", "uitofp", "fptrunc"):
            cname += f".{mangle(args[0].type)}"
        cfn = mc.declare(cname, rt, [a.type for a in args] + [md, md])
        r = bb.call(cfn, list(fn.args) + [ll.MetaDataString(mc.llmod, CONSTRAINED_ROUNDING[mode]),
                                          ll.MetaDataString(mc.llmod, "fpexcept.ignore")])
        set.add(r.attributes, "strictfp")
        c = bb.call(setr, [old])
        set.add(c.attributes, "strictfp")
        bb.ret(r)
    return em.b.call(fn, args)
