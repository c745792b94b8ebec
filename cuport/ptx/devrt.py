"""The driver's side of the device runtime that cuport writes in PTX: the cooperative-groups
"syscalls" libcudadevrt's `cudaCG*` functions call (numba-cuda's `cuda.cg.this_grid()` and
`g.sync()` reach them), linked into a module that declares them, as NVIDIA's driver links
its own code for them.

What libcudadevrt 13's PTX asks of them (`cudaCGGetIntrinsicHandle` & co., read with
cuport's loader from `libcudadevrt.a`):

- `u64 __cuda_syscall_CGS_get_intrinsic_handle(u32 scope)`: called for cudaCGScopeGrid (1)
  only; libcudadevrt's wrappers treat a handle of 0 as invalid (cudaErrorUnknown, 999). The
  handle is the cooperative launch's grid workspace {wsSize, barrier}, the address that
  cooperative_groups' inline `grid.sync()` finds in %envreg1:%envreg2 (both backends put
  it there), so it is 0 outside a cooperative launch, where `grid_group::is_valid()` is
  false too.
- `u32 __cuda_syscall_CGS_sync(u64 handle, u32 flags)`: a grid-wide barrier. Flags bit 0
  set (cudaCGSynchronizeGrid: one thread per block calls, between two `bar.sync 0`): the
  caller arrives for its block; clear (cudaCGSynchronize, numba-cuda: every thread calls):
  the block meets at `bar.sync 0` first, one thread arrives, the block meets again. The
  arrival is cooperative_groups' own (sync_grids_arrive/wait: a release add that flips the
  top bit when the last block arrives, an acquire spin), on the same barrier word, so the
  two kinds of grid sync can be mixed. 0: done, anything else makes the wrapper answer 999.
- `u32 __cuda_syscall_CGS_get_size(u32 *threads, u32 *grids, u64 handle)`: the grid's
  threads and the number of grids (1: a multi-device launch is not supported).
- `u32 __cuda_syscall_CGS_get_rank(u32 *rank, u32 *grid_rank, u64 handle)`: the thread's
  flat rank in the grid (cooperative groups' `grid.thread_rank()`) and, second, 1: what an
  H100 answers there for a one-grid cooperative launch (tests/driver/c/cg_devrt.cu,
  recorded 2026-12-06; NVIDIA does not document the value).

A handle other than the launch's own workspace is refused (1) by every call. A
`__cuda_syscall_*` that cuport does not define stays undefined: a kernel that reaches it
fails to launch naming it (the backends' call lowering), as the ones the link accepts
below do.
"""

from __future__ import annotations

from . import ir

#: what NVIDIA's driver provides to every module (cuLinkComplete accepts references to
#: them): the device runtime's printf, malloc/free and assert, and the functions
#: libcudadevrt (CUDA 12 and 13) declares `.extern` for the driver to supply
DRIVER_FUNCTIONS = frozenset({
    "vprintf", "malloc", "free", "__assertfail",
    "cnpDeviceGetAttribute", "cnpEventCreate", "cnpEventDestroy", "cnpEventRecord",
    "cnpFuncGetAttribute", "cnpGetCacheConfig", "cnpGetDevice", "cnpGetDeviceCount",
    "cnpGetLastError", "cnpGetLimit", "cnpGetParameterBuffer", "cnpGetParameterBufferV2",
    "cnpGetSharedMemConfig", "cnpLaunchDevice", "cnpLaunchDeviceV2", "cnpSetLastError",
    "cnpStreamCreate", "cnpStreamDestroy", "cnpStreamWaitEvent",
})
SYSCALL_PREFIX = "__cuda_syscall_"


def driver_provides(name: str) -> bool:
    """Whether NVIDIA's driver supplies `name` to the modules it links."""
    return name in DRIVER_FUNCTIONS or name.startswith(SYSCALL_PREFIX)


# The PTX. `__cuport_cgs_workspace` answers the launch's workspace (0 outside a cooperative
# launch), `__cuport_cgs_valid` whether a handle is it.
_HELPERS = r"""
.version 7.0
.target sm_70
.address_size 64

.func (.param .b64 ws) __cuport_cgs_workspace()
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, %envreg1;
    mov.u32 %r2, %envreg2;
    cvt.u64.u32 %rd1, %r1;
    cvt.u64.u32 %rd2, %r2;
    shl.b64 %rd1, %rd1, 32;
    or.b64 %rd3, %rd1, %rd2;
    st.param.b64 [ws], %rd3;
    ret;
}

.func (.param .b32 ok) __cuport_cgs_valid(.param .b64 handle)
{
    .reg .pred %p<3>;
    .reg .b32 %r1;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [handle];
    {
    .param .b64 ws;
    call.uni (ws), __cuport_cgs_workspace, ();
    ld.param.b64 %rd2, [ws];
    }
    setp.eq.u64 %p1, %rd1, %rd2;
    setp.ne.u64 %p2, %rd1, 0;
    and.pred %p1, %p1, %p2;
    selp.u32 %r1, 1, 0, %p1;
    st.param.b32 [ok], %r1;
    ret;
}

.visible .func (.param .b64 func_retval0) __cuda_syscall_CGS_get_intrinsic_handle(
    .param .b32 scope)
{
    .reg .pred %p1;
    .reg .b32 %r1;
    .reg .b64 %rd1;
    ld.param.u32 %r1, [scope];
    {
    .param .b64 ws;
    call.uni (ws), __cuport_cgs_workspace, ();
    ld.param.b64 %rd1, [ws];
    }
    setp.ne.u32 %p1, %r1, 1;  // cudaCGScopeGrid only
    @%p1 mov.u64 %rd1, 0;
    st.param.b64 [func_retval0], %rd1;
    ret;
}
"""


def _check_handle(handle: str, ok: str) -> str:
    """The check a syscall given a handle starts with: to $BAD unless `handle` is the
    launch's workspace (`ok` and %p1 are scratch)."""
    return f"""    {{
    .param .b64 h;
    st.param.b64 [h], {handle};
    .param .b32 ok;
    call.uni (ok), __cuport_cgs_valid, (h);
    ld.param.b32 {ok}, [ok];
    }}
    setp.eq.u32 %p1, {ok}, 0;
    @%p1 bra $BAD;
"""


#: how a syscall given a handle ends: 0, or 1 where the handle was refused
_ANSWER = r"""    st.param.b32 [func_retval0], 0;
    ret;
$BAD:
    st.param.b32 [func_retval0], 1;
    ret;
}
"""


def _two_outputs(name: str, outs: tuple[str, str], regs: int, body: str, value: str) -> str:
    """`u32 name(u32 *outs[0], u32 *outs[1], u64 handle)`, get_size's and get_rank's shape:
    `body` (%r2..%r<regs - 2>) leaves the first answer in `value`; the second is 1, the one
    grid of a launch (what an H100 answers for both, cg_devrt.cu). Each is stored where its
    pointer is not NULL."""
    one = f"%r{regs - 1}"
    return f""".visible .func (.param .b32 func_retval0) {name}(
    .param .b64 {outs[0]}, .param .b64 {outs[1]}, .param .b64 handle)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<{regs}>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [{outs[0]}];
    ld.param.u64 %rd2, [{outs[1]}];
    ld.param.u64 %rd3, [handle];
{_check_handle("%rd3", "%r1")}{body}    setp.ne.u64 %p2, %rd1, 0;
    @%p2 st.u32 [%rd1], {value};
    mov.u32 {one}, 1;
    setp.ne.u64 %p3, %rd2, 0;
    @%p3 st.u32 [%rd2], {one};
{_ANSWER}"""


_SYNC = r""".visible .func (.param .b32 func_retval0) __cuda_syscall_CGS_sync(
    .param .b64 handle, .param .b32 flags)
{
    .reg .pred %p<6>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [handle];
    ld.param.u32 %r1, [flags];
""" + _check_handle("%rd1", "%r2") + r"""    add.u64 %rd2, %rd1, 4;  // the workspace's barrier word
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p2, %r3, 0;  // every thread calls: the block meets around one arrival
    setp.eq.u32 %p3, %r3, 1;  // (the caller arrives for its block)
    @!%p2 bra $ARRIVES;
    bar.sync 0;
    mov.u32 %r4, %tid.x;
    mov.u32 %r5, %tid.y;
    mov.u32 %r6, %tid.z;
    or.b32 %r4, %r4, %r5;
    or.b32 %r4, %r4, %r6;
    setp.eq.u32 %p3, %r4, 0;
$ARRIVES:
    @!%p3 bra $ARRIVED;
    // block 0 adds 0x80000000 - (blocks - 1), the others 1: the top bit flips when all are
    // in. The spin is here, not in a function of its own, so that the CPU backend (which
    // inlines this function for its barriers) sees the loop and lets a waiting block step
    // aside; the barriers are outside the branch on the arriving thread, where a device
    // whose barriers need the whole workgroup can run them.
    mov.u32 %r7, %nctaid.x;
    mov.u32 %r8, %nctaid.y;
    mov.u32 %r9, %nctaid.z;
    mul.lo.u32 %r10, %r7, %r8;
    mul.lo.u32 %r10, %r10, %r9;
    mov.u32 %r11, %ctaid.x;
    mov.u32 %r12, %ctaid.y;
    mov.u32 %r13, %ctaid.z;
    or.b32 %r14, %r11, %r12;
    or.b32 %r14, %r14, %r13;
    setp.eq.u32 %p4, %r14, 0;
    sub.u32 %r15, 0x80000001, %r10;
    selp.b32 %r16, %r15, 1, %p4;
    atom.add.release.gpu.u32 %r17, [%rd2], %r16;
$WAIT:
    ld.acquire.gpu.u32 %r18, [%rd2];
    xor.b32 %r19, %r18, %r17;
    setp.lt.s32 %p5, %r19, 0;
    @!%p5 bra $WAIT;
$ARRIVED:
    @!%p2 bra $DONE;
    bar.sync 0;
$DONE:
""" + _ANSWER

_GET_SIZE = _two_outputs("__cuda_syscall_CGS_get_size", ("threads", "grids"), 10, r"""    mov.u32 %r2, %nctaid.x;
    mov.u32 %r3, %nctaid.y;
    mov.u32 %r4, %nctaid.z;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, %ntid.y;
    mov.u32 %r7, %ntid.z;
    mul.lo.u32 %r8, %r2, %r3;
    mul.lo.u32 %r8, %r8, %r4;
    mul.lo.u32 %r8, %r8, %r5;
    mul.lo.u32 %r8, %r8, %r6;
    mul.lo.u32 %r8, %r8, %r7;
""", "%r8")

_GET_RANK = _two_outputs("__cuda_syscall_CGS_get_rank", ("rank", "grid_rank"), 18, r"""    // ((ctaid.z * nctaid.y + ctaid.y) * nctaid.x + ctaid.x) * threads per block
    //   + (tid.z * ntid.y + tid.y) * ntid.x + tid.x
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ctaid.y;
    mov.u32 %r4, %ctaid.z;
    mov.u32 %r5, %nctaid.x;
    mov.u32 %r6, %nctaid.y;
    mad.lo.u32 %r7, %r4, %r6, %r3;
    mad.lo.u32 %r7, %r7, %r5, %r2;
    mov.u32 %r8, %tid.x;
    mov.u32 %r9, %tid.y;
    mov.u32 %r10, %tid.z;
    mov.u32 %r11, %ntid.x;
    mov.u32 %r12, %ntid.y;
    mov.u32 %r13, %ntid.z;
    mul.lo.u32 %r14, %r11, %r12;
    mul.lo.u32 %r14, %r14, %r13;
    mad.lo.u32 %r15, %r10, %r12, %r9;
    mad.lo.u32 %r15, %r15, %r11, %r8;
    mad.lo.u32 %r16, %r7, %r14, %r15;
""", "%r16")

PTX = "\n".join([_HELPERS, _SYNC, _GET_SIZE, _GET_RANK])


#: the syscalls PTX defines
DEFINED = frozenset({"__cuda_syscall_CGS_get_intrinsic_handle", "__cuda_syscall_CGS_sync",
                     "__cuda_syscall_CGS_get_size", "__cuda_syscall_CGS_get_rank"})


def needed(mods: list[ir.Module]) -> bool:
    """Whether the modules declare a syscall cuport defines here, and none defines them."""
    named = {n for m in mods for n in m.functions.keys() & DEFINED}
    return bool(named) and not any(m.functions[n].is_definition for m in mods for n in named
                                   if n in m.functions)


def library() -> ir.Module:
    """cuport's definitions, to be linked after the program's modules: a fresh parse each
    time, since passes may change a module's functions in place."""
    from .parser import parse

    return parse(PTX)
