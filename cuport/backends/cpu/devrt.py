"""Calls from kernels to the CUDA device runtime that drive the host side of CUDA:
conditional graph nodes (cudaGraphSetConditional).

`cudaGraphSetConditional(handle, value)` is a `__cudart_builtin__`: nvcc leaves it an
`.extern .func` for the driver to provide. A conditional handle is the address of its
condition variable (driver/graph_conditional.py), so setting it is a store, made by
each executing lane in lane order (racing calls are undefined behaviour in CUDA).
"""

from __future__ import annotations

from ...ptx import ir
from .types import I32, I64, PTR


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


#: device-runtime function name -> lowering(mc, em, ins, params, rets)
LOWERINGS = {
    "cudaGraphSetConditional": _lower_set_conditional,
}
