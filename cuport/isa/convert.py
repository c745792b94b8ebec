"""cvt: conversions between integer and floating-point types.

PTX ISA §9.7.9.21 (cvt). Float → integer conversions round as `.rni/.rzi/.rmi/.rpi` say
(or toward zero by default) and saturate: NaN gives 0, out-of-range values clamp to the
destination range, exactly what LLVM's `fptosi.sat`/`fptoui.sat` do.
"""

from __future__ import annotations

from ..ptx import ir
from ..ptx.ir import TYPE_BITS, is_float
from .registry import lowers


def _types(ins: ir.Instr) -> tuple[str, str]:
    ts = [m for m in ins.mods if m in TYPE_BITS]
    if len(ts) != 2:
        raise ValueError(ins.text())
    return ts[0], ts[1]


@lowers("cvt")
def lower_cvt(em, ins: ir.Instr) -> None:
    dt, st = _types(ins)
    b = em.b
    if not is_float(dt) and not is_float(st):
        v = em.read_bits(ins.args[1], st)
        dn, sn = TYPE_BITS[dt], TYPE_BITS[st]
        if "sat" in ins.mods:
            raise em.error("cvt.sat between integers is not supported yet")
        if dn < sn:
            v = b.trunc(v, em.bty(dt))
        elif dn > sn:
            v = b.sext(v, em.bty(dt)) if st[0] == "s" else b.zext(v, em.bty(dt))
        em.write(ins.args[0], dt, v)
        return
    if is_float(st) and not is_float(dt) and dt[0] in "su":
        x = em.read(ins.args[1], st)
        mode = next((m for m in ins.mods if m in ("rni", "rzi", "rmi", "rpi")), "rzi")
        fn = {"rni": "llvm.roundeven", "rzi": "llvm.trunc", "rmi": "llvm.floor", "rpi": "llvm.ceil"}[mode]
        x = em.intrinsic(fn, [x])
        name = "llvm.fptosi.sat" if dt[0] == "s" else "llvm.fptoui.sat"
        rt = em.bty(dt)
        em.write(ins.args[0], dt, em.intrinsic(name, [x], overload=[rt, x.type], ret=rt))
        return
    if not is_float(st) and dt in ("f32", "f64"):
        v = em.read_bits(ins.args[1], st)
        mode = next((m for m in ins.mods if m in ("rn", "rz", "rm", "rp")), "rn")
        if mode != "rn":
            raise em.error(f"cvt.{mode} from an integer is not supported yet")
        f = b.sitofp if st[0] == "s" else b.uitofp
        em.write(ins.args[0], dt, f(v, em.ty(dt)))
        return
    if st == "f32" and dt == "f64":
        em.write(ins.args[0], dt, b.fpext(em.read(ins.args[1], st), em.ty(dt)))
        return
    if st == "f64" and dt == "f32":
        mode = next((m for m in ins.mods if m in ("rn", "rz", "rm", "rp")), "rn")
        if mode != "rn":
            raise em.error(f"cvt.{mode}.f32.f64 is not supported yet")
        em.write(ins.args[0], dt, b.fptrunc(em.read(ins.args[1], st), em.ty(dt)))
        return
    raise em.error(f"cvt from .{st} to .{dt} is not supported yet")
