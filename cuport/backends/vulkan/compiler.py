"""PTX kernel → SPIR-V compute shader: the Vulkan backend's pass pipeline, in order.

Each step takes and returns the `Compilation` record; `PIPELINE` is the one list, with the
reason for its place. `compile_kernel(..., dump_after=NAME)` prints the state after a
named step (`cuport ptx --backend vulkan --dump-after NAME`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ...isa.memory import space_of
from ...isa.texture_layout import Sampling
from ...passes import cfg as cfgmod
from ...passes import divergence
from ...passes import spaces as spaces_pass
from ...passes.call_stack import DEFAULT_STACK_BYTES, recursive_functions, stack_recursive_calls
from ...passes.indirect_calls import resolve_indirect_calls
from ...passes.inline import inline_all_calls
from ...passes.params import forward_params
from ...passes.texture_params import texture_handles
from ...passes.yields import loop_waits, observes_others
from ...ptx import ir
from ...ptx.callgraph import address_taken, reachable_functions
from ...ptx.errors import UnsupportedError
from ..device_launch import function_token
from .layout import PUSH
from .lower import DeviceCaps, KernelPlan, VulkanEmitter, plan_layout
from .spirv.translate import FloatModes, LoopMarks, TranslateError  # noqa: F401 (DeviceCaps.float_modes)
from .spirv.translate import translate as to_spirv


@dataclass
class Compilation:
    ptx: ir.Module
    kernel: str
    block: tuple[int, int, int]
    dyn_smem: int
    caps: DeviceCaps
    stack_bytes: int = DEFAULT_STACK_BYTES  # cudaLimitStackSize: the recursive calls' stack
    # (kernel parameter, Sampling) for the texture objects a launch passes: a variant whose
    # samples through them take their facts as constants (KernelPlan.textures)
    textures: tuple[tuple[str, Sampling], ...] = ()
    funcs: list[ir.Function] = field(default_factory=list)  # the functions the kernel reaches
    fn: ir.Function | None = None
    cfg: cfgmod.Cfg | None = None
    div: divergence.Divergence | None = None
    block_div: divergence.Divergence | None = None
    spaces: spaces_pass.Spaces | None = None
    plan: KernelPlan | None = None
    llmod: object = None
    shader: object = None
    notes: dict = field(default_factory=dict)


def inline(c: Compilation) -> Compilation:
    k = c.ptx.functions.get(c.kernel)
    if k is None or not k.is_entry:
        raise UnsupportedError(f"no kernel named {c.kernel}")
    taken = address_taken(c.ptx)
    c.funcs = reachable_functions(c.ptx, k, lambda f: resolve_indirect_calls(
        f, c.ptx, taken, lambda name: function_token(c.ptx, name)))
    c.fn = inline_all_calls(c.ptx, c.funcs, c.kernel, keep=recursive_functions(c.funcs))
    return c


def registers_for_params(c: Compilation) -> Compilation:
    c.fn = forward_params(c.fn)
    return c


def stack_calls(c: Compilation) -> Compilation:
    c.fn, stack = stack_recursive_calls(c.funcs, c.fn, c.stack_bytes)
    c.notes["stack_frames"], c.notes["spills"] = stack.frames, stack.spills
    return c


def build_cfg(c: Compilation) -> Compilation:
    c.cfg = cfgmod.build(c.fn)
    if not c.cfg.reducible:
        raise UnsupportedError(f"irreducible control flow in {c.kernel} (a loop entered other than "
                               "through its header): the Vulkan backend needs structured control flow",
                               c.fn.line)
    return c


def analyze_divergence(c: Compilation) -> Compilation:
    c.div = divergence.analyze(c.cfg, c.block)
    c.block_div = divergence.analyze(c.cfg, c.block, scope="block")
    return c


def check_progress(c: Compilation) -> Compilation:
    """A loop that waits for another thread of its block (one whose trips depend on a volatile
    or ordered shared load or an mbarrier test of its own, in code that part of the block
    runs: yields.loop_waits) needs threads that make progress independently,
    as on Volta and later NVIDIA GPUs; a device that runs a workgroup's invocations in lock
    step would spin for ever or read stale data, so there it is refused."""
    if c.caps.independent_threads:
        return c

    def waits(ins: ir.Instr) -> bool:
        return (ins.op in ("ld", "ldu") and observes_others(ins) and _may_be_shared(c, ins)) \
            or (ins.op == "mbarrier" and ins.mods[:1] in (("test_wait",), ("try_wait",)))
    for header, body in c.cfg.loops.items():
        if header not in c.block_div.split_blocks or not loop_waits(c.cfg, body, waits):
            continue
        ins = next(ins for x in sorted(body) for ins in c.cfg.blocks[x].instrs if waits(ins))
        raise UnsupportedError(
            "a loop that waits for another thread of the block (this Vulkan device runs "
            "a workgroup's threads in lock step, so they cannot make progress "
            "independently)", ins.line, ins.text())
    return c


def _may_be_shared(c: Compilation, ins: ir.Instr) -> bool:
    """Whether a load may read shared memory (a generic one: where its address may point;
    a spin on global memory waits for other blocks, which run concurrently)."""

    space = space_of(ins)
    if space != "generic":
        return space == "shared"
    mem = ins.args[1] if len(ins.args) > 1 else None
    return not isinstance(mem, ir.Mem) or "shared" in c.spaces.of(mem)


def infer_spaces(c: Compilation) -> Compilation:
    c.spaces = spaces_pass.analyze(c.fn, c.notes.get("spills", frozenset()))
    return c


def layout(c: Compilation) -> Compilation:
    c.plan = KernelPlan(c.ptx, c.fn, c.block, c.dyn_smem, c.caps, c.cfg, c.div, c.block_div, c.spaces)
    plan_layout(c.plan)
    if c.textures:
        c.plan.textures = dict(c.textures)
        c.plan.texture_handles = texture_handles(c.fn)
    return c


def lower(c: Compilation) -> Compilation:
    em = VulkanEmitter(c.plan)
    c.llmod = em.emit()
    c.notes["emitter"] = em  # for mark_loops
    return c


def mark_loops(c: Compilation) -> Compilation:
    if c.caps.loop_iteration_limit:
        from . import loops

        c.notes["loop_lines"] = loops.mark_loops(c.notes["emitter"])
    return c


def guard_folds(c: Compilation) -> Compilation:
    if c.caps.float_zero_folds or c.caps.sext64_compare_folds:
        from . import folds

        folds.guard_folds(c.notes["emitter"], c.caps.float_zero_folds, c.caps.sext64_compare_folds)
    return c


def translate(c: Compilation) -> Compilation:
    marks = None
    if "loop_lines" in c.notes:
        marks = LoopMarks(c.notes["loop_lines"], PUSH["pad"][0])
    try:
        c.shader = to_spirv(c.llmod, "main", c.plan.local_size, c.caps.float_modes(), marks)
    except TranslateError as e:
        raise UnsupportedError(f"internal: SPIR-V translation of {c.kernel} failed: {e}",
                               e.ptx_line or 0) from e
    from . import validate

    if validate.enabled():
        try:
            validate.check(c.shader.spirv, f"kernel {c.kernel} (block {c.block})")
        except validate.InvalidSpirv as e:
            raise UnsupportedError(f"internal: {e}") from None
    return c


#: (name, step, why it is here)
PIPELINE: list[tuple[str, Callable[[Compilation], Compilation], str]] = [
    ("inline", inline, "SPIR-V shaders have no call stack: every device function but the "
                       "recursive ones (a cycle of the call graph) is copied into the kernel "
                       "first; a call through a register first becomes guarded calls of the "
                       "functions it may reach (passes/indirect_calls.py)"),
    ("params", registers_for_params, "after inlining: the arguments of inlined calls in "
                                     "registers, not memory, so that a uniform argument stays "
                                     "uniform for the divergence analysis (passes/params.py)"),
    ("call_stack", stack_calls, "each call of a recursive function becomes pushes onto a "
                                "per-invocation stack in local memory and branches around a "
                                "dispatch loop (passes/call_stack.py), so later steps see one "
                                "function, its CFG still reducible"),
    ("cfg", build_cfg, "basic blocks of the inlined kernel; irreducible flow is refused here"),
    ("divergence", analyze_divergence, "needs the CFG: which collectives may run with part of a "
                                       "warp or block (emulated collectives need the whole block)"),
    ("spaces", infer_spaces, "needs the inlined body: where each generic address may point"),
    ("progress", check_progress, "needs block-level divergence and the spaces: spin loops between "
                                 "threads of a block, where the device cannot run them"),
    ("layout", layout, "offsets of shared, local and parameter memory, the globals table; "
                       "which texture operands hold the parameters whose objects the variant "
                       "knows (passes/texture_params.py, on the body as lowered)"),
    ("lower", lower, "per-invocation llvmlite IR through cuport/isa's families"),
    ("mark_loops", mark_loops, "needs the lowered function, and the emitter for its launch "
                               "failures: where the driver ends long loops early (quirks.py), "
                               "spin loops wait on each trip and each loop gets a PTX line "
                               "(loops.py)"),
    ("guard_folds", guard_folds, "needs the lowered function, whole: where the driver's compiler "
                                 "folds float zeros or 64-bit signed comparisons wrongly "
                                 "(quirks.py), the operands it could know made opaque and the "
                                 "comparisons unsigned (folds.py); after mark_loops, whose "
                                 "code is arithmetic too"),
    ("translate", translate, "cuport's own SPIR-V, control flow structured; where the driver "
                             "ends long loops early, every loop marked so that a launch whose "
                             "loops it cut short fails (translate.LoopMarks)"),
]


def dump(c: Compilation, step: str) -> str:
    if step in ("inline", "params", "call_stack"):
        frames = [f"// {name}: {n} bytes of stack a level (of {c.stack_bytes})"
                  for name, n in c.notes.get("stack_frames", {}).items()] if step == "call_stack" else []
        return "\n".join(frames + [s.text() if isinstance(s, ir.Instr) else f"{s.name}:" for s in c.fn.body or ()])
    if step == "cfg":
        return "\n".join(f"{b.name}: succs={b.succs} instrs={len(b.instrs)}" for b in c.cfg.blocks)
    if step == "divergence":
        return (f"varying: {sorted(c.div.varying)}\nsplit blocks (warp): {sorted(c.div.split_blocks)}\n"
                f"split blocks (block): {sorted(c.block_div.split_blocks)}")
    if step == "progress":
        return "no loop waits for another thread of its block"
    if step == "spaces":
        return "\n".join(f"{r}: {sorted(s)}" for r, s in sorted(c.spaces.regs.items())) or "every generic access is global"
    if step == "layout":
        p = c.plan
        return (f"shared {p.shared_offsets} static={p.static_shared} dyn@{p.dyn_shared_offset} "
                f"scratch@{p.scratch_offset} total={p.shared_bytes} words={p.shared_word_bits}"
                f"{' in device memory (slices.py)' if p.shared_in_memory else ''}\n"
                f"local {p.local_offsets} bytes={p.local_bytes}"
                f"{' in device memory (slices.py)' if p.local_in_memory else ''}\nparams {p.kernel_param_offsets}\n"
                f"globals {p.global_index}")
    if step in ("lower", "mark_loops", "guard_folds"):
        return str(c.llmod)
    if step == "translate":
        import subprocess  # noqa: PLC0415 (debug output only)
        import tempfile  # noqa: PLC0415

        with tempfile.NamedTemporaryFile(suffix=".spv") as f:
            f.write(c.shader.spirv)
            f.flush()
            try:
                return subprocess.run(["spirv-dis", f.name], capture_output=True, text=True).stdout
            except FileNotFoundError:
                return f"{len(c.shader.spirv)} bytes of SPIR-V (install spirv-tools for spirv-dis)"
    raise KeyError(step)


def compile_kernel(ptx: ir.Module, kernel: str, block: tuple[int, int, int], dyn_smem: int = 0,
                   caps: DeviceCaps | None = None, dump_after: str | None = None,
                   stack_bytes: int = DEFAULT_STACK_BYTES,
                   textures: tuple[tuple[str, Sampling], ...] = ()) -> Compilation:
    c = Compilation(ptx, kernel, tuple(block), dyn_smem, caps or DeviceCaps(), stack_bytes,
                    tuple(textures))
    names = [n for n, _, _ in PIPELINE]
    if dump_after is not None and dump_after not in names:
        raise KeyError(f"no step {dump_after!r}; the steps are {', '.join(names)}")
    for name, step, _ in PIPELINE:
        c = step(c)
        if name == dump_after:
            sys.stdout.write(dump(c, name) + "\n")
            break
    return c
