"""Facts about a PTX module that every backend needs the same way: a kernel's parameter
layout, static shared and local memory, thread limits (KernelInfo), and the bytes of an
initialised module variable."""

from __future__ import annotations

import struct

from .. import ptx
from ..ptx import ir
from ..ptx.callgraph import reachable_shared, reached_symbols
from ..ptx.errors import UnsupportedError
from ..ptx.lexer import PtxSyntaxError
from . import module_cache
from .base import CUDA_ERROR_INVALID_PTX, BackendError, KernelInfo, ParamInfo
from .gc_pause import gc_paused

MAX_THREADS = 1024


def load_ptx(texts: list[str]) -> ir.Module:
    """The module of a load: parsed, checked as ptxas would check it (cuport.ptx.validate)
    and linked; invalid PTX is a BackendError with NVIDIA's code, ptxas' words and, in
    `log`, what CU_JIT_ERROR_LOG_BUFFER gets. A big module comes from the kernel cache
    when an earlier load put it there (module_cache.py)."""
    key = module_cache.key(texts)
    with gc_paused():
        mod = module_cache.load(key) if key else None
        if mod is not None:
            return mod
        try:
            mod = ptx.load(texts)
        except PtxSyntaxError as e:
            err = BackendError(getattr(e, "code", CUDA_ERROR_INVALID_PTX), getattr(e, "summary", str(e)))
            err.log = ptx.log_of(e)
            raise err from None
        if key:
            module_cache.store(key, mod)
        return mod


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


def _round_to_dynamic(module: ir.Module, size: int) -> int:
    """The static shared size as ptxas reports it for whole-program PTX (no -rdc): where
    dynamic shared memory (a module-scope `.extern .shared` array) would start, i.e. rounded
    up to that array's alignment, for every kernel of a module that declares one. Measured on
    the H200 (tests/differential): 520 bytes of `.shared .align 4` report 528 in a module
    that declares `.extern .shared .align 16 dsm[]`, 520 in one that does not, and the
    kernels of a -rdc module keep their exact sizes (d10rdc; whether an -rdc kernel that
    names the array is rounded is not known)."""
    dyn = [v for v in module.variables if v.space == "shared" and (v.linkage == "extern" or (v.dims and v.dims[-1] is None))]
    if not dyn or not size or not _whole_program(module):
        return size
    a = max(max(v.alignment, 1) for v in dyn)
    return (size + a - 1) // a * a


def _whole_program(module: ir.Module) -> bool:
    """nvcc's PTX without -rdc: no variable or defined function is visible outside the module
    (-rdc marks every __device__/__constant__ variable and device function .visible or .weak)."""
    linked = ("visible", "weak", "common")
    if any(v.linkage in linked for v in module.variables if v.space != "shared"):
        return False
    return not any(f.linkage in linked for f in module.functions.values() if not f.is_entry and f.is_definition)


def calls_malloc(module: ir.Module, fn: ir.Function) -> bool:
    """Whether the kernel can reach the device runtime's malloc or free (C++ new/delete):
    its context's heap limit is fixed once it has run (driver/device_heap.py)."""
    return not reached_symbols(module, fn).isdisjoint(("malloc", "free"))


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
    # in declaration order; -rdc PTX's by alignment, largest first (the H200: .align 2 [260]
    # then .align 8 [1064] take 1328 bytes in whole-program PTX, .align 4 [132] then .align 8
    # [288] take 420 with -rdc, not 424)
    if not _whole_program(module):
        shared = sorted(shared, key=lambda v: -max(v.alignment, 1))
    for v in shared:
        a = max(v.alignment, 1)
        soff = (soff + a - 1) // a * a + v.size
    soff = _round_to_dynamic(module, soff)
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
    # the H200 reports the module's user constant bank for every kernel, used or not (each of
    # the 560 kernels of tests/differential: 256, the size of the one __constant__ array)
    const = sum(v.size for v in module.variables if v.space == "const")
    cluster = tuple((list(fn.reqnctapercluster or ()) + [1, 1, 1])[:3])
    return KernelInfo(fn.name, params, off, soff, local, maxt, req, cluster,
                      attributes={"const_size_bytes": const},
                      registers=lambda: register_estimate(fn))


def register_estimate(fn: ir.Function) -> int:
    """CU_FUNC_ATTRIBUTE_NUM_REGS for `fn`. A CPU or a Vulkan device has no register file to
    count, so this is the count ptxas would need at least: the most 32-bit words of PTX
    registers live at once in the kernel's own body (a 64-bit register takes two,
    predicates none), rounded up to an even count of at least 8 as ptxas allocates them,
    at most its .maxnreg and 255. Against ptxas -v (sm_90) on the 57 kernels of
    tests/programs it is within -65%..+60%, mostly below. Programs size launches by it
    (numba-cuda checks that max_registers lowers it). Computed when a program asks: one
    liveness pass over the kernel."""
    from ..isa.operands import defs, uses
    from ..passes import cfg as cfgmod
    from ..passes.liveness import live_in

    def words(name: str) -> int:
        t = fn.regs.get(name, "b32")
        if t == "pred":
            return 0
        return max(ir.TYPE_BITS.get(t, 32) // 32, 1) * fn.reg_vec.get(name, 1)

    try:
        g = cfgmod.build(fn)
    except cfgmod.CfgError:  # (refused at launch anyway): every register
        return min(fn.maxnreg or 255, 255, max(8, sum(words(r) for r in fn.regs)))
    live = live_in(g, None)
    size = {r: words(r) for r in fn.regs}
    most = 0
    for b in g.blocks:  # (the backward walk of liveness.live_after, keeping the live words' sum)
        now: set[str] = set()
        for s in b.succs:
            now |= live[s]
        total = sum(size.get(r, 1) for r in now)
        most = max(most, total)
        for ins in reversed(b.instrs):
            if ins.guard is None:
                for r in {r.name for r in defs(ins)} & now:
                    now.discard(r)
                    total -= size.get(r, 1)
            for r in {r.name for r in uses(ins)} - now:
                now.add(r)
                total += size.get(r, 1)
            most = max(most, total)
    most = max(8, most + (most & 1))
    return min(most, fn.maxnreg or 255, 255)
