"""llvmlite.ir -> SPIR-V: one kernel function as a GLCompute entry point (Vulkan 1.2, SPIR-V
1.5, PhysicalStorageBuffer64 addressing, Vulkan memory model).

The input follows section A of the Vulkan backend's contract (docs in vulkan-contract.md):
one defined `void @entry()`, global memory as i64 addresses made into pointers by
`inttoptr`, Function-storage allocas, Workgroup globals in addrspace(3), and calls to
declared `spv.*` functions that stand for builtins, push constants and SPIR-V instructions.
Calls of functions the module defines (em.outline's, the isa layer's helpers) become SPIR-V
functions (call_defined), non-recursive; several results come back as a literal struct
(insertvalue into undef, then ret; extractvalue of the call).

How it is built:
- the CFG is structured first (structurize.py) and emitted construct by construct; each
  LLVM block's instructions go where its `Code` node sits;
- an SSA value is used directly wherever its SPIR-V block dominates the use; elsewhere (a
  use reached through a loop's dispatch, say) it goes through a Function variable that is
  stored right after the definition, decided lazily at the first such use; phis are such
  variables, stored on each incoming edge;
- global pointers are i64 values (GEP is integer arithmetic) until a load, store or
  instruction needs a typed PhysicalStorageBuffer pointer; pointers into variables are
  (variable, access-chain indices) descriptors resolved at the access.
Errors name the LLVM instruction and its PTX line (`cuport_line`, set by the emitter).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from llvmlite import ir as ll

from . import structurize as st
from .features import ATOMIC_FEATURES, atomic_kind, requirements
from .module import GLSL, OP, Module, SpirvError, enum, inst

MA_ALIGNED = enum("MemoryAccess", "Aligned")
# The selection control of a branch to a rare path (a failure record, an exact slow path: the
# lowering marks them unlikely): DontFlatten, so that a driver does not run the rare code
# predicated off on every pass (NVIDIA's made no difference either way: measured on the H200).
RARE = enum("SelectionControl", "DontFlatten")
MA_VOLATILE = enum("MemoryAccess", "Volatile")
MA_NONPRIVATE = enum("MemoryAccess", "NonPrivatePointer")
SC_FUNCTION = enum("StorageClass", "Function")
# what NVIDIA's driver flushes f32 subnormals in (tests/vulkan/denormal_probe.py on an H200):
# FloatModes.simulate_flush32 makes a device that keeps them do the same
_SIM_OPS = frozenset(getattr(OP, n) for n in (
    "OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFRem", "OpFMod", "OpFNegate", "OpFConvert",
    "OpFOrdEqual", "OpFOrdNotEqual", "OpFOrdLessThan", "OpFOrdGreaterThan", "OpFOrdLessThanEqual",
    "OpFOrdGreaterThanEqual", "OpFUnordEqual", "OpFUnordNotEqual", "OpFUnordLessThan",
    "OpFUnordGreaterThan", "OpFUnordLessThanEqual", "OpFUnordGreaterThanEqual"))
_SIM_GLSL = frozenset(getattr(GLSL, n) for n in (
    "FAbs", "Fma", "FMin", "FMax", "NMin", "NMax", "FClamp", "Sqrt", "InverseSqrt", "Exp2", "Log2",
    "Sin", "Cos"))
# what it still flushes them in with DenormPreserve declared (measured on an H100, driver 580:
# spirv/probe.py); FloatModes.simulate_fma32 makes a device that keeps them do the same
_SIM_GLSL_PRESERVE = frozenset(getattr(GLSL, n) for n in ("Fma", "FMin", "FMax", "NMin", "NMax", "FClamp"))


class TranslateError(Exception):
    """Something in the LLVM module that has no SPIR-V translation; names the instruction
    and, when the emitter recorded it, the PTX line."""

    def __init__(self, message: str, ptx_line: int | None = None):
        super().__init__(message + (f" (PTX line {ptx_line})" if ptx_line else ""))
        self.ptx_line = ptx_line


@dataclass(frozen=True)
class Shader:
    """A translated kernel: the SPIR-V binary and what a device must offer to run it."""
    spirv: bytes
    entry: str
    local_size: tuple[int, int, int]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    execution_modes: tuple[tuple[str, int], ...]  # float controls: (mode, width)
    push_size: int  # bytes of the push-constant block the kernel reads (0: none)
    shared_bytes: int  # bytes of Workgroup variables
    features: tuple[str, ...] = ()  # device features needed (runtime.DeviceInfo.features names)
    float_controls: tuple[str, ...] = ()  # float-control properties needed
    subgroup_operations: tuple[str, ...] = ()  # subgroup operation classes needed


@dataclass(frozen=True)
class FloatModes:
    """How floating point is emitted for a device. The execution modes are float widths,
    applied to the widths the kernel uses; the device must support each
    (VkPhysicalDeviceFloatControlsProperties). `fused_fma`: the device's GLSL Fma rounds
    once (probe it with `fma_probe`; lavapipe's does not), else fma is emulated exactly;
    `float64`: the emulations may compute in f64 (the device has shaderFloat64).
    `flush32`: the device may flush f32 subnormals (it has no DenormPreserve mode for f32
    and the subnormal probe saw it flush: NVIDIA's driver flushes the operands and results
    of every f32 arithmetic instruction, comparisons and f32->f64 conversions included);
    the f32 operations whose results would then differ are emulated (subnormal.py).
    `int_order32`: the device keeps f32 subnormals (DenormPreserve) but its comparisons
    or min/max may not (NVIDIA's GLSL FMin/FMax flush even with the mode), so those alone
    use the integer order of floats, as under flush32.
    `fma32`: how f32 fma is made exact where the device's Fma flushes (under flush32, or
    with DenormPreserve declared where Fma alone still flushes, as NVIDIA's does): "guard"
    (the device's Fma, a branch to an exact helper where it may be wrong), "f64" (always
    in f64, rounded to odd; no branch), "contract" (a multiply and an add the driver fuses,
    where the contraction probe saw it fuse them), "contract-alone" (the same, but a kernel
    that also has a rounded f32 product is translated again with "guard": a driver whose CSE
    merges identical products, NVIDIA's, could merge the pair's with it); "" where the
    device's Fma is exact.
    `simulate_flush32` (tests): make the device's f32 instructions flush as NVIDIA's do,
    on a device that keeps subnormals (lavapipe), by flushing their f32 operands and
    results explicitly; `simulate_fma32` (tests): only those that NVIDIA's driver flushes
    with DenormPreserve declared (Fma and min/max). Either way a simulated f32 Fma is also
    fused (computed exactly in f64, as NVIDIA's is; lavapipe's rounds twice), so that any
    operands test what the guard lets through to the device's Fma."""
    fused_fma: bool = False
    float64: bool = True
    signed_zero_inf_nan: tuple[int, ...] = (16, 32, 64)
    denorm_preserve: tuple[int, ...] = ()
    denorm_flush: tuple[int, ...] = ()
    rounding_rte: tuple[int, ...] = ()
    flush32: bool = False
    int_order32: bool = False
    fma32: str = ""
    simulate_flush32: bool = False
    simulate_fma32: bool = False


@dataclass(frozen=True)
class LoopMarks:
    """Marks that tell a loop the driver ended early (backends/vulkan/loops.py): before each
    branch to a loop's continue target an invocation stores the loop's PTX line (`lines`:
    by the LLVM block heading the loop; NO_LINE where none is known), before each branch
    to its merge block 0; at the merge, a mark still set means the invocation arrived
    there without leaving the loop, and the first such mark is kept (`spv.loop_cut` reads
    it). The mark is element `zero` of a two-element Private array, `zero` read from the
    push-constant member at byte offset `zero_push` (0 at run time): a plain variable is
    promoted to SSA form by the driver's compiler, which then proves it 0 at the merge
    (every exit of the loop stores 0) and drops the check (measured on lavapipe: the cut
    went unnoticed)."""

    lines: dict
    zero_push: int

    NO_LINE = 0xFFFFFFFF  # the mark of a loop whose PTX line is not known


def translate(module: ll.Module, entry: str, local_size: tuple[int, int, int],
              float_modes: FloatModes = FloatModes(), loop_marks: LoopMarks | None = None) -> Shader:
    """Translate function `entry` of `module` into a SPIR-V compute shader."""
    fn = module.globals.get(entry)
    if not isinstance(fn, ll.Function) or not fn.blocks:
        raise TranslateError(f"no defined function @{entry} in the module")
    if not isinstance(fn.function_type.return_type, ll.VoidType) or fn.args:
        raise TranslateError(f"@{entry} must be `void @{entry}()`")
    if float_modes.fma32 == "contract-alone" and _f32_fmul(module):
        float_modes = replace(float_modes, fma32="guard")
    tr = _Translator(module, fn, tuple(local_size), float_modes, loop_marks)
    shader = tr.run()
    if float_modes.fma32 == "contract-alone" and tr.fma_pairs and rounded_f32_products(shader.spirv):
        # a driver whose CSE merges a pair's multiply with an identical rounded one (NVIDIA's
        # 580: the contraction probe) may do so here: every fma through the guard instead
        # (a product the IR did not show: a division's or a square root's sequence)
        shader = _Translator(module, fn, tuple(local_size), replace(float_modes, fma32="guard"), loop_marks).run()
    return shader


def _f32_fmul(module: ll.Module) -> bool:
    """Whether the IR multiplies f32 values (then the kernel rounds a product on its own)."""
    for f in module.functions:
        for blk in f.blocks:
            for ins in blk.instructions:
                if ins.opname == "fmul":
                    t = ins.type.element if isinstance(ins.type, ll.VectorType) else ins.type
                    if isinstance(t, ll.FloatType):
                        return True
    return False


def rounded_f32_products(spirv: bytes) -> bool:
    """Whether a module multiplies f32 values with NoContraction: a product rounded on its
    own, which a driver's common-subexpression elimination could merge with the multiply of
    an fma's contractable pair of the same factors (FloatModes.fma32 "contract-alone")."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv)
    no_contraction = enum("Decoration", "NoContraction")
    f32: set[int] = set()
    rounded: set[int] = set()
    products: list[tuple[int, int]] = []
    i = 5  # after the header
    while i < len(words):
        n, op = words[i] >> 16, words[i] & 0xFFFF
        if op == OP.OpTypeFloat and words[i + 2] == 32 or op == OP.OpTypeVector and words[i + 2] in f32:
            f32.add(words[i + 1])
        elif op == OP.OpDecorate and words[i + 2] == no_contraction:
            rounded.add(words[i + 1])
        elif op == OP.OpFMul:
            products.append((words[i + 1], words[i + 2]))
        i += max(n, 1)
    return any(t in f32 and r in rounded for t, r in products)


# ---------------------------------------------------------------------- helpers
def line_of(ins) -> int | None:
    return getattr(ins, "cuport_line", None)


def describe(ins) -> str:
    try:
        text = str(ins).strip()
    except Exception:  # noqa: BLE001 (a description for an error message only)
        text = repr(ins)
    return text if len(text) < 200 else text[:200] + "..."


def alloc_size(t: ll.Type) -> int:
    """Bytes one object of `t` takes in an array (LLVM's default data layout)."""
    if isinstance(t, ll.IntType):
        return max(1, _pow2((t.width + 7) // 8))
    if isinstance(t, ll.HalfType):
        return 2
    if isinstance(t, ll.FloatType):
        return 4
    if isinstance(t, ll.DoubleType):
        return 8
    if isinstance(t, ll.PointerType):
        return 8
    if isinstance(t, ll.VectorType):
        return _pow2(alloc_size(t.element) * t.count)
    if isinstance(t, ll.ArrayType):
        return alloc_size(t.element) * t.count
    raise TypeError(f"no size for type {t}")


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def scalar_width(t: ll.Type) -> int:
    t = t.element if isinstance(t, ll.VectorType) else t
    if isinstance(t, ll.IntType):
        return t.width
    return {ll.HalfType: 16, ll.FloatType: 32, ll.DoubleType: 64}[type(t)]


def is_float(t: ll.Type) -> bool:
    t = t.element if isinstance(t, ll.VectorType) else t
    return isinstance(t, (ll.HalfType, ll.FloatType, ll.DoubleType))


def is_bool(t: ll.Type) -> bool:
    t = t.element if isinstance(t, ll.VectorType) else t
    return isinstance(t, ll.IntType) and t.width == 1


class LocalPtr:
    """A pointer into a Function or Workgroup variable: `var` of LLVM type `vtype`, and
    the access chain `path` (SPIR-V ids of integer indices) below it."""
    __slots__ = ("var", "storage", "vtype", "path", "ptype")

    def __init__(self, var: int, storage: str, vtype: ll.Type, path: tuple[int, ...], ptype: ll.Type):
        self.var, self.storage, self.vtype, self.path, self.ptype = var, storage, vtype, path, ptype


class _SBlock:
    """A SPIR-V block under construction."""
    __slots__ = ("label", "words", "preds", "idom", "depth", "inserts")

    def __init__(self, label: int):
        self.label = label
        self.words: list[int] = []
        self.preds: list[_SBlock] = []
        self.idom: _SBlock | None = None
        self.depth = 0
        self.inserts: list[tuple[int, list[int]]] = []


class _Breakable:
    __slots__ = ("merge", "cont", "is_loop", "line")

    def __init__(self, merge: _SBlock, cont: _SBlock, is_loop: bool, line: int | None):
        self.merge, self.cont, self.is_loop = merge, cont, is_loop
        self.line = line  # the loop's mark (LoopMarks), None where loops are not marked


# ---------------------------------------------------------------------- the translator
class _Translator:
    def __init__(self, module: ll.Module, fn: ll.Function, local_size, float_modes: FloatModes,
                 loop_marks: LoopMarks | None = None):
        self.llmod = module
        self.fn = fn
        self.local_size = local_size
        self.float_modes = float_modes
        self.m = Module()
        m = self.m
        m.capability("PhysicalStorageBufferAddresses")
        m.capability("VulkanMemoryModel")
        self.ins = None  # the LLVM instruction being translated, for errors
        self.vals: dict = {}
        self.site: dict[int, tuple[_SBlock, int, int]] = {}  # id -> (block, end position, type)
        self.demoted: dict[int, int] = {}  # id -> Function variable
        self.reloaded: dict[tuple[int, int], int] = {}  # (id, block label) -> loaded id
        self.fvars: list[int] = []  # OpVariable words of the entry block
        self.blocks: list[_SBlock] = []
        self.cur: _SBlock | None = None
        self.breakables: list[_Breakable] = []
        self.phivars: dict = {}
        self.interface: dict[int, None] = {}
        self.builtins: dict[tuple[str, int], int] = {}
        self.float_widths: set[int] = set()
        self._tcache: dict[int, tuple[ll.Type, int]] = {}  # id(type) -> (type, SPIR-V id)
        self._ptrs: dict[tuple[str, int], int] = {}
        self.globals_: dict[str, LocalPtr] = {}
        self.shared_bytes = 0
        self.push_var: int | None = None
        self.push_members: dict[int, tuple[int, ll.Type]] = {}  # offset -> (member, type)
        self.push_size = 0
        self.dest_var: int | None = None
        self.helpers: dict[str, int] = {}
        self.feature_uses: set[str] = set()  # storage-dependent features (atomics)
        self.defined: dict[tuple, int] = {}  # functions of the module, translated, by shape
        self.translating: set[str] = set()
        self.helper_words: list[int] = []
        self.param_types: dict[int, int] = {}
        self.t_i32 = m.t_int(32)
        self.t_i64 = m.t_int(64)
        self.t_bool = m.t_bool()
        self._sim = float_modes.simulate_flush32 or float_modes.simulate_fma32
        self._sim_ops = _SIM_OPS if float_modes.simulate_flush32 else frozenset()
        self._sim_glsl = _SIM_GLSL if float_modes.simulate_flush32 else _SIM_GLSL_PRESERVE
        self._sim_raw: dict[int, int] = {}  # flushed result -> the instruction's own (simulation)
        self.loop_marks = loop_marks
        self.fma_pairs = 0  # fmas emitted as contractable pairs (FloatModes.fma32 "contract*")
        self._mark_vars: tuple[int, int] | None = None  # (the marks array, the noted line)

    # ------------------------------------------------------------------ errors
    def error(self, message: str, ins=None) -> TranslateError:
        ins = ins if ins is not None else self.ins
        if ins is not None:
            return TranslateError(f"{message}: `{describe(ins)}`", line_of(ins))
        return TranslateError(message)

    # ------------------------------------------------------------------ types
    def ty(self, t: ll.Type) -> int:
        c = self._tcache.get(id(t))
        if c is not None and c[0] is t:
            return c[1]
        m = self.m
        if isinstance(t, ll.IntType):
            r = self.t_bool if t.width == 1 else m.t_int(t.width)
            if t.width not in (1, 8, 16, 32, 64):
                raise self.error(f"no SPIR-V type for i{t.width}")
        elif isinstance(t, ll.FloatType):
            r = m.t_float(32)
            self.float_widths.add(32)
        elif isinstance(t, ll.DoubleType):
            r = m.t_float(64)
            self.float_widths.add(64)
        elif isinstance(t, ll.HalfType):
            r = m.t_float(16)
            self.float_widths.add(16)
        elif isinstance(t, ll.VectorType):
            if not 2 <= t.count <= 4:
                raise self.error(f"no SPIR-V vector of {t.count} elements ({t})")
            r = m.t_vector(self.ty(t.element), t.count)
        elif isinstance(t, ll.ArrayType):
            r = m.t_array(self.ty(t.element), t.count)
        elif isinstance(t, ll.PointerType):
            r = self.t_i64  # a global pointer travels as its address
        elif isinstance(t, ll.LiteralStructType):  # several results of a defined function
            members = tuple(self.ty(e) for e in t.elements)
            r = m.t_struct(list(members), key=("literal", members))
        elif isinstance(t, ll.VoidType):
            r = m.t_void()
        else:
            raise self.error(f"no SPIR-V type for {t}")
        self._tcache[id(t)] = (t, r)  # t kept alive: a dead type's id may be reused
        return r

    def ptr_type(self, storage: str, pointee: int) -> int:
        key = (storage, pointee)
        p = self._ptrs.get(key)
        if p is None:
            p = self._ptrs[key] = self.m.t_pointer(storage, pointee)
        return p

    # ------------------------------------------------------------------ constants
    def const(self, c: ll.Constant) -> int:
        t = c.type
        v = c.constant
        m = self.m
        tid = self.ty(t)
        if v is ll.Undefined:
            return m.undef(tid)
        if isinstance(t, ll.IntType):
            if t.width == 1:
                return m.const_bool(bool(v))
            return m.const_int(tid, int(v or 0), t.width)
        if isinstance(t, (ll.FloatType, ll.DoubleType, ll.HalfType)):
            return m.const_bits(tid, float_bits(t, float(v or 0.0)), scalar_width(t))
        if isinstance(t, (ll.VectorType, ll.ArrayType)):
            if v is None:
                return m.const_null(tid)
            parts = [self.const(e) if isinstance(e, ll.Constant) else self.const(ll.Constant(t.element, e)) for e in v]
            return m.const_composite(tid, parts)
        if isinstance(t, ll.PointerType):
            if v is None:
                return m.const_int(self.t_i64, 0, 64)
        raise self.error(f"constant {c} not supported")

    def cint(self, value: int, width: int = 32) -> int:
        return self.m.const_int(self.t_i32 if width == 32 else self.m.t_int(width), value, width)

    # ------------------------------------------------------------------ emission
    def op(self, opcode: int, rtype: int, *operands: int) -> int:
        """Emit a value-producing instruction into the current block; returns its id."""
        if self._sim and (opcode in self._sim_ops or (opcode == OP.OpExtInst and operands[1] in self._sim_glsl)):
            return self._simulated(opcode, rtype, operands)
        return self._op(opcode, rtype, *operands)

    def _op(self, opcode: int, rtype: int, *operands: int) -> int:
        r = self.m.id()
        blk = self.cur
        w = blk.words
        w.append((len(operands) + 3) << 16 | opcode)
        w.append(rtype)
        w.append(r)
        w.extend(operands)
        self.site[r] = (blk, len(w), rtype)
        return r

    def stmt(self, opcode: int, *operands: int) -> None:
        self.cur.words.extend(inst(opcode, *operands))

    def ext(self, rtype: int, number: int, *operands: int) -> int:
        return self.op(OP.OpExtInst, rtype, self.m.ext_import(), number, *operands)

    def no_contract(self, r: int) -> int:
        self.m.decorate(self._sim_raw.get(r, r), "NoContraction")
        return r

    # ------------------------------------------------------------------ flushing, simulated
    def _simulated(self, opcode: int, rtype: int, operands: tuple[int, ...]) -> int:
        """The instruction as a device that flushes f32 subnormals runs it: its f32 operands
        flushed, and its f32 result unless it converts from a wider float (NVIDIA's f64->f32
        conversion keeps subnormals)."""
        skip = 2 if opcode == OP.OpExtInst else 0
        ops = tuple(x if i < skip else self._flush_sim(x) for i, x in enumerate(operands))
        if opcode == OP.OpExtInst and operands[1] == GLSL.Fma and rtype == self.m.t_float(32) \
                and self.float_modes.float64:
            from .fpmath import fma32_via_f64

            r = fma32_via_f64(self, *ops[2:])  # fused, as NVIDIA's Fma is
        else:
            r = self._op(opcode, rtype, *ops)
        if opcode == OP.OpFConvert or self._f32_kind(rtype) is None:
            return r
        out = self._flush_sim(r)
        self._sim_raw[out] = r
        return out

    def _f32_kind(self, type_id: int | None) -> tuple[int, int] | None:
        """(u32 type, bool type) of the same shape when type_id is f32 or a vector of f32."""
        m = self.m
        f32 = m.t_float(32)
        if type_id == f32:
            return self.t_i32, self.t_bool
        for n in (2, 3, 4):
            if type_id == m.t_vector(f32, n):
                return m.t_vector(self.t_i32, n), m.t_vector(self.t_bool, n)
        return None

    def _flush_sim(self, x: int) -> int:
        s = self.site.get(x)
        t = s[2] if s is not None else (self.param_types.get(x) or self.m.type_of(x))
        kind = self._f32_kind(t)
        if kind is None:
            return x
        ut, bt = kind
        n = None if ut == self.t_i32 else next(k for k in (2, 3, 4) if ut == self.m.t_vector(self.t_i32, k))

        def c(v: int) -> int:
            e = self.cint(v)
            return e if n is None else self.m.const_composite(ut, [e] * n)
        bits = self._op(OP.OpBitcast, ut, x)
        sub = self._op(OP.OpIEqual, bt, self._op(OP.OpBitwiseAnd, ut, bits, c(0x7F800000)), c(0))
        sign = self._op(OP.OpBitwiseAnd, ut, bits, c(0x80000000))
        return self._op(OP.OpBitcast, t, self._op(OP.OpSelect, ut, sub, sign, bits))

    # ------------------------------------------------------------------ slow paths
    def slow_path(self, cond: int, fast: int, rtype: int, key: str, args: list[int], build,
                  prepare=None) -> int:
        """`fast`, or where `cond` holds, helper function `key` (made by `build`, see
        call_helper) called on `args` (first passed through `prepare(args)` in the branch):
        a selection construct around the call, so that the rare case costs only a branch."""
        return self.rare(cond, fast, rtype, lambda: self.call_helper(
            key, rtype, args if prepare is None else prepare(args), build))

    def rare(self, cond: int, fast: int, rtype: int, body) -> int:
        """`fast`, or where `cond` holds, what `body()` emits inside the branch (it may
        open selections of its own): a selection construct marked rarely taken."""
        then, after = self.new_block(), self.new_block()
        self.stmt(OP.OpSelectionMerge, after.label, RARE)
        self.stmt(OP.OpBranchConditional, cond, then.label, after.label)
        head = self.cur
        then.preds.append(head)
        after.preds.append(head)
        self.cur = None
        self.start(then)
        slow = body()
        end = self.cur
        self.branch(after)
        self.start(after)
        return self.op(OP.OpPhi, rtype, fast, head.label, slow, end.label)

    # ------------------------------------------------------------------ values
    def val(self, v) -> int:
        """The SPIR-V id of scalar/vector LLVM value `v`, usable in the current block."""
        if isinstance(v, ll.Constant):
            return self.const(v)
        r = self.vals.get(v)
        if r is None:
            if isinstance(v, ll.GlobalVariable):
                raise self.error(f"global @{v.name} used as a value")
            raise self.error(f"value {v.get_reference()} used before its definition")
        if isinstance(r, int):
            return self.use(r)
        if isinstance(r, LocalPtr):
            raise self.error("a pointer into a variable has no address in SPIR-V")
        raise self.error("an aggregate used as a value")

    def returned(self, v) -> int:
        """The id a function returns for `v`: a struct of several results (insertvalue's
        members, see instructions.py) is constructed here."""
        parts = self.vals.get(v) if not isinstance(v, ll.Constant) else None
        if isinstance(v.type, ll.LiteralStructType) and isinstance(parts, tuple):
            if any(p is None for p in parts):
                raise self.error("a returned struct with a member never set")
            return self.op(OP.OpCompositeConstruct, self.ty(v.type), *(self.use(p) for p in parts))
        return self.val(v)

    def use(self, r: int) -> int:
        s = self.site.get(r)
        if s is None:
            return r
        blk = s[0]
        cur = self.cur
        if blk is cur or self._dominates(blk, cur):
            return r
        key = (r, cur.label)
        got = self.reloaded.get(key)
        if got is not None:
            return got
        var = self.demoted.get(r)
        if var is None:
            var = self.function_var(s[2])
            self.demoted[r] = var
            blk.inserts.append((s[1], inst(OP.OpStore, var, r)))
        got = self.op(OP.OpLoad, s[2], var)
        self.reloaded[key] = got
        return got

    def _dominates(self, a: _SBlock, b: _SBlock) -> bool:
        while b.depth > a.depth:
            b = b.idom
        return a is b

    def function_var(self, type_id: int, init: int | None = None) -> int:
        v = self.m.id()
        ops = (self.ptr_type("Function", type_id), v, SC_FUNCTION) + ((init,) if init is not None else ())
        self.fvars.extend(inst(OP.OpVariable, *ops))
        return v

    def define(self, ins, value) -> None:
        self.vals[ins] = value

    # ------------------------------------------------------------------ blocks
    def new_block(self) -> _SBlock:
        return _SBlock(self.m.id())

    def start(self, blk: _SBlock) -> bool:
        """Make `blk` current (placed after the blocks emitted so far); False, and no
        current block, when nothing branches to it."""
        self.blocks.append(blk)
        blk.words = inst(OP.OpLabel, blk.label)
        if not blk.preds and self.blocks[0] is not blk:
            self.cur = None
            return False
        d = None
        for p in blk.preds:
            if d is None:
                d = p
                continue
            x, y = p, d
            while x is not y:
                while x.depth > y.depth:
                    x = x.idom
                while y.depth > x.depth:
                    y = y.idom
                if x is not y:
                    x, y = x.idom, y.idom
            d = x
        blk.idom = d
        blk.depth = d.depth + 1 if d is not None else 0
        self.cur = blk
        return True

    def dead(self, blk: _SBlock, terminator: list[int]) -> None:
        """Place `blk`, which nothing reaches, with only `terminator`."""
        self.blocks.append(blk)
        blk.words = inst(OP.OpLabel, blk.label) + terminator

    def branch(self, target: _SBlock) -> None:
        self.stmt(OP.OpBranch, target.label)
        target.preds.append(self.cur)
        self.cur = None

    def note_atomic(self, opname: str, t: ll.Type, storage: str) -> None:
        """Record the device feature an atomic on `storage` of type t needs."""
        kind = atomic_kind(opname, scalar_width(t), is_float(t))
        feat = ATOMIC_FEATURES.get((kind, storage)) if kind else None
        if feat:
            self.feature_uses.add(feat)

    # ------------------------------------------------------------------ helper functions
    def call_helper(self, key: str, rtype: int, args: list[int], build) -> int:
        """A call of the module's helper function `key`, made on first use by
        `build(*params) -> result id` as a branch-free function of its own (long exact
        sequences are emitted once per module, not at every use)."""
        fn = self.helpers.get(key)
        if fn is None:
            fn = self._make_helper(rtype, [self.site_type(a) for a in args], build)
            self.helpers[key] = fn
        return self.op(OP.OpFunctionCall, rtype, fn, *args)

    def site_type(self, r: int) -> int:
        s = self.site.get(r)
        if s is not None:
            return s[2]
        t = self.param_types.get(r) or self.m.type_of(r)
        if t is None:
            raise self.error("internal: the type of an argument of a helper is unknown")
        return t

    def _make_helper(self, rtype: int, ptypes: list[int], build) -> int:
        m = self.m
        saved = (self.cur, self.blocks, self.fvars)
        self.blocks, self.fvars = [], []
        fn = m.id()
        params = [m.id() for _ in ptypes]
        for p, t in zip(params, ptypes, strict=True):
            self.param_types[p] = t
        head = inst(OP.OpFunction, rtype, fn, enum("FunctionControl", "None"), m.t_function(rtype, tuple(ptypes)))
        for p, t in zip(params, ptypes, strict=True):
            head += inst(OP.OpFunctionParameter, t, p)
        self.start(self.new_block())
        r = build(*params)
        self.stmt(OP.OpReturnValue, r)
        if len(self.blocks) != 1 or self.fvars:
            raise AssertionError("helper functions are single blocks without variables")
        words = head + self.blocks[0].words + inst(OP.OpFunctionEnd)
        self.helper_words += words
        self.cur, self.blocks, self.fvars = saved
        return fn

    # ------------------------------------------------------------------ driver
    def run(self) -> Shader:
        self._prescan()
        self._emit_function(self.fn)
        return self._finish(self.m)

    def _emit_function(self, fn: ll.Function) -> None:
        """Structure `fn`'s CFG and emit its blocks (into self.blocks, from a new entry)."""
        blocks = fn.blocks
        index = {b: i for i, b in enumerate(blocks)}
        succs: list[list[int]] = []
        kinds: list[str] = []
        for b in blocks:
            t = b.terminator
            if t is None:
                raise TranslateError(f"block %{b.name} of @{fn.name} has no terminator")
            if isinstance(t, ll.Branch) and not isinstance(t, ll.ConditionalBranch):
                succs.append([index[t.operands[0]]])
                kinds.append("br")
            elif isinstance(t, ll.ConditionalBranch):
                succs.append([index[t.operands[1]], index[t.operands[2]]])
                kinds.append("cbr")
            elif isinstance(t, ll.SwitchInstr):
                succs.append([index[t.default]] + [index[blk] for _, blk in t.cases])
                kinds.append("switch")
            elif isinstance(t, ll.Ret):
                if t.operands and fn is self.fn:
                    raise self.error("a kernel returns no value", t)
                succs.append([])
                kinds.append("ret")
            elif isinstance(t, ll.Unreachable):
                succs.append([])
                kinds.append("unreachable")
            else:
                raise self.error("terminator not supported", t)
        self.llblocks = blocks
        try:
            cfg = st.CFG(succs, kinds)
        except st.Irreducible as e:
            src = blocks[e.edge[0]]
            raise TranslateError(
                f"irreducible control flow: the branch at the end of block %{src.name} enters a loop "
                f"at %{blocks[e.edge[1]].name}, not through its header", line_of(src.terminator)) from None
        self.cfg = cfg
        root = st.structurize(cfg)
        self.start(self.new_block())
        if st.uses_dispatch(root):
            self.dest_var = self.function_var(self.t_i32, self.cint(0))
        with st.deep_recursion():
            self.emit(root)
        if self.cur is not None:
            raise TranslateError(f"control reaches the end of @{fn.name} without a terminator")

    def call_defined(self, ins) -> None:
        """A call of a function defined in the module (the isa layer's helpers: fprt.strict's,
        the texture sampler): translated into a SPIR-V function of its own, one per shape of
        its pointer arguments. A pointer into a variable is passed as the variable itself
        (a memory object declaration, as Vulkan's logical addressing requires) and its
        access-chain indices as i32 arguments."""
        callee = ins.callee
        args: list[int] = []
        shapes: list = []
        for a in ins.args:
            if isinstance(a.type, ll.PointerType):
                p = self.pointer(a)
                if isinstance(p, LocalPtr):
                    args.append(p.var)
                    args += [self.use(i) for i in p.path]
                    shapes.append((p.storage, p.vtype, len(p.path), p.ptype))
                    continue
                args.append(self.use(p))
            else:
                args.append(self.val(a))
            shapes.append(None)
        key = (callee.name, tuple(None if x is None else (x[0], str(x[1]), x[2], str(x[3])) for x in shapes))
        fid = self.defined.get(key)
        if fid is None:
            if callee.name in self.translating:
                raise self.error(f"recursive call of @{callee.name}")
            fid = self._translate_defined(callee, shapes)
            self.defined[key] = fid
        r = self.op(OP.OpFunctionCall, self.ty(ins.type), fid, *args)
        if isinstance(ins.type, ll.LiteralStructType):  # its members, as extractvalue takes them
            self.define(ins, tuple(self.op(OP.OpCompositeExtract, self.ty(t), r, i)
                                   for i, t in enumerate(ins.type.elements)))
        elif not isinstance(ins.type, ll.VoidType):
            self.define(ins, r)

    def _translate_defined(self, callee: ll.Function, shapes: list) -> int:
        m = self.m
        names = ("fvars", "blocks", "cur", "breakables", "dest_var", "llblocks", "cfg", "ins")
        saved = {n: getattr(self, n) for n in names}
        self.translating.add(callee.name)
        self.fvars, self.blocks, self.cur, self.breakables, self.dest_var = [], [], None, [], None
        try:
            fid = m.id()
            rt = self.ty(callee.function_type.return_type)
            params: list[tuple[int, int]] = []  # (id, type)
            for a, shape in zip(callee.args, shapes, strict=True):
                if shape is None:
                    pid = m.id()
                    params.append((pid, self.ty(a.type)))
                    self.vals[a] = pid
                    continue
                storage, vtype, depth, ptype = shape
                var = m.id()
                params.append((var, self.ptr_type(storage, self.ty(vtype))))
                path = []
                for _ in range(depth):
                    path.append(m.id())
                    params.append((path[-1], self.t_i32))
                self.vals[a] = LocalPtr(var, storage, vtype, tuple(path), ptype)
            ptypes = tuple(t for _, t in params)
            head = inst(OP.OpFunction, rt, fid, enum("FunctionControl", "None"), m.t_function(rt, ptypes))
            for pid, t in params:
                head += inst(OP.OpFunctionParameter, t, pid)
                self.param_types[pid] = t
            self._emit_function(callee)
            self.helper_words += self._serialize(head)
            m.name(fid, callee.name)
        finally:
            self.translating.discard(callee.name)
            for n, v in saved.items():
                setattr(self, n, v)
        return fid

    def _serialize(self, head: list[int]) -> list[int]:
        """The function's words: `head` (OpFunction and parameters), the blocks with the
        stores of demoted values put in, the variables at the start of the first block."""
        words = list(head)
        for i, blk in enumerate(self.blocks):
            w = blk.words
            if blk.inserts:
                for pos, ins_words in sorted(blk.inserts, key=lambda x: x[0], reverse=True):
                    w[pos:pos] = ins_words
            words += w[:2] + self.fvars + w[2:] if i == 0 else w
        return words + inst(OP.OpFunctionEnd)

    def _prescan(self) -> None:
        """Push-constant members (the block struct must be complete before any access)."""
        uses: dict[int, ll.Type] = {}
        blocks = [b for f in self.llmod.functions if f.blocks for b in f.blocks]
        for b in blocks:
            for ins in b.instructions:
                if isinstance(ins, ll.CallInstr) and ins.callee.name.startswith("spv.push."):
                    self.ins = ins
                    if len(ins.args) != 1 or not isinstance(ins.args[0], ll.Constant):
                        raise self.error("spv.push.* takes one constant i32 byte offset")
                    off = int(ins.args[0].constant)
                    t = ins.type
                    if off in uses and str(uses[off]) != str(t):
                        raise self.error(f"push constant at offset {off} read as {uses[off]} and as {t}")
                    uses[off] = t
        self.ins = None
        if not uses:
            return
        m = self.m
        members = sorted(uses.items())
        end = 0
        for off, t in members:
            if off < end:
                raise TranslateError(f"push constants overlap at byte offset {off}")
            end = off + alloc_size(t)
            if scalar_width(t) in (8, 16):
                m.capability(f"StoragePushConstant{scalar_width(t)}")
        self.push_size = end
        struct_id = m.t_struct([self.ty(t) for _, t in members])
        m.decorate(struct_id, "Block")
        for i, (off, t) in enumerate(members):
            m.member_decorate(struct_id, i, "Offset", off)
            self.push_members[off] = (i, t)
        self.push_var = m.global_variable(self.ptr_type("PushConstant", struct_id), "PushConstant")
        self.interface[self.push_var] = None

    def _finish(self, m: Module) -> Shader:
        fn_id = m.id()
        words = self._serialize(inst(OP.OpFunction, m.t_void(), fn_id, enum("FunctionControl", "None"),
                                     m.t_function(m.t_void())))
        m.functions = self.helper_words + words
        m.entry_point("GLCompute", fn_id, self.fn.name, list(self.interface))
        m.execution_mode(fn_id, "LocalSize", *self.local_size)
        modes = []
        fm = self.float_modes
        for mode, widths in (("SignedZeroInfNanPreserve", fm.signed_zero_inf_nan),
                             ("DenormPreserve", fm.denorm_preserve),
                             ("DenormFlushToZero", fm.denorm_flush),
                             ("RoundingModeRTE", fm.rounding_rte)):
            for w in sorted(set(widths) & self.float_widths):
                m.capability(mode)
                m.execution_mode(fn_id, mode, w)
                modes.append((mode, w))
        m.name(fn_id, self.fn.name)
        spirv = m.to_bytes()
        feats, props, ops = requirements(m.capabilities, modes, self.feature_uses)
        return Shader(spirv, self.fn.name, self.local_size, tuple(m.capabilities),
                      tuple(m.extensions), tuple(modes), self.push_size, self.shared_bytes,
                      feats, props, ops)

    # ------------------------------------------------------------------ structured emission
    def emit(self, node: st.Node) -> None:
        t = type(node)
        if t is st.Seq:
            for item in node.items:
                self.emit(item)
        elif t is st.Code:
            if self.cur is not None:
                self.code(node.block)
        elif t is st.Copy:
            if self.cur is not None:
                self.copy(node.src, node.dst)
        elif t is st.Branch:
            if self.cur is not None:
                self.emit_branch(node)
        elif t is st.Goto:
            for a in node.action:
                self.emit(a)
        elif t is st.Loop or t is st.Block:
            if self.cur is not None:
                if t is st.Block and not node.do_once:
                    self.emit(node.body)
                else:
                    self.emit_loop(node, t is st.Loop)
        elif t is st.Break:
            if self.cur is not None:
                b = self.breakables[-1]
                if b.line is not None:
                    self._mark(0)
                self.branch(b.merge)
        elif t is st.Continue:
            if self.cur is not None:
                b = self.breakables[-1]
                assert b.is_loop, "continue inside a once-only loop"
                if b.line is not None:
                    self._mark(b.line)
                self.branch(b.cont)
        elif t is st.SetDest:
            if self.cur is not None:
                self.stmt(OP.OpStore, self.dest_var, self.cint(node.value))
        elif t is st.Return:
            if self.cur is not None:
                term = self.llblocks[node.block].terminator
                if term.operands:
                    self.ins = term
                    self.stmt(OP.OpReturnValue, self.returned(term.operands[0]))
                else:
                    self.stmt(OP.OpReturn)
                self.cur = None
        elif t is st.Unreachable:
            if self.cur is not None:
                self.stmt(OP.OpUnreachable)
                self.cur = None
        else:
            raise TypeError(node)

    def _empty(self, node: st.Node) -> bool:
        """Whether emitting `node` would produce nothing (an arm that just falls through)."""
        t = type(node)
        if t is st.Seq:
            return all(self._empty(i) for i in node.items)
        if t is st.Copy:
            return not any(isinstance(i, ll.PhiInstr) for i in self.llblocks[node.dst].instructions[:1])
        if t is st.Goto:
            return not node.action
        return False

    def emit_branch(self, node: st.Branch) -> None:
        term = self.llblocks[node.block].terminator
        self.ins = term
        merge = self.new_block()
        targets = []
        for arm in node.arms:
            targets.append(merge if self._empty(arm) else self.new_block())
        if all(t is merge for t in targets):
            self.branch(merge)
            self.start(merge)
            return
        if isinstance(term, ll.ConditionalBranch):
            c = self.val(term.operands[0])
            self.stmt(OP.OpSelectionMerge, merge.label, RARE if "prof" in term.metadata else 0)
            self.stmt(OP.OpBranchConditional, c, targets[0].label, targets[1].label)
        else:
            sel = self.val(term.value)
            width = term.value.type.width
            if width not in (32, 64):
                sel = self.op(OP.OpUConvert, self.t_i32, sel)
                width = 32
            ops = [sel, targets[0].label]
            for (cv, _), tgt in zip(term.cases, targets[1:], strict=True):
                v = int(cv.constant) & ((1 << term.value.type.width) - 1)
                ops += [v & 0xFFFFFFFF, v >> 32, tgt.label] if width == 64 else [v, tgt.label]
            self.stmt(OP.OpSelectionMerge, merge.label, 0)
            self.stmt(OP.OpSwitch, *ops)
        head = self.cur
        seen: set[int] = set()
        for t in targets:
            if id(t) not in seen:
                t.preds.append(head)
                seen.add(id(t))
        self.cur = None
        for arm, t in zip(node.arms, targets, strict=True):
            if t is merge:
                continue
            self.start(t)
            self.emit(arm)
            if self.cur is not None:
                self.branch(merge)
        if merge.preds:
            self.start(merge)
        else:
            self.dead(merge, inst(OP.OpUnreachable))
            self.cur = None

    def emit_loop(self, node, is_loop: bool) -> None:
        header, body, cont, merge = (self.new_block() for _ in range(4))
        self.branch(header)
        self.start(header)
        self.stmt(OP.OpLoopMerge, merge.label, cont.label, 0)
        self.branch(body)
        self.start(body)
        line = None  # a once-only loop ends every pass: the driver cannot end it early
        if is_loop and self.loop_marks is not None:
            line = self.loop_marks.lines.get(self.llblocks[node.header]) or LoopMarks.NO_LINE
        self.breakables.append(_Breakable(merge, cont, is_loop, line))
        self.emit(node.body)
        if self.cur is not None:
            if line is not None:
                self._mark(line)
            self.branch(cont if is_loop else merge)
        self.breakables.pop()
        if cont.preds:
            self.start(cont)
            self.branch(header)
        else:
            self.dead(cont, inst(OP.OpBranch, header.label))
        if not merge.preds:
            self.dead(merge, inst(OP.OpUnreachable))
            self.cur = None
            return
        self.start(merge)
        if line is not None:
            self._note_cut()
        for value, acts in node.dispatch.items():
            if self.cur is None:
                break
            d = self.op(OP.OpLoad, self.t_i32, self.dest_var)
            c = self.op(OP.OpIEqual, self.t_bool, d, self.cint(value))
            then, after = self.new_block(), self.new_block()
            self.stmt(OP.OpSelectionMerge, after.label, 0)
            self.stmt(OP.OpBranchConditional, c, then.label, after.label)
            then.preds.append(self.cur)
            after.preds.append(self.cur)
            self.cur = None
            self.start(then)
            for a in acts:
                self.emit(a)
            if self.cur is not None:
                self.branch(after)
            self.start(after)

    # ------------------------------------------------------------------ loop marks
    def _marks(self) -> tuple[int, int]:
        """The Private variables of LoopMarks: the marks (two u32) and the noted line."""
        if self._mark_vars is None:
            m = self.m
            arr = m.t_array(self.t_i32, 2)
            marks = m.global_variable(self.ptr_type("Private", arr), "Private", m.const_null(arr))
            noted = m.global_variable(self.ptr_type("Private", self.t_i32), "Private", self.cint(0))
            m.name(marks, "cuport.loop_marks")
            m.name(noted, "cuport.loop_cut")
            self.interface[marks] = self.interface[noted] = None
            self._mark_vars = (marks, noted)
        return self._mark_vars

    def _mark_ptr(self) -> int:
        if self.loop_marks.zero_push not in self.push_members:
            raise TranslateError("loop marks: no push constant at byte offset "
                                 f"{self.loop_marks.zero_push} (the emitter reads it)")
        member, t = self.push_members[self.loop_marks.zero_push]
        pc = self.op(OP.OpAccessChain, self.ptr_type("PushConstant", self.ty(t)), self.push_var, self.cint(member))
        zero = self.op(OP.OpLoad, self.ty(t), pc)
        return self.op(OP.OpAccessChain, self.ptr_type("Private", self.t_i32), self._marks()[0], zero)

    def _mark(self, line: int) -> None:
        self.stmt(OP.OpStore, self._mark_ptr(), self.cint(line))

    def _note_cut(self) -> None:
        """At a loop's merge: keep the mark of an invocation the driver let out of the loop
        (the first one)."""
        noted = self._marks()[1]
        mark = self.op(OP.OpLoad, self.t_i32, self._mark_ptr())
        old = self.op(OP.OpLoad, self.t_i32, noted)
        none = self.op(OP.OpIEqual, self.t_bool, old, self.cint(0))
        self.stmt(OP.OpStore, noted, self.op(OP.OpSelect, self.t_i32, none, mark, old))

    def loop_cut(self, ins) -> None:
        """`spv.loop_cut.i32()`: the mark of the first loop the driver ended early in this
        invocation (LoopMarks: its PTX line, or NO_LINE), else 0."""
        if self.loop_marks is None:
            self.define(ins, self.cint(0))
            return
        self.define(ins, self.op(OP.OpLoad, self.t_i32, self._marks()[1]))

    # ------------------------------------------------------------------ blocks' code
    def code(self, b: int) -> None:
        insts = self.llblocks[b].instructions
        handlers = HANDLERS
        for ins in insts[:-1]:
            self.ins = ins
            h = handlers.get(type(ins))
            if h is None:
                h = handlers.get(ins.opname)
                if h is None:
                    raise self.error(f"LLVM instruction `{ins.opname}` not supported")
            try:
                h(self, ins)
            except (TranslateError, KeyboardInterrupt):
                raise
            except SpirvError as e:
                raise self.error(str(e)) from None
        self.ins = None

    def copy(self, src: int, dst: int) -> None:
        srcb = self.llblocks[src]
        for ins in self.llblocks[dst].instructions:
            if not isinstance(ins, ll.PhiInstr):
                break
            self.ins = ins
            inc = [v for v, blk in ins.incomings if blk is srcb]
            if not inc:
                raise self.error(f"phi has no incoming value for %{srcb.name}")
            var = self.phi_var(ins)
            self.stmt(OP.OpStore, var, self.val(inc[0]))
        self.ins = None

    def phi_var(self, phi) -> int:
        v = self.phivars.get(phi)
        if v is None:
            if isinstance(phi.type, ll.PointerType) and phi.type.addrspace != 0:
                raise self.error("a phi of pointers into variables is not supported", phi)
            v = self.phivars[phi] = self.function_var(self.ty(phi.type))
        return v

    def pointer(self, v):
        """Pointer `v` as a LocalPtr, or a global address as the id of an i64 value (to be
        passed through `use`)."""
        if isinstance(v, ll.GlobalVariable):
            return self.global_var(v)
        if isinstance(v, ll.Constant):
            if v.constant is None or v.constant is ll.Undefined:
                return self.m.const_int(self.t_i64, 0, 64)
            raise self.error(f"pointer constant {v} not supported")
        r = self.vals.get(v)
        if r is None:
            raise self.error(f"value {v.get_reference()} used before its definition")
        if isinstance(r, tuple):
            raise self.error("an aggregate used as a pointer")
        return r

    def global_var(self, g: ll.GlobalVariable) -> LocalPtr:
        """A module global: addrspace(3) is shared memory (a Workgroup variable); a constant
        in addrspace 0 (a table the isa layer made) is a Private variable initialised with
        it, which every invocation reads."""
        p = self.globals_.get(g.name)
        if p is not None:
            return p
        init = g.initializer
        undef = init is None or (isinstance(init, ll.Constant) and init.constant in (None, ll.Undefined))
        t = g.value_type
        if g.addrspace == 0 and g.global_constant and not undef:
            var = self.m.global_variable(self.ptr_type("Private", self.ty(t)), "Private", self.const(init))
            storage = "Private"
        elif g.addrspace == 3:
            if not undef:
                raise self.error(f"shared-memory global @{g.name} with an initializer")
            var = self.m.global_variable(self.ptr_type("Workgroup", self.ty(t)), "Workgroup")
            self.shared_bytes += alloc_size(t)
            storage = "Workgroup"
        else:
            raise self.error(f"global @{g.name} in address space {g.addrspace}: only shared memory "
                             "(addrspace(3)) and constant tables are supported")
        self.m.name(var, g.name)
        self.interface[var] = None
        p = self.globals_[g.name] = LocalPtr(var, storage, t, (), t)
        return p


def bool_type(tr, t: ll.Type) -> int:
    if isinstance(t, ll.VectorType):
        return tr.m.t_vector(tr.t_bool, t.count)
    return tr.t_bool


def splat(tr, t: ll.Type, value: int) -> int:
    """An integer constant of `t` (a vector: in every element)."""
    if isinstance(t, ll.VectorType):
        e = tr.const(ll.Constant(t.element, value & ((1 << t.element.width) - 1)))
        return tr.m.const_composite(tr.ty(t), [e] * t.count)
    return tr.const(ll.Constant(t, value & ((1 << t.width) - 1)))


def float_bits(t: ll.Type, x: float) -> int:
    if isinstance(t, ll.DoubleType):
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    if isinstance(t, ll.FloatType):
        return struct.unpack("<I", struct.pack("<f", x))[0]
    return struct.unpack("<H", struct.pack("<e", x))[0]


# handlers: LLVM instruction class or opname -> function(translator, instruction)
from .instructions import HANDLERS  # noqa: E402 (the table refers to this module's helpers)

__all__ = ["translate", "Shader", "FloatModes", "TranslateError", "GLSL"]
