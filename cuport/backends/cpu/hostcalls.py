"""Calls from kernels to the CUDA device runtime: printf, assert, malloc and free (the device
heap's allocator, backends/device_heap.py, run lane by lane on the context's heap).

nvcc turns `printf` into `vprintf(fmt, argbuf)`, `assert` into `__assertfail(...)` and
device `malloc`/`free` into calls of those names; they are `.extern .func` in the PTX.
The warp executor calls the host once per active lane, in lane order. printf output (and
each failing thread's assert line) is collected during the launch and written through
the C library's own `stdout` when the launch completes, so it interleaves correctly with
the host program's printf output (as on a GPU, where device printf output appears at
synchronisation).
"""

from __future__ import annotations

import ctypes
import sys
import threading

from llvmlite import ir as ll

from ...isa.types import I8, I32, I64, PTR
from ...ptx import ir
from .. import device_heap
from ..printf import format_printf
from . import layout as L
from .memory_ops import for_each_lane, store_atomic

W = L.WARP

_out_lock = threading.Lock()
_pending: list[bytes] = []

_libc = ctypes.CDLL(None)
try:
    _c_stdout = ctypes.c_void_p.in_dll(_libc, "stdout")
except ValueError:  # macOS names it __stdoutp
    _c_stdout = ctypes.c_void_p.in_dll(_libc, "__stdoutp")
_libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
_libc.fflush.argtypes = [ctypes.c_void_p]


def output_pending() -> bool:
    """Whether output waits for flush_output (a hint, read without the lock: the kernels
    that wrote it have finished when a drain asks)."""
    return bool(_pending)


def flush_output() -> None:
    with _out_lock:
        if not _pending:
            return
        data = b"".join(_pending)
        _pending.clear()
    _libc.fwrite(data, 1, len(data), _c_stdout)
    _libc.fflush(_c_stdout)
    try:
        sys.stdout.flush()
    except Exception:
        pass


def _vprintf(fmt: int, args: int) -> int:
    try:
        text = format_printf(ctypes.string_at(fmt), args)
    except Exception as e:  # never let a bad format string bring the process down
        text = f"cuport: printf from a kernel failed: {e}\n".encode()
    with _out_lock:
        _pending.append(text)
    return len(text)


def _assertfail(msg: int, file: int, line: int, func: int, ctaid: int, tid: int) -> None:
    def s(p: int) -> str:
        return ctypes.string_at(p).decode(errors="replace") if p else "?"

    cx, cy, cz = ctypes.cast(ctaid, ctypes.POINTER(ctypes.c_uint32 * 3)).contents
    tx, ty, tz = tid & 0x3FF, (tid >> 10) & 0x3FF, (tid >> 20) & 0x3F
    text = (
        f"{s(file)}:{line}: {s(func)}: block: [{cx},{cy},{cz}], thread: [{tx},{ty},{tz}] "
        f"Assertion `{s(msg)}` failed.\n"
    )
    with _out_lock:  # on stdout with the kernels' printf output, as NVIDIA's driver prints it
        _pending.append(text.encode(errors="replace"))


_VPRINTF_T = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
_ASSERT_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_uint32)


def _marked(fn):
    """fn, run with the thread marked as in a host call: the fault guard never jumps out of
    Python code (guard.c)."""
    from . import guard

    def call(*args):
        lib = guard.loaded()  # (a launch loaded it before its kernel ran)
        if lib is None:
            return fn(*args)
        lib.cuport_host_enter()
        try:
            return fn(*args)
        finally:
            lib.cuport_host_leave()

    return call


_CALLBACKS = {
    "cuport_vprintf": _VPRINTF_T(_marked(_vprintf)),
    "cuport_assertfail": _ASSERT_T(_marked(_assertfail)),
}


def address_of(sym: str) -> int:
    if sym in _WORKER_FNS:  # (compiler._emit_worker: blocks that wait on others)
        return _worker_fn(sym)
    if sym not in _CALLBACKS:  # the device runtime's (dynamic parallelism)
        from . import device_launch

        return device_launch.address_of(sym)
    return ctypes.cast(_CALLBACKS[sym], ctypes.c_void_p).value


#: runtime.c's functions a worker calls where its blocks wait on others, and the C library's
#: that stand in for them without the C runtime (the pool's workers are then Python threads,
#: and nothing reads the count: labs of it is a call that does nothing)
_WORKER_FNS = {"cuport_worker_idle": "sched_yield", "cuport_worker_waited": "labs"}


def _worker_fn(sym: str) -> int:
    from . import guard

    lib = guard.library()
    fn = getattr(lib, sym) if lib is not None else getattr(_libc, _WORKER_FNS[sym])
    return ctypes.cast(fn, ctypes.c_void_p).value


# ------------------------------------------------------------------ lowering of the calls


class _CpuHeap(device_heap.Heap):
    """The device heap's allocator (backends/device_heap.py) on LLVM atomics, lane by lane;
    the heap's address is a cell of the module (CpuModule.bind_device_heap) the kernel links
    to as a global variable."""

    def __init__(self, mc, em) -> None:
        super().__init__(em.b, em.llfn)
        self.mc, self.em = mc, em

    def load(self, address: ll.Value, t: ll.Type, acquire: bool = False) -> ll.Value:
        return self.b.load_atomic(self.ptr(address), "acquire" if acquire else "monotonic",
                                  t.width // 8, typ=t)

    def store(self, address: ll.Value, v: ll.Value) -> None:
        store_atomic(self.b, v, self.ptr(address), "monotonic", v.type.width // 8)

    def cas(self, address: ll.Value, expected: ll.Value, new: ll.Value, ordered: bool) -> ll.Value:
        res = self.b.cmpxchg(self.ptr(address), expected, new, "acq_rel" if ordered else "monotonic",
                             "acquire" if ordered else "monotonic")
        return self.b.extract_value(res, 0)

    def base(self) -> ll.Value:
        mc = self.mc
        g = mc.llmod.globals.get(HEAP_SYMBOL)
        if g is None:
            g = ll.GlobalVariable(mc.llmod, I64, name=HEAP_SYMBOL)
            g.linkage = "external"
            mc.global_symbols[HEAP_SYMBOL] = HEAP_CELL
        return self.b.load(g, typ=I64, align=8)

    def alloca(self, t: ll.Type, name: str) -> ll.Value:
        return self.em.entry_alloca(t, name)

    def fail_unless(self, ok: ll.Value) -> None:
        self.em.fail_if(self.b.not_(ok), "illegal_address")


#: the module cell that holds the device heap's address: its name among the module's
#: variables (no PTX name has a dot) and its symbol in the kernel's object
HEAP_CELL = "cuport.device_heap"
HEAP_SYMBOL = "cuport_device_heap"



def _lane_loop(em, body) -> None:
    """Emit `for lane in exec mask: body(lane)` (lane order, as the host sees it)."""

    def step(lane: ll.Value, _: list[ll.Value]) -> list[ll.Value]:
        body(lane)
        return []

    for_each_lane(em, em.exec_mask(), [], step)


def _slot_at(em, slot, lane, offset: int = 0):
    b = em.b
    off = b.add(b.mul(b.zext(lane, I64), ll.Constant(I64, slot.size)), ll.Constant(I64, offset))
    return b.gep(slot.ptr, [off], source_etype=I8)


def lower_call(mc, em, name: str, callee: ir.Function, ins: ir.Instr, params: tuple, rets: tuple) -> None:
    b = em.b

    def slot(o):
        return em.param_slots[o.name]

    if name == "vprintf":
        if "cuport_vprintf" not in mc.host_symbols:
            mc.host_symbols.append("cuport_vprintf")
        f = mc.declare("cuport_vprintf", I32, [PTR, PTR])
        ps = [slot(p) for p in params]
        rs = [slot(r) for r in rets]

        def body(lane):
            fmt = b.load(_slot_at(em, ps[0], lane), typ=PTR)
            args = b.load(_slot_at(em, ps[1], lane), typ=PTR) if len(ps) > 1 else ll.Constant(PTR, None)
            r = b.call(f, [fmt, args])
            if rs:
                b.store(r, _slot_at(em, rs[0], lane))

        _lane_loop(em, body)
        return
    if name in ("malloc", "free"):
        ps = [slot(p) for p in params]
        rs = [slot(r) for r in rets]
        heap = _CpuHeap(mc, em)

        def body(lane):
            arg = b.load(_slot_at(em, ps[0], lane), typ=I64)
            if name == "free":
                heap.free(arg)
                return
            r = heap.malloc(arg)
            if rs:
                b.store(r, _slot_at(em, rs[0], lane))

        _lane_loop(em, body)
        return
    if name == "__assertfail":
        if "cuport_assertfail" not in mc.host_symbols:
            mc.host_symbols.append("cuport_assertfail")
        f = mc.declare("cuport_assertfail", ll.VoidType(), [PTR, PTR, I32, PTR, PTR, I32])
        ps = [slot(p) for p in params]
        nx, ny, _ = mc.block
        ctaid = b.gep(em.blk, [ll.Constant(I64, L.BS_CTAID)], source_etype=I8)

        def report(lane):  # every failing thread prints its line, as on a GPU
            lin = b.add(b.mul(em.warp, ll.Constant(I32, W)), lane)
            tx = b.urem(lin, ll.Constant(I32, nx))
            ty = b.urem(b.udiv(lin, ll.Constant(I32, nx)), ll.Constant(I32, ny))
            tz = b.udiv(lin, ll.Constant(I32, nx * ny))
            tid = b.or_(b.or_(tx, b.shl(ty, ll.Constant(I32, 10))), b.shl(tz, ll.Constant(I32, 20)))
            vals = [b.load(_slot_at(em, ps[i], lane), typ=PTR if i != 2 else I32) for i in range(4)]
            b.call(f, [vals[0], vals[1], vals[2], vals[3], ctaid, tid])

        _lane_loop(em, report)
        mc.emit_error(b, em.ctx, em.blk, L.ERR_ASSERT, ins.line)
        b.ret(ll.Constant(I32, 2))
        # the rest of the block is unreachable; give the builder a block to continue in
        dead = em.llfn.append_basic_block("after_assert")
        b.position_at_end(dead)
        return
    from . import devrt

    if devrt.lower(mc, em, name, callee, ins, params, rets):
        return
    raise em.error(f"a call to the device-runtime function {name}, which cuport does not provide")
