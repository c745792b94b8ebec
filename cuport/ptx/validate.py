"""Check a parsed PTX module as ptxas checks it, before anything is compiled or allocated.

cuport's compiler assumes well-formed PTX; the GPU's driver refuses the rest with
CUDA_ERROR_INVALID_PTX and ptxas' messages. This pass stands between the parser and the
compiler and says what ptxas says, naming the PTX line: directives and their ranges
(`.version`, `.target`, `.address_size`, `.align` a power of two), declarations (every
register and symbol used is declared, once), labels (defined once, branched to only
where they exist), instruction names and modifiers, instruction types, operand counts,
kinds and types (the operand-type rules of the PTX ISA, section 6.4, measured against
ptxas 13.0 where the manual is vague: a `.b32` instruction takes any 32-bit register,
`.u32` integer and bit registers, `.f32` float and bit ones; `ld`, `st` and `cvt` accept
wider registers), vector widths, immediates that cannot be 64-bit, and resource sizes
(array dimensions, 64 KiB of `.const`, 48 KiB of static `.shared` per kernel).

Sizes are checked from the declarations, before any memory proportional to them is
allocated: a `.global` array larger than the machine's memory is CUDA_ERROR_OUT_OF_MEMORY
here, not a failed allocation later.

Instruction forms are a table (`FORMS`): for each opcode the types it takes, its
modifiers in groups of alternatives, and its operand signatures. Opcodes the table does
not describe get the checks every instruction gets (known name, known modifiers,
declared operands). What ptxas accepts must pass: the checks err on the side of
accepting, and the suites of real compiler output (nvcc, NVRTC, numba-cuda) guard that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import ir
from .lexer import OVERFLOW, PtxSyntaxError

CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222

#: How each kind of problem reads in the JIT's log: its severity word, and whether it is an
#: assembler's error (the log then ends "Ptx assembly aborted due to errors"). Recorded on an
#: H200 (tests/ptx/gpu/h200_ptx_errors.json): resource limits are checked after assembly and
#: reported with no line and no closing line, only when nothing else was wrong; an
#: unsupported .version is one line on its own.
KINDS = {"error": ("error", True), "fatal": ("fatal", True), "resource": ("error", False),
         "version": ("fatal", False)}

#: Problems reported at most (ptxas goes on too, then gives up).
MAX_PROBLEMS = 20


class PtxError(PtxSyntaxError):
    """Invalid PTX: the first problem as the message, all of them in `log` (ptxas' format);
    `kinds` says how each reads there (KINDS; "error" for all when not given)."""

    def __init__(self, problems: list[tuple[int, str, str]], code: int = CUDA_ERROR_INVALID_PTX,
                 kinds: list[str] | None = None):
        line, message, text = problems[0]
        super().__init__(message, line, text)
        self.problems = problems
        self.kinds = kinds or ["error"] * len(problems)
        self.code = code
        more = len(problems) - 1
        self.summary = str(self) + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")

    @property
    def log(self) -> str:
        """What NVIDIA's JIT writes into CU_JIT_ERROR_LOG_BUFFER."""
        if self.code == CUDA_ERROR_OUT_OF_MEMORY:  # nothing: the H200's log stays empty
            return ""
        if self.code not in (CUDA_ERROR_INVALID_PTX, CUDA_ERROR_UNSUPPORTED_PTX_VERSION):
            return "\n".join(f"error   : {msg}" for _, msg, _ in self.problems)
        out = []
        for (line, msg, _), kind in zip(self.problems, self.kinds, strict=True):
            word = KINDS[kind][0]
            out.append(f"ptxas application ptx input, line {line}; {word}   : {msg}" if line
                       else f"ptxas {word}   : {msg}")
        if any(KINDS[k][1] for k in self.kinds):
            out.append("ptxas fatal   : Ptx assembly aborted due to errors")
        return "\n".join(out)


def syntax_log(e: PtxSyntaxError) -> str:
    """The JIT log of a parse error, in ptxas' words."""
    return (f"ptxas application ptx input, line {e.line}; {e.severity}   : {e.message}\n"
            "ptxas fatal   : Ptx assembly aborted due to errors")


@dataclass
class Limits:
    """Resource limits of the device the module is loaded for."""

    global_bytes: int = 0  # 0: the machine's physical memory
    const_bytes: int = 64 * 1024  # per module (ptxas: "File uses too much global constant data")
    #: per kernel ("uses too much shared data"): ptxas allows 48 KiB, but the H200's JIT loads
    #: and launches a kernel with 60000 bytes (recorded); a block can have 227 KiB in all
    static_shared_bytes: int = 227 * 1024

    def global_limit(self) -> int:
        if self.global_bytes:
            return self.global_bytes
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return 1 << 40


# ------------------------------------------------------------------ directives

#: PTX ISA versions ptxas 13.0 knows.
KNOWN_VERSIONS = frozenset(
    [(1, m) for m in range(6)] + [(2, m) for m in range(4)] + [(3, m) for m in range(3)]
    + [(4, m) for m in range(4)] + [(5, m) for m in range(2)] + [(6, m) for m in range(6)]
    + [(7, m) for m in range(9)] + [(8, m) for m in range(9)] + [(9, 0)])
#: Newer versions of the current major are accepted (cuport translates PTX: what it
#: implements runs, what it does not is refused by name when compiled).
NEWEST_MAJOR = 9
#: Each target and the first PTX ISA version that knows it (PTX ISA, "PTX Module Directives:
#: .target"); the a/f variants need what their base needs, or the version given.
TARGET_VERSION = {
    "sm_10": (1, 0), "sm_11": (1, 0), "sm_12": (1, 2), "sm_13": (1, 2), "sm_20": (2, 0),
    "sm_21": (2, 0), "sm_30": (3, 0), "sm_32": (4, 0), "sm_35": (3, 1), "sm_37": (4, 1),
    "sm_50": (4, 0), "sm_52": (4, 1), "sm_53": (4, 2), "sm_60": (5, 0), "sm_61": (5, 0),
    "sm_62": (5, 0), "sm_70": (6, 0), "sm_72": (6, 1), "sm_75": (6, 3), "sm_80": (7, 0),
    "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (9, 0), "sm_89": (7, 8), "sm_90": (7, 8),
    "sm_90a": (8, 0), "sm_100": (8, 6), "sm_100a": (8, 6), "sm_100f": (8, 8), "sm_101": (8, 6),
    "sm_101a": (8, 6), "sm_101f": (8, 8), "sm_103": (8, 8), "sm_103a": (8, 8),
    "sm_103f": (8, 8), "sm_110": (9, 0), "sm_110a": (9, 0), "sm_110f": (9, 0),
    "sm_120": (8, 7), "sm_120a": (8, 7), "sm_120f": (8, 8), "sm_121": (8, 8),
    "sm_121a": (8, 8), "sm_121f": (8, 8),
}
TARGET_OPTIONS = frozenset({"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"})

# ------------------------------------------------------------------ types

_BITS = ir.TYPE_BITS
#: How a register of each declared type may be used: b(its), i(nteger), f(loat), p(redicate).
#: A `.f16x2` register is a 32-bit bit register to ptxas (it takes `.u32` instructions).
_REG_KIND = {"pred": "p", "f16": "f", "f32": "f", "f64": "f", "f16x2": "b"}
REG_TYPES = frozenset({"pred", "b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64",
                       "s8", "s16", "s32", "s64", "f16", "f16x2", "f32", "f64"})

INT = frozenset({"u16", "u32", "u64", "s16", "s32", "s64"})
SINT = frozenset({"s16", "s32", "s64"})
BITS = frozenset({"b16", "b32", "b64"})
FLT = frozenset({"f32", "f64"})
HALF = frozenset({"f16", "f16x2", "bf16", "bf16x2"})
PAIRS = frozenset({"u16x2", "s16x2"})  # min/max on two 16-bit halves (sm_90)
INT32 = frozenset({"u32", "s32", "u64", "s64"})
B32 = frozenset({"b32"})
B3264 = frozenset({"b32", "b64"})
# ld/ldu/st: no half types (a half is moved as .b16, a pair as .b32; ptxas: "Unexpected
# instruction types specified for 'ld'")
MEM_TYPES = frozenset({"b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64", "s8", "s16",
                       "s32", "s64", "f32", "f64"})
ALL_TYPES = frozenset(ir.TYPE_BITS) | {"s4", "u4", "s2", "u2", "u16x2", "s16x2", "e2m1x2", "e3m2x2", "e2m3x2",
                                       "ue8m0x2", "e4m3", "e5m2", "e2m1", "e3m2", "e2m3",
                                       "ue8m0", "b1", "f8f6f4", "e4m3x4", "e5m2x4", "e2m1x4"} | PAIRS


def _kind(t: str) -> str:
    return _REG_KIND.get(t, "b" if t[0] == "b" else "i")


def reg_fits(rtype: str, itype: str, relaxed: bool = False) -> bool:
    """May a register declared `.rtype` be an operand of a `.itype` instruction?"""
    if itype in PAIRS:  # (not in _BITS: two 16-bit halves of a 32-bit register)
        return rtype == "b32" or (relaxed and _kind(rtype) == "b" and _BITS.get(rtype, 0) >= 32)
    if not itype or itype not in _BITS:
        return True  # no instruction type to hold the register to
    if itype == "pred" or rtype == "pred":
        return itype == rtype
    rk, rs = _kind(rtype), _BITS.get(rtype, 0)
    n = _BITS.get(itype, 0)
    k = itype[0]
    if itype in ("f16x2", "bf16x2"):
        return rtype in ("b32", "f16x2") or (relaxed and rk == "b" and rs >= 32)
    if itype == "bf16":
        return rtype in ("b16", "f16") or (relaxed and rk == "b" and rs >= 16)
    if not relaxed:
        if rs != n:
            return False
        if k == "b":
            return True
        if k in "us":
            return rk in "bi"
        return rk in "bf"  # f16, f32, f64, tf32
    # ld destinations, st sources, cvt operands: wider registers too
    if rs < n:
        return False
    if k == "b":
        return True
    if k in "us":
        return rk in "bi"
    if itype == "f16":
        return rtype == "f16" or rk == "b"
    return rtype == itype or rk == "b"


# ------------------------------------------------------------------ the instruction table

CMP = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu",
                 "leu", "gtu", "geu", "num", "nan"})
BOOL = frozenset({"and", "or", "xor"})
RND_F = frozenset({"rn", "rz", "rm", "rp", "rna", "rs"})
RND_I = frozenset({"rni", "rzi", "rmi", "rpi"})
SPACES = frozenset({"global", "shared", "local", "const", "param", "shared::cta", "shared::cluster",
                    "param::entry", "param::func", "generic"})
SCOPES = frozenset({"cta", "gpu", "sys", "cluster"})
ORDERS = frozenset({"relaxed", "acquire", "release", "acq_rel", "sc", "volatile", "weak",
                    "mmio"})
CACHE = frozenset({"ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc"})
VEC = frozenset({"v2", "v4", "v8"})


@dataclass(frozen=True)
class Form:
    """What one opcode takes.

    `sigs`: operand signatures, one letter an operand (a trailing `?` makes the rest
    optional): d destination of the instruction's type, D the same or wider (ld), w of
    twice its width, p predicate destination (`p|q` allowed), a source of the type
    (register or immediate), A the same or wider (st), c of twice the width, u a .u32
    source, q predicate source (`!p` allowed), m address, l label, s anything a mov
    reads (register, immediate, special register, symbol), x anything.
    `groups`: modifiers other than types, each group a set of alternatives.
    """

    types: frozenset
    sigs: tuple[str, ...]
    groups: tuple[frozenset, ...] = ()
    ntypes: int = 1
    specials: bool = False  # special registers allowed as sources
    symbols: bool = False  # symbols (variable or function addresses) allowed as sources


def _g(*names: str) -> frozenset:
    return frozenset(names)


FORMS: dict[str, Form] = {
    "add": Form(INT | FLT | HALF | PAIRS, ("daa",), (_g("sat"), _g("cc"), RND_F, _g("ftz"))),
    "sub": Form(INT | FLT | HALF, ("daa",), (_g("sat"), _g("cc"), RND_F, _g("ftz"))),
    "addc": Form(INT32, ("daa",), (_g("cc"),)),
    "subc": Form(INT32, ("daa",), (_g("cc"),)),
    "mul": Form(INT | FLT | HALF, ("daa",), (_g("lo", "hi", "wide"), RND_F, _g("ftz"), _g("sat"))),
    "mad": Form(INT | FLT, ("daaa",), (_g("lo", "hi", "wide"), _g("cc"), _g("sat"), RND_F,
                                       _g("ftz"))),
    "madc": Form(INT32, ("daaa",), (_g("lo", "hi"), _g("cc"))),
    "mul24": Form(_g("u32", "s32"), ("daa",), (_g("lo", "hi"),)),
    "mad24": Form(_g("u32", "s32"), ("daaa",), (_g("lo", "hi"), _g("sat"))),
    "sad": Form(INT, ("daaa",)),
    "fma": Form(FLT | HALF, ("daaa",), (RND_F, _g("ftz"), _g("sat"), _g("relu"), _g("oob"))),
    "div": Form(INT | FLT, ("daa",), (RND_F | _g("approx", "full"), _g("ftz"))),
    "rem": Form(INT, ("daa",)),
    "abs": Form(SINT | FLT | HALF, ("da",), (_g("ftz"),)),
    "neg": Form(SINT | FLT | HALF, ("da",), (_g("ftz"),)),
    "min": Form(INT | FLT | HALF | PAIRS, ("daa", "daaa"), (_g("ftz"), _g("NaN"), _g("xorsign"), _g("abs"),
                                                    _g("relu"))),
    "max": Form(INT | FLT | HALF | PAIRS, ("daa", "daaa"), (_g("ftz"), _g("NaN"), _g("xorsign"), _g("abs"),
                                                    _g("relu"))),
    "and": Form(BITS | _g("pred"), ("daa",)),
    "or": Form(BITS | _g("pred"), ("daa",)),
    "xor": Form(BITS | _g("pred"), ("daa",)),
    "not": Form(BITS | _g("pred"), ("da",)),
    "cnot": Form(BITS, ("da",)),
    "shl": Form(BITS, ("dau",)),
    "shr": Form(BITS | INT, ("dau",)),
    "popc": Form(B3264, ("Ua",)),
    "clz": Form(B3264, ("Ua",)),
    "brev": Form(B3264, ("da",)),
    "bfind": Form(INT32, ("Ua",), (_g("shiftamt"),)),
    "bfe": Form(INT32, ("dauu",)),
    "bfi": Form(B3264, ("daauu",)),
    "prmt": Form(B32, ("daaa",), (_g("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"),)),
    "lop3": Form(B32, ("daaai", "Xaaaiq"), (BOOL,)),  # lop3.or.b32 d|p, a, b, c, lut, q
    "copysign": Form(FLT, ("daa",)),
    "rcp": Form(FLT, ("da",), (RND_F | _g("approx"), _g("ftz"))),
    "sqrt": Form(FLT, ("da",), (RND_F | _g("approx"), _g("ftz"))),
    "rsqrt": Form(FLT, ("da",), (_g("approx"), _g("ftz"))),
    "sin": Form(_g("f32"), ("da",), (_g("approx"), _g("ftz"))),
    "cos": Form(_g("f32"), ("da",), (_g("approx"), _g("ftz"))),
    "lg2": Form(_g("f32"), ("da",), (_g("approx"), _g("ftz"))),
    "ex2": Form(_g("f32") | HALF, ("da",), (_g("approx"), _g("ftz"))),
    "tanh": Form(_g("f32") | HALF, ("da",), (_g("approx"),)),
    "testp": Form(FLT, ("pa",), (_g("finite", "infinite", "number", "notanumber", "normal",
                                   "subnormal"),)),
    "setp": Form(INT | BITS | FLT | HALF, ("Paa", "Paaq"), (CMP, BOOL, _g("ftz"))),
    "selp": Form(INT | BITS | FLT, ("daaq",)),
    "mov": Form(INT | BITS | FLT | _g("pred", "b128"), ("ds",), specials=True, symbols=True),
    "ld": Form(MEM_TYPES, ("Dm", "Dmy"), (), specials=False),
    "ldu": Form(MEM_TYPES, ("Dm",), ()),
    "st": Form(MEM_TYPES, ("mA", "mAy"), ()),
    "cvta": Form(_g("u32", "u64"), ("da",), (_g("to"),), symbols=True),
    "cvt": Form(INT | FLT | HALF | _g("u8", "s8", "tf32"), ("DA",),
                (RND_F | RND_I, _g("ftz"), _g("sat"), _g("relu"), _g("satfinite"), _g("pack")),
                ntypes=2, specials=True),
    "bra": Form(frozenset(), ("l",), (_g("uni"),)),
    "ret": Form(frozenset(), ("",), (_g("uni"),)),
    "exit": Form(frozenset(), ("",)),
    "trap": Form(frozenset(), ("",)),
    "brkpt": Form(frozenset(), ("",)),
    "activemask": Form(B32, ("d",)),
    "nanosleep": Form(_g("u32"), ("a",)),
    "isspacep": Form(frozenset(), ("px",), (SPACES,)),
    "shfl": Form(B32, ("Xakkk", "Xakk"), (_g("sync"), _g("up", "down", "bfly", "idx"))),
}

#: Every opcode of the PTX ISA (9.0); an instruction named otherwise is refused.
OPCODES = frozenset(FORMS) | {
    "alloca", "applypriority", "atom", "bar", "barrier", "bmsk", "brx", "call", "clusterlaunchcontrol",
    "cp", "createpolicy", "discard", "dp2a", "dp4a", "elect", "fence", "fns", "getctarank",
    "griddepcontrol", "istypep", "ldmatrix", "mapa", "match", "mbarrier", "membar", "mma",
    "movmatrix", "multimem", "pmevent", "prefetch", "prefetchu", "red", "redux", "set",
    "setmaxnreg", "shf", "slct", "stackrestore", "stacksave", "stmatrix", "suld", "suq", "sured",
    "sust", "szext", "tcgen05", "tensormap", "tex", "tld4", "txq", "vabsdiff", "vabsdiff2",
    "vabsdiff4", "vadd", "vadd2", "vadd4", "vavrg2", "vavrg4", "vmad", "vmax", "vmax2", "vmax4",
    "vmin", "vmin2", "vmin4", "vote", "vset", "vset2", "vset4", "vshl", "vshr", "vsub", "vsub2",
    "vsub4", "wgmma", "wmma", "branchtargets", "cvt", "ldu", "st",
}

#: Modifiers of the opcodes FORMS does not describe, and of those it does (state spaces,
#: orders, cache operators...): anything else is an unknown modifier, as to ptxas.
_KNOWN_MODS = (
    set(ALL_TYPES) | CMP | BOOL | RND_F | RND_I | SPACES | SCOPES | ORDERS | CACHE | VEC | {
        "sat", "cc", "ftz", "lo", "hi", "wide", "approx", "full", "NaN", "xorsign", "abs",
        "relu", "oob", "uni", "to", "sync", "arrive", "red", "popc", "aligned", "warp", "up",
        "down", "bfly", "idx", "any", "all", "ballot", "add", "inc", "dec", "min", "max", "exch",
        "cas", "and", "or", "xor", "gl", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16", "shiftamt",
        "finite", "infinite", "number", "notanumber", "normal", "subnormal", "l", "r", "clamp",
        "wrap", "satfinite", "pack", "noftz", "1d", "2d", "3d", "a1d", "a2d", "cube", "acube",
        "2dms", "a2dms", "level", "grad", "base", "trap", "zero", "b", "p", "width", "height",
        "depth", "channel_data_type", "channel_order", "normalized_coords", "filter_mode",
        "addr_mode_0", "addr_mode_1", "addr_mode_2", "force_unnormalized_coords",
        "array_size", "num_mipmap_levels", "num_samples", "x", "y", "z", "w", "async", "bulk",
        "commit_group", "wait_group", "wait_all", "mbarrier", "complete_tx", "bytes",
        "expect_tx", "init", "inval", "arrive_drop", "test_wait", "try_wait", "pending_count",
        "parity", "noinc", "row", "col", "m16n16k16", "m32n8k16", "m8n32k16", "m16n16k8",
        "m8n8k4", "m8n8k16", "m16n8k8", "m16n8k16", "m16n8k32", "m16n8k4", "m8n8k32",
        "m8n8k128", "m16n8k64", "m16n8k128", "m16n8k256", "load", "store", "a", "c", "d",
        "kind", "ordered", "unordered", "reserved", "nc", "L2", "L1", "uniform", "release",
        "leader", "exclusive", "shared", "buffer", "acquire", "launch_dependents", "wait",
        "prefetch", "evict_last", "evict_first", "evict_normal", "evict_unchanged",
        "no_allocate", "trans", "num", "x1", "x2", "x4", "m8n8", "m16n16", "m8n16", "sp", "alias", "proxy", "tensormap", "async_proxy", "generic", "mmio", "op_restrict",
        "sync_restrict", "tile", "im2col", "read", "write", "ignore_oob", "sem", "is_canonical",
        "one", "unified", "tf32", "block_scale", "scale_vec", "transpose", "v16",
        "s32", "dp4a", "dp2a", "elect", "activemask", "frnd", "s8", "u8", "mma", "u16x2",
        "s16x2", "absdiff", "avrg", "secop", "fractional", "range", "replace", "ss", "noComplete",
        "b1024", "ld_reduce", "mma_async", "fence", "b0", "b1", "b2", "b3", "h0", "h1",
        "texref", "samplerref", "surfref", "stride", "multicast", "tensor", "4d", "5d", "shift",
        "collector", "ws", "cta_group", "alloc", "dealloc", "relinquish_alloc_permit", "ld", "st",
        "cp", "commit", "wait_recent", "uint", "sint", "nan", "inf", "trunc",
    })

#: What ld, ldu and st take besides their type and state space (`.L2::cache_hint` and the
#: other `X::Y` forms are taken as they come).
_MEMORY_MODS = VEC | ORDERS | SCOPES | CACHE | {"unified", "ss"}

#: What atom and red take besides their operation and type.
_ATOM_MODS = SPACES | SCOPES | {"relaxed", "acquire", "release", "acq_rel", "noftz", "v2", "v4",
                                "v8", "add", "inc", "dec", "and", "or", "xor", "exch", "cas",
                                "min", "max"}

#: Opcodes whose modifiers are too many to list (tensor memory, asynchronous copies, matrix
#: instructions, textures): their modifiers are not checked against the vocabulary.
UNCHECKED_MODS = frozenset({
    "tcgen05", "wgmma", "mma", "wmma", "cp", "multimem", "tensormap", "clusterlaunchcontrol",
    "ldmatrix", "stmatrix", "movmatrix", "mbarrier", "barrier", "fence", "griddepcontrol",
    "createpolicy", "applypriority", "discard", "prefetch", "prefetchu", "suld", "sust", "sured",
    "suq", "tex", "tld4", "txq", "istypep", "elect", "setmaxnreg", "red", "atom", "st", "ld",
    "cvt", "vabsdiff", "vadd", "vsub", "vmad", "vmax", "vmin", "vset", "vshl", "vshr",
    "vabsdiff2", "vabsdiff4", "vadd2", "vadd4", "vavrg2", "vavrg4", "vmax2", "vmax4", "vmin2",
    "vmin4", "vset2", "vset4", "vsub2", "vsub4", "redux", "match", "bmsk", "szext", "getctarank",
    "mapa", "stackrestore", "stacksave", "alloca", "pmevent",
})


#: instructions none of whose modifiers but types may be given twice (ptxas: cvta.to.global.to
#: is "Unknown modifier '.to'"); not the matrix families, whose layouts repeat
_NO_REPEATS = frozenset({"cvta", "isspacep", "ld", "ldu", "st", "mov", "cvt"})


def _known_mod(m: str) -> bool:
    return m in _KNOWN_MODS or "::" in m


# ------------------------------------------------------------------ the checks


@dataclass
class _State:
    problems: list[tuple[int, str, str]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    code: int = CUDA_ERROR_INVALID_PTX

    def add(self, line: int, message: str, text: str = "", code: int = CUDA_ERROR_INVALID_PTX,
            kind: str = "error"):
        if len(self.problems) < MAX_PROBLEMS:
            if not self.problems:
                self.code = code
            self.problems.append((line, message, text))
            self.kinds.append(kind)

    def error(self) -> PtxError:
        """The problems as the JIT reports them: resource limits only when nothing else is
        wrong, after the rest."""
        order = sorted(range(len(self.problems)), key=lambda i: self.kinds[i] == "resource")
        if any(self.kinds[i] != "resource" for i in order):
            order = [i for i in order if self.kinds[i] != "resource"]
        first = order[0]
        code = self.code if first == 0 else CUDA_ERROR_INVALID_PTX
        if self.kinds[first] == "version":
            code = CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        return PtxError([self.problems[i] for i in order], code, [self.kinds[i] for i in order])


def validate(module: ir.Module, limits: Limits | None = None) -> None:
    """Raise PtxError naming every problem (up to MAX_PROBLEMS) ptxas would report."""
    st = _State()
    limits = limits or Limits()
    _check_module(module, st, limits)
    symbols = {v.name: v for v in module.variables}
    for fn in _functions(module):
        _check_function(module, fn, symbols, st, limits)
    if st.problems:
        raise st.error()


def _functions(module: ir.Module) -> list[ir.Function]:
    seen: set[int] = set()
    out = []
    for f in module.functions.values():
        if id(f) not in seen:
            seen.add(id(f))
            out.append(f)
    return out


def _check_module(module: ir.Module, st: _State, limits: Limits) -> None:
    v = module.version
    if v not in KNOWN_VERSIONS and not (v[0] == NEWEST_MAJOR and v[1] > 0):
        st.add(module.lines.get(".version", 1),
               f"Unsupported .version {v[0]}.{v[1]}; current version is '9.0'", kind="version")
    targets = [t for t in module.target if t not in TARGET_OPTIONS]
    for t in module.target:
        if t in TARGET_OPTIONS:
            continue
        if t.startswith("compute_"):
            t = "sm_" + t[len("compute_"):]
        need = TARGET_VERSION.get(t)
        if need is None:
            st.add(module.lines.get(".target", 2), f"Unsupported .target '{t}'")
        elif v in KNOWN_VERSIONS and v < need:
            st.add(module.lines.get(".target", 2),
                   f"PTX .version {v[0]}.{v[1]} does not support .target {t}")
    if len(targets) > 1:
        st.add(module.lines.get(".target", 2), "Only one SM target is allowed in a .target directive")
    if "debug" in module.target and not module.has_debug_sections:
        st.add(0, "Debug information not found in presence of .target debug")
    if module.address_size != 64:
        if module.address_size == 32:
            st.add(module.lines.get(".address_size", 3),
                   "32-Bit ABI (--machine 32 or 32-Bit addressing) is not supported by cuport")
        else:
            st.add(module.lines.get(".address_size", 3),
                   "Illegal value for .address_size directive (must be 32 or 64)")
    names: dict[str, str] = {}
    const_total = 0
    for var in module.variables:
        prev = names.get(var.name)
        if prev is not None and var.linkage not in ("extern", "weak", "common") and prev != "decl":
            st.add(var.line, f"Duplicate definition of variable '{var.name}'")
        names[var.name] = "decl" if var.linkage == "extern" else "def"
        size = _check_variable(var, st, module_scope=True)
        if var.space == "const" and var.linkage != "extern":  # laid out as ptxas does, aligned
            align = var.alignment if isinstance(var.alignment, int) and var.alignment > 0 else 1
            const_total = -(-const_total // align) * align + size
        if var.space == "global" and size > limits.global_limit():
            st.add(var.line, f"the .global variable '{var.name}' needs {size} bytes, more than "
                   f"this machine's {limits.global_limit()} bytes of memory",
                   code=CUDA_ERROR_OUT_OF_MEMORY)
    known = {v.name for v in module.variables} | set(module.functions)
    for var in module.variables:
        for x in var.init or ():
            if isinstance(x, ir.SymAddr) and x.name not in known:
                st.add(var.line, f"Invalid initial value symbol '{x.name}'")
                break
    if const_total > limits.const_bytes:
        st.add(0, f"File uses too much global constant data (0x{const_total:x} bytes, "
               f"0x{limits.const_bytes:x} max)", kind="resource")
    for name, f in module.functions.items():
        if name in names and f.name == name:
            st.add(f.line, f"Inconsistent redefinition of symbol '{name}'")


def _check_variable(var: ir.Var, st: _State, module_scope: bool) -> int:
    """Check a declaration; return its size in bytes (0 when it cannot be known)."""
    if var.align and var.align & (var.align - 1):
        st.add(var.line, "Alignment must be a power of two")
    if var.align < 0:
        st.add(var.line, "Alignment must be a power of two")
    if var.type == "pred" and var.space != "reg":
        st.add(var.line, f"Predicate variable '{var.name}' must be in register state space")
    if var.vector > 1:
        if var.vector not in (2, 4):
            st.add(var.line, f"Illegal vector size: {var.vector}")
        elif var.elem_bytes > 16:
            st.add(var.line, "Vector type too large, exceeds 128 bit limit")
    if module_scope and var.space == "local":
        st.add(var.line, "Module-scoped variables in .local state space are not allowed with ABI")
    if var.space in ("shared", "local") and var.init is not None:
        st.add(var.line, f"No initial value is allowed for '{var.name}' in this state space")
    n = 1
    for i, d in enumerate(var.dims):
        if d is None:
            if i != len(var.dims) - 1 or (var.linkage != "extern" and var.init is None):
                st.add(var.line, f"Non-external variable '{var.name}' has incomplete type")
            n = 0
            continue
        if d == OVERFLOW:
            st.add(var.line, "Constant overflow")
            n = 0
            continue
        if d <= 0 or d >= 1 << 64:
            st.add(var.line, f"Non-external variable '{var.name}' has incomplete type")
            n = 0
            continue
        n *= d
    size = n * (var.elem_bytes if var.type in _BITS else 0)
    if var.init is not None:
        _check_init(var, n, st)
    return size


def _check_init(var: ir.Var, n: int, st: _State) -> None:
    per = var.vector
    if n and len(var.init) > n * per:
        st.add(var.line, "Greater number of elements in array initializer")
    is_float = var.type in ("f32", "f64", "f16", "bf16")
    for x in var.init:
        if isinstance(x, ir.SymAddr):
            continue
        if isinstance(x, float):
            if not is_float:
                st.add(var.line, "Initial value type mismatch")
                return
        elif isinstance(x, ir.FImm):
            continue
        elif isinstance(x, int):
            if is_float:
                st.add(var.line, "Initial value type mismatch")
                return
            if not -(1 << 63) <= x < 1 << 64:
                st.add(var.line, "Constant overflow")
                return


def _check_function(module: ir.Module, fn: ir.Function, symbols: dict[str, ir.Var], st: _State,
                    limits: Limits) -> None:
    names: set[str] = set()
    for p in (*fn.params, *fn.rets):
        if p.name in names:
            st.add(p.line or fn.line, f"Duplicate definition of variable '{p.name}'")
        if fn.is_entry and p.space != "param":
            st.add(p.line or fn.line, f"Entry parameter '{p.name}' must have .param state space")
        names.add(p.name)
        _check_variable(p, st, module_scope=False)
    for dims, what in ((fn.maxntid, "maxntid"), (fn.reqntid, "reqntid")):
        if dims is not None:
            if len(dims) > 3:
                st.add(fn.line, f"at most 3 dimensions for .{what}")
            if any(d <= 0 for d in dims):
                st.add(fn.line, f"Positive non-zero value expected for {what}")
    if fn.is_entry:  # laid out aligned; every ptxas refuses more than 32764 bytes
        off = 0
        for p in fn.params:
            a = max(p.alignment, 1)
            off = -(-off // a) * a + _size(p)
        if off > 0x7FFC:
            st.add(fn.line, f"Entry function '{fn.name}' uses too much parameter space "
                   f"(0x{off:x} bytes, 0x7ffc max).", kind="resource")
    if fn.minnctapersm is not None and fn.minnctapersm <= 0:
        st.add(fn.line, "Positive non-zero value expected for minnctapersm")
    if fn.body is None:
        return
    local_names: dict[str, ir.Var] = {}
    for v in fn.locals:
        if v.name in local_names or v.name in names:
            st.add(v.line, f"Duplicate definition of variable '{v.name}'")
        local_names[v.name] = v
        _check_variable(v, st, module_scope=False)
    labels: dict[str, int] = {}
    for s in fn.body:
        if isinstance(s, ir.Label):
            if s.name in labels:
                st.add(s.line, f"Duplicate definition of label '{s.name}'")
            labels[s.name] = s.line
        elif s.op == "branchtargets":
            labels[s.args[0].name] = s.line
    for name, line in fn.undeclared.items():
        if name in fn.regs:  # declared, but after this use
            st.add(line, f"Unknown symbol '{name}'")
    ctx = _Context(module, fn, symbols, local_names, {p.name: p for p in (*fn.params, *fn.rets)},
                   labels, st)
    for s in fn.body:
        if isinstance(s, ir.Instr):
            ctx.check(s)
    if fn.is_entry:
        _check_shared(module, fn, st, limits)


def _check_shared(module: ir.Module, fn: ir.Function, st: _State, limits: Limits) -> None:
    """Static shared memory of a kernel: its own, its callees' and the module's it uses."""
    used: set[str] = set()
    seen: set[str] = set()
    work = [fn]
    total = 0
    while work:
        f = work.pop()
        if f.name in seen or f.body is None:
            continue
        seen.add(f.name)
        for v in f.locals:
            if v.space == "shared" and v.dims[-1:] != (None,):
                total += _size(v)
        for s in f.body:
            if isinstance(s, ir.Instr):
                for name in ir.symbols_named(s.args):
                    used.add(name)
                    g = module.functions.get(name)
                    if g is not None:
                        work.append(g)
    for v in module.variables:
        if v.space == "shared" and v.name in used and v.linkage != "extern" and v.dims[-1:] != (None,):
            total += _size(v)
    if total > limits.static_shared_bytes:
        st.add(0, f"Entry function '{fn.name}' uses too much shared data (0x{total:x} bytes, "
               f"0x{limits.static_shared_bytes:x} max)", kind="resource")


def _size(v: ir.Var) -> int:
    n = 1
    for d in v.dims:
        if d is None or d <= 0 or d >= 1 << 64:
            return 0
        n *= d
    return n * v.elem_bytes


def _types_of(mods: tuple[str, ...]) -> list[str]:
    return [m for m in mods if m in ALL_TYPES]


class _Context:
    """Checks the instructions of one function."""

    def __init__(self, module, fn, symbols, local_vars, params, labels, st: _State) -> None:
        self.module = module
        self.fn = fn
        self.regs = fn.regs
        self.symbols = symbols
        self.local_vars = local_vars
        self.params = params
        self.labels = labels
        self.st = st
        self.ins: ir.Instr | None = None
        self.good: set = set()  # instruction shapes already found good

    def rtype(self, name: str) -> str:
        """The declared type of a register; `%r1.b0123` (a video instruction's byte
        selectors) is %r1's."""
        t = self.regs.get(name)
        if t is None and "." in name:
            t = self.regs.get(name.split(".", 1)[0])
        return t or "?"

    def bad(self, message: str) -> None:
        ins = self.ins
        self.st.add(ins.line, message, ins.text())

    # -------------------------------------------------------------- one instruction
    def check(self, ins: ir.Instr) -> None:
        """Check one instruction. nvcc's PTX repeats a few shapes (opcode, modifiers, operand
        kinds and register types) thousands of times: a shape found good once is good."""
        key = self.shape(ins)
        if key is not None and key in self.good:
            return
        before = len(self.st.problems)
        self.check_once(ins)
        if key is not None and len(self.st.problems) == before:
            self.good.add(key)

    def shape(self, ins: ir.Instr):
        regs = self.regs
        parts: list = [ins.op, ins.mods, regs.get(ins.guard.name, "?") if ins.guard else None]
        for a in ins.args:
            if isinstance(a, ir.Reg):
                parts.append(regs.get(a.name, "?"))
            elif isinstance(a, ir.Imm):
                if not -(1 << 32) < a.value < 1 << 32:
                    return None
                v = a.value
                parts.append(("i", v if ins.op in ("bar", "barrier") or v in (0, 1) else v > 1))
            elif isinstance(a, ir.Mem) and isinstance(a.base, ir.Reg) and -(1 << 32) < a.offset < 1 << 32:
                parts.append(("m", regs.get(a.base.name, "?")))
            elif isinstance(a, ir.FImm):
                parts.append(("f", a.width))
            elif isinstance(a, ir.Special):
                parts.append(a.name)
            else:
                return None
        return tuple(parts)

    def check_once(self, ins: ir.Instr) -> None:
        self.ins = ins
        op = ins.op
        if op == "branchtargets":
            for t in ins.args[1:]:
                self.label(t)
            return
        if op not in OPCODES:
            self.bad(f"Not a name of any known instruction: '{op}'")
            return
        if ins.guard is not None:
            g = self.regs.get(ins.guard.name)
            if g is None:
                self.bad(f"Unknown symbol '{ins.guard.name}'")
            elif g != "pred":
                self.bad("Predicate expression expected")
        if op not in UNCHECKED_MODS or op in ("ld", "st"):
            for m in ins.mods:
                if not _known_mod(m):
                    self.bad(f"Unknown modifier '.{m}'")
                    return
        seen: set[str] = set()
        for m in ins.mods if op in _NO_REPEATS else ():  # (types repeat: cvt.f32.f32,
            if m in seen and m not in ALL_TYPES:            # and wmma's layouts: .row.row)
                self.bad(f"Unknown modifier '.{m}'")
                return
            seen.add(m)
        if not self.operands_declared(ins.args):
            return
        if self.module.sm and self.module.sm < 90:
            need = _needs_target(ins)
            if need is not None and self.module.sm < need[0]:
                self.bad(f"{need[1]} requires .target sm_{need[0]} or higher")
                return
        form = FORMS.get(op)
        if form is not None:
            self.check_form(ins, form)
        elif op == "call":
            self.check_call(ins)
        elif op in ("bar", "barrier"):
            self.check_barrier(ins)
        elif op in ("atom", "red"):
            self.check_atom(ins)
        elif op == "vote":
            self.check_vote(ins)
        elif op == "set" and len(_types_of(ins.mods)) != 2:  # set.CmpOp.dtype.stype
            self.bad("Unexpected instruction types specified for 'set'")

    def check_vote(self, ins: ir.Instr) -> None:
        mods = set(ins.mods)
        mode = mods & {"all", "any", "uni", "ballot"}
        types = mods & ALL_TYPES
        if len(mode) != 1 or mods - mode - types - {"sync"}:
            self.bad("Arguments mismatch for instruction 'vote'")
            return
        want = "b32" if mode == {"ballot"} else "pred"
        if types != {want}:
            self.bad("Instruction 'vote' requires '.b32' type with '.ballot' modifier." if
                     mode == {"ballot"} and types else "Unexpected instruction types specified "
                     "for 'vote'")
            return
        form = Form(frozenset(), ())
        args = ins.args
        sig = "dqu" if "sync" in mods else "dq"
        if len(args) != len(sig):
            self.bad("Arguments mismatch for instruction 'vote'")
            return
        ok = [self.operand("p" if want == "pred" else "d", args[0], want, False, form, 0)[0],
              self.operand("q", args[1], want, False, form, 1)[0]]
        if len(sig) == 3:
            ok.append(self.operand("u", args[2], "u32", False, form, 2)[0])
        if not all(ok):
            self.bad("Arguments mismatch for instruction 'vote'")

    def operands_declared(self, args) -> bool:
        ok = True
        for a in args:
            for o in _flat(a):
                if isinstance(o, ir.Reg):
                    if self.rtype(o.name) == "?":
                        self.bad(f"Unknown symbol '{o.name}'")
                        ok = False
                elif isinstance(o, ir.Imm):
                    if not -(1 << 64) < o.value < 1 << 64 or abs(o.value) >= OVERFLOW:
                        self.bad("Constant overflow")
                        ok = False
                elif isinstance(o, (ir.Sym, ir.SymAddr)):
                    if not self.known_symbol(o.name):
                        self.bad(f"Unknown symbol '{o.name}'")
                        ok = False
                elif isinstance(o, ir.Mem):
                    if isinstance(o.base, ir.Reg) and self.rtype(o.base.name) == "?":
                        self.bad(f"Unknown symbol '{o.base.name}'")
                        ok = False
                    elif isinstance(o.base, ir.Sym) and not self.known_symbol(o.base.name):
                        self.bad(f"Unknown symbol '{o.base.name}'")
                        ok = False
        return ok

    def known_symbol(self, name: str) -> bool:
        v = self.local_vars.get(name)
        if v is not None and v.line > self.ins.line:
            return False  # used before it is declared
        return (name in self.labels or v is not None or name in self.params
                or name in self.symbols or name in self.module.functions
                or name in self.fn.prototypes)

    def label(self, o) -> bool:
        if not isinstance(o, ir.Sym):
            self.bad(f"Label expected for argument 0 of instruction '{self.ins.op}'")
            return False
        if o.name in self.module.functions:  # a function's name (ptxas: even beside a label)
            self.bad(f"Label expected for argument 0 of instruction '{self.ins.op}'")
            return False
        if o.name not in self.labels:
            self.bad(f"Unknown symbol '{o.name}'")
            return False
        return True

    # -------------------------------------------------------------- table-driven forms
    def check_form(self, ins: ir.Instr, form: Form) -> None:
        op = ins.op
        types = _types_of(ins.mods)
        others = [m for m in ins.mods if m not in ALL_TYPES or (op == "cvt" and False)]
        if op == "prmt" and "b32" not in types:
            types = [t for t in types if t == "b32"]
        full = ".".join((op, *[m for m in others if m in ("lo", "hi", "wide")]))
        mixed = op in ("add", "sub", "fma") and len(types) == 2 and types[0] == "f32" and \
            types[1] in ("f16", "bf16")  # add.rn.f32.f16 d, a, c (PTX 8.6): not checked further
        if op == "cvt":
            if not (len(types) == 2 or (len(types) == 3 and "pack" in others)) or \
                    any(x not in ALL_TYPES for x in types):
                self.bad("Unexpected instruction types specified for 'cvt'")
                return
        elif form.types and not mixed:
            if len(types) != form.ntypes or any(t not in form.types for t in types):
                self.bad(f"Unexpected instruction types specified for '{full}'")
                return
        elif not form.types and types:
            self.bad(f"Unexpected instruction types specified for '{op}'")
            return
        if op in ("ld", "st", "ldu", "cvta", "isspacep", "mov", "cvt"):
            if not self.memory_mods(ins, others):
                return
        elif not self.modifier_groups(ins, form, others, full):
            return
        t = types[0] if types else ""
        if mixed:
            return
        if op == "cvt" and ("pack" in others or len(types) != 2 or any(
                x.endswith(("x2", "x4")) or x not in _BITS for x in types)):
            return  # packing conversions (f16x2 <- two f32, e4m3x2, cvt.pack): not checked
        if not self.semantic_rules(ins, op, t, types, set(others), full):
            return
        args = ins.args
        for sig in form.sigs:
            if self.matches(sig, args, t, types, form, dry=True):
                return
        fits = [sg for sg in form.sigs
                if len(sg.split("?")[0]) <= len(args) <= len(sg.replace("?", ""))]
        if fits and not self.matches(fits[0], args, t, types, form, dry=False):
            return  # (the operand that does not fit is reported)
        self.bad(f"Arguments mismatch for instruction '{full}'")

    def modifier_groups(self, ins, form: Form, others: list[str], full: str) -> bool:
        for m in others:
            if not any(m in g for g in form.groups):
                if m in CMP and ins.op in ("mul", "mad"):
                    self.bad(f"Comparison qualifier is not allowed for instruction '{full}'")
                elif m in SPACES:
                    self.bad(f"No state space qualifier expected for instruction '{full}'")
                else:
                    self.bad(f"Illegal modifier '.{m}' for instruction '{full}'")
                return False
        for g in form.groups:
            hits = [m for m in others if m in g]
            if len(hits) > 1:
                if g & RND_F:
                    self.bad("Multiple rounding modifiers specified")
                else:
                    self.bad(f"Illegal modifier '.{hits[1]}' for instruction '{full}'")
                return False
        return True

    def memory_mods(self, ins, others: list[str]) -> bool:
        op = ins.op
        spaces = [m for m in others if m in SPACES or m.split("::")[0] in ("shared", "param")]
        if op in ("mov", "cvt"):
            if spaces:
                self.bad(f"No state space qualifier expected for instruction '{op}'")
                return False
            if op == "cvt":
                for m in others:
                    if m not in RND_F | RND_I | {"ftz", "sat", "relu", "satfinite", "pack"}:
                        self.bad(f"Illegal modifier '.{m}' for instruction 'cvt'")
                        return False
                if len([m for m in others if m in RND_F | RND_I]) > 1:
                    self.bad("Multiple rounding modifiers specified")
                    return False
            elif others:
                self.bad(f"Illegal modifier '.{others[0]}' for instruction 'mov'")
                return False
            return True
        if len(spaces) > 1:
            self.bad(f"Multiple state spaces specified for instruction '{op}'")
            return False
        if op in ("cvta", "isspacep"):
            for m in others:
                if m not in spaces and not (op == "cvta" and m == "to"):
                    self.bad(f"Illegal modifier '.{m}' for instruction '{op}'")
                    return False
            if op == "cvta" and not spaces:
                self.bad("State space qualifier required for instruction 'cvta'")
                return False
            if op == "cvta" and "to" in ins.mods and len(ins.args) > 1 and \
                    isinstance(ins.args[1], (ir.Sym, ir.SymAddr)):
                self.bad("Argument 1 of instruction 'cvta.to': must be register")
                return False
            if op == "cvta" and "u32" in ins.mods and not any(m.startswith("shared") for m in spaces):
                self.bad("32-Bit ABI (--machine 32 or 32-Bit addressing) is not supported on "
                         "sm_90 or higher architectures.")
                return False
            return True
        for m in others:
            if not (m in _MEMORY_MODS or "::" in m or m in spaces):
                self.bad(f"Illegal modifier '.{m}' for instruction '{op}'")
                return False
        vecs = [m for m in others if m in VEC]
        if len(vecs) > 1:
            self.bad(f"Multiple vector modifiers specified for instruction '{op}'")
            return False
        if op == "st" and "nc" in others:
            self.bad("Illegal modifier '.nc' for instruction 'st'")
            return False
        for m in others:
            if m in CMP - {"lo", "hi"} or m in RND_F | RND_I or m in ("sat", "cc", "ftz", "wide"):
                self.bad(f"Illegal modifier '.{m}' for instruction '{op}'")
                return False
        if "volatile" in others and spaces and spaces[0] in ("param", "local", "const"):
            self.bad(f"Modifier '.volatile' cannot be applied to '.{spaces[0]}' space")
            return False
        orders = [m for m in others if m in ORDERS]
        scopes = [m for m in others if m in SCOPES]
        if len(orders) > 1 or len(scopes) > 1:
            self.bad(f"Illegal modifier '.{(orders + scopes)[-1]}' for instruction '{op}'")
            return False
        if orders and orders[0] in ("relaxed", "acquire", "release") and not scopes:
            self.bad(f"Modifier '.{orders[0]}' requires scope with '{op}' instruction")
            return False
        if scopes and (not orders or orders[0] in ("volatile", "weak")):
            self.bad(f"Modifier '.{orders[0]}' cannot be combined with modifier '.{scopes[0]}'"
                     if orders else f"Modifier '.{scopes[0]}' requires memory order with '{op}' "
                     "instruction")
            return False
        nargs = len(ins.args)
        if nargs == 3 and "L2::cache_hint" not in others:
            self.bad(f".L2::cache_hint modifier required for instruction '{op}' with 3 arguments")
            return False
        return True

    def semantic_rules(self, ins, op: str, t: str, types: list[str], mods: set[str],
                       full: str) -> bool:
        """The rules between modifiers and types that ptxas enforces."""
        flt = t in FLT or t in HALF
        if op in ("add", "sub"):
            if "sat" in mods and t not in ("s32", "f32", "f16", "f16x2", "bf16", "bf16x2"):
                self.bad(f"Modifier '.sat' does not apply to '.{t}' type")
                return False
            if "cc" in mods and t not in ("u32", "s32", "u64", "s64"):
                self.bad(f"Illegal modifier '.cc' for instruction '{op}'")
                return False
            if mods & RND_F and not flt:
                self.bad(f"Illegal rounding modifier for instruction '{op}'")
                return False
            if "ftz" in mods and t not in ("f32", "f16", "f16x2"):
                self.bad(f"Illegal modifier '.ftz' for instruction '{op}'")
                return False
        elif op in ("mul", "mad"):
            sub = mods & {"lo", "hi", "wide"}
            if t in INT:
                if not sub:
                    self.bad(f"Unexpected instruction types specified for '{op}'")
                    return False
                if "wide" in sub and t in ("u64", "s64"):
                    self.bad(f"Unexpected instruction types specified for '{full}'")
                    return False
                if mods & RND_F or "ftz" in mods:
                    self.bad(f"Illegal rounding modifier for instruction '{full}'")
                    return False
                if "sat" in mods and not (op == "mad" and "hi" in sub and t == "s32"):
                    self.bad(f"Illegal modifier '.sat' for instruction '{full}'" if t == "s32"
                             else f"Modifier '.sat' does not apply to '.{t}' type")
                    return False
                if "cc" in mods and (op != "mad" or t not in ("u32", "s32", "u64", "s64")):
                    self.bad(f"Illegal modifier '.cc' for instruction '{full}'")
                    return False
            else:
                if sub:
                    self.bad(f"Unexpected instruction types specified for '{full}'")
                    return False
                if "cc" in mods:
                    self.bad(f"Illegal modifier '.cc' for instruction '{op}'")
                    return False
                if op == "mad" and not mods & RND_F:
                    self.bad("Rounding modifier required for instruction 'mad'")
                    return False
                if "ftz" in mods and t == "f64":
                    self.bad(f"Illegal modifier '.ftz' for instruction '{op}'")
                    return False
        elif op == "fma":
            if not mods & RND_F:
                self.bad("Rounding modifier required for instruction 'fma'")
                return False
            if "ftz" in mods and t == "f64":
                self.bad("Illegal modifier '.ftz' for instruction 'fma'")
                return False
        elif op == "div":
            if t in INT:
                if mods:
                    self.bad(f"Illegal rounding modifier for instruction '{op}'")
                    return False
            elif t == "f32":
                if not mods & (RND_F | {"approx", "full"}):
                    self.bad("Rounding modifier or '.approx' modifier required for instruction 'div'")
                    return False
            else:
                if mods & {"approx", "full"}:
                    self.bad(f"Illegal modifier '.{next(iter(mods & {'approx', 'full'}))}' for "
                             "instruction 'div'")
                    return False
                if not mods & RND_F:
                    self.bad("Rounding modifier required for instruction 'div'")
                    return False
                if "ftz" in mods:
                    self.bad("Illegal modifier '.ftz' for instruction 'div'")
                    return False
        elif op in ("rcp", "sqrt"):
            if not mods & (RND_F | {"approx"}):
                self.bad(f"Rounding modifier or '.approx' modifier required for instruction '{op}'")
                return False
            if t == "f64" and "approx" in mods and not (op == "rcp" and "ftz" in mods):
                self.bad(f"Illegal modifier '.approx' for instruction '{op}'")
                return False
        elif op in ("sin", "cos", "lg2", "ex2", "rsqrt", "tanh"):
            if "approx" not in mods:
                self.bad(f".approx modifier required for instruction '{op}'")
                return False
        elif op in ("abs", "neg"):
            if "ftz" in mods and t not in ("f32", "f16", "f16x2"):
                self.bad(f"Illegal modifier '.ftz' for instruction '{op}'")
                return False
        elif op in ("min", "max"):
            if mods & {"ftz", "NaN", "xorsign", "abs"} and not flt:
                self.bad(f"Illegal modifier '.{sorted(mods)[0]}' for instruction '{op}'")
                return False
            if len(ins.args) == 4:  # three sources: f32 only, from sm_100
                if t != "f32":
                    self.bad(f"Arguments mismatch for instruction '{op}'")
                    return False
                if self.module.sm < 100:
                    self.bad(f"Feature '{op}.f32 with 3 input operands' requires .target sm_100 "
                             "or higher")
                    return False
        elif op == "setp":
            if not mods & CMP:
                self.bad("Comparison operator required for instruction 'setp'")
                return False
            allowed = ({"eq", "ne"} if t in BITS else
                       {"eq", "ne", "lt", "le", "gt", "ge"} if t[0] == "s" else
                       {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"} if t[0] == "u"
                       else CMP - {"lo", "ls", "hi", "hs"})
            if mods & CMP - allowed:
                self.bad("Mismatch between instruction type and comparison qualifier")
                return False
            if "ftz" in mods and t not in ("f32", "f16", "f16x2"):
                self.bad("Illegal modifier '.ftz' for instruction 'setp'")
                return False
            nb = len(ins.args) == 4
            if nb != bool(mods & BOOL):
                self.bad("Boolean operation is required for instruction 'setp'" if nb else
                         "Arguments mismatch for instruction 'setp'")
                return False
        elif op == "cvt":
            return self.cvt_rules(types, mods)
        elif op == "lop3":
            if bool(mods & BOOL) != (len(ins.args) == 6):
                self.bad("Arguments mismatch for instruction 'lop3'")
                return False
        elif op == "shfl":
            if "sync" in mods and len(ins.args) != 5:
                self.bad("Arguments mismatch for instruction 'shfl'")
                return False
            if "sync" not in mods and self.module.sm >= 70 and self.module.version >= (6, 4):
                self.bad("Instruction 'shfl' without '.sync' is not supported on .target sm_70 "
                         "and higher from PTX ISA version 6.4")
                return False
            if not mods & {"up", "down", "bfly", "idx"}:
                self.bad("Shuffle mode required for instruction 'shfl'")
                return False
        elif op in ("ld", "st", "ldu"):
            vec = next((int(m[1:]) for m in mods if m in VEC), 1)
            bits = _BITS.get(t, 0) * vec
            if bits > 128 and self.module.sm < 100:
                self.bad("Feature '256 bit wide load/store' requires .target sm_100 or higher")
                return False
        return True

    def cvt_rules(self, types: list[str], mods: set[str]) -> bool:
        dst, src = types
        if dst.endswith(("x2", "x4")) or src.endswith(("x2", "x4")) or dst not in _BITS \
                or src not in _BITS:
            return True  # packing conversions (f16x2 <- two f32, e4m3x2 ...): not checked
        rnd_f, rnd_i = mods & RND_F, mods & RND_I
        df, sf = dst in FLT | HALF | {"tf32"}, src in FLT | HALF | {"tf32"}
        if "ftz" in mods and "f32" not in (dst, src):  # (flushing is of f32 values only)
            self.bad("Illegal modifier '.ftz' for instruction 'cvt'" if not (df or sf) else
                     "Modifier '.ftz' does not apply to this type of convert operation")
            return False
        if "sat" in mods and not (df or sf) and _holds(dst, src):
            self.bad("Illegal modifier '.sat' for instruction 'cvt'")  # nothing to saturate
            return False
        if dst == "tf32":
            if not rnd_f:
                self.bad("Rounding modifier required for instruction 'cvt'")
                return False
            return True
        if df and sf:
            narrowing = _BITS[dst] < _BITS[src]
            if {dst, src} == {"f16", "bf16"}:
                if rnd_i:
                    self.bad("Illegal rounding modifier for instruction 'cvt'")
                    return False
            elif dst == src:
                if rnd_f:
                    self.bad("Illegal rounding modifier for instruction 'cvt'")
                    return False
            elif narrowing:
                if rnd_i or (not rnd_f and dst != "tf32"):
                    self.bad("Rounding modifier required for instruction 'cvt'" if not rnd_f
                             else "Illegal rounding modifier for instruction 'cvt'")
                    return False
            elif rnd_f or rnd_i:
                self.bad("Illegal rounding modifier for instruction 'cvt'")
                return False
        elif df:
            if rnd_i or not rnd_f:
                self.bad("Rounding modifier required for instruction 'cvt'" if not rnd_i
                         else "Illegal rounding modifier for instruction 'cvt'")
                return False
        elif sf:
            if rnd_f or not rnd_i:
                self.bad("Rounding modifier required for instruction 'cvt'" if not rnd_f
                         else "Illegal rounding modifier for instruction 'cvt'")
                return False
        elif rnd_f or rnd_i:
            self.bad("Illegal rounding modifier for instruction 'cvt'")
            return False
        return True

    # -------------------------------------------------------------- operands
    def matches(self, sig: str, args: list, t: str, types: list[str], form: Form,
                dry: bool) -> bool:
        """Do `args` fit `sig`? With dry=False, report the first operand that does not."""
        need = sig.split("?")[0]
        if not (len(need) <= len(args) <= len(sig.replace("?", ""))):
            return False
        op = self.ins.op
        if op == "cvt":
            kinds = [(types[0], True), (types[1], True)]
        else:
            kinds = []
        for i, (code, a) in enumerate(zip(sig.replace("?", ""), args, strict=False)):
            want = t
            relaxed = False
            if kinds and i < 2:
                want, relaxed = kinds[i]
            ok, why = self.operand(code, a, want, relaxed, form, i)
            if not ok:
                if not dry:
                    self.bad(why or f"Arguments mismatch for instruction '{op}'")
                return False
        return True

    def operand(self, code: str, a, t: str, relaxed: bool, form: Form, i: int):
        """(fits, message when it does not)."""
        op = self.ins.op
        if code in "dDwU":
            if isinstance(a, ir.Sink):
                return False, f"Result discard mode is not allowed for instruction '{op}'"
            if isinstance(a, ir.Vec) and op in ("ld", "ldu", "mov"):
                return self.vector(a, t, code == "D" or relaxed, dest=True)
            if not isinstance(a, ir.Reg):
                return False, f"Result register required for instruction '{op}'"
            rt = self.rtype(a.name)
            if code == "w":
                return reg_fits(rt, _wide(t)), None
            if code == "U":
                return reg_fits(rt, "u32") or reg_fits(rt, "b32"), None
            if op == "mul" and "wide" in self.ins.mods or op == "mad" and "wide" in self.ins.mods:
                return reg_fits(rt, _wide(t)), None
            return reg_fits(rt, t, relaxed or code == "D"), None
        if code == "X":  # shfl: d or d|p
            if isinstance(a, ir.PredPair):
                if not (isinstance(a.q, ir.Reg) and self.regs.get(a.q.name) == "pred"):
                    return False, None
                a = a.p
            return self.operand("d", a, t, False, form, i)
        if code == "P":
            if isinstance(a, ir.PredPair):
                for x in (a.p, a.q):
                    if isinstance(x, ir.Reg) and self.rtype(x.name) != "pred":
                        return False, None
                return True, None
            if isinstance(a, ir.Sink):
                return True, None
            return isinstance(a, ir.Reg) and self.rtype(a.name) == "pred", None
        if code == "p":
            return isinstance(a, ir.Reg) and self.rtype(a.name) == "pred", None
        if code == "q":
            r = a.reg if isinstance(a, ir.Not) else a
            if isinstance(r, ir.Imm):
                return True, None
            return isinstance(r, ir.Reg) and self.rtype(r.name) == "pred", None
        if code == "l":
            if not isinstance(a, ir.Sym) or a.name in self.module.functions:  # (a function's name)
                return False, f"Label expected for argument 0 of instruction '{op}'"
            return a.name in self.labels, f"Unknown symbol '{a.name}'"
        if code == "m":
            return self.address(a)
        if code == "x":
            return True, None
        if code == "u":
            return self.source(a, "u32", False, form)
        if code == "k":
            return self.source(a, "b32", False, form)
        if code == "i":  # an immediate only (lop3's lookup table)
            return isinstance(a, ir.Imm), None
        if code == "y":  # an L2 cache policy
            return self.source(a, "b64", False, form)
        if code in "aAcs":
            if op in ("mul", "mad") and code == "a" and i == 3 and "wide" in self.ins.mods:
                t = _wide(t)
            if code == "c":
                t = _wide(t)
            if isinstance(a, ir.Vec):
                if op in ("st", "mov"):
                    return self.vector(a, t, code == "A" or relaxed, dest=False)
                return False, None
            if code == "A" or relaxed:
                return self.source(a, t, True, form)
            return self.source(a, t, False, form)
        return True, None

    def source(self, a, t: str, relaxed: bool, form: Form):
        op = self.ins.op
        if isinstance(a, ir.Reg):
            return reg_fits(self.rtype(a.name), t, relaxed), None
        if isinstance(a, ir.Imm):
            if t == "pred":  # ptxas takes any integer (non-zero is true): mov.pred %p, -1
                return True, None
            return (t[:1] in "bus" or t == "") and t not in ("f16x2", "bf16x2", "bf16"), None
        if isinstance(a, ir.FImm):  # ptxas takes a hex literal of the width as bits too
            return t in FLT or t in ("f16", "bf16") or t == f"b{a.width}", None
        if isinstance(a, ir.Special):
            if a.name == "%is_explicit_cluster":  # the one predicate: mov.pred only (ptxas)
                return (op == "mov" and t == "pred"), None
            # ptxas: only mov and cvt read special registers, and only as integers
            if not form.specials or t[:1] not in "bus" or \
                    (op == "cvt" and any(m[:1] == "f" or m[:2] == "bf" for m in _types_of(self.ins.mods))):
                return False, f"Special register argument not allowed for instruction '{op}'"
            width = 64 if a.name in ("%clock64", "%globaltimer", "%gridid") or \
                a.name.endswith("_64") else 32
            if a.name.startswith(("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid",
                                  "%smid", "%nsmid", "%nwarpid")):
                width = 32
            n = _BITS.get(t, 0)
            if n == 16 and not a.name.startswith(("%tid", "%ntid", "%ctaid", "%nctaid")):
                return False, None  # (16-bit reads: the block and grid coordinates only)
            return (16 <= n <= 32) if width == 32 else n == 64, None
        if isinstance(a, (ir.Sym, ir.SymAddr)):
            if not form.symbols:
                return False, (f"Argument {self.ins.args.index(a)} of instruction '{op}': must be "
                               "register")
            return _BITS.get(t, 0) >= 32 and t not in FLT, None
        if isinstance(a, ir.Not):
            return False, None
        if isinstance(a, ir.Sink):
            return False, None
        return False, None

    def vector(self, v: ir.Vec, t: str, relaxed: bool, dest: bool):
        op = self.ins.op
        n = len(v.items)
        if op in ("ld", "st", "ldu"):
            want = next((int(m[1:]) for m in self.ins.mods if m in VEC), 1)
            if n != want:
                if n not in (2, 4, 8):
                    return False, f"Illegal vector size: {n}"
                return False, f"Argument vector size mismatch for instruction '{op}'"
        elif op == "mov":
            # packing/unpacking (`mov.b16 %rs1, {myreg, 0}`): n elements of 1/n of the width
            if n not in (2, 4) or _BITS.get(t, 0) % n:
                return False, None
            each = _BITS[t] // n
            for x in v.items:
                if isinstance(x, ir.Reg) and _BITS.get(self.rtype(x.name), 0) != each:
                    return False, None
                if not isinstance(x, (ir.Reg, ir.Imm, ir.Sink)):
                    return False, None
            return True, None
        declared = {_BITS.get(self.rtype(x.name)) for x in v.items if isinstance(x, ir.Reg)}
        if len(declared) > 1:
            return False, "Incompatible elements of vector expression"
        for x in v.items:
            if isinstance(x, ir.Sink):
                if not dest:
                    return False, None
                continue
            if isinstance(x, ir.Reg):
                if not reg_fits(self.rtype(x.name), t, relaxed):
                    return False, "Incompatible elements of vector expression"
            elif dest:
                return False, None
            elif not self.source(x, t, relaxed, FORMS[op])[0]:
                return False, None
        return True, None

    def address(self, a):
        op = self.ins.op
        if not isinstance(a, ir.Mem):
            return False, f"Arguments mismatch for instruction '{op}'"
        if not -(1 << 63) <= a.offset < 1 << 64:
            return False, "Constant overflow"
        base = a.base
        space = next((m.split("::")[0] for m in self.ins.mods if m in SPACES), "")
        if base is None and space != "local":
            return False, "Immediate addresses allowed only for .local state space"
        if isinstance(base, ir.Reg):
            rt = self.rtype(base.name)
            if _kind(rt) in "fp":
                return False, (f"Illegal to use symbol '{base.name}' of type .{rt} as address "
                               "operand. Use integer or bit only.")
            if _BITS.get(rt, 0) == 32 and space in ("", "global"):
                return False, ("32-Bit ABI (--machine 32 or 32-Bit addressing) is not supported "
                               "on sm_90 or higher architectures.")
            if _BITS.get(rt, 0) < 32:
                return False, f"Arguments mismatch for instruction '{op}'"
        elif isinstance(base, ir.Sym):
            v = self.local_vars.get(base.name) or self.params.get(base.name) or \
                self.symbols.get(base.name)
            if v is None:
                if base.name in self.labels or base.name in self.module.functions:
                    return False, f"Illegal operand type to instruction '{op}'"
                return True, None
            vs = v.space
            if (space and space != vs and not (space == "param" and vs in ("param", "reg"))) or (
                    not space and vs in ("param", "const") and op in ("ld", "st", "ldu")):
                return False, f"State space mismatch between instruction and address in instruction '{op}'"
            if v.line > self.ins.line and base.name in self.local_vars:
                return False, f"Unknown symbol '{base.name}'"
        return True, None

    # -------------------------------------------------------------- other families
    def check_call(self, ins: ir.Instr) -> None:
        for m in ins.mods:
            if m != "uni":
                self.bad("Comparison qualifier is not allowed for instruction 'call'" if m in CMP
                         else f"Illegal modifier '.{m}' for instruction 'call'")
                return
        args = list(ins.args)
        rets: tuple = ()
        if args and isinstance(args[0], ir.Args):
            rets = args.pop(0).items
        if not args:
            self.bad("Arguments mismatch for instruction 'call'")
            return
        target = args.pop(0)
        params: tuple = ()
        if args and isinstance(args[0], ir.Args):
            params = args.pop(0).items
        if isinstance(target, ir.Sym):
            callee = self.module.functions.get(target.name)
            if callee is None:
                self.bad(f"Call to '{target.name}' requires call prototype")
                return
            if args:  # (only a call through a register names a prototype after its arguments)
                self.bad("Arguments mismatch for instruction 'call'")
                return
            if callee.is_entry:
                self.bad(f"Illegal call to entry function '{target.name}'")
                return
            if len(params) != len(callee.params) or len(rets) != len(callee.rets):
                self.bad("Call has wrong number of parameters")
                return
            for actual, formal in zip((*rets, *params), (*callee.rets, *callee.params),
                                      strict=True):
                v = self.local_vars.get(actual.name) if isinstance(actual, ir.Sym) else None
                if v is None or v.space != "param":
                    continue  # (registers and immediates as arguments: not checked)
                if v.size != formal.size:
                    self.bad(f"Type of argument does not match formal parameter '{formal.name}'")
                elif v.alignment != formal.alignment:
                    self.bad(f"Alignment of argument does not match formal parameter "
                             f"'{formal.name}'")
        elif isinstance(target, ir.Reg):
            if not args or not isinstance(args[-1], ir.Sym):
                self.bad("Call through a register requires call prototype")
        else:
            self.bad("Arguments mismatch for instruction 'call'")

    def check_barrier(self, ins: ir.Instr) -> None:
        op, mods = ins.op, set(ins.mods)
        if op == "barrier" and "cluster" in mods:
            self.check_cluster_barrier(ins)
            return
        allowed = {"sync", "arrive", "red", "popc", "and", "or", "cta", "warp", "u32", "pred"}
        if op == "barrier":
            allowed |= {"aligned", "cluster", "wait", "relaxed", "acquire", "release"}
        bad = sorted(mods - allowed)
        if bad:
            self.bad(f"Unexpected instruction types specified for '{op}'" if bad[0] in ALL_TYPES
                     else f"Illegal modifier '.{bad[0]}' for instruction '{op}'")
            return
        if not mods & {"sync", "arrive", "red", "wait"}:
            self.bad(f"Barrier modifier required for instruction '{op}'")
            return
        types = mods & {"u32", "pred"}
        if "red" in mods:
            kind = mods & {"popc", "and", "or"}
            want = {"u32"} if kind == {"popc"} else {"pred"}
            if len(kind) != 1 or types != want:
                self.bad(f"Unexpected instruction types specified for '{op}.red'" if kind else
                         f"Reduction operation required for instruction '{op}.red'")
                return
        elif types or mods & {"popc", "and", "or"}:
            self.bad(f"Unexpected instruction types specified for '{op}'")
            return
        if "arrive" in mods and len(ins.args) != 2:
            self.bad(f"Arguments mismatch for instruction '{op}.arrive'")
            return
        # operand kinds: a 32-bit result (.popc) or a predicate (.and/.or), 32-bit barrier
        # ids and thread counts, a predicate source
        form = Form(frozenset(), ())
        name = f"{op}.red" if "red" in mods else op
        codes = ""
        if "red" in mods:
            codes = ("d" if "u32" in types else "p") + "u" * (len(ins.args) - 2) + "q"
        elif "warp" not in mods:
            codes = "u" * len(ins.args)
        for i, (code, a) in enumerate(zip(codes, ins.args, strict=False)):
            if not self.operand(code, a, "u32", False, form, i)[0]:
                self.bad(f"Arguments mismatch for instruction '{name}'")
                return
        args = ins.args
        if "red" in ins.mods:
            args = args[1:]
            if not args:
                self.bad(f"Arguments mismatch for instruction '{ins.op}'")
                return
            args = args[:-1]
        if "warp" in ins.mods:
            return
        if not args:
            if ins.op == "barrier" or "warp" in ins.mods:
                return
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
            return
        if len(args) > 2:
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
            return
        bid = args[0]
        if isinstance(bid, ir.Imm) and not 0 <= bid.value <= 15:
            self.bad(f"Barrier number '{bid.value}' out of range, expected to be in range [0..15]")
        elif not isinstance(bid, (ir.Imm, ir.Reg)):
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
        if len(args) == 2:
            n = args[1]
            if isinstance(n, ir.Imm) and n.value % 32:
                self.bad("Number of threads participating in barrier must be in multiple of warp size")
            elif not isinstance(n, (ir.Imm, ir.Reg)):
                self.bad(f"Arguments mismatch for instruction '{ins.op}'")

    def check_cluster_barrier(self, ins: ir.Instr) -> None:
        """barrier.cluster.arrive{.release,.relaxed}{.aligned} and
        barrier.cluster.wait{.acquire}{.aligned}: no operands (ptxas 13.0's messages)."""
        mods = [m for m in ins.mods if m != "cluster"]
        kind = mods[0] if mods else ""
        if kind not in ("arrive", "wait"):
            self.bad("Not a name of any known instruction: 'barrier.cluster'")
            return
        allowed = {"arrive": ("release", "relaxed", "aligned"), "wait": ("acquire", "aligned")}[kind]
        name = f"barrier.cluster.{kind}"
        for m in mods[1:]:
            if m not in allowed:
                self.bad(f"Illegal modifier '.{m}' for instruction '{name}'")
                return
        if "release" in mods and "relaxed" in mods:
            self.bad("Duplicate .release modifier")
            return
        if ins.args:
            self.bad(f"Arguments mismatch for instruction '{name}'")

    def check_atom(self, ins: ir.Instr) -> None:
        spaces = [m for m in ins.mods if m in SPACES]
        if len(spaces) > 1:
            self.bad(f"Unexpected number of state spaces specified in instruction '{ins.op}'")
            return
        if any(m in RND_F | RND_I for m in ins.mods):
            self.bad(f"Illegal rounding modifier for instruction '{ins.op}'")
            return
        ops = [m for m in ins.mods if m in ("add", "inc", "dec", "and", "or", "xor", "exch", "cas",
                                             "min", "max")]
        if len(ops) != 1:
            self.bad(f"Arguments mismatch for instruction '{ins.op}'" if ops else
                     f"Operation required for instruction '{ins.op}'")
            return
        for m in ins.mods:
            if not (m in _ATOM_MODS or m in ALL_TYPES or "::" in m):
                self.bad(f"Comparison qualifier is not allowed for instruction '{ins.op}'"
                         if m in CMP else f"Illegal modifier '.{m}' for instruction '{ins.op}'"
                         if _known_mod(m) else f"Unknown modifier '.{m}'")
                return
        types = [t for t in _types_of(ins.mods) if t != "b128" or ops[0] in ("exch", "cas")]
        if not types:
            self.bad(f"Unexpected instruction types specified for '{ins.op}'")
            return
        args = ins.args
        first = 0 if ins.op == "red" else 1
        if len(args) <= first or not isinstance(args[first], ir.Mem):
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
            return
        ok, why = self.address(args[first])
        if not ok:
            self.bad(why or f"Arguments mismatch for instruction '{ins.op}'")
            return
        t = types[0]
        nsrc = 2 if ops[0] == "cas" else 1
        srcs = args[first + 1:]
        if len(srcs) not in (nsrc, nsrc + 1):  # (+ an L2 cache policy)
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
            return
        if t not in _BITS or any(m in VEC for m in ins.mods):
            return  # vector atomics: not checked
        form = Form(frozenset(), ())
        if first and not (isinstance(args[0], ir.Sink) or (
                isinstance(args[0], ir.Reg) and reg_fits(self.rtype(args[0].name), t))):
            self.bad(f"Arguments mismatch for instruction '{ins.op}'")
            return
        for a in srcs[:nsrc]:
            if not self.source(a, t, False, form)[0]:
                self.bad(f"Arguments mismatch for instruction '{ins.op}'")
                return


_ORDERS_SM70 = ("release", "relaxed", "acquire", "acq_rel", "sc")
_F16_ARITH = ("add", "sub", "mul", "fma", "setp", "set", "neg", "abs", "min", "max")


def _needs_target(ins: ir.Instr) -> tuple[int, str] | None:
    """The oldest target that has the instruction, and how ptxas names it (measured: ptxas
    13.0's messages for nvcc's PTX assembled for .target sm_20)."""
    op, m = ins.op, set(ins.mods)
    if op == "wmma":
        if m & {"f64"}:
            return 80, "Feature 'WMMA with fp64 types'"
        if m & {"bf16", "tf32"}:
            return 80, "Feature 'WMMA with .bf16/.tf32 FP types'"
        if m & {"s8", "u8", "s4", "u4", "b1"}:
            return 72, "Feature 'WMMA with integer types'"
        return 70, "Feature 'WMMA with floating point types'"
    if m & {"bf16", "bf16x2"}:
        return 80, "Feature '.bf16'"
    if "tf32" in m:
        return 80, "Feature '.tf32'"
    if op == "cp" and "async" in m:
        return (90 if "bulk" in m else 80), f"Feature '{'.'.join((op, *ins.mods[:2]))}'"
    if op == "mbarrier":
        return (90 if m & {"try_wait", "expect_tx"} else 80), f"Feature 'mbarrier.{ins.mods[0]}'"
    if op == "redux":
        return 80, "Feature 'redux'"
    if op == "barrier" and "cluster" in m:
        return 90, f"Feature '{'.'.join((op, *ins.mods[:2]))}'"
    if op in ("nanosleep", "bmsk", "match", "fence"):
        return 70, f"Instruction '{op}'"
    orders = m & set(_ORDERS_SM70)
    if orders:
        return 70, f"Feature '.{sorted(orders)[0]}'"
    if op in ("atom", "red"):
        if m & SCOPES:
            return 60, "Feature 'scopes on atomic operations'"
        if "add" in m and "f64" in m:
            return 60, "Instruction 'atom.add.f64'"
        if m & {"min", "max"} and m & {"u64", "s64"}:
            return 32, f"Instruction 'atom.{'max' if 'max' in m else 'min'}.64'"
    if op in ("ld", "ldu") and "nc" in m:
        return 32, "Instruction 'ld.nc'"
    if op in _F16_ARITH and m & {"f16", "f16x2"}:
        return 53, "Feature 'f16 arithemetic and compare instructions'"
    if op in ("barrier", "shfl", "activemask") or (op == "bar" and "warp" in m) or \
            (op == "vote" and "sync" in m) or op in ("vabsdiff2", "vabsdiff4", "vadd2", "vadd4",
                                                      "vavrg2", "vavrg4", "vmax2", "vmax4",
                                                      "vmin2", "vmin4", "vset2", "vset4",
                                                      "vsub2", "vsub4"):
        return 30, f"Instruction '{op}{'.sync' if op == 'vote' else ''}'"
    if any(isinstance(a, ir.Special) and a.name.startswith("%globaltimer") for a in ins.args):
        return 30, "Feature '%globaltimer'"
    return None


def _holds(dst: str, src: str) -> bool:
    """Every value of integer type src fits in integer type dst."""
    if src[0] == "s" and dst[0] != "s":
        return False
    return _BITS[dst] > _BITS[src] or (_BITS[dst] == _BITS[src] and dst[0] == src[0])


def _wide(t: str) -> str:
    return t[0] + str(2 * _BITS[t]) if t and t[0] in "usb" else t


def _flat(o):
    if isinstance(o, (ir.Vec, ir.Args)):
        for x in o.items:
            yield from _flat(x)
    elif isinstance(o, ir.PredPair):
        yield o.p
        yield o.q
    elif isinstance(o, ir.Not):
        yield o.reg
    else:
        yield o
