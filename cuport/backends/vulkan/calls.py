"""Calls from kernels to the CUDA device runtime on the Vulkan backend: printf, assert,
malloc and free (device_heap.py), cudaGraphSetConditional, and libcudadevrt's `__cuda_syscall_cnpv2*` calls (dynamic
parallelism: lower_launch.py).

Device functions are inlined before lowering (passes/inline.py; recursive ones become
branches around a dispatch loop, passes/call_stack.py), so the only calls left are
`.extern` ones. `vprintf(fmt, args)` appends a record to the launch's printf ring (layout.py):
the format's device address and a copy of the argument buffer, which lives in the thread's
local memory (bytes from the argument pointer to the end of the thread's local frame, at most
MAX_ARGS); the host formats the records in order when the launch has completed, as a GPU
prints at synchronisation. A `%s` argument in the thread's local memory or the block's
shared memory (a buffer the kernel filled: cuda-samples' cdpSimplePrint) means nothing to the
host, so an argument word that holds such an address has the string (at most STR_MAX bytes,
NUL included) copied after the arguments and is rewritten to that copy's device address. `__assertfail` records the failure with the message, file,
function and line pointers and ends the thread; the host prints the GPU's text.
`cudaGraphSetConditional(handle, value)` stores the value at the handle, the address of
the condition variable in the context's device memory (driver/graph_conditional.py).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I32, I64, PTR
from ...ptx import ir
from ...ptx.callgraph import call_operands
from . import device_heap, lower_launch
from . import layout as V

MAX_ARGS = 256
STR_MAX = 256
I8 = ll.IntType(8)


def lower_call(em, ins: ir.Instr) -> None:
    rets, target, params, _ = call_operands(ins)
    if not isinstance(target, ir.Sym):
        raise em.error("an indirect call (a function pointer)")
    name = target.name
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
    if name == "malloc":
        p = device_heap.lower_malloc(em, param(0, I64))
        if rets:
            em._word_store("local", ll.Constant(I64, em.plan.local_offsets[rets[0].name]), p)
        return
    if name == "free":
        device_heap.lower_free(em, param(0, I64))
        return
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
    spaces = [sp for sp, size in (("local", frame), ("shared", em.plan.shared_bytes)) if size]

    def arg_word(i: ll.Value) -> ll.Value:
        return em._word_load("local", b.zext(b.add(off, i), I64), I64)
    strings = em.entry_alloca(I32, "printf_strings")
    b.store(ll.Constant(I32, 0), strings)
    with _loop(em, n, 8) as j:
        v = arg_word(j)
        for sp in spaces:
            with b.if_then(em._in_window(sp, v)):
                b.store(b.add(b.load(strings), ll.Constant(I32, 1)), strings)
    size = b.add(b.add(n, ll.Constant(I32, 16)), b.mul(b.load(strings), ll.Constant(I32, STR_MAX)))
    fits, rec = _record(em, size, n, fmt)
    with b.if_then(fits):
        # copy n bytes of the local argument buffer, a word at a time
        with _loop(em, n, 4) as i:
            w = em._word_load("local", b.zext(b.add(off, i), I64), I32)
            dst = b.add(rec, b.add(ll.Constant(I64, 16), b.zext(i, I64)))
            b.store(w, b.inttoptr(dst, PTR), align=4)
        if spaces:
            b.store(ll.Constant(I32, 0), strings)
            texts = b.add(rec, b.add(ll.Constant(I64, 16), b.zext(n, I64)))
            with _loop(em, n, 8) as j:
                v = arg_word(j)
                for sp in spaces:
                    with b.if_then(em._in_window(sp, v)):
                        k = b.load(strings)
                        copy = b.add(texts, b.zext(b.mul(k, ll.Constant(I32, STR_MAX)), I64))
                        _copy_string(em, sp, b.sub(v, ll.Constant(I64, V.WINDOW[sp])), copy)
                        b.store(copy, b.inttoptr(b.add(rec, b.add(ll.Constant(I64, 16), b.zext(j, I64))), PTR),
                                align=8)
                        b.store(b.add(k, ll.Constant(I32, 1)), strings)


def _record(em, size: ll.Value, n: ll.Value, fmt: ll.Value) -> tuple[ll.Value, ll.Value]:
    """Reserve `size` bytes of the printf ring: (whether they fit, the record's address),
    its header (size, argument bytes `n`, format `fmt`) written where they fit."""
    b = em.b
    ring = em.push("printf")
    head = b.inttoptr(ring, PTR)
    pos = em.spv("OpAtomicIAdd", I32, [head, ll.Constant(I32, 1), ll.Constant(I32, 0), size], "g")
    cap = b.load(b.inttoptr(b.add(ring, ll.Constant(I64, V.RING_CAP)), PTR), typ=I32, align=4)
    fits = b.icmp_unsigned("<=", b.add(pos, size), cap)
    rec = b.add(ring, b.add(ll.Constant(I64, V.RING_DATA), b.zext(pos, I64)))
    with b.if_then(fits):
        b.store(size, b.inttoptr(rec, PTR), align=4)
        b.store(n, b.inttoptr(b.add(rec, ll.Constant(I64, 4)), PTR), align=4)
        b.store(fmt, b.inttoptr(b.add(rec, ll.Constant(I64, 8)), PTR), align=8)
    return fits, rec


class _loop:
    """`with _loop(em, n, step) as i:` emits its body for i = 0, step, ... below n (i32)."""

    def __init__(self, em, n: ll.Value, step: int) -> None:
        self.em, self.n, self.step = em, n, step

    def __enter__(self) -> ll.Value:
        em, b = self.em, self.em.b
        self.pre = b.block
        self.head = em.llfn.append_basic_block("printf_loop")
        body = em.llfn.append_basic_block("printf_step")
        self.done = em.llfn.append_basic_block("printf_done")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(I32)
        self.i.add_incoming(ll.Constant(I32, 0), self.pre)
        b.cbranch(b.icmp_unsigned("<", self.i, self.n), body, self.done)
        b.position_at_end(body)
        return self.i

    def __exit__(self, *exc) -> None:
        b = self.em.b
        self.i.add_incoming(b.add(self.i, ll.Constant(I32, self.step)), b.block)
        b.branch(self.head)
        b.position_at_end(self.done)


def _copy_string(em, space: str, src: ll.Value, dst: ll.Value) -> None:
    """The NUL-terminated string at offset `src` of `space` into global memory at `dst`: at
    most STR_MAX - 1 bytes and the memory's end, then a NUL."""
    b = em.b
    size = em.plan.shared_bytes if space == "shared" else em.plan.local_bytes
    room = b.sub(ll.Constant(I64, size), src)
    limit = b.trunc(b.select(b.icmp_unsigned("<", room, ll.Constant(I64, STR_MAX - 1)), room,
                             ll.Constant(I64, STR_MAX - 1)), I32)
    count = em.entry_alloca(I32, "printf_chars")
    b.store(ll.Constant(I32, 0), count)
    head = em.llfn.append_basic_block("printf_char")
    body = em.llfn.append_basic_block("printf_byte")
    done = em.llfn.append_basic_block("printf_text")
    b.branch(head)
    b.position_at_end(head)
    i = b.load(count)
    b.cbranch(b.icmp_unsigned("<", i, limit), body, done)
    b.position_at_end(body)
    c = em._word_load(space, b.add(src, b.zext(i, I64)), I8)
    b.store(c, b.inttoptr(b.add(dst, b.zext(i, I64)), PTR), align=1)
    b.store(b.add(i, ll.Constant(I32, 1)), count)
    b.cbranch(b.icmp_unsigned("==", c, ll.Constant(I8, 0)), done, head)
    b.position_at_end(done)
    b.store(ll.Constant(I8, 0), b.inttoptr(b.add(dst, b.zext(b.load(count), I64)), PTR), align=1)


def _assertfail(em, msg: ll.Value, file: ll.Value, line: ll.Value, func: ll.Value) -> None:
    """Every failing thread's line goes to the printf ring, as a GPU prints each; the first
    failure is the launch's."""
    b = em.b
    size = 16 + V.RING_ASSERT_ARGS.size
    fits, rec = _record(em, ll.Constant(I32, size), ll.Constant(I32, V.RING_ASSERT), msg)
    with b.if_then(fits):
        words = [file, func, line, *(em.special(f"%ctaid.{k}") for k in "xyz"),
                 *(em.special(f"%tid.{k}") for k in "xyz")]
        at = 16
        for w in words:
            b.store(w, b.inttoptr(b.add(rec, ll.Constant(I64, at)), PTR), align=w.type.width // 8)
            at += w.type.width // 8
    em.record_failure(V.ERR_ASSERT, msg, {"file": file, "func": func, "aline": line})
    b.branch(em.ret_bb)
    b.position_at_end(em.llfn.append_basic_block("after_assert"))
