"""Test support: a kernel whose control flow is a given CFG. Block b appends b to a trace in
global memory (trace[0] is the length) and, when it branches, reads its decision from the
input array `choices` at index (b * 64 + number of earlier visits of b) mod 4096, so a run
on a device can be compared with cfgsim.run_cfg on the same decisions. Merge blocks also
carry a phi of the predecessor's number, stored in the trace after the block number.

Each invocation has its own trace (MAX_TRACE + 2 words, at invocation index times that):
run it with a workgroup of 8 invocations, all on the same decisions. (lavapipe 22.3 runs
some nested loops wrongly when a workgroup fills only part of its 8-wide SIMD group; a
workgroup of 1 shows it.)"""

from __future__ import annotations

from llvmlite import ir as ll
from spvtools import I32, Kernel

from cuport.backends.vulkan.spirv import structurize as st

CHOICES = 4096
MAX_TRACE = 2000


def cfg_kernel(cfg: st.CFG, with_phis: bool = True) -> Kernel:
    k = Kernel("cfg")
    b = k.b
    n = len(cfg.succs)
    stride = ll.Constant(I32, MAX_TRACE + 2)
    trace = k.element(k.push_ptr(0), b.mul(k.builtin("LocalInvocationIndex"), stride), I32)
    choices = k.push_ptr(8)
    visits_t = ll.ArrayType(I32, n)
    visits = b.alloca(visits_t)
    for i in range(n):
        k.store(ll.Constant(I32, 0), b.gep(visits, [ll.Constant(I32, 0), ll.Constant(I32, i)], source_etype=visits_t))
    blocks = [k.block(f"b{i}") for i in range(n)]
    entry = b.block
    b.branch(blocks[0])
    preds: dict[int, list[int]] = {i: [] for i in range(n)}
    preds[0].append(-1)  # the kernel's own entry block
    for i in range(n):
        for s in cfg.succs[i]:
            if i not in preds[s]:
                preds[s].append(i)
    phis = {}
    for i in range(n):
        b.position_at_end(blocks[i])
        if with_phis and len(preds[i]) >= 2:
            phis[i] = b.phi(I32)
        _append(k, trace, ll.Constant(I32, i))
        if i in phis:
            _append(k, trace, phis[i])
        kind = cfg.kinds[i]
        if kind == "ret":
            b.ret_void()
            continue
        if kind == "unreachable":
            b.unreachable()
            continue
        succ = cfg.succs[i]
        if kind == "br":
            b.branch(blocks[succ[0]])
            continue
        vp = b.gep(visits, [ll.Constant(I32, 0), ll.Constant(I32, i)], source_etype=visits_t)
        nv = b.load(vp, typ=I32)
        k.store(b.add(nv, ll.Constant(I32, 1)), vp)
        idx = b.urem(b.add(nv, ll.Constant(I32, i * 64)), ll.Constant(I32, CHOICES))
        c = b.urem(b.load(k.element(choices, idx, I32), typ=I32, align=4), ll.Constant(I32, len(succ)))
        if kind == "cbr":
            b.cbranch(b.icmp_unsigned("==", c, ll.Constant(I32, 0)), blocks[succ[0]], blocks[succ[1]])
        else:
            sw = b.switch(c, blocks[succ[0]])
            for j, s in enumerate(succ[1:], start=1):
                sw.add_case(ll.Constant(I32, j), blocks[s])
    for i, phi in phis.items():
        for p in preds[i]:
            phi.add_incoming(ll.Constant(I32, p), blocks[p] if p >= 0 else entry)
    return k


def _append(k: Kernel, trace, v) -> None:
    """trace[1 + trace[0]++] = v, while the trace has room (a run that loops forever on its
    decisions stops adding at MAX_TRACE entries; the kernel still runs until the loop ends,
    which the decisions guarantee by reading zeros past the first visits)."""
    b = k.b
    n = b.load(trace, typ=I32, align=4)
    room = b.icmp_unsigned("<", n, ll.Constant(I32, MAX_TRACE))
    slot = b.select(room, b.add(n, ll.Constant(I32, 1)), ll.Constant(I32, MAX_TRACE + 1))
    b.store(v, k.element(trace, slot, I32)).align = 4
    b.store(b.select(room, b.add(n, ll.Constant(I32, 1)), n), trace).align = 4


def expected_trace(cfg: st.CFG, choices, limit: int = MAX_TRACE) -> list[int] | None:
    """What cfg_kernel writes for `choices`, from the CFG itself; None when the run does not
    end within a bounded number of steps (it must not be run on a device then)."""
    preds: dict[int, set[int]] = {i: set() for i in range(len(cfg.succs))}
    preds[0].add(-1)
    for i, ss in enumerate(cfg.succs):
        for s in ss:
            preds[s].add(i)
    visits: dict[int, int] = {}
    out: list[int] = []
    b, prev = 0, -1
    for _ in range(20 * limit):
        out.append(b)
        if len(preds[b]) >= 2:
            out.append(prev)
        kind = cfg.kinds[b]
        if kind in ("ret", "unreachable"):
            return out[:limit]
        succ = cfg.succs[b]
        if kind == "br":
            i = 0
        else:
            n = visits.get(b, 0)
            visits[b] = n + 1
            i = int(choices[(b * 64 + n) % CHOICES]) % len(succ)
        prev, b = b, succ[i]
    return None
