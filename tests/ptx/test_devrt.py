"""The driver's cooperative-groups syscalls that cuport writes in PTX (cuport/ptx/devrt.py),
called directly as libcudadevrt's cudaCG* functions call them (tests/driver/c/cg_devrt.cu
calls them through libcudadevrt): a grid barrier in a cooperative launch, the grid's size
and each thread's rank; and a `__cuda_syscall_CGS_*` cuport does not define fails the
launch naming it.
"""

from __future__ import annotations

import numpy as np
import pytest

import cuport
from cuport.backends.base import BackendError

HEAD = """
.version 7.0
.target sm_70
.address_size 64
.extern .func (.param .b64 r) __cuda_syscall_CGS_get_intrinsic_handle(.param .b32 scope);
.extern .func (.param .b32 r) __cuda_syscall_CGS_sync(.param .b64 h, .param .b32 flags);
.extern .func (.param .b32 r) __cuda_syscall_CGS_get_size(.param .b64 n, .param .b64 g, .param .b64 h);
.extern .func (.param .b32 r) __cuda_syscall_CGS_get_rank(.param .b64 t, .param .b64 g, .param .b64 h);
"""

# out[i] (i: the thread's index computed from its block of 64 threads) = size * 1000 + the
# rank its mirror thread wrote before the grid barrier, after checking that the rank is i;
# -1 where a call failed
GRID = HEAD + """
.visible .entry mirror(.param .u64 ranks, .param .u64 out)
{
    .local .align 4 .b8 depot[8];
    .reg .pred %p<2>;
    .reg .b32 %r<20>;
    .reg .b64 %rd<14>;
    ld.param.u64 %rd1, [ranks];
    ld.param.u64 %rd2, [out];
    mov.u32 %r12, %ctaid.x;
    mov.u32 %r13, %tid.x;
    mov.u32 %r14, %tid.y;
    shl.b32 %r15, %r12, 6;
    mad.lo.u32 %r16, %r14, 32, %r13;
    add.u32 %r16, %r16, %r15;
    mul.wide.u32 %rd12, %r16, 4;
    add.u64 %rd13, %rd2, %rd12;
    mov.u32 %r11, -1;
    mov.u64 %rd3, depot;
    st.local.u32 [%rd3], 0;
    st.local.u32 [%rd3+4], 0;
    cvta.local.u64 %rd4, %rd3;
    add.u64 %rd5, %rd4, 4;
    { .param .b32 s; .param .b64 h; st.param.b32 [s], 1;
      call.uni (h), __cuda_syscall_CGS_get_intrinsic_handle, (s); ld.param.b64 %rd6, [h]; }
    { .param .b64 n; .param .b64 g; .param .b64 h; .param .b32 e;
      st.param.b64 [n], %rd4; st.param.b64 [g], 0; st.param.b64 [h], %rd6;
      call.uni (e), __cuda_syscall_CGS_get_size, (n, g, h); ld.param.b32 %r1, [e]; }
    { .param .b64 t; .param .b64 g; .param .b64 h; .param .b32 e;
      st.param.b64 [t], %rd5; st.param.b64 [g], 0; st.param.b64 [h], %rd6;
      call.uni (e), __cuda_syscall_CGS_get_rank, (t, g, h); ld.param.b32 %r2, [e]; }
    ld.local.u32 %r3, [%rd3];
    ld.local.u32 %r4, [%rd3+4];
    mul.wide.u32 %rd7, %r4, 4;
    add.u64 %rd8, %rd1, %rd7;
    st.global.u32 [%rd8], %r4;
    // every thread reaches the barrier (a device whose barriers need the whole workgroup)
    { .param .b64 h; .param .b32 f; .param .b32 e; st.param.b64 [h], %rd6; st.param.b32 [f], 0;
      call.uni (e), __cuda_syscall_CGS_sync, (h, f); ld.param.b32 %r5, [e]; }
    or.b32 %r10, %r1, %r2;
    or.b32 %r10, %r10, %r5;
    setp.ne.u32 %p1, %r10, 0;
    setp.ne.or.u32 %p1, %r4, %r16, %p1;
    sub.u32 %r6, %r3, 1;
    sub.u32 %r7, %r6, %r4;
    mul.wide.u32 %rd9, %r7, 4;
    add.u64 %rd10, %rd1, %rd9;
    @!%p1 ld.global.u32 %r8, [%rd10];
    @!%p1 mad.lo.u32 %r11, %r3, 1000, %r8;
    st.global.u32 [%rd13], %r11;
    ret;
}
"""


BOGUS = """
.version 7.0
.target sm_70
.address_size 64
.extern .func (.param .b32 r) __cuda_syscall_CGS_bogus(.param .b64 h);
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r1;
    .reg .b64 %rd1;
    ld.param.u64 %rd1, [out];
    { .param .b64 h; .param .b32 e; st.param.b64 [h], 0;
      call.uni (e), __cuda_syscall_CGS_bogus, (h); ld.param.b32 %r1, [e]; }
    st.global.u32 [%rd1], %r1;
    ret;
}
"""


def test_grid_barrier_size_and_rank_in_a_cooperative_launch():
    """Four blocks (more than the resident blocks of one worker): every thread sees the rank
    its mirror-image thread stored before the barrier."""
    k = cuport.Module(GRID).kernel("mirror")
    n = 4 * 64
    ranks = np.full(n, -7, dtype=np.int32)
    out = np.zeros(n, dtype=np.int32)
    from cuport.api import pack_params

    k._k.launch((4, 1, 1), (32, 2, 1), 0, pack_params(k.info, (ranks, out)), cooperative=True)
    np.testing.assert_array_equal(ranks, np.arange(n))
    np.testing.assert_array_equal(out, n * 1000 + (n - 1 - np.arange(n)))


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_a_plain_launch_has_no_grid_to_synchronise(device):
    """Outside a cooperative launch the handle is 0, and every call refuses it."""
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        if not runtime.devices():
            pytest.skip("no Vulkan device")
    out = np.zeros(64, dtype=np.int32)
    cuport.Module(GRID, device=device).kernel("mirror")(grid=1, block=(32, 2),
                                                         args=(np.zeros(64, np.int32), out))
    np.testing.assert_array_equal(out, -1)


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_a_syscall_cuport_does_not_define_fails_naming_it(device):
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        if not runtime.devices():
            pytest.skip("no Vulkan device")
    k = cuport.Module(BOGUS, device=device).kernel("k")
    with pytest.raises(BackendError, match="__cuda_syscall_CGS_bogus"):
        k(grid=1, block=32, args=(np.zeros(1, np.int32),))
