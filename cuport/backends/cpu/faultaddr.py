"""The address a faulting kernel access used, where the OS does not say.

On x86-64 a load or store at a non-canonical address (bits 47..63 not all equal: p[2^40]
of a pointer near the top of user space, say) raises a general-protection fault, which
Linux reports as SIGSEGV with si_code SI_KERNEL and si_addr 0. The guard (guard.c) keeps
the registers and the XSAVE image of the fault; this module decodes the faulting
instruction (iced-x86) and computes its memory operand: base + index * scale +
displacement, or for a gather or scatter each active element's address, the first
non-canonical one answered.
"""

from __future__ import annotations

import ctypes
import platform

SI_KERNEL = 0x80
# ucontext's gregs (sys/ucontext.h, x86-64): REG_R8 .. REG_RIP
_GREGS = ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi", "rsi", "rbp", "rbx",
          "rdx", "rax", "rcx", "rsp", "rip"]
NGREG = 23
FP_CAP = 8192
# XSAVE components: 2 the upper halves of YMM0-15, 5 the opmask registers, 6 the upper
# halves of ZMM0-15, 7 ZMM16-31
_YMM_HI, _OPMASK, _ZMM_HI, _HI16_ZMM = 2, 5, 6, 7


def canonical(address: int) -> bool:
    top = address >> 47
    return top == 0 or top == (1 << 17) - 1


class _State:
    def __init__(self, lib, regs, fp: bytes) -> None:
        self.lib = lib
        self.gpr = {name: regs[i] for i, name in enumerate(_GREGS)}
        self.fp = fp
        bv = int.from_bytes(fp[512:520], "little") if len(fp) >= 520 else 0
        self.present = bv

    def _component(self, c: int, offset: int, size: int) -> bytes:
        if not self.present >> c & 1:
            return bytes(size)  # in its initial state: zero
        base = self.lib.cuport_xsave_offset(c)
        if base < 0 or base + offset + size > len(self.fp):
            raise LookupError(f"XSAVE component {c} is not in the fault's image")
        return self.fp[base + offset:base + offset + size]

    def vector(self, n: int) -> bytes:
        """The 64 bytes of zmm<n> (xmm/ymm are its low parts)."""
        if n >= 16:
            return self._component(_HI16_ZMM, 64 * (n - 16), 64)
        low = self.fp[160 + 16 * n:176 + 16 * n]
        return low + self._component(_YMM_HI, 16 * n, 16) + self._component(_ZMM_HI, 32 * n, 32)

    def opmask(self, n: int) -> int:
        return int.from_bytes(self._component(_OPMASK, 8 * n, 8), "little")


def _reg_name(ix, reg) -> str:
    return next(k for k, v in vars(ix.Register).items() if v == reg and not k.startswith("_"))


def reported(lib) -> bool:
    """Whether the OS gave the last fault's address (si_addr) on this thread."""
    regs = (ctypes.c_uint64 * NGREG)()
    size = ctypes.c_uint32()
    return lib.cuport_fault_state(regs, NGREG, None, 0, ctypes.byref(size)) != SI_KERNEL


def address(lib) -> int | None:
    """The address the last fault of this thread used, decoded; None where unknown."""
    regs = (ctypes.c_uint64 * NGREG)()
    fp = (ctypes.c_ubyte * FP_CAP)()
    size = ctypes.c_uint32()
    if lib.cuport_fault_state(regs, NGREG, fp, FP_CAP, ctypes.byref(size)) != SI_KERNEL:
        return None
    return decode(lib, list(regs), bytes(fp[:size.value]))


class WorkerFault(ctypes.Structure):
    """What a pool worker (runtime.c's struct fault) keeps of its share's fault: the
    signal (0: none), guard.c's si_code, address and machine state."""

    _fields_ = [("sig", ctypes.c_int32), ("code", ctypes.c_int32), ("fp_size", ctypes.c_uint32),
                ("pad", ctypes.c_uint32), ("where", ctypes.c_void_p),
                ("regs", ctypes.c_uint64 * NGREG), ("fp", ctypes.c_ubyte * FP_CAP)]


def decode(lib, regs: list[int], fp: bytes) -> int | None:
    """The address a fault with this machine state (gregs, XSAVE image) used; None where
    unknown."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        import iced_x86 as ix
    except ImportError:
        return None
    state = _State(lib, regs, fp)
    rip = state.gpr["rip"]
    try:
        code = ctypes.string_at(rip, 15)
    except (OSError, ValueError):
        return None
    ins = ix.Decoder(64, code, ip=rip).decode()
    if not any(ins.op_kind(i) == ix.OpKind.MEMORY for i in range(ins.op_count)):
        return None
    try:
        return _operand_address(ix, ins, state)
    except (LookupError, StopIteration):
        return None


def _operand_address(ix, ins, state: _State) -> int:
    if ins.is_ip_rel_memory_operand:
        return ins.ip_rel_memory_address
    base = 0
    if ins.memory_base != ix.Register.NONE:
        base = _gpr_value(ix, state, ins.memory_base)
    disp = ins.memory_displacement
    scale = ins.memory_index_scale
    mask64 = (1 << 64) - 1
    if ins.memory_index == ix.Register.NONE:
        return (base + disp) & mask64
    if not ins.is_vsib:
        return (base + _gpr_value(ix, state, ins.memory_index) * scale + disp) & mask64
    # a gather or scatter: one address per active element of the index vector
    name = _reg_name(ix, ins.memory_index)  # XMM3, YMM17, ZMM0 ...
    width = {"X": 16, "Y": 32, "Z": 64}[name[0]]
    vec = state.vector(int(name[3:]))[:width]
    step = 8 if ins.is_vsib64 else 4
    active = ~0
    if ins.op_mask != ix.Register.NONE:
        active = state.opmask(int(_reg_name(ix, ins.op_mask)[1:]))
    first = None
    for e in range(width // step):
        if not active >> e & 1:
            continue
        index = int.from_bytes(vec[e * step:(e + 1) * step], "little", signed=True)
        a = (base + index * scale + disp) & mask64
        if first is None:
            first = a
        if not canonical(a):
            return a
    if first is None:
        raise LookupError("no active element")
    return first


def _gpr_value(ix, state: _State, reg) -> int:
    info = ix.RegisterInfo(reg)
    full = _reg_name(ix, info.full_register).lower()
    return state.gpr[full] & ((1 << (8 * info.size)) - 1)
