"""Dynamic parallelism on the Vulkan backend, device side: the `__cuda_syscall_cnpv2*` calls
that libcudadevrt's PTX makes, as code on the device's launch area (layout.py LQ_*, pushed
as `launches`). A shader cannot call the host, so

- cudaGetParameterBufferV2 (and the V1 cudaGetParameterBuffer) bumps a buffer out of the
  arena with one atomic add, PB_HEADER_BYTES after a header that keeps what the call was
  told (kernel token, grid, block, dynamic shared bytes) and the grid's tag;
- cudaLaunchDeviceV2 (and the V1 cudaLaunchDevice) makes CUDA's checks in CUDA's order
  (backends/device_launch.py CHECKS) and appends a launch record with one atomic add, so the
  queue holds launches in the order threads issued them; the host reads it when the grid is
  done (device_launch.py) and runs the children by the shared rules;
- the thread's last device-runtime error (cudaGetLastError) is a Function variable;
- streams and events made in device code get fresh numbers from the area's counter.

A full arena or queue is CUDA's pending-count error, as the CPU backend's cap gives it, never
a silent drop. A kernel's table (parameter bytes, threads per block: layout.py LQ_KERNELS)
tells a kernel token from any other number.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I1, I32, I64, PTR
from .. import device_launch as cdp
from . import layout as V

SYSCALL = "__cuda_syscall_cnpv2"
DEVICE = 1  # SPIR-V Scope Device
_ANY_SPACE = frozenset({"shared", "local", "global"})

assert V.PB_HEADER_BYTES == cdp.PARAM_ALIGN


def _c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def _c64(v: int) -> ll.Constant:
    return ll.Constant(I64, v)


class _Call:
    """One syscall's operands: its .param variables in local memory."""

    def __init__(self, em, params: tuple, rets: tuple) -> None:
        self.em = em
        self.params = params
        self.rets = rets

    def arg(self, i: int, t: ll.Type, offset: int = 0) -> ll.Value:
        off = self.em.plan.local_offsets[self.params[i].name] + offset
        return self.em._word_load("local", _c64(off), t)

    def dim3(self, i: int) -> list[ll.Value]:
        return [self.arg(i, I32, 4 * k) for k in range(3)]

    def ret(self, v: ll.Value) -> None:
        em = self.em
        name = self.rets[0].name
        size = next(x.size for x in em.fn.locals if x.name == name)
        t = ll.IntType(8 * size)
        if v.type != t:
            v = em.b.trunc(v, t) if v.type.width > t.width else em.b.zext(v, t)
        em._word_store("local", _c64(em.plan.local_offsets[name]), v)


# ---------------------------------------------------------------- the launch area

def _area(em, offset: int) -> ll.Value:
    return em.b.add(em.push("launches"), _c64(offset))


def _field(em, offset: int, t: ll.Type) -> ll.Value:
    """A header field (cuport's own buffer: no range check)."""
    return em.b.load(em.b.inttoptr(_area(em, offset), PTR), typ=t, align=t.width // 8)


def _atomic_add(em, address: ll.Value, v: ll.Value) -> ll.Value:
    return em.spv("OpAtomicIAdd", v.type, [em.b.inttoptr(address, PTR), _c32(DEVICE), _c32(0), v], "g")


def _store(em, address: ll.Value, v: ll.Value) -> None:
    em.b.store(v, em.b.inttoptr(address, PTR), align=v.type.width // 8)


def _load(em, address: ll.Value, t: ll.Type) -> ll.Value:
    return em.b.load(em.b.inttoptr(address, PTR), typ=t, align=t.width // 8)


def _var(em, t: ll.Type, initial: ll.Value) -> ll.Value:
    v = em.entry_alloca(t, "cnp")
    em.b.store(initial, v)
    return v


def _last_error(em) -> ll.Value:
    """The thread's last device-runtime error: a Function variable, 0 when the thread starts."""
    if em.last_error is None:
        var = em.entry_alloca(I32, "cnp_last_error")
        init = ll.IRBuilder(em.llfn.entry_basic_block)
        init.position_after(var)
        init.store(_c32(0), var)
        em.last_error = var
    return em.last_error


def _kernel_entry(em, token: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(parameter bytes, threads per block at most) of the kernel whose token this is;
    (0, 0) for any other number."""
    b = em.b
    index = b.sub(token, _c64(cdp.FUNC_TOKEN_BASE))
    inside = b.icmp_unsigned("<", index, b.zext(_field(em, V.LQ_NFUNCS, I32), I64))
    entry = b.add(_field(em, V.LQ_KERNELS, I64), b.mul(b.select(inside, index, _c64(0)), _c64(8)))
    size = _load(em, entry, I32)
    most = _load(em, b.add(entry, _c64(4)), I32)
    return b.select(inside, size, _c32(0)), b.select(inside, most, _c32(0))


def _generic(em, address: ll.Value, go, types: list[ll.Type]) -> list[ll.Value]:
    """`go(space, address)` where a generic pointer the device runtime was given points."""
    return em._by_space(_ANY_SPACE, address, go, types)


def _store_generic(em, address: ll.Value, v: ll.Value) -> None:
    def go(space: str, a: ll.Value) -> list:
        if space == "global":
            em.b.store(v, em._global_ptr(a, write=True), align=v.type.width // 8)
        else:
            em._word_store(space, a, v)
        return []

    _generic(em, address, go, [])


def _load_dim3(em, address: ll.Value) -> list[ll.Value]:
    def go(space: str, a: ll.Value) -> list[ll.Value]:
        at = [em._offset(space, a, 4 * k) for k in range(3)]
        if space == "global":
            return [em.b.load(em._global_ptr(x), typ=I32, align=4) for x in at]
        return [em._word_load(space, x, I32) for x in at]

    return _generic(em, address, go, [I32] * 3)


# ---------------------------------------------------------------- parameter buffers

def _allocate(em, size: ll.Value, token: ll.Value, grid, block, shared: ll.Value) -> ll.Value:
    """A parameter buffer of `size` bytes (i32) from the arena: its address, or 0 with the
    thread's last error set to the pending-count error when the arena is full."""
    b = em.b
    nbytes = b.zext(size, I64)
    nbytes = b.select(b.icmp_unsigned("<", nbytes, _c64(cdp.MIN_PARAM_BYTES)), _c64(cdp.MIN_PARAM_BYTES), nbytes)
    nbytes = b.and_(b.add(nbytes, _c64(cdp.PARAM_ALIGN - 1)), _c64(-cdp.PARAM_ALIGN))
    need = b.add(nbytes, _c64(V.PB_HEADER_BYTES))
    offset = _atomic_add(em, _area(em, V.LQ_HEAD), need)
    fits = b.icmp_unsigned("<=", b.add(offset, need), b.zext(_field(em, V.LQ_ARENA_BYTES, I32), I64))
    out = _var(em, I64, _c64(0))
    with b.if_else(fits) as (then, otherwise):
        with then:
            header = b.add(_field(em, V.LQ_ARENA, I64), offset)
            _store(em, b.add(header, _c64(V.PB_TAG)), _field(em, V.LQ_EPOCH, I32))
            _store(em, b.add(header, _c64(V.PB_BYTES)), b.trunc(nbytes, I32))
            _store(em, b.add(header, _c64(V.PB_TOKEN)), token)
            for k in range(3):
                _store(em, b.add(header, _c64(V.PB_GRID + 4 * k)), grid[k])
                _store(em, b.add(header, _c64(V.PB_BLOCK + 4 * k)), block[k])
            _store(em, b.add(header, _c64(V.PB_SHARED)), shared)
            b.store(b.add(header, _c64(V.PB_HEADER_BYTES)), out)
        with otherwise:
            b.store(_c32(cdp.ERROR_PENDING_COUNT), _last_error(em))
    return b.load(out)


def _get_parameter_buffer_v2(em, call: _Call) -> None:
    b = em.b
    token = call.arg(0, I64)
    size, most = _kernel_entry(em, token)
    out = _var(em, I64, _c64(0))
    with b.if_else(b.icmp_unsigned("!=", most, _c32(0))) as (then, otherwise):
        with then:
            b.store(_allocate(em, size, token, call.dim3(1), call.dim3(2), call.arg(3, I32)), out)
        with otherwise:
            b.store(_c32(cdp.ERROR_INVALID_DEVICE_FUNCTION), _last_error(em))
    call.ret(b.load(out))


def _get_parameter_buffer(em, call: _Call) -> None:
    one = [_c32(1)] * 3
    call.ret(_allocate(em, call.arg(1, I32), _c64(0), one, one, _c32(0)))


# ---------------------------------------------------------------- launches

def _claim(em, buffer: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(whether `buffer` is a parameter buffer of this grid not launched before, the arena
    offset of its header); the buffer counts as launched from now on, whatever the result."""
    b = em.b
    offset = b.sub(buffer, _field(em, V.LQ_ARENA, I64))
    header = b.sub(offset, _c64(V.PB_HEADER_BYTES))
    inside = b.and_(b.icmp_unsigned("<", header, b.zext(_field(em, V.LQ_ARENA_BYTES, I32), I64)),
                    b.icmp_unsigned("==", b.and_(header, _c64(cdp.PARAM_ALIGN - 1)), _c64(0)))
    ok = _var(em, I1, ll.Constant(I1, 0))
    with b.if_then(inside):
        epoch = _field(em, V.LQ_EPOCH, I32)
        tag = b.inttoptr(b.add(_field(em, V.LQ_ARENA, I64), b.add(header, _c64(V.PB_TAG))), PTR)
        old = em.spv("OpAtomicCompareExchange", I32, [tag, _c32(DEVICE), _c32(0), _c32(0),
                                                      b.or_(epoch, _c32(V.PB_LAUNCHED)), epoch], "g")
        b.store(b.icmp_unsigned("==", old, epoch), ok)
    return b.load(ok), b.select(inside, header, _c64(0))


def _launch(em, buffer_ok: ll.Value, offset: ll.Value, token: ll.Value, grid, block,
            shared: ll.Value, stream: ll.Value) -> ll.Value:
    """CUDA's checks of a launch (cdp.CHECKS, in order) and, when all pass, its record
    appended to the queue; the CNP code."""
    b = em.b
    may = b.icmp_unsigned("!=", _field(em, V.LQ_MAY_LAUNCH, I32), _c32(0))
    _, most = _kernel_entry(em, token)
    kernel_ok = b.icmp_unsigned("!=", most, _c32(0))
    threads = b.mul(b.mul(b.zext(block[0], I64), b.zext(block[1], I64)), b.zext(block[2], I64))
    config_ok = b.icmp_unsigned("<=", threads, b.zext(most, I64))
    for d in (*grid, *block):
        config_ok = b.and_(config_ok, b.icmp_unsigned("!=", d, _c32(0)))
    go = b.and_(b.and_(buffer_ok, may), b.and_(kernel_ok, config_ok))
    capacity = b.zext(_field(em, V.LQ_CAPACITY, I32), I64)
    full = _var(em, I1, ll.Constant(I1, 0))
    with b.if_else(go) as (then, otherwise):
        with then:
            slot = _atomic_add(em, _area(em, V.LQ_COUNT), _c64(1))
            over = b.icmp_unsigned(">=", slot, capacity)
            b.store(over, full)
            with b.if_then(b.not_(over)):
                rec = b.add(_field(em, V.LQ_RECORDS, I64), b.mul(slot, _c64(V.LR_BYTES)))
                _store(em, b.add(rec, _c64(V.LR_TOKEN)), token)
                for k in range(3):
                    _store(em, b.add(rec, _c64(V.LR_GRID + 4 * k)), grid[k])
                    _store(em, b.add(rec, _c64(V.LR_BLOCK + 4 * k)), block[k])
                _store(em, b.add(rec, _c64(V.LR_SHARED)), shared)
                _store(em, b.add(rec, _c64(V.LR_PARAMS)), b.trunc(b.add(offset, _c64(V.PB_HEADER_BYTES)), I32))
                _store(em, b.add(rec, _c64(V.LR_STREAM)), stream)
        with otherwise:  # (where "pending" comes before the failed check: is the queue full?)
            count = em.spv("OpAtomicLoad", I64, [b.inttoptr(_area(em, V.LQ_COUNT), PTR), _c32(DEVICE),
                                                 _c32(0)], "g")
            b.store(b.icmp_unsigned(">=", count, capacity), full)
    passed = {"buffer": buffer_ok, "depth": may, "pending": b.not_(b.load(full)),
              "kernel": kernel_ok, "configuration": config_ok}
    code = _c32(cdp.CNP_SUCCESS)
    for name, failure in reversed(cdp.CHECKS):
        code = b.select(passed[name], code, _c32(failure))
    return code


def _launch_device_v2(em, call: _Call) -> None:
    b = em.b
    ok, offset = _claim(em, call.arg(0, I64))
    header = b.add(_field(em, V.LQ_ARENA, I64), offset)

    def at(field: int, t: ll.Type = I32) -> ll.Value:
        return _load(em, b.add(header, _c64(field)), t)

    grid = [at(V.PB_GRID + 4 * k) for k in range(3)]
    block = [at(V.PB_BLOCK + 4 * k) for k in range(3)]
    call.ret(_launch(em, ok, offset, at(V.PB_TOKEN, I64), grid, block, at(V.PB_SHARED),
                     call.arg(1, I64)))


def _launch_device(em, call: _Call) -> None:
    """The V1 call: the kernel, grid (a dim3's address), block (likewise) and dynamic shared
    bytes come with the launch. A number that is no kernel is refused before the buffer is
    looked at (it stays launchable)."""
    b = em.b
    token = call.arg(0, I64)
    _, most = _kernel_entry(em, token)
    out = _var(em, I32, _c32(cdp.CNP_INVALID_VALUE))
    with b.if_then(b.icmp_unsigned("!=", most, _c32(0))):
        ok, offset = _claim(em, call.arg(1, I64))
        grid = _load_dim3(em, call.arg(2, I64))
        block = _load_dim3(em, call.arg(3, I64))
        b.store(_launch(em, ok, offset, token, grid, block, call.arg(4, I32), call.arg(5, I64)), out)
    call.ret(b.load(out))


# ---------------------------------------------------------------- errors, streams, devices

def _get_last_error(em, call: _Call) -> None:
    var = _last_error(em)
    call.ret(em.b.load(var))
    em.b.store(_c32(0), var)


def _set_last_error(em, call: _Call) -> None:
    em.b.store(call.arg(0, I32), _last_error(em))
    call.ret(_c32(0))


def _new_handle(em, call: _Call) -> None:
    """Streams and events made in device code: a fresh number (nothing behind it)."""
    n = _atomic_add(em, _area(em, V.LQ_HANDLES), _c64(1))
    _store_generic(em, call.arg(0, I64), em.b.add(n, _c64(cdp.STREAM_HANDLE_BASE)))
    call.ret(_c32(cdp.CNP_SUCCESS))


def _nothing(em, call: _Call) -> None:
    call.ret(_c32(cdp.CNP_SUCCESS))


def _answer(value: int):
    def lower(em, call: _Call) -> None:
        _store_generic(em, call.arg(0, I64), _c32(value))
        call.ret(_c32(cdp.CNP_SUCCESS))

    return lower


#: __cuda_syscall_cnpv2<name> -> (parameters, lowering(em, call), whether it uses the area)
SYSCALLS = {
    "GetParameterBufferV2": (4, _get_parameter_buffer_v2, True),
    "GetParameterBuffer": (2, _get_parameter_buffer, True),
    "LaunchDeviceV2": (2, _launch_device_v2, True),
    "LaunchDevice": (6, _launch_device, True),
    "GetLastError": (0, _get_last_error, False),
    "SetLastError": (1, _set_last_error, False),
    "StreamCreate": (2, _new_handle, True),
    "StreamDestroy": (1, _nothing, False),
    "EventCreate": (2, _new_handle, True),
    "EventRecord": (2, _nothing, False),
    "EventDestroy": (1, _nothing, False),
    "StreamWaitEvent": (3, _nothing, False),
    "GetDevice": (1, _answer(cdp.DEVICE), False),
    "GetDeviceCount": (1, _answer(cdp.DEVICE_COUNT), False),
}


def uses_launch_area(names) -> bool:
    """Whether code calling the functions `names` needs the launch area (host: it is then
    reset before the grid, and the grid's launches are read when it is done)."""
    return any(SYSCALLS.get(n[len(SYSCALL):], (0, None, False))[2]
               for n in names if n.startswith(SYSCALL))


def lower_syscall(em, name: str, params: tuple, rets: tuple) -> None:
    entry = SYSCALLS.get(name[len(SYSCALL):])
    if entry is None:
        raise em.error(f"a call to the device-runtime function {name}, which cuport does not provide")
    nparams, lower, _ = entry
    if len(params) != nparams or len(rets) != 1:
        raise em.error(f"{name} with {len(params)} parameters and {len(rets)} results")
    lower(em, _Call(em, params, rets))
