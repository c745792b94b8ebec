"""Which registers hold per-lane values, which branches split a warp, which blocks run split.

Needs: a Cfg in execution priority order (cfg.build). Leaves: a `Divergence` record.

- A register is *uniform* when every lane of a warp holds the same value whenever it is
  read; the backend then keeps one scalar for the warp instead of a vector of 32 lanes.
- A branch is *divergent* when its predicate is varying and its two successors differ
  (edges into exit sinks do not count: lanes taking them finish).
- A block is *split* (may run with only part of the warp's live lanes) when it lies in the
  region of a divergent branch: reachable from the branch without passing its
  post-dominator. Blocks outside every such region are *converged*: all live lanes run
  them together, so writes there need no blending with the lanes that are elsewhere.
- A register with more than one definition, one of them in a split block, is varying
  (lanes that took different paths or left a loop at different trips hold different
  values), and a varying register can make more branches divergent: the two facts are
  computed together to a fixed point.
- The results of one instruction (a value and the carry flag of `mad.lo.cc`) are varying
  together: the instruction is computed either for the warp or per lane.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..isa.memory import space_of
from ..isa.operands import defs, uses
from ..ptx import ir, opcodes
from .cfg import Cfg, is_barrier, postdominators


@dataclass
class Divergence:
    varying: set[str]
    divergent_branches: set[int]
    split_blocks: set[int]
    blend: set[str] | None = None  # varying registers whose split-block writes blend (liveness)

    def is_split(self, block: int) -> bool:
        return block in self.split_blocks


def special_is_varying(name: str, block: tuple[int, int, int], scope: str = "warp") -> bool:
    """Whether threads of one warp (scope "warp") or of one block ("block") may read
    different values of the special register `name`."""
    nx, ny, nz = block
    if scope == "block":
        dims = {"%tid.x": nx, "%tid.y": ny, "%tid.z": nz}
        if name in dims:
            return dims[name] != 1
        if name in ("%warpid", "%laneid") or name.startswith("%lanemask"):
            return nx * ny * nz > 1
        return False
    if name == "%tid.x":
        return nx != 1
    if name == "%tid.y":
        return not (ny == 1 or nx % 32 == 0)
    if name == "%tid.z":
        return not (nz == 1 or (nx * ny) % 32 == 0)
    return name == "%laneid" or name.startswith("%lanemask")


#: special registers whose value changes with time: threads that read them at different
#: times (the warps of a block, which the CPU backend runs one after another) see others
_TIMERS = ("%clock", "%globaltimer", "%pm")


def _racy(ins: ir.Instr) -> bool:
    """Whether `ins` reads memory that threads of the kernel may write (`ld` of global,
    shared or generic memory but `.nc`, `suld`, `ldmatrix`) or a timer."""
    if any(isinstance(a, ir.Special) and a.name.startswith(_TIMERS) for a in ins.args):
        return True
    if ins.op in ("suld", "ldmatrix"):
        return True
    return ins.op == "ld" and space_of(ins) in ("global", "shared", "generic") and "nc" not in ins.mods


def analyze(cfg: Cfg, block: tuple[int, int, int], scope: str = "warp",
            racy_loads: bool = False) -> Divergence:
    """Divergence among the threads of a warp (the CPU backend's SIMD lanes), or with
    scope "block" among all threads of a block (where a backend needs the whole block at a
    warp collective). With `racy_loads`, what a thread reads from memory that threads may
    write, and timers, count as varying too: the threads that read them need not do so at
    the same time (a flag one warp sets between another's reads, without a barrier
    between: a race on a GPU, and a common one)."""
    fn = cfg.fn
    kernel_params = {p.name for p in fn.params} if fn.is_entry else set()
    func_param_vars = {v.name for v in fn.locals if v.space == "param"} | (
        set() if fn.is_entry else {p.name for p in fn.params} | {r.name for r in fn.rets}
    )

    # def sites and use sites
    def_blocks: dict[str, set[int]] = {}
    def_count: dict[str, int] = {}
    users: dict[str, list[tuple[int, ir.Instr]]] = {}
    all_instrs: list[tuple[int, ir.Instr]] = []
    for b in cfg.blocks:
        for ins in b.instrs:
            all_instrs.append((b.index, ins))
            for r in defs(ins):
                def_blocks.setdefault(r.name, set()).add(b.index)
                def_count[r.name] = def_count.get(r.name, 0) + 1
            for r in uses(ins):
                users.setdefault(r.name, []).append((b.index, ins))

    def inherently_varying(ins: ir.Instr) -> bool:
        op = ins.op
        if opcodes.per_lane(ins) or (racy_loads and _racy(ins)):
            return True
        for a in ins.args:
            if isinstance(a, ir.Special) and special_is_varying(a.name, block, scope):
                return True
        if op in ("ld", "ldu"):
            space = space_of(ins)
            if space == "local":
                return True
            if space == "param":
                m = ins.args[1] if len(ins.args) > 1 else None
                base = m.base if isinstance(m, ir.Mem) else None
                if isinstance(base, ir.Sym) and base.name in kernel_params:
                    return False
                return True
        if op == "cvta":
            return "local" in ins.mods or ("param" in ins.mods and not fn.is_entry)
        if op == "mov" and len(ins.args) > 1:
            s = ins.args[1]
            if isinstance(s, (ir.Sym, ir.SymAddr)) and s.name in func_param_vars:
                return True
        return False

    varying: set[str] = set()
    work: list[str] = []

    def mark(name: str) -> None:
        if name not in varying:
            varying.add(name)
            work.append(name)

    for _, ins in all_instrs:
        if inherently_varying(ins):
            for r in defs(ins):
                mark(r.name)

    multi_defs = [ds for ds in (defs(ins) for _, ins in all_instrs) if len(ds) > 1]
    ipdom = postdominators(cfg)
    blocks = cfg.blocks
    split: set[int] = set()
    divergent: set[int] = set()
    if not cfg.reducible:
        split = {b.index for b in blocks}

    def propagate() -> None:
        while work:
            name = work.pop()
            for _, ins in users.get(name, ()):
                if ins.op in ("bar", "barrier") and "red" in ins.mods:
                    continue  # a block-wide reduction: the same answer whatever each lane gave
                for r in defs(ins):
                    mark(r.name)

    while True:
        propagate()
        changed = False
        for b in blocks:
            t = b.term
            if b.index in divergent or t is None or t.op != "bra" or t.guard is None:
                continue
            if t.guard.name not in varying:
                continue
            succs = [s for s in b.succs if not blocks[s].exit_sink]
            if len(set(succs)) < 2:
                continue
            divergent.add(b.index)
            changed = True
            stop = ipdom[b.index]
            stack = list(succs)
            seen: set[int] = set()
            while stack:
                x = stack.pop()
                if x == stop or x in seen:
                    continue
                seen.add(x)
                split.add(x)
                stack.extend(s for s in blocks[x].succs if not blocks[s].exit_sink)
            if stop != -1 and any(blocks[x].term is not None and is_barrier(blocks[x].term) for x in seen):
                # Lanes that leave the region early may run on past the post-dominator
                # while others wait at a barrier inside it: nothing after it is converged.
                # (Yield points keep the order: emit.py suspends rather than run ahead.)
                stack = [stop]
                while stack:
                    x = stack.pop()
                    if x in seen:
                        continue
                    seen.add(x)
                    split.add(x)
                    stack.extend(s for s in blocks[x].succs if not blocks[s].exit_sink)
        # multi-definition registers defined in split blocks
        for name, bs in def_blocks.items():
            if name not in varying and def_count[name] > 1 and bs & split:
                mark(name)
                changed = True
        # the destinations of one instruction (ld.v2 {%a, %b}, a carry out) are written in
        # one mode: if one is varying (say %b, by a second definition in a loop), all are
        for multi in multi_defs:
            if any(r.name in varying for r in multi):
                for r in multi:
                    if r.name not in varying:
                        mark(r.name)
                        changed = True
        # bar.red (__syncthreads_count/and/or) gives every thread the same answer when the
        # whole warp arrives together; in split code lanes may arrive in different rounds
        for bi, ins in all_instrs:
            if ins.op in ("bar", "barrier") and "red" in ins.mods and bi in split:
                for r in defs(ins):
                    if r.name not in varying:
                        mark(r.name)
                        changed = True
        # guarded definitions with a varying guard; and an instruction with several
        # results (`mad.lo.cc` writes the carry flag too, `mov.b64 {%r1, %r2}`) computes
        # them in one mode, so one varying result makes them all varying
        for _, ins in all_instrs:
            ds = defs(ins)
            if (ins.guard is not None and ins.guard.name in varying) or (
                    len(ds) > 1 and any(r.name in varying for r in ds)):
                for r in ds:
                    if r.name not in varying:
                        mark(r.name)
                        changed = True
        if not changed and not work:
            break
    return Divergence(varying, divergent, split)
