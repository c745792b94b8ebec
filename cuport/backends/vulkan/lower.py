"""Lower one PTX kernel to per-invocation llvmlite IR for the Vulkan backend.

One CUDA thread is one invocation. The instruction families of cuport/isa run here in
scalar mode (`em.vec` is always false), through the lowering interface of isa/api.py that
this emitter implements; the result is an llvmlite module that follows the conventions of
backends/vulkan/spirv (translate.py), which cuport then turns into SPIR-V itself:

- registers are Function variables (allocas); a guarded instruction runs inside a branch;
- the PTX control flow is kept as it is (the translator structures it);
- global, const and kernel-parameter memory are buffer-device-address pointers
  (`inttoptr` of the i64 address); shared memory is one Workgroup array of words
  (`@cuport.shared`), local and call-parameter memory one Function array of words per
  invocation (`cuport.local`); narrower accesses shift and mask a word, sub-word stores to
  shared memory are atomic and/or pairs so that neighbours' bytes are never lost;
- a kernel whose shared memory (with cuport's scratch) is more than the device's workgroup
  memory keeps it in its block's slice of device memory instead (slices.py): the same
  offsets, accessed through buffer-device-address pointers at their own width, atomics at
  workgroup scope with UniformMemory semantics (the storage class they order);
- generic addresses of shared and local memory live in windows (layout.py), decided by
  address-space inference (passes/spaces.py) or, where it cannot decide, at run time;
- builtins, push constants and SPIR-V instructions are calls of `spv.*` declarations;
- warp collectives use subgroup operations where the device's subgroups are 32 wide
  (the subgroup is then the warp); elsewhere they go through workgroup memory, which
  needs the whole block to reach them together (refused in divergent code).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from llvmlite import ir as ll

from ...isa import families, fprt, memory, registry  # noqa: F401 (families fills the lowering table)
from ...isa.cluster import ONE_BLOCK_CLUSTER
from ...isa.memory import Access, space_of
from ...isa.texture_layout import Sampling
from ...isa.types import F32, F64, I1, I8, I16, I32, I64, PTR, bits_type, mangle
from ...isa.values import Values, float_imm_bits
from ...passes import cfg as cfgmod
from ...passes import nan_payloads
from ...passes.divergence import Divergence
from ...passes.spaces import Spaces
from ...ptx import ir
from ...ptx.errors import UnsupportedError
from .. import device_launch
from . import calls, lower_order
from . import layout as V
from .clock import clock_ns
from .families import VULKAN_LOWERINGS
from .lower_async import AsyncOps, needs_64bit_shared_words
from .lower_outline import Outlined, OutlineOps
from .lower_sync import SyncOps, is_collective, with_visibility
from .lower_texture import TextureOps
from .slices import slice_bytes
from .spirv.translate import LoopMarks

SUBGROUP = 3  # SPIR-V Scope Subgroup
WORKGROUP = 2
DEVICE = 1
# SPIR-V memory semantics bits
SEM_ACQUIRE, SEM_RELEASE, SEM_ACQ_REL = 0x2, 0x4, 0x8
SEM_UNIFORM, SEM_WORKGROUP = 0x40, 0x100
SEM_AVAILABLE, SEM_VISIBLE = 0x2000, 0x4000
_ORDER_SEM = {"monotonic": 0, "acquire": SEM_ACQUIRE, "release": SEM_RELEASE, "acq_rel": SEM_ACQ_REL}
_SCOPE = {"cta": WORKGROUP, "cluster": DEVICE, "gpu": DEVICE, "sys": DEVICE}


def _own_buffer(acc: Access) -> bool:
    """A load from a kernel parameter or a __constant__ variable named by its symbol: an
    address inside cuport's own buffers, which needs no range check (every invocation reads
    its parameters: checking them cost a memory-bound kernel 20% on the H200)."""
    return acc.space in ("param", "const") and isinstance(acc.mem.base, ir.Sym)


@dataclass(frozen=True)
class DeviceCaps:
    """What the lowering needs to know about the Vulkan device."""

    subgroup_size: int = 32  # 32: the warp is the subgroup
    float32_atomic_add: bool = False  # OpAtomicFAddEXT on buffers
    float64_atomic_add: bool = False
    atomic_add_flushes_f32: bool = False  # native f32 atomic add flushes subnormals as PTX's does
    shader_clock: bool = True
    float64: bool = True
    int64_shared_atomics: bool = True
    int64_buffer_atomics: bool = True  # (MoltenVK on most Apple GPUs has none)
    fused_fma: bool = True  # GLSL Fma really fuses (lavapipe's does not: measured by a probe)
    divergent_barriers: bool = False  # barriers count arriving threads as CUDA's do (NVIDIA)
    independent_threads: bool = False  # threads of a workgroup progress independently (NVIDIA)
    signed_zero_inf_nan: tuple[int, ...] = ()  # float widths whose ±0/inf/NaN the device keeps
    simd_width: int = 0  # lavapipe: a workgroup must fill whole SIMD groups (else pad it)
    # driver quirks, measured by probes when the device opens (quirks.py; lavapipe has all):
    device_clock: bool = False  # VK_KHR_shader_clock's device scope (%globaltimer, clock.py)
    globaltimer: tuple[int, int, float] | None = None  # its calibration: ticks0, ns0, ns/tick
    zero_page: int = 0  # device address of zeroed memory kernels read (lower_texture.py)
    sink_page: int = 0  # where a store to a wild address goes instead (0: no address checks)
    # shared and local arrays' indices checked too (with the address checks): on a CPU
    # driver (lavapipe) a wild index into workgroup or private memory crashes the process
    checked_arrays: bool = False
    # a 16-byte vector load or store is one memory access, as on a GPU (lavapipe performs
    # it element by element, so another thread can see half of it)
    single_access128: bool = True
    loop_iteration_limit: int = 0  # a loop silently ends after this many iterations (0: never)
    divergent_memory_barriers: bool = True  # False: a memory barrier acts as a workgroup barrier
    float_zero_folds: bool = False  # x * 0.0 folded to 0.0, x + 0.0 to x (folds.py)
    sext64_compare_folds: bool = False  # signed i64 compare of a sign-extended i32 folded (folds.py)
    denorm_preserve: tuple[int, ...] = ()  # float widths with the DenormPreserve mode
    flush32: bool = False  # f32 subnormals flushed by the device: emulated (spirv/subnormal.py)
    int_order32: bool = False  # f32 comparisons and min/max in the integer order (FloatModes)
    fma32: str = ""  # how f32 fma is made exact where the device's Fma flushes (FloatModes)
    simulate_flush32: bool = False  # tests: make a device that keeps them flush (FloatModes)
    simulate_fma32: bool = False  # tests: make only its Fma and min/max flush (FloatModes)
    workgroup_memory: int = 48 * 1024  # bytes; a kernel needing more uses device memory (slices.py)
    # bytes of local memory per thread kept in a private (Function) array; more goes to the
    # block's slice of device memory (slices.py): NVIDIA's driver 580 refuses a pipeline
    # with a 32 KiB private array (VK_ERROR_UNKNOWN), and lavapipe's compile time grows with it
    private_memory: int = 8 * 1024
    # bytes of kernel parameters also passed as push constants after layout.PUSH (0: none):
    # a kernel reads its parameters from there (NVIDIA: its constant bank, as natively) and
    # not with a load from device memory before its first address is known
    push_params: int = 0

    def float_modes(self):
        from .spirv.translate import FloatModes

        return FloatModes(fused_fma=self.fused_fma, float64=self.float64,
                          signed_zero_inf_nan=self.signed_zero_inf_nan,
                          denorm_preserve=self.denorm_preserve, flush32=self.flush32,
                          int_order32=self.int_order32, fma32=self.fma32,
                          simulate_flush32=self.simulate_flush32, simulate_fma32=self.simulate_fma32)


@dataclass
class KernelPlan:
    """The facts about one kernel specialisation that the emitter and the launcher share."""

    ptx: ir.Module
    fn: ir.Function  # the kernel, every call inlined
    block: tuple[int, int, int]
    dyn_smem: int
    caps: DeviceCaps
    cfg: cfgmod.Cfg
    div: Divergence  # warp-level divergence
    block_div: Divergence  # block-level (for collectives emulated through workgroup memory)
    spaces: Spaces
    shared_offsets: dict[str, int] = field(default_factory=dict)
    static_shared: int = 0
    dyn_shared_offset: int = 0
    local_offsets: dict[str, int] = field(default_factory=dict)
    local_bytes: int = 0
    kernel_param_offsets: dict[str, int] = field(default_factory=dict)
    param_bytes: int = 0
    global_index: dict[str, int] = field(default_factory=dict)  # module variable → table slot
    shared_word_bits: int = 32
    scratch_offset: int = 0  # byte offset of the collectives' scratch in shared memory
    shared_bytes: int = 0  # everything in the Workgroup array (or the slice)
    shared_in_memory: bool = False  # more than the workgroup memory: a slice of device memory
    local_in_memory: bool = False  # more than DeviceCaps.private_memory: in the slice, after shared
    # whether the code reads the kernel parameters' copy in device memory (set where an
    # address of one is made); False: every parameter read comes from the push constants
    # (DeviceCaps.push_params), and a launch need not write the copy
    params_in_memory: bool = True
    # kernel parameter -> what the texture object it holds at this variant's launches is
    # (passes/texture_params.py; the launch chose the variant by them); texture operands
    # that certainly hold one of those parameters sample with its facts as constants
    textures: dict[str, Sampling] = field(default_factory=dict)
    texture_handles: dict[str, str] = field(default_factory=dict)  # operand -> parameter

    @property
    def shared_slice(self) -> int:
        """Bytes of a block's slice that hold its shared memory (0: workgroup memory)."""
        return slice_bytes(self.shared_bytes) if self.shared_in_memory else 0

    @property
    def slice_bytes(self) -> int:
        """The stride of the blocks' slices of device memory (0: the kernel needs none): the
        shared memory, then every thread's local memory, word w of thread t at word
        w * threads + t (neighbouring threads' words side by side, as CUDA lays out local
        memory)."""
        local = self.local_bytes * math.prod(self.local_size) if self.local_in_memory else 0
        return slice_bytes(self.shared_slice + local) if self.shared_in_memory or local else 0

    @property
    def nthreads(self) -> int:
        x, y, z = self.block
        return x * y * z

    @property
    def padded(self) -> bool:
        """The workgroup is one dimension rounded up to whole SIMD groups (lavapipe loses
        loop iterations in a partly filled one); the extra invocations return at once."""
        w = self.caps.simd_width
        return bool(w) and self.nthreads % w != 0

    @property
    def local_size(self) -> tuple[int, int, int]:
        if self.padded:
            w = self.caps.simd_width
            return (-(-self.nthreads // w) * w, 1, 1)
        return self.block


def _align(off: int, a: int) -> int:
    a = max(a, 1)
    return (off + a - 1) // a * a


def plan_layout(plan: KernelPlan) -> None:
    """Offsets of shared, local and parameter memory and of the module's variables."""
    fn, ptx = plan.fn, plan.ptx
    off = 0
    externs = []
    max_align = 16
    for v in [v for v in ptx.variables if v.space == "shared"] + [v for v in fn.locals if v.space == "shared"]:
        if v.name in plan.shared_offsets:
            continue
        if v.linkage == "extern" or (v.dims and v.dims[-1] is None):
            externs.append(v)
            max_align = max(max_align, v.alignment)
            continue
        off = _align(off, v.alignment)
        plan.shared_offsets[v.name] = off
        off += v.size
    plan.static_shared = off
    plan.dyn_shared_offset = _align(off, max_align)
    for v in externs:
        plan.shared_offsets[v.name] = plan.dyn_shared_offset
    end = plan.dyn_shared_offset + plan.dyn_smem
    plan.scratch_offset = _align(end, 16)
    nwarps = (plan.nthreads + 31) // 32
    collectives = any(isinstance(s, ir.Instr) and is_collective(s) for s in fn.body or ())
    reds = any(isinstance(s, ir.Instr) and s.op in ("bar", "barrier") and "red" in s.mods for s in fn.body or ())
    # a word pair per thread (whole warps) for collectives through workgroup memory, then
    # bar.red's word; nothing when the kernel needs neither
    scratch = (8 * 32 * nwarps if plan.caps.subgroup_size != 32 and collectives else 0) \
        + (64 if reds else 0)
    plan.shared_bytes = _align(plan.scratch_offset + scratch, 8)
    plan.shared_in_memory = plan.shared_bytes > plan.caps.workgroup_memory
    off = 0
    for v in fn.locals:
        if v.space in ("local", "param"):
            off = _align(off, max(v.alignment, 4))
            plan.local_offsets[v.name] = off
            off += max(v.size, 1)
    plan.local_bytes = _align(max(off, 4), 8)
    plan.local_in_memory = plan.local_bytes > plan.caps.private_memory
    off = 0
    for p in fn.params:
        off = _align(off, p.alignment)
        plan.kernel_param_offsets[p.name] = off
        off += p.size
    plan.param_bytes = off
    k = 0
    for v in ptx.variables:
        if v.space in ("global", "const"):
            plan.global_index[v.name] = k
            k += 1
    if any(isinstance(s, ir.Instr) and s.op in ("atom", "red") and any(t in s.mods for t in ("b64", "u64", "s64", "f64"))
           and space_of(s) in ("shared", "generic") for s in fn.body or ()):
        plan.shared_word_bits = 64
    if any(isinstance(s, ir.Instr) and needs_64bit_shared_words(s) for s in fn.body or ()):
        plan.shared_word_bits = 64  # mbarrier words


class VulkanEmitter(Values, SyncOps, AsyncOps, TextureOps, OutlineOps):
    """Lowers one inlined PTX kernel for one block shape (see the module docstring)."""

    vec = False
    has_i128 = False  # SPIR-V has no 128-bit integers: isa uses 64-bit pieces

    def __init__(self, plan: KernelPlan) -> None:
        self.plan = plan
        plan.params_in_memory = not plan.caps.push_params
        self.fn = plan.fn
        self.div = plan.div
        self.llmod = ll.Module(name=plan.fn.name)
        self.ins: ir.Instr | None = None
        self._decls: dict[str, ll.Function] = {}
        self._builtins: dict[str, ll.Value] = {}
        self.emulated = plan.caps.subgroup_size != 32
        self._fault: tuple[ll.Value, ll.Value] | None = None  # (line, address) noted (note_fault)
        self.last_error: ll.Value | None = None  # the thread's device-runtime error (lower_launch.py)
        self.block_lines: dict[ll.Block, int] = {}  # the PTX line each block's code ends with (_lines)
        # f32 registers whose canonical NaN waits for a read that shows it (nan_payloads.py): an
        # accumulator's compare and select per step (a fifth of sgemm's fma) move after its loop
        self._nan_deferred = nan_payloads.deferred(plan.fn)
        self._blind = False  # the current instruction reads f32 registers NaN-blind
        self._outlined_fns: dict[str, Outlined] = {}  # em.outline's functions, by name (lower_outline.py)

    def nan_deferred(self, ins: ir.Instr) -> bool:
        d = ins.args[0] if ins is not None and ins.args else None
        return isinstance(d, ir.Reg) and d.name in self._nan_deferred

    # ================================================================ the function
    def emit(self) -> ll.Module:
        plan = self.plan
        self.llfn = ll.Function(self.llmod, ll.FunctionType(ll.VoidType(), []), name="main")
        entry = self.llfn.append_basic_block("entry")
        self.b = b = ll.IRBuilder(entry)
        self.entry_builder = ll.IRBuilder(entry)
        wt = ll.IntType(plan.shared_word_bits)
        nwords = max(plan.shared_bytes * 8 // plan.shared_word_bits, 1)
        self.shared_word = wt
        self.shared_arr = ll.ArrayType(wt, nwords)
        self.shared = None if plan.shared_in_memory else \
            ll.GlobalVariable(self.llmod, self.shared_arr, name="cuport.shared", addrspace=3)
        self.local_arr = ll.ArrayType(I32, plan.local_bytes // 4)
        self.local = None if plan.local_in_memory else b.alloca(self.local_arr, name="cuport.local")
        self.regs: dict[str, tuple[ll.Value, ll.Type]] = {}
        if any(isinstance(s, ir.Instr) and ("cc" in s.mods or s.op in ("addc", "subc", "madc"))
               for s in self.fn.body or ()):
            self.fn.regs.setdefault("%__cc", "pred")  # the carry flag (isa/operands.py CARRY)
        for name, ptype in self.fn.regs.items():
            if name in self.fn.reg_vec:
                raise UnsupportedError(f"vector register {name} (.reg .v{self.fn.reg_vec[name]})")
            t = bits_type(ptype)
            self.regs[name] = (b.alloca(t, name=name.replace("%", "r_")), t)
        if plan.caps.sink_page and plan.caps.zero_page:  # (the address checks' notes, note_fault)
            self._fault = (b.alloca(I32, name="fault_line"), b.alloca(I64, name="fault_address"))
            b.store(ll.Constant(I32, 0), self._fault[0])
            b.store(ll.Constant(I64, 0), self._fault[1])
        self.blocks = plan.cfg.blocks
        self.llblocks = [self.llfn.append_basic_block(blk.name.replace("$", "_")) for blk in self.blocks]
        self.ret_bb = self.llfn.append_basic_block("return")
        if plan.padded:  # invocations past the block's threads leave at once
            check = self.llfn.append_basic_block("padding")
            b.branch(check)
            b.position_at_end(check)
            extra = b.icmp_unsigned(">=", self.linear_tid(), ll.Constant(I32, plan.nthreads))
            b.cbranch(extra, self.ret_bb, self.llblocks[0])
        else:
            b.branch(self.llblocks[0])
        for blk in self.blocks:
            self._emit_block(blk)
        b.position_at_end(self.ret_bb)
        self.report_fault()
        b.ret_void()
        return self.llmod

    def _emit_block(self, blk: cfgmod.Block) -> None:
        b = self.b
        b.position_at_end(self.llblocks[blk.index])
        self.block = blk
        body = blk.instrs[:-1] if blk.term is not None else blk.instrs
        for ins in body:
            at, n = b.block, len(self.llfn.blocks)
            self._emit_instr(ins)
            self._lines(at, n, ins)
        at, n = b.block, len(self.llfn.blocks)
        self.ins = blk.term
        self._emit_terminator(blk)
        self._lines(at, n, blk.term or (body[-1] if body else None))

    def _lines(self, at: ll.Block, n: int, ins: ir.Instr | None) -> None:
        """Note `ins`'s PTX line for the block it was emitted into and those its lowering
        made (from llfn.blocks[n]): each block ends up with the line of the last PTX
        instruction emitted into it, which loops.py names a loop by."""
        if ins is not None:
            self.block_lines[at] = ins.line
            for blk in self.llfn.blocks[n:]:
                self.block_lines[blk] = ins.line

    def _guard(self, ins: ir.Instr) -> ll.Value:
        g = self.read_bits(ins.guard, "pred")
        return self.b.not_(g) if ins.guard_neg else g

    def _emit_instr(self, ins: ir.Instr) -> None:
        self.ins = ins
        lower = VULKAN_LOWERINGS.get(ins.op) or registry.LOWERINGS.get(ins.op)
        if lower is None:
            raise UnsupportedError(f"the instruction `{ins.op}` is not supported", ins.line, ins.text())
        self._blind = nan_payloads.blind(ins)
        try:
            self._emit_guarded(ins, lower)
        finally:
            self._blind = False

    def _emit_guarded(self, ins: ir.Instr, lower) -> None:
        b = self.b
        if ins.guard is None:
            lower(self, ins)
            return
        if self.emulated and is_collective(ins):
            raise self.error(f"a guarded {ins.op} on a device whose subgroups are not 32 wide "
                             f"(warp collectives go through workgroup memory there, which needs the "
                             f"whole block)")
        then = self.llfn.append_basic_block(f"l{ins.line}")
        cont = self.llfn.append_basic_block(f"l{ins.line}_")
        b.cbranch(self._guard(ins), then, cont)
        b.position_at_end(then)
        lower(self, ins)
        b.branch(cont)
        b.position_at_end(cont)

    # ================================================================ terminators
    def _emit_terminator(self, blk: cfgmod.Block) -> None:
        t = blk.term
        b = self.b
        succ = [self.llblocks[s] for s in blk.succs]
        if t is None:
            b.branch(succ[0])
            return
        if t.op == "bra":
            if t.guard is not None and len(succ) == 2:
                b.cbranch(self._guard(t), succ[0], succ[1])
            else:
                b.branch(succ[0])
            return
        if t.op in ("ret", "exit"):
            if t.guard is not None:
                b.cbranch(self._guard(t), self.ret_bb, succ[0])
            else:
                b.branch(self.ret_bb)
            return
        if t.op == "trap":
            def fail() -> None:
                if "stack" in t.mods:  # passes/call_stack.py: a call would pass the stack's end
                    self.record_failure(V.ERR_STACK, arg=ll.Constant(I64, t.args[0].value))
                else:
                    self.record_failure(V.ERR_TRAP)
                b.branch(self.ret_bb)
            if t.guard is not None:
                go = self.llfn.append_basic_block("trap")
                b.cbranch(self._guard(t), go, succ[0])
                b.position_at_end(go)
            fail()
            return
        if cfgmod.is_barrier(t):
            if t.guard is not None:
                raise self.error("a guarded CTA barrier")
            if blk.index in self.plan.block_div.split_blocks and not self.plan.caps.divergent_barriers:
                raise self.error("a CTA barrier in code that part of the block may skip (a "
                                 "barrier in divergent code: this Vulkan device's barriers need "
                                 "the whole workgroup)")
            self.barrier(t)
            b.branch(succ[0])
            return
        raise self.error(f"the control instruction {t.op}")

    # ================================================================ the lowering interface
    @property
    def module(self) -> ll.Module:
        return self.llmod

    @property
    def ptx(self) -> ir.Module:
        return self.plan.ptx

    def error(self, message: str) -> UnsupportedError:
        ins = self.ins
        return UnsupportedError(message, ins.line if ins else 0, ins.text() if ins else "")

    def is_kernel_param(self, name: str) -> bool:
        return name in self.plan.kernel_param_offsets

    def declare(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        f = self._decls.get(name)
        if f is None:
            f = self.llmod.globals.get(name)
            if f is None:
                f = ll.Function(self.llmod, ll.FunctionType(ret, args), name=name)
            self._decls[name] = f
        return f

    def spv(self, op: str, ret: ll.Type, args: list[ll.Value], tag: str = "") -> ll.Value:
        """The SPIR-V instruction `op` (an escape call, see spirv/translate.py)."""
        key = ".".join(x for x in (f"spv.{op}", tag, mangle(ret) if not isinstance(ret, ll.VoidType) else "v",
                                   *(_tname(a.type) for a in args)) if x)
        f = self.declare(key, ret, [a.type for a in args])
        return self.b.call(f, args)

    def intrinsic(self, name: str, args: list[ll.Value], overload: list[ll.Type] | None = None,
                  ret: ll.Type | None = None) -> ll.Value:
        if overload is None:
            overload = [args[0].type]
        full = name + "".join("." + mangle(t) for t in overload)
        rt = ret if ret is not None else args[0].type
        return self.b.call(self.declare(full, rt, [a.type for a in args]), args)

    def entry_alloca(self, t: ll.Type, name: str = "") -> ll.Value:
        # through the entry's one builder: an instruction put in before its position would
        # leave its later insertions ahead of values they use (the slice's base, _slice_base)
        return self.entry_builder.alloca(t, name=name)

    def read(self, op, ptype: str) -> ll.Value:
        return self.to_value(self.read_bits(op, ptype), ptype)

    def read_bits(self, op, ptype: str) -> ll.Value:
        b = self.b
        want = bits_type(ptype)
        if isinstance(op, ir.Reg):
            if op.name not in self.regs:
                raise self.error(f"the register {op.name} is not declared")
            slot, _ = self.regs[op.name]
            v = b.load(slot)
            if op.name in self._nan_deferred and not self._blind:
                v = fprt.canon_nan(self, self.to_value(v, "f32"), "f32")
            return self._resize(v, want, ptype[0] == "s")
        if isinstance(op, ir.Imm):
            return self.const_int(want.width, op.value)
        if isinstance(op, ir.FImm):
            return self.const_int(want.width, float_imm_bits(op, ptype))
        if isinstance(op, ir.Not):
            return b.not_(self.read_bits(op.reg, "pred"))
        if isinstance(op, ir.Special):
            return self._resize(self.special(op.name), want, False)
        if isinstance(op, (ir.Sym, ir.SymAddr)):
            return self._resize(self.symbol_value(op), want, False)
        raise self.error(f"an operand of an unsupported kind ({ir.format_operand(op)})")

    def write(self, op, ptype: str, value: ll.Value, signed: bool | None = None) -> None:
        if isinstance(op, ir.Sink):
            return
        if not isinstance(op, ir.Reg):
            raise self.error(f"a destination that is not a register ({ir.format_operand(op)})")
        slot, t = self.regs[op.name]
        v = self.to_bits(value, ptype)
        self.b.store(self._resize(v, t, ptype[0] == "s" if signed is None else signed), slot)

    # ---------------------------------------------------------------- builtins and push constants
    def builtin(self, name: str) -> ll.Value:
        """A BuiltIn input (`LocalInvocationId.x`, `SubgroupSize`, ...), read once in the entry."""
        v = self._builtins.get(name)
        if v is None:
            f = self.declare(f"spv.builtin.{name}", I32, [])
            v = self.entry_builder.call(f, [])
            self._builtins[name] = v
        return v

    def push(self, name: str) -> ll.Value:
        off, t = V.PUSH[name]
        lt = I64 if t == "u64" else I32
        key = f"push.{name}"
        v = self._builtins.get(key)
        if v is None:
            f = self.declare(f"spv.push.{mangle(lt)}", lt, [I32])
            v = self.entry_builder.call(f, [ll.Constant(I32, off)])
            self._builtins[key] = v
        return v

    def push_word(self, off: int) -> ll.Value:
        """The u32 at byte `off` of the kernel parameters' push-constant copy (4-aligned)."""
        key = f"push@{off}"
        v = self._builtins.get(key)
        if v is None:
            f = self.declare(f"spv.push.{mangle(I32)}", I32, [I32])
            v = self.entry_builder.call(f, [ll.Constant(I32, V.PUSH_BYTES + off)])
            self._builtins[key] = v
        return v

    def _pushed_param(self, acc: Access, et: ll.Type, n: int) -> list[ll.Value] | None:
        """A kernel parameter's load (ld.param by the parameter's name) from its push-constant
        copy (DeviceCaps.push_params), or None where it does not lie inside that copy."""
        base = acc.mem.base
        caps = self.plan.caps
        if not (caps.push_params and acc.space == "param" and isinstance(base, ir.Sym)
                and base.name in self.plan.kernel_param_offsets and acc.size in (1, 2, 4, 8)):
            return None
        off = self.plan.kernel_param_offsets[base.name] + acc.mem.offset
        if off < 0 or off % acc.size or off + n * acc.size > caps.push_params:
            return None
        b = self.b
        out = []
        for i in range(n):
            o = off + i * acc.size
            if acc.size == 8:
                lo, hi = (b.zext(self.push_word(o + k), I64) for k in (0, 4))
                v = b.or_(lo, b.shl(hi, ll.Constant(I64, 32)))
            else:
                v = self.push_word(o & ~3)
                if o & 3:
                    v = b.lshr(v, ll.Constant(I32, 8 * (o & 3)))
                if acc.size < 4:
                    v = b.trunc(v, ll.IntType(8 * acc.size))
            out.append(v if v.type == et else b.bitcast(v, et))
        return out

    def linear_tid(self) -> ll.Value:
        return self.builtin("LocalInvocationIndex")

    def special(self, name: str) -> ll.Value:
        b = self.b
        nx, ny, nz = self.plan.block
        c = self.const_int
        if name in ("%tid.x", "%tid.y", "%tid.z"):
            k = name[-1]
            if {"x": nx, "y": ny, "z": nz}[k] == 1:
                return c(32, 0)
            if self.plan.padded:  # a 1-D workgroup: the block's ids from the linear index
                lin = self.linear_tid()
                if k == "x":
                    return b.urem(lin, c(32, nx))
                if k == "y":
                    return b.urem(b.udiv(lin, c(32, nx)), c(32, ny))
                return b.udiv(lin, c(32, nx * ny))
            return self.builtin(f"LocalInvocationId.{k}")
        if name.startswith("%ntid."):
            return c(32, {"x": nx, "y": ny, "z": nz}[name[-1]])
        if name.startswith("%ctaid."):
            return self.builtin(f"WorkgroupId.{name[-1]}")  # vkCmdDispatchBase offsets included
        if name.startswith("%nctaid."):
            return self.push(f"grid_{name[-1]}")
        if name == "%laneid":
            return b.and_(self.linear_tid(), c(32, 31))
        if name == "%warpid":
            return b.lshr(self.linear_tid(), c(32, 5))
        if name == "%nwarpid":
            return c(32, (self.plan.nthreads + 31) // 32)
        if name.startswith("%lanemask_"):
            kind = name[len("%lanemask_"):]
            bit = b.shl(c(32, 1), self.special("%laneid"))
            below = b.sub(bit, c(32, 1))
            return {"eq": lambda: bit, "lt": lambda: below, "le": lambda: b.or_(bit, below),
                    "gt": lambda: b.not_(b.or_(bit, below)), "ge": lambda: b.not_(below)}[kind]()
        if name in ("%clock", "%clock_hi", "%clock64"):
            if not self.plan.caps.shader_clock:
                raise self.error(f"{name}: the device has no shader clock (VK_KHR_shader_clock)")
            t = self.spv("OpReadClockKHR", I64, [ll.Constant(I32, SUBGROUP)])
            if name == "%clock":
                return b.trunc(t, I32)
            if name == "%clock_hi":
                return b.trunc(b.lshr(t, c(64, 32)), I32)
            return t
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            t = clock_ns(self)
            if name == "%globaltimer_lo":
                return b.trunc(t, I32)
            if name == "%globaltimer_hi":
                return b.trunc(b.lshr(t, c(64, 32)), I32)
            return t
        if name == "%dynamic_smem_size":
            return c(32, self.plan.dyn_smem)
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return c(32, self.plan.static_shared + self.plan.dyn_smem)
        if name == "%smid":
            return c(32, 0)
        if name == "%nsmid":
            return c(32, 1)
        if name == "%gridid":
            return c(64, 0)
        if name in ("%envreg1", "%envreg2"):
            ws = self.push("grid_workspace")
            if name == "%envreg1":
                ws = b.lshr(ws, c(64, 32))
            return b.trunc(ws, I32)
        if name.startswith("%envreg"):
            return c(32, 0)
        alias = ONE_BLOCK_CLUSTER.get(name)
        if alias is not None:
            return self.special(alias) if isinstance(alias, str) else c(32, alias)
        raise self.error(f"the special register {name} is not supported")

    # ---------------------------------------------------------------- symbols
    def global_address(self, name: str) -> ll.Value:
        """The device address of a module `.global`/`.const` variable (from the globals table)."""
        b = self.b
        slot = self.plan.global_index[name]
        p = b.inttoptr(b.add(self.push("globals"), ll.Constant(I64, 8 * slot)), PTR)
        return b.load(p, typ=I64, align=8)

    def symbol_value(self, op) -> ll.Value:
        name = op.name
        offset = getattr(op, "offset", 0)
        b = self.b
        plan = self.plan
        if name in plan.local_offsets:
            return ll.Constant(I64, plan.local_offsets[name] + offset)
        if name in plan.shared_offsets:
            return ll.Constant(I64, plan.shared_offsets[name] + offset)
        if name in plan.global_index:
            return b.add(self.global_address(name), ll.Constant(I64, offset))
        if name in plan.kernel_param_offsets:
            plan.params_in_memory = True  # (an address of a parameter: its copy in memory is read)
            return b.add(self.push("params"), ll.Constant(I64, plan.kernel_param_offsets[name] + offset))
        if name in plan.ptx.functions:
            # its token: what device-side launches name a kernel by (lower_launch.py), and what
            # a call through a register compares with (passes/indirect_calls.py)
            return ll.Constant(I64, device_launch.function_token(plan.ptx, name) + offset)
        raise self.error(f"the symbol {name} is not declared")

    # ---------------------------------------------------------------- memory
    def address(self, mem: ir.Mem, space: str) -> ll.Value:
        """The i64 address of a memory operand in `space` (param: a kernel parameter's
        global address; a call parameter's local offset)."""
        base = mem.base
        if isinstance(base, ir.Reg):
            a = self.read_bits(base, "u64")
        elif isinstance(base, ir.Sym):
            a = self.symbol_value(ir.SymAddr(base.name, 0))
        else:
            a = ll.Constant(I64, 0)
        return self.b.add(a, ll.Constant(I64, mem.offset)) if mem.offset else a

    def _space_for(self, acc_space: str, mem: ir.Mem) -> frozenset[str] | str:
        """Where an access goes: one space, or the set a generic address may point into."""
        if acc_space == "param":
            base = mem.base
            if isinstance(base, ir.Sym) and base.name in self.plan.local_offsets:
                return "local"
            return "global"  # kernel parameters live in a device buffer
        if acc_space == "const":
            return "global"
        if acc_space != "generic":
            return acc_space
        sp = self.plan.spaces.of(mem)
        return next(iter(sp)) if len(sp) == 1 else sp

    def load_elements(self, acc: Access, offsets: list[ll.Value] | None = None, runs: int = 0) -> list[ll.Value]:
        n = len(acc.items)
        et = bits_type(acc.t)
        if offsets is None:
            pushed = self._pushed_param(acc, et, n)
            if pushed is not None:
                return pushed
        a = self.address(acc.mem, acc.space)
        where = self._space_for(acc.space, acc.mem)
        if offsets is not None:
            return self.elements_at(acc, where, a, offsets)

        def go(space: str, addr: ll.Value) -> list[ll.Value]:
            if space == "global":
                return self._global_load(addr, et, acc, n)
            volatile = space == "shared" and (acc.volatile or acc.order is not None)
            return [self._word_load(space, self._offset(space, addr, i * acc.size), et, volatile)
                    for i in range(n)]

        return self._by_space(where, a, go, [et] * n)

    def store_elements(self, acc: Access, vals: list[ll.Value], offsets: list[ll.Value] | None = None,
                       runs: int = 0) -> None:
        a = self.address(acc.mem, acc.space)
        where = self._space_for(acc.space, acc.mem)
        if offsets is not None:
            self.elements_at(acc, where, a, offsets, vals)
            return

        def go(space: str, addr: ll.Value) -> list[ll.Value]:
            if space == "global":
                self._global_store(addr, vals, acc)
            else:
                volatile = space == "shared" and (acc.volatile or acc.order is not None)
                if volatile:
                    self.before_volatile_shared_store()
                for i, v in enumerate(vals):
                    self._word_store(space, self._offset(space, addr, i * acc.size), v, volatile)
                if volatile:
                    self.after_volatile_shared_store()
            return []

        self._by_space(where, a, go, [])

    def elements_at(self, acc: Access, where, a: ll.Value, offsets: list[ll.Value],
                    vals: list[ll.Value] | None = None) -> list[ll.Value]:
        """The element of `acc` (one plain element) at each of `offsets` (i64) from the
        address `a` in `where` (_space_for's), checked as one access: loaded, or `vals`
        stored (wmma's fragments, in place or in an outline_access function)."""
        _plain(self, acc)
        et = bits_type(acc.t)
        b = self.b

        def go(space: str, addr: ll.Value) -> list[ll.Value]:
            ats = [b.add(addr, o) for o in offsets]
            if vals is None and space == "global":
                return [b.load(p, typ=et, align=acc.size) for p in self._global_ptrs(ats)]
            if vals is None:
                return [self._word_load(space, x, et) for x in ats]
            if space == "global":
                for v, p in zip(vals, self._global_ptrs(ats, write=True), strict=True):
                    b.store(v, p, align=acc.size)
            else:
                for v, x in zip(vals, ats, strict=True):
                    self._word_store(space, x, v)
            return []

        return self._by_space(where, a, go, [et] * len(offsets) if vals is None else [])

    def _offset(self, space: str, addr: ll.Value, off: int) -> ll.Value:
        return self.b.add(addr, ll.Constant(addr.type, off)) if off else addr

    def _by_space(self, where, a: ll.Value, go, types: list[ll.Type]) -> list[ll.Value]:
        """Run `go(space, address)` for the one space `where` names, or test the generic
        address `a` against the windows of the spaces it may point into."""
        if isinstance(where, str):
            return go(where, a)
        b = self.b
        order = [s for s in ("shared", "local") if s in where] + (["global"] if "global" in where else [])
        slots = [self.entry_alloca(t, "gen") for t in types]
        done = self.llfn.append_basic_block("gen_done")
        for k, space in enumerate(order):
            last = k == len(order) - 1
            if not last:
                hit = self.llfn.append_basic_block(f"gen_{space}")
                miss = self.llfn.append_basic_block(f"gen_not_{space}")
                b.cbranch(self._in_window(space, a), hit, miss)
                b.position_at_end(hit)
            local_a = a if space == "global" else b.sub(a, ll.Constant(I64, V.WINDOW[space]))
            for s, v in zip(slots, go(space, local_a), strict=True):
                b.store(v, s)
            b.branch(done)
            if not last:
                b.position_at_end(miss)
        b.position_at_end(done)
        return [b.load(s) for s in slots]

    def _in_window(self, space: str, a: ll.Value) -> ll.Value:
        b = self.b
        size = self.plan.shared_bytes if space == "shared" else self.plan.local_bytes
        return b.icmp_unsigned("<", b.sub(a, ll.Constant(I64, V.WINDOW[space])), ll.Constant(I64, size))

    def _global_ptr(self, a: ll.Value, write: bool = False, trusted: bool = False) -> ll.Value:
        """The global address `a` as a pointer: checked against the device's memory where the
        backend gives a sink page. A wild address (outside every allocation's range: NULL,
        a host pointer) fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS, as on a GPU,
        instead of hanging a GPU's queue on the fault; the access itself goes to the zero
        page (loads) or the sink page (stores, atomics), and the thread goes on."""
        if trusted:
            return self.b.inttoptr(a, PTR)
        return self._global_ptrs([a], write)[0]

    def _global_ptrs(self, addrs: list[ll.Value], write: bool = False) -> list[ll.Value]:
        """Pointers for the global addresses of one access (wmma's elements), checked
        together: the device's memory is one range, so the lowest and highest address decide
        for all of them (one test and one note, naming the lowest wild address)."""
        b = self.b
        if self._fault is None:
            return [b.inttoptr(a, PTR) for a in addrs]
        lo = hi = addrs[0]
        for a in addrs[1:]:
            lo = b.select(b.icmp_unsigned("<", a, lo), a, lo)
            hi = b.select(b.icmp_unsigned(">", a, hi), a, hi)
        heap_lo, span = self.push("heap_lo"), self.push("heap_span")
        bad_lo = b.icmp_unsigned(">=", b.sub(lo, heap_lo), span)
        bad = bad_lo if hi is lo else b.or_(bad_lo, b.icmp_unsigned(">=", b.sub(hi, heap_lo), span))
        self.note_fault(bad, lo if hi is lo else b.select(bad_lo, lo, hi))
        safe = self.push("sink_page" if write else "zero_page")
        return [b.inttoptr(b.select(bad, safe, a), PTR) for a in addrs]

    def _global_load(self, a: ll.Value, et: ll.Type, acc: Access, n: int) -> list[ll.Value]:
        b = self.b
        ordered = acc.order is not None
        acc = lower_order.relax(self, acc)
        size = acc.size
        trusted = _own_buffer(acc)
        if acc.order is not None and (et.width in (32, 64) or n * et.width in (32, 64)):
            sem = _ORDER_SEM["acquire" if acc.order in ("acquire", "acq_rel") else "monotonic"]
            if memory.one_access(n, n * size) and self._one_access(n * et.width, ordered):
                return self._ordered_vector_load(a, et, n, sem)
            out = []
            for i in range(n):
                p = self._global_ptr(self._offset("global", a, i * size))
                out.append(self._atomic_load(p, et, sem))
            return out
        if n in (2, 4) and et.width in (32, 64) and acc.order is None:
            vt = ll.VectorType(et, n)
            v = b.load(self._global_ptr(a, trusted=trusted), typ=vt, align=size * n)
            v.volatile = acc.volatile  # one access, as the GPU's (see _ordered_vector_load)
            return [b.extract_element(v, ll.Constant(I32, i)) for i in range(n)]
        out = []
        for i in range(n):
            ld = b.load(self._global_ptr(self._offset("global", a, i * size), trusted=trusted),
                        typ=et, align=size)
            if acc.volatile or acc.order is not None:
                ld.volatile = True
            out.append(ld)
        return out

    def _global_store(self, a: ll.Value, vals: list[ll.Value], acc: Access) -> None:
        b = self.b
        ordered = acc.order is not None
        acc = lower_order.relax(self, acc)
        size = acc.size
        et = vals[0].type
        n = len(vals)
        if acc.order is not None and (et.width in (32, 64) or n * et.width in (32, 64)):
            sem = _ORDER_SEM["release" if acc.order in ("release", "acq_rel") else "monotonic"]
            if memory.one_access(n, n * size) and self._one_access(n * et.width, ordered):
                self._ordered_vector_store(a, vals, sem)
                return
            for i, v in enumerate(vals):
                p = self._global_ptr(self._offset("global", a, i * size), write=True)
                self._atomic_store(p, v, sem)
            return
        if n in (2, 4) and et.width in (32, 64):
            st = b.store(self._vector(vals), self._global_ptr(a, write=True), align=size * n)
            st.volatile = acc.volatile
            return
        for i, v in enumerate(vals):
            st = b.store(v, self._global_ptr(self._offset("global", a, i * size), write=True), align=size)
            if acc.volatile or acc.order is not None:
                st.volatile = True

    def _atomic_load(self, p: ll.Value, t: ll.Type, sem: int) -> ll.Value:
        """An ordered load of global memory at device scope (`sem`: _ORDER_SEM's bits)."""
        return self.spv("OpAtomicLoad", t, [p, _c32(DEVICE), _c32(with_visibility(sem | SEM_UNIFORM) if sem else 0)], "g")

    def _atomic_store(self, p: ll.Value, v: ll.Value, sem: int) -> None:
        self.spv("OpAtomicStore", ll.VoidType(), [p, _c32(DEVICE), _c32(with_visibility(sem | SEM_UNIFORM) if sem else 0), v], "g")

    def _vector(self, vals: list[ll.Value]) -> ll.Value:
        v = ll.Constant(ll.VectorType(vals[0].type, len(vals)), ll.Undefined)
        for i, x in enumerate(vals):
            v = self.b.insert_element(v, x, ll.Constant(I32, i))
        return v

    def _ordered_vector_load(self, a: ll.Value, et: ll.Type, n: int, sem: int) -> list[ll.Value]:
        """ld.relaxed/acquire of a vector: one access, as on the GPU, never one per element.
        CUB's decoupled look-back (every Thrust/CUB scan) publishes a tile's status and
        value as one st.relaxed.gpu.v2.u32 and reads them as one ld.relaxed.gpu.v2.u32: read
        apart, a new status comes with an old value. 4 and 8 bytes: one 32- or 64-bit atomic
        load; 16 bytes (SPIR-V has no 128-bit atomic), or 8 where the device has no 64-bit
        atomics on buffers: one volatile vector load, then the fence."""
        b = self.b
        p = self._global_ptr(a)
        wt = self._whole_atomic(n * et.width)
        if wt is not None:
            w = self._atomic_load(p, wt, sem)
            return [b.trunc(b.lshr(w, ll.Constant(wt, et.width * i)) if i else w, et) for i in range(n)]
        v = b.load(p, typ=ll.VectorType(et, n), align=et.width // 8 * n)
        v.volatile = True
        if sem:
            b.fence("acquire")
        return [b.extract_element(v, ll.Constant(I32, i)) for i in range(n)]

    def _ordered_vector_store(self, a: ll.Value, vals: list[ll.Value], sem: int) -> None:
        """st.relaxed/release of a vector: one access (see _ordered_vector_load)."""
        b = self.b
        p = self._global_ptr(a, write=True)
        et = vals[0].type
        wt = self._whole_atomic(len(vals) * et.width)
        if wt is not None:
            w = b.zext(vals[0], wt)
            for i, v in enumerate(vals[1:], 1):
                w = b.or_(w, b.shl(b.zext(v, wt), ll.Constant(wt, et.width * i)))
            self._atomic_store(p, w, sem)
            return
        if sem:
            b.fence("release")
        st = b.store(self._vector(vals), p, align=et.width // 8 * len(vals))
        st.volatile = True

    def _whole_atomic(self, bits: int) -> ll.IntType | None:
        """The integer type of one atomic access of a whole ordered vector of `bits`, if any."""
        if bits == 32 or (bits == 64 and self.plan.caps.int64_buffer_atomics):
            return ll.IntType(bits)
        return None

    def _one_access(self, bits: int, ordered: bool) -> bool:
        """Whether an ordered or volatile vector access is made one access here: always but
        for 16 bytes on a driver that splits them (lavapipe), where one that PTX orders is
        refused by name and a volatile one goes element by element."""
        if bits < 128 or self.plan.caps.single_access128:
            return True
        if ordered:
            raise self.error("a 16-byte ordered access is one access on a GPU, which this Vulkan "
                             "driver splits into its elements (another thread could see half of "
                             "a store: CUB's tile status of 8-byte values relies on it)")
        return False

    # shared memory in device memory (slices.py)
    def _slice_base(self) -> ll.Value:
        """The device address of this block's slice: the pool plus its index among the
        blocks of the dispatch (blocks in linear order, %ctaid.x fastest), computed once."""
        v = self._builtins.get("slice")
        if v is None:
            eb = self.entry_builder

            def wide(x: ll.Value) -> ll.Value:
                return eb.zext(x, I64)

            lin = wide(self.builtin("WorkgroupId.z"))
            for k in "yx":
                lin = eb.add(eb.mul(lin, wide(self.push(f"grid_{k}"))), wide(self.builtin(f"WorkgroupId.{k}")))
            slot = eb.sub(lin, self.push("shared_first"))
            size = ll.Constant(I64, self.plan.slice_bytes)
            v = self._builtins["slice"] = eb.add(self.push("shared_pool"), eb.mul(slot, size))
        return v

    def _local_word_ptr(self, index: ll.Value) -> ll.Value:
        """A pointer to word `index` of this thread's local memory in the block's slice
        (KernelPlan.slice_bytes: after the shared memory, the threads' words interleaved)."""
        b = self.b
        base = self._builtins.get("local")
        if base is None:
            eb = self.entry_builder
            tid = eb.zext(self.linear_tid(), I64)
            first = eb.add(self._slice_base(), ll.Constant(I64, self.plan.shared_slice))
            base = self._builtins["local"] = eb.add(first, eb.mul(tid, ll.Constant(I64, 4)))
        stride = ll.Constant(I64, 4 * math.prod(self.plan.local_size))
        idx = b.zext(index, I64) if index.type.width < 64 else index
        return b.inttoptr(b.add(base, b.mul(idx, stride)), PTR)

    def _slice_ptr(self, a: ll.Value, write: bool = False) -> ll.Value:
        """A pointer to byte `a` of shared memory kept in device memory. Where global
        addresses are checked, an offset past the block's shared memory (it would reach other
        blocks' slices, or beyond the pool) goes to the zero or sink page instead and fails
        the launch with CUDA_ERROR_ILLEGAL_ADDRESS, as a wild global pointer does. The
        failure is noted without a branch (PTX line and offset in one variable) and recorded
        when the thread ends: a branch at every shared access made lavapipe's sgemm tiles 4x
        slower than in workgroup memory, the selects 1.13x."""
        b = self.b
        # the offset is the address' low 32 bits, as in workgroup memory (_split): a generic
        # address that inference found to be shared still carries its window
        off = b.zext(b.trunc(a, I32) if a.type.width > 32 else a, I64)
        p = b.add(self._slice_base(), off)
        if self._fault is not None:
            bad = b.icmp_unsigned(">=", off, ll.Constant(I64, self.plan.shared_bytes))
            self.note_fault(bad, b.add(off, ll.Constant(I64, V.SHARED_WINDOW)))
            p = b.select(bad, self.push("sink_page" if write else "zero_page"), p)
        return b.inttoptr(p, PTR)

    # wild addresses, noted where they happen and recorded when the thread ends
    def note_fault(self, bad: ll.Value, address: ll.Value) -> None:
        """Note an access at a wild `address` (where `bad` holds) without a branch: the PTX
        line and the address go into two variables, recorded as CUDA_ERROR_ILLEGAL_ADDRESS
        when the thread ends or fails otherwise (report_fault). A branch to the failure
        record at every access cost memory-bound kernels 5-25% on the H200 and made
        lavapipe's tiled sgemm 4x slower (the selects: 1.13x). The thread goes on with the
        access sent to the zero or sink page, so the last wild access of a thread is the one
        reported."""
        b = self.b
        line_var, addr_var = self._fault
        line = ll.Constant(I32, 0x80000000 | ((self.ins.line if self.ins else 0) & 0x7FFFFFFF))
        b.store(b.select(bad, line, b.load(line_var)), line_var)
        b.store(b.select(bad, address, b.load(addr_var)), addr_var)

    def report_fault(self) -> None:
        """Record a loop the driver ended early (loops.py), else a noted wild access
        (note_fault), if any: at the thread's end, and before any other failure of the
        thread is recorded (what a thread does after a cut loop is made of wrong values; on
        a GPU a wild access would have ended it)."""
        b = self.b
        if self.plan.caps.loop_iteration_limit:
            cut = self.spv("loop_cut", I32, [])  # the loop's PTX line (translate.LoopMarks)
            with b.if_then(b.icmp_unsigned("!=", cut, ll.Constant(I32, 0)), likely=False):
                unknown = b.icmp_unsigned("==", cut, ll.Constant(I32, LoopMarks.NO_LINE))
                line = b.select(unknown, ll.Constant(I32, 0), cut)
                self.record_failure(V.ERR_LOOP_LIMIT, line=line, noted=True)
        if self._fault is None:
            return
        line_var, addr_var = self._fault
        noted = b.load(line_var)
        with b.if_then(b.icmp_unsigned("!=", noted, ll.Constant(I32, 0)), likely=False):
            line = b.and_(noted, ll.Constant(I32, 0x7FFFFFFF))
            self.record_failure(V.ERR_ILLEGAL_ADDRESS, arg=b.load(addr_var), line=line, noted=True)

    # words of shared (Workgroup) and local (Function) memory
    def _word_ptr(self, space: str, index: ll.Value) -> ll.Value:
        b = self.b
        zero = ll.Constant(I32, 0)
        if space == "shared" and self.shared is None:  # (bar.red's word, mbarriers)
            wb = ll.Constant(I64, self.shared_word.width // 8)
            return self._slice_ptr(b.mul(b.zext(index, I64) if index.type.width < 64 else index, wb), True)
        if space == "local" and self.local is None:
            return self._local_word_ptr(index)
        arr = self.shared_arr if space == "shared" else self.local_arr
        if self.plan.caps.checked_arrays and self._fault is not None:
            index = self._checked_index(space, index, arr)
        p = b.gep(self.shared if space == "shared" else self.local, [zero, index], source_etype=arr)
        p.type = ll.PointerType(addrspace=3) if space == "shared" else PTR  # (llvmlite: the array's)
        return p

    def _checked_index(self, space: str, index: ll.Value, arr: ll.ArrayType) -> ll.Value:
        """Word `index` of a shared or local array, or word 0 where it is past the array (noted
        as a wild access at its window address, note_fault: the launch fails with
        CUDA_ERROR_ILLEGAL_ADDRESS, as on a GPU, instead of the driver touching memory
        outside the array)."""
        b = self.b
        idx = b.zext(index, I64) if index.type.width < 64 else index
        bad = b.icmp_unsigned(">=", idx, ll.Constant(I64, arr.count))
        window = V.WINDOW[space]
        wb = self._word_bits(space) // 8
        self.note_fault(bad, b.add(b.mul(idx, ll.Constant(I64, wb)), ll.Constant(I64, window)))
        return b.select(bad, ll.Constant(index.type, 0), index)

    def _word_bits(self, space: str) -> int:
        return self.shared_word.width if space == "shared" else 32

    def _split(self, space: str, a: ll.Value) -> tuple[ll.Value, ll.Value]:
        """(word index, bit offset inside the word) of byte address `a` (i64 or i32)."""
        b = self.b
        a32 = b.trunc(a, I32) if a.type.width > 32 else a
        wb = self._word_bits(space)
        shift = 2 if wb == 32 else 3
        idx = b.lshr(a32, ll.Constant(I32, shift))
        bit = b.shl(b.and_(a32, ll.Constant(I32, wb // 8 - 1)), ll.Constant(I32, 3))
        return idx, bit

    def _word_load(self, space: str, a: ll.Value, et: ll.Type, volatile: bool = False) -> ll.Value:
        """A load from shared or local memory; `volatile` (ld.volatile.shared, or an ordered
        one): the driver's compiler must read memory each time (a spin on a flag another
        thread sets)."""
        b = self.b
        if space == "shared" and self.shared is None:  # device memory: a load of its own width
            ld = b.load(self._slice_ptr(a), typ=et, align=et.width // 8)
            ld.volatile = volatile
            return ld
        wb = self._word_bits(space)
        wt = ll.IntType(wb)
        if et.width > wb:  # 64-bit value in 32-bit words
            lo = self._word_load(space, a, I32, volatile)
            hi = self._word_load(space, self._offset(space, a, 4), I32, volatile)
            return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ll.Constant(I64, 32)))
        idx, bit = self._split(space, a)
        w = b.load(self._word_ptr(space, idx), typ=wt, align=wb // 8)
        w.volatile = volatile
        if et.width == wb:
            return w
        return b.trunc(b.lshr(w, b.zext(bit, wt) if wb > 32 else bit), et)

    def _word_store(self, space: str, a: ll.Value, v: ll.Value, volatile: bool = False) -> None:
        """A store to shared or local memory (`volatile`: as for _word_load; a part of a
        shared word is stored by atomics, which no compiler drops or merges)."""
        b = self.b
        if space == "shared" and self.shared is None:  # device memory: bytes are addressable
            st = b.store(v, self._slice_ptr(a, write=True), align=v.type.width // 8)
            st.volatile = volatile
            return
        wb = self._word_bits(space)
        wt = ll.IntType(wb)
        if v.type.width > wb:
            self._word_store(space, a, b.trunc(v, I32), volatile)
            self._word_store(space, self._offset(space, a, 4), b.trunc(b.lshr(v, ll.Constant(I64, 32)), I32),
                             volatile)
            return
        idx, bit = self._split(space, a)
        p = self._word_ptr(space, idx)
        if v.type.width == wb:
            st = b.store(v, p, align=wb // 8)
            st.volatile = volatile
            return
        sh = b.zext(bit, wt) if wb > 32 else bit
        mask = b.shl(ll.Constant(wt, (1 << v.type.width) - 1), sh)
        val = b.shl(b.zext(v, wt), sh)
        if space == "local":  # private: a plain read-modify-write
            w = b.load(p, typ=wt, align=wb // 8)
            b.store(b.or_(b.and_(w, b.not_(mask)), val), p, align=wb // 8)
            return
        # shared: the bytes beside this one may be written by other threads meanwhile
        self.spv("OpAtomicAnd", wt, [p, _c32(WORKGROUP), _c32(0), b.not_(mask)], "s")
        self.spv("OpAtomicOr", wt, [p, _c32(WORKGROUP), _c32(0), val], "s")

    def in_space(self, space: str, a: ll.Value) -> ll.Value:
        b = self.b
        if space in ("shared", "local"):
            return self._in_window(space, a)
        if space == "global":
            return b.not_(b.or_(self._in_window("shared", a), self._in_window("local", a)))
        if space == "param":
            lo = self.push("params")
            return b.icmp_unsigned("<", b.sub(a, lo), ll.Constant(I64, max(self.plan.param_bytes, 1)))
        if space == "const":
            r = ll.Constant(I1, 0)
            for v in self.plan.ptx.variables:
                if v.space == "const":
                    g = self.global_address(v.name)
                    r = b.or_(r, b.icmp_unsigned("<", b.sub(a, g), ll.Constant(I64, max(v.size, 1))))
            return r
        raise self.error(f"isspacep.{space}")

    def cvta(self, space: str, a: ll.Value, to_space: bool) -> ll.Value:
        b = self.b
        if space not in ("shared", "local"):
            return a  # global, const and param addresses are generic already
        base = ll.Constant(I64, V.WINDOW[space])
        if to_space:
            return b.sub(a, base)
        return b.add(b.and_(a, ll.Constant(I64, 0xFFFFFFFF)), base)

    def load(self, ptrs: ll.Value, t: ll.Type, align: int, volatile: bool = False) -> ll.Value:
        """A load of `t` from the address `ptrs` (an i64 of address(), global or kernel param)."""
        ld = self.b.load(self._global_ptr(ptrs), typ=t, align=align)
        if volatile:
            ld.volatile = True
        return ld

    def store(self, ptrs: ll.Value, value: ll.Value, align: int, volatile: bool = False) -> None:
        st = self.b.store(value, self._global_ptr(ptrs, write=True), align=align)
        if volatile:
            st.volatile = True

    def offset_ptrs(self, ptrs: ll.Value, offset: int) -> ll.Value:
        return self._offset("global", ptrs, offset)

    # ---------------------------------------------------------------- rounding
    def directed_f64(self, op: str, args: list[ll.Value], mode: str) -> ll.Value:
        """The constrained intrinsic that the CPU backend's strictfp helper wraps, called
        directly: the SPIR-V translator rounds it exactly (spirv/fpmath.py, from the
        operands' significands, subnormal and overflowing results included)."""
        md = [ll.MetaDataString(self.llmod, s) for s in (fprt.CONSTRAINED_ROUNDING[mode], "fpexcept.ignore")]
        return self.intrinsic(f"llvm.experimental.constrained.{op}", list(args) + md)

    # ---------------------------------------------------------------- failures and per-thread code
    def record_failure(self, kind: int, arg: ll.Value | None = None,
                       extra: dict[str, ll.Value] | None = None, line: ll.Value | None = None,
                       noted: bool = False) -> None:
        """The first failing thread records the failure in the launch's status record (at
        the PTX line of the instruction being lowered, or `line`); a wild access the thread
        made before (note_fault) comes first."""
        b = self.b
        if not noted:
            self.report_fault()
        st = self.push("status")
        p = b.inttoptr(st, PTR)
        old = self.spv("OpAtomicCompareExchange", I32, [p, _c32(DEVICE), _c32(0), _c32(0),
                                                         _c32(kind), _c32(0)], "g")
        won = b.icmp_unsigned("==", old, ll.Constant(I32, 0))
        with b.if_then(won):
            def put(name: str, v: ll.Value) -> None:
                q = b.inttoptr(b.add(st, ll.Constant(I64, V.STATUS[name])), PTR)
                b.store(v, q, align=v.type.width // 8)

            put("line", line if line is not None else ll.Constant(I32, self.ins.line if self.ins else 0))
            for k in "xyz":
                put(f"ctaid_{k}", self.special(f"%ctaid.{k}"))
                put(f"tid_{k}", self.special(f"%tid.{k}"))
            if arg is not None:
                put("arg", arg)
            for name, v in (extra or {}).items():
                put(name, v)
            put("done", ll.Constant(I32, 1))

    def fail_if(self, bad: ll.Value, kind: str) -> None:
        if self.ret_bb is None:
            raise self.error(f"internal: a failure exit ({kind}) inside an outlined body")
        b = self.b
        go = self.llfn.append_basic_block("fail")
        ok = self.llfn.append_basic_block("no_fail")
        b.cbranch(bad, go, ok).set_weights([1, 99])  # (a rare path: translate's RARE)
        b.position_at_end(go)
        self.record_failure(V.FAILURE_KINDS[kind])
        b.branch(self.ret_bb)
        b.position_at_end(ok)

    def fail_unless_member(self, member: ll.Value, kind: str) -> None:
        b = self.b  # per invocation: this thread's own lane
        own = b.trunc(b.lshr(member, self.warp_lane()), ll.IntType(1))
        self.fail_if(b.not_(own), kind)

    def per_lane(self, args: list[ll.Value], body, nres: int = 0, t: ll.Type | None = None) -> list[ll.Value]:
        return body(args)  # a guarded instruction already runs inside its branch

    def per_warp(self, key: ll.Value, args: list[ll.Value], lane_body, warp_body, nres: int = 0,
                 t: ll.Type | None = None) -> list[ll.Value]:
        return lane_body([key, *args])  # one thread: its own texture object

    def emit_call(self, ins: ir.Instr) -> None:
        calls.lower_call(self, ins)


def _plain(em: VulkanEmitter, acc: Access) -> None:
    if acc.order is not None or acc.volatile or len(acc.items) != 1:
        raise em.error("internal: per-lane offsets of an access that is not one plain element")


def _c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def _tname(t: ll.Type) -> str:
    if isinstance(t, ll.PointerType):
        return f"p{t.addrspace}"
    return mangle(t)


__all__ = ["DeviceCaps", "KernelPlan", "VulkanEmitter", "plan_layout", "F32", "F64", "I8", "I16"]
