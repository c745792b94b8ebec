"""cp.async's forms and mbarrier operations that tests/programs' CUDA code does not reach, on
every device (their semantics are stated once, in cuport/isa/async_copy.py): src-size and
ignore-src fills, an immediate src-size, a cache policy, guarded copies; arrivals with a
count, arrive_drop, noComplete, cp.async.mbarrier.arrive with and without .noinc, a generic
address, expect_tx/complete_tx, a bulk copy each way, inval. Checked against what the ISA
says (a numpy model of the copies; the phases each operation completes)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import cuport

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from device_limits import devices  # noqa: E402 (tests/device_limits.py)

DEVICES = pytest.mark.parametrize("device", devices())
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

# each thread: its 96 bytes of shared memory filled with 0xAA, then copies from its 96
# bytes of the input into them; the 96 bytes out
COPIES = HEAD + """
.visible .entry copies(.param .u64 pin, .param .u64 pout)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .reg .pred %p<4>;
  .shared .align 16 .b8 s[6144];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, s;
  mul.lo.u32 %r3, %r1, 96;
  add.u32 %r4, %r2, %r3;
  mov.u32 %r9, 0xAAAAAAAA;
  st.shared.v4.u32 [%r4], {%r9, %r9, %r9, %r9};
  st.shared.v4.u32 [%r4+16], {%r9, %r9, %r9, %r9};
  st.shared.v4.u32 [%r4+32], {%r9, %r9, %r9, %r9};
  st.shared.v4.u32 [%r4+48], {%r9, %r9, %r9, %r9};
  st.shared.v4.u32 [%r4+64], {%r9, %r9, %r9, %r9};
  st.shared.v4.u32 [%r4+80], {%r9, %r9, %r9, %r9};
  bar.sync 0;
  mul.wide.u32 %rd3, %r1, 96;
  add.u64 %rd4, %rd1, %rd3;
  rem.u32 %r5, %r1, 19;
  and.b32 %r6, %r1, 1;
  setp.ne.u32 %p1, %r6, 0;
  setp.lt.u32 %p2, %r1, 40;
  mov.b64 %rd9, 0;
  cp.async.cg.shared.global [%r4], [%rd4], 16, %r5;
  cp.async.ca.shared.global [%r4+16], [%rd4+16], 8, %p1;
  cp.async.ca.shared.global [%r4+24], [%rd4+24], 4;
  cp.async.ca.shared.global [%r4+28], [%rd4+28], 4, 3;
  cp.async.cg.shared.global [%r4+32], [%rd4+32], 16, 16;
  cp.async.cg.shared.global.L2::cache_hint [%r4+48], [%rd4+48], 16, %r5, %rd9;
  @%p2 cp.async.ca.shared.global [%r4+64], [%rd4+64], 8;
  @!%p1 cp.async.ca.shared.global [%r4+72], [%rd4+72], 8, 5;
  cp.async.commit_group;
  cp.async.wait_group 0;
  bar.sync 0;
  add.u64 %rd5, %rd2, %rd3;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4];
  st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+16];
  st.global.v4.u32 [%rd5+16], {%r10, %r11, %r12, %r13};
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+32];
  st.global.v4.u32 [%rd5+32], {%r10, %r11, %r12, %r13};
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+48];
  st.global.v4.u32 [%rd5+48], {%r10, %r11, %r12, %r13};
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+64];
  st.global.v4.u32 [%rd5+64], {%r10, %r11, %r12, %r13};
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r4+80];
  st.global.v4.u32 [%rd5+80], {%r10, %r11, %r12, %r13};
  ret;
}
"""


@DEVICES
def test_copy_forms(device):
    n = 64
    src = (np.arange(n * 96, dtype=np.uint32) * 2654435761 % 251 + 1).astype(np.uint8)
    out = np.zeros(n * 96, np.uint8)
    cuport.Module(COPIES, device=device).kernel("copies")(1, n, (src, out))
    want = np.full((n, 96), 0xAA, np.uint8)
    s = src.reshape(n, 96)

    def put(t: int, off: int, size: int, k: int) -> None:  # size bytes, the first k from the source
        want[t, off:off + size] = 0
        want[t, off:off + k] = s[t, off:off + k]

    for t in range(n):
        put(t, 0, 16, min(t % 19, 16))  # src-size in a register
        put(t, 16, 8, 0 if t & 1 else 8)  # ignore-src
        put(t, 24, 4, 4)
        put(t, 28, 4, 3)  # an immediate src-size
        put(t, 32, 16, 16)  # src-size = cp-size
        put(t, 48, 16, min(t % 19, 16))  # src-size and a cache policy
        if t < 40:  # guarded
            put(t, 64, 8, 8)
        if not t & 1:
            put(t, 72, 8, 5)
    assert (out.reshape(n, 96) == want).all()



def _tests(ptx: str) -> str:
    """Each `test [addr], parity -> slot` line: mbarrier.test_wait.parity on [addr], its answer
    (1 or 0) stored at byte `slot` of the thread's output, then the block meets (so that no
    thread changes the barrier before all have tested it)."""
    return re.sub(r"  test \[(.+)\], (\d) -> (\d+)\n",
                  r"  mbarrier.test_wait.parity.shared.b64 %p2, [\1], \2;\n"
                  r"  selp.u32 %r10, 1, 0, %p2;\n  st.global.u32 [%rd5+\3], %r10;\n  bar.sync 0;\n", ptx)


# every thread's flags: what test_wait / try_wait / pending_count answer after each step
BARRIERS = HEAD + _tests("""
.visible .entry barriers(.param .u64 pin, .param .u64 pout)
{
  .reg .b32 %r<40>;
  .reg .b64 %rd<40>;
  .reg .pred %p<10>;
  .shared .align 128 .b8 s[1024];
  .shared .align 8 .b64 mb[6];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 80;
  add.u64 %rd5, %rd2, %rd3;
  mov.u32 %r2, mb;
  setp.eq.u32 %p1, %r1, 0;
  setp.lt.u32 %p3, %r1, 4;
  @%p1 mbarrier.init.shared.b64 [%r2], 64;
  @%p1 mbarrier.init.shared.b64 [%r2+8], 10;
  @%p1 mbarrier.init.shared.b64 [%r2+16], 2;
  @%p1 mbarrier.init.shared.b64 [%r2+24], 64;
  @%p1 mbarrier.init.shared.b64 [%r2+32], 1;
  @%p1 mbarrier.init.shared.b64 [%r2+40], 1;
  bar.sync 0;
  // mb[0]: everyone arrives, the phase completes
  mbarrier.arrive.shared.b64 %rd10, [%r2];
  bar.sync 0;
  mbarrier.test_wait.shared.b64 %p2, [%r2], %rd10;
  selp.u32 %r10, 1, 0, %p2;
  st.global.u32 [%rd5], %r10;
  mbarrier.try_wait.parity.shared.b64 %p2, [%r2], 1;
  selp.u32 %r10, 1, 0, %p2;
  st.global.u32 [%rd5+4], %r10;
  bar.sync 0;
  // mb[1] (10 expected): 4 threads arrive twice each, one once without completing, one more
  @%p3 mbarrier.arrive.shared.b64 %rd11, [%r2+8], 2;
  bar.sync 0;
  test [%r2+8], 0 -> 8
  setp.eq.u32 %p4, %r1, 4;
  @%p4 mbarrier.arrive.noComplete.shared.b64 %rd12, [%r2+8], 1;
  bar.sync 0;
  test [%r2+8], 0 -> 12
  setp.eq.u32 %p5, %r1, 37;
  @%p5 mbarrier.arrive.shared.b64 %rd13, [%r2+8];
  @%p5 mbarrier.pending_count.b64 %r11, %rd13;
  @%p5 st.global.u32 [%rd5+16], %r11;
  bar.sync 0;
  test [%r2+8], 0 -> 20
  // mb[2] (2 expected): thread 0 arrives and drops out, thread 33 completes the phase,
  // then thread 0's arrive completes the next (one expected arrival left)
  @%p1 mbarrier.arrive_drop.shared.b64 %rd14, [%r2+16];
  bar.sync 0;
  test [%r2+16], 0 -> 24
  setp.eq.u32 %p6, %r1, 33;
  @%p6 mbarrier.arrive.shared.b64 %rd15, [%r2+16];
  bar.sync 0;
  test [%r2+16], 0 -> 28
  @%p1 mbarrier.arrive.shared.b64 %rd16, [%r2+16];
  @%p1 mbarrier.pending_count.b64 %r11, %rd16;
  @%p1 st.global.u32 [%rd5+32], %r11;
  bar.sync 0;
  test [%r2+16], 1 -> 36
  // mb[3] (64 expected): cp.async.mbarrier.arrive changes nothing, .noinc arrives
  cp.async.mbarrier.arrive.shared.b64 [%r2+24];
  bar.sync 0;
  test [%r2+24], 0 -> 40
  cp.async.mbarrier.arrive.noinc.shared.b64 [%r2+24];
  bar.sync 0;
  test [%r2+24], 0 -> 44
  // mb[0] through a generic address: the second phase
  cvta.shared.u64 %rd20, mb;
  mbarrier.arrive.b64 %rd21, [%rd20];
  bar.sync 0;
  mbarrier.test_wait.b64 %p2, [%rd20], %rd21;
  selp.u32 %r10, 1, 0, %p2;
  st.global.u32 [%rd5+48], %r10;
  bar.sync 0;
  // mb[4] (1 expected): 1024 transaction bytes expected, two bulk copies complete them
  @%p1 mbarrier.arrive.expect_tx.shared.b64 %rd22, [%r2+32], 1024;
  bar.sync 0;
  test [%r2+32], 0 -> 52
  setp.lt.u32 %p7, %r1, 2;
  mov.u32 %r20, s;
  shl.b32 %r21, %r1, 9;
  add.u32 %r22, %r20, %r21;
  cvt.u64.u32 %rd23, %r21;
  add.u64 %rd24, %rd1, %rd23;
  add.u32 %r23, %r2, 32;
  @%p7 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r22], [%rd24], 512, [%r23];
  bar.sync 0;
  test [%r2+32], 0 -> 56
  add.u64 %rd25, %rd2, 8192;
  add.u64 %rd25, %rd25, %rd23;
  @%p7 cp.async.bulk.global.shared::cta.bulk_group [%rd25], [%r22], 512;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group 0;
  // mb[5] (1 expected): the arrival leaves 100 transaction bytes; 4 x 25 complete them
  @%p1 mbarrier.expect_tx.shared.b64 [%r2+40], 100;
  @%p1 mbarrier.arrive.shared.b64 %rd26, [%r2+40];
  bar.sync 0;
  test [%r2+40], 0 -> 60
  @%p3 mbarrier.complete_tx.shared.b64 [%r2+40], 25;
  bar.sync 0;
  test [%r2+40], 0 -> 64
  // invalidated and made again, for 3
  @%p1 mbarrier.inval.shared.b64 [%r2+40];
  @%p1 mbarrier.init.shared.b64 [%r2+40], 3;
  @%p1 mbarrier.arrive.shared.b64 %rd27, [%r2+40];
  @%p1 mbarrier.pending_count.b64 %r11, %rd27;
  @%p1 st.global.u32 [%rd5+68], %r11;
  ret;
}
""")


@DEVICES
def test_barrier_operations(device):
    n = 64
    src = np.arange(256, dtype=np.uint32) * 7 + 3
    out = np.full(4096, 0xFFFFFFFF, np.uint32)
    cuport.Module(BARRIERS, device=device).kernel("barriers")(1, n, (src, out))
    none = 0xFFFFFFFF
    for t in range(n):
        want = [1, 0,  # mb[0] complete, its next phase not
                0, 0, 1 if t == 37 else none, 1,  # mb[1]: the last arrival saw 1 pending
                0, 1, 1 if t == 0 else none, 1,  # mb[2]: one expected arrival after the drop
                0, 1,  # mb[3]: only .noinc arrives
                1,  # mb[0]'s second phase, through a generic address
                0, 1,  # mb[4]: complete once the bulk copies' bytes arrived
                0, 1,  # mb[5]: complete once its transaction bytes did
                3 if t == 0 else none, none, none]  # mb[5] anew
        assert out[t * 20:(t + 1) * 20].tolist() == want, f"thread {t}"
    assert (out[2048:2304] == src).all()  # the bulk copies there and back
