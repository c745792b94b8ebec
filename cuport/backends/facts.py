"""Facts about a PTX module that every backend needs the same way: a kernel's parameter
layout, static shared and local memory, thread limits (KernelInfo), and the bytes of an
initialised module variable."""

from __future__ import annotations

import struct

from .. import ptx
from ..ptx import ir
from ..ptx.callgraph import reachable_module_variables, reachable_shared
from ..ptx.errors import UnsupportedError
from ..ptx.lexer import PtxSyntaxError
from .base import CUDA_ERROR_INVALID_PTX, BackendError, KernelInfo, ParamInfo

MAX_THREADS = 1024


def load_ptx(texts: list[str]) -> ir.Module:
    """The module of a load: parsed, checked as ptxas would check it (cuport.ptx.validate)
    and linked; invalid PTX is a BackendError with NVIDIA's code, ptxas' words and, in
    `log`, what CU_JIT_ERROR_LOG_BUFFER gets."""
    try:
        return ptx.load(texts)
    except PtxSyntaxError as e:
        err = BackendError(getattr(e, "code", CUDA_ERROR_INVALID_PTX), getattr(e, "summary", str(e)))
        err.log = ptx.log_of(e)
        raise err from None


def pack_init(v: ir.Var, resolve) -> bytes:
    """The bytes of an initialised variable."""
    t = v.type
    size = v.size
    out = bytearray(size)
    if not v.init:
        return bytes(out)
    elem = max(ir.TYPE_BITS[t] // 8, 1)
    for i, x in enumerate(v.init):
        off = i * elem
        if off + elem > size:
            break
        if isinstance(x, ir.SymAddr):
            val = resolve(x.name) + x.offset
            out[off:off + elem] = (val & ((1 << (8 * elem)) - 1)).to_bytes(elem, "little")
        elif isinstance(x, ir.FImm):
            if elem == 4:
                out[off:off + 4] = struct.pack("<f", x.value) if x.width == 64 else x.bits.to_bytes(4, "little")
            elif elem == 8:
                out[off:off + 8] = struct.pack("<d", x.value) if x.width == 32 else x.bits.to_bytes(8, "little")
            else:
                raise UnsupportedError(f"initialiser of {v.name}: float element of {elem} bytes", v.line)
        elif isinstance(x, float):
            if t == "f32":
                out[off:off + 4] = struct.pack("<f", x)
            elif t == "f64":
                out[off:off + 8] = struct.pack("<d", x)
            else:
                raise UnsupportedError(f"initialiser of {v.name}: float for .{t}", v.line)
        else:
            out[off:off + elem] = (int(x) & ((1 << (8 * elem)) - 1)).to_bytes(elem, "little")
    return bytes(out)


def kernel_info(module: ir.Module, fn: ir.Function) -> KernelInfo:
    params = []
    off = 0
    for p in fn.params:
        a = max(p.alignment, 1)
        off = (off + a - 1) // a * a
        params.append(ParamInfo(p.name, off, p.size, a, p.size == 8 and not p.dims, "" if p.dims else p.type))
        off += p.size
    # static shared memory (of the kernel's call graph only, as ptxas counts it) and local memory
    shared = [v for v in reachable_shared(module, fn)
              if v.linkage != "extern" and not (v.dims and v.dims[-1] is None)]
    local = sum(v.size for v in fn.locals if v.space == "local")
    soff = 0
    for v in shared:
        a = max(v.alignment, 1)
        soff = (soff + a - 1) // a * a + v.size
    maxt = MAX_THREADS
    if fn.maxntid:
        n = 1
        for d in fn.maxntid:
            n *= d
        maxt = min(maxt, n)
    if fn.reqntid:
        n = 1
        for d in fn.reqntid:
            n *= d
        maxt = min(maxt, n)
    req = tuple((list(fn.reqntid) + [1, 1])[:3]) if fn.reqntid else None
    const = sum(v.size for v in reachable_module_variables(module, fn, "const"))
    return KernelInfo(fn.name, params, off, soff, local, maxt, req,
                      attributes={"const_size_bytes": const})
