"""Calls from kernels to the CUDA device runtime that drive the host side of CUDA:
conditional graph nodes (cudaGraphSetConditional) and dynamic parallelism (the
`__cuda_syscall_cnpv2*` functions libcudadevrt's PTX calls; device_launch.py).

`cudaGraphSetConditional(handle, value)` is a `__cudart_builtin__`: nvcc leaves it an
`.extern .func` for the driver to provide. A conditional handle is the address of its
condition variable (driver/graph_conditional.py), so setting it is a store, made by
each executing lane in lane order (racing calls are undefined behaviour in CUDA).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I8, I32, I64, PTR
from ...ptx import ir
from ...ptx.ir import TYPE_BITS
from . import layout as L


def _lower_set_conditional(mc, em, ins: ir.Instr, params: tuple, rets: tuple) -> None:
    from .hostcalls import _lane_loop, _slot_at

    if len(params) != 2:
        raise em.error("cudaGraphSetConditional with other than (handle, value) parameters")
    b = em.b
    handle, value = (em.param_slots[p.name] for p in params)

    def body(lane):
        h = b.load(_slot_at(em, handle, lane), typ=I64)
        v = b.load(_slot_at(em, value, lane), typ=I32)
        st = b.store(v, b.inttoptr(h, PTR), align=4)
        st.volatile = True  # the host reads it after the kernel

    _lane_loop(em, body)


_SYSCALL = "__cuda_syscall_cnpv2"


def _lower_syscall(mc, em, ins: ir.Instr, params: tuple, rets: tuple, callee: ir.Function) -> None:
    """A call of `__cuda_syscall_cnpv2<name>`: per executing thread, in lane order, the host
    function with the call's scalar arguments (a byte-array argument as the address of its
    bytes) and the thread's identity, its result into the call's return value."""
    from . import device_launch
    from .hostcalls import _lane_loop, _slot_at

    name = callee.name[len(_SYSCALL):]
    symbol = f"cuport_cnpv2_{name}"
    if device_launch.address_of(symbol) is None:
        raise em.error(f"a call to the device-runtime function {callee.name}, which cuport does "
                       "not provide")
    if len(params) > 6 or len(rets) > 1:
        raise em.error(f"{callee.name} with {len(params)} parameters")
    if symbol not in mc.host_symbols:
        mc.host_symbols.append(symbol)
    f = mc.declare(symbol, I64, [I64] * 7)
    b = em.b
    slots = [em.param_slots[p.name] for p in params]
    ret = em.param_slots[rets[0].name] if rets else None
    block = b.load(b.gep(em.blk, [ll.Constant(I64, L.BS_LINEAR)], source_etype=I8), typ=I64)

    def body(lane):
        args = []
        for var, slot in zip(callee.params, slots, strict=True):
            p = _slot_at(em, slot, lane)
            if var.dims:
                args.append(b.ptrtoint(p, I64))
            else:
                v = b.load(p, typ=ll.IntType(TYPE_BITS[var.type]))
                args.append(v if v.type == I64 else b.zext(v, I64))
        args += [ll.Constant(I64, 0)] * (6 - len(args))
        thread = b.zext(b.add(b.mul(em.warp, ll.Constant(I32, L.WARP)), lane), I64)
        args.append(b.or_(b.shl(block, ll.Constant(I64, 16)), thread))
        r = b.call(f, args)
        if ret is not None:
            t = ll.IntType(TYPE_BITS[callee.rets[0].type])
            b.store(r if t == I64 else b.trunc(r, t), _slot_at(em, ret, lane))

    _lane_loop(em, body)


def lower(mc, em, name: str, callee: ir.Function, ins: ir.Instr, params: tuple,
          rets: tuple) -> bool:
    """Lower a call of a device-runtime function cuport provides here; False if not one."""
    if name in LOWERINGS:
        LOWERINGS[name](mc, em, ins, params, rets)
        return True
    if name.startswith(_SYSCALL):
        _lower_syscall(mc, em, ins, params, rets, callee)
        return True
    return False


#: device-runtime function name -> lowering(mc, em, ins, params, rets)
LOWERINGS = {
    "cudaGraphSetConditional": _lower_set_conditional,
}
