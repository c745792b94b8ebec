"""Calls from kernels to the CUDA device runtime on the Vulkan backend: printf, assert,
cudaGraphSetConditional, and libcudadevrt's `__cuda_syscall_cnpv2*` calls (dynamic
parallelism: lower_launch.py).

Device functions are inlined before lowering (passes/inline.py; recursive ones become
branches around a dispatch loop, passes/call_stack.py), so the only calls left are
`.extern` ones. `vprintf(fmt, args)` appends a record to the launch's printf ring (layout.py):
the format's device address and a copy of the argument buffer, which lives in the thread's
local memory (bytes from the argument pointer to the end of the thread's local frame, at most
MAX_ARGS); the host formats the records in order when the launch has completed, as a GPU
prints at synchronisation. `__assertfail` records the failure with the message, file,
function and line pointers and ends the thread; the host prints the GPU's text.
`cudaGraphSetConditional(handle, value)` stores the value at the handle, the address of
the condition variable in the context's device memory (driver/graph_conditional.py).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I32, I64, PTR
from ...ptx import ir
from . import layout as V
from . import lower_launch

MAX_ARGS = 256


def _call_parts(ins: ir.Instr) -> tuple[str | None, tuple, tuple]:
    args = list(ins.args)
    rets: tuple = ()
    if args and isinstance(args[0], ir.Args):
        rets = args.pop(0).items
    target = args.pop(0)
    params: tuple = ()
    if args and isinstance(args[0], ir.Args):
        params = args.pop(0).items
    return (target.name if isinstance(target, ir.Sym) else None), params, rets


def lower_call(em, ins: ir.Instr) -> None:
    name, params, rets = _call_parts(ins)
    if name is None:
        raise em.error("an indirect call (a function pointer)")
    for o in (*params, *rets):
        if not (isinstance(o, ir.Sym) and o.name in em.plan.local_offsets):
            raise em.error(f"a call argument that is not a .param variable ({ir.format_operand(o)})")

    def param(i: int, t: ll.Type) -> ll.Value:
        return em._word_load("local", ll.Constant(I64, em.plan.local_offsets[params[i].name]), t)

    if name == "vprintf":
        _vprintf(em, param(0, I64), param(1, I64) if len(params) > 1 else ll.Constant(I64, 0))
        if rets:
            em._word_store("local", ll.Constant(I64, em.plan.local_offsets[rets[0].name]), ll.Constant(I32, 0))
        return
    if name == "__assertfail":
        _assertfail(em, param(0, I64), param(1, I64), param(2, I32), param(3, I64))
        return
    if name == "cudaGraphSetConditional":
        if len(params) != 2:
            raise em.error("cudaGraphSetConditional with other than (handle, value) parameters")
        st = em.b.store(param(1, I32), em._global_ptr(param(0, I64), write=True), align=4)
        st.volatile = True  # the host reads it after the kernel
        return
    if name in ("malloc", "free"):
        raise em.error(f"device-side {name} is not supported on the Vulkan backend")
    if name.startswith(lower_launch.SYSCALL):  # dynamic parallelism
        lower_launch.lower_syscall(em, name, params, rets)
        return
    raise em.error(f"a call to the device-runtime function {name}, which cuport does not provide")


def _vprintf(em, fmt: ll.Value, argp: ll.Value) -> None:
    b = em.b
    frame = em.plan.local_bytes
    # the argument buffer's offset in local memory (0 bytes when there is none)
    is_local = em._in_window("local", argp)
    off = b.select(is_local, b.trunc(b.sub(argp, ll.Constant(I64, V.LOCAL_WINDOW)), I32), ll.Constant(I32, frame))
    avail = b.sub(ll.Constant(I32, frame), off)
    n = b.select(b.icmp_unsigned("<", avail, ll.Constant(I32, MAX_ARGS)), avail, ll.Constant(I32, MAX_ARGS))
    n = b.and_(n, ll.Constant(I32, ~7))
    size = b.add(n, ll.Constant(I32, 16))
    ring = em.push("printf")
    head = b.inttoptr(ring, PTR)
    pos = em.spv("OpAtomicIAdd", I32, [head, ll.Constant(I32, 1), ll.Constant(I32, 0), size], "g")
    cap = b.load(b.inttoptr(b.add(ring, ll.Constant(I64, V.RING_CAP)), PTR), typ=I32, align=4)
    fits = b.icmp_unsigned("<=", b.add(pos, size), cap)
    with b.if_then(fits):
        rec = b.add(ring, b.add(ll.Constant(I64, V.RING_DATA), b.zext(pos, I64)))
        b.store(size, b.inttoptr(rec, PTR), align=4)
        b.store(n, b.inttoptr(b.add(rec, ll.Constant(I64, 4)), PTR), align=4)
        b.store(fmt, b.inttoptr(b.add(rec, ll.Constant(I64, 8)), PTR), align=8)
        # copy n bytes of the local argument buffer, a word at a time
        pre = b.block
        loop = em.llfn.append_basic_block("printf_copy")
        body = em.llfn.append_basic_block("printf_word")
        done = em.llfn.append_basic_block("printf_done")
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(I32)
        i.add_incoming(ll.Constant(I32, 0), pre)
        b.cbranch(b.icmp_unsigned("<", i, n), body, done)
        b.position_at_end(body)
        w = em._word_load("local", b.zext(b.add(off, i), I64), I32)
        dst = b.add(rec, b.add(ll.Constant(I64, 16), b.zext(i, I64)))
        b.store(w, b.inttoptr(dst, PTR), align=4)
        i.add_incoming(b.add(i, ll.Constant(I32, 4)), body)
        b.branch(loop)
        b.position_at_end(done)


def _assertfail(em, msg: ll.Value, file: ll.Value, line: ll.Value, func: ll.Value) -> None:
    b = em.b
    em.record_failure(V.ERR_ASSERT, msg, {"file": file, "func": func, "aline": line})
    b.branch(em.ret_bb)
    b.position_at_end(em.llfn.append_basic_block("after_assert"))
