"""The lowering interface: what an instruction family's semantics may ask of a backend.

Every family module (cuport/isa/*.py) registers `fn(em, ins)` lowerings (registry.py) that
are written once, against this interface, for every backend. `em` is the backend's
emitter for one PTX function:

- the CPU backend (backends/cpu/emit.py) runs a whole warp as SIMD code: in *vector mode*
  (`em.vec` true) a value is a `<32 x T>` LLVM vector, one lane per thread; uniform values
  are scalars;
- the Vulkan backend (backends/vulkan/lower.py) runs one thread per invocation: `em.vec`
  is always false and every value is a scalar of the thread.

Values are llvmlite IR values built with `em.b` (an `llvmlite.ir.IRBuilder`): the
arithmetic of typed values is LLVM's, with LLVM's exact semantics (wrapping integers,
IEEE float operations rounded to nearest, no contraction). What LLVM arithmetic cannot
say, and everything about memory, threads and control, goes through the methods below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from llvmlite import ir as ll

from ..passes.divergence import Divergence
from ..ptx import ir
from .texture_layout import Sampling


class Lowering(Protocol):
    b: ll.IRBuilder
    vec: bool  # vector mode: values are <32 x T> (CPU backend only)
    ins: ir.Instr | None  # the instruction being lowered
    fn: ir.Function  # the function whose body is being lowered
    div: Divergence  # which registers may differ between the lanes of a warp

    # ---- module and errors
    @property
    def module(self) -> ll.Module: ...
    @property
    def ptx(self) -> ir.Module: ...
    def error(self, message: str) -> Exception:
        """The UnsupportedError to raise, naming the instruction and its PTX line."""
    def is_kernel_param(self, name: str) -> bool: ...

    # ---- types, constants, operands
    def ty(self, ptype: str) -> ll.Type: ...
    def bty(self, ptype: str) -> ll.Type: ...
    def const(self, ptype: str, value) -> ll.Value: ...
    def const_int(self, width: int, value: int) -> ll.Value: ...
    def const_bits(self, ptype: str, bits: int) -> ll.Value: ...
    def to_value(self, bits: ll.Value, ptype: str) -> ll.Value: ...
    def to_bits(self, v: ll.Value, ptype: str) -> ll.Value: ...
    def read(self, op, ptype: str) -> ll.Value: ...
    def read_bits(self, op, ptype: str) -> ll.Value: ...
    def write(self, op, ptype: str, value: ll.Value, signed: bool | None = None) -> None:
        """Write a destination operand, honouring the guard predicate."""
    def splat(self, v: ll.Value, n: int = 32) -> ll.Value: ...
    def intrinsic(self, name: str, args: list[ll.Value], overload: list[ll.Type] | None = None,
                  ret: ll.Type | None = None) -> ll.Value: ...
    def entry_alloca(self, t: ll.Type, name: str = "") -> ll.Value: ...
    def special(self, name: str) -> ll.Value:
        """A special register (%tid.x, %laneid, %clock64, ...) in the current mode."""

    # ---- rounding control
    def directed_f64(self, op: str, args: list[ll.Value], mode: str) -> ll.Value:
        """f64 `op` (fadd fsub fmul fdiv fma sqrt) rounded in mode rz/rm/rp."""

    # ---- memory, by state space (isa/memory.py, isa/data.py)
    def load_elements(self, acc, offsets: list[ll.Value] | None = None, runs: int = 0) -> list[ll.Value]:
        """Perform the load `acc` (isa.memory.Access); the elements' bits. With `offsets`
        (i64 per thread, bytes from the access's address; a plain access of one element):
        that element at each offset instead, all checked as one access (wmma's elements);
        `runs`: the family's promise that each run of that many lanes reads consecutive
        elements (a CPU warp then loads vectors instead of gathering)."""
    def store_elements(self, acc, vals: list[ll.Value], offsets: list[ll.Value] | None = None,
                       runs: int = 0) -> None: ...
    def in_space(self, space: str, a: ll.Value) -> ll.Value:
        """isspacep: whether the generic address `a` is in `space`."""
    def cvta(self, space: str, a: ll.Value, to_space: bool) -> ll.Value:
        """A `space` address made generic, or (to_space) a generic one made `space`'s."""
    def address(self, mem: ir.Mem, space: str) -> ll.Value: ...
    def load(self, ptrs: ll.Value, t: ll.Type, align: int, volatile: bool = False) -> ll.Value: ...
    def store(self, ptrs: ll.Value, value: ll.Value, align: int, volatile: bool = False) -> None: ...

    # ---- atomics (isa/atomics.py)
    def atomic(self, a) -> ll.Value | None:
        """Perform the atomic `a` (isa.atomics.Atomic); the old value when it is wanted."""

    # ---- warp collectives (isa/warp.py); masks are i32 values uniform in the warp
    def begin_collective(self) -> None:
        """Enter the mode collectives compute in (vector mode on the CPU)."""
    def broadcast(self, v: ll.Value) -> ll.Value:
        """A warp-uniform value as a per-thread value of the current mode."""
    def warp_lane(self) -> ll.Value: ...
    def warp_executing(self) -> ll.Value:
        """The lanes executing the current instruction."""
    def warp_uniform(self, op, ptype: str = "b32") -> ll.Value:
        """An operand PTX requires to be warp-uniform (member masks)."""
    def warp_participants(self, member_op) -> ll.Value:
        """The lanes a collective with member mask `member_op` (None: legacy form) combines."""
    def warp_ballot(self, pred: ll.Value) -> ll.Value: ...
    def warp_read(self, values: ll.Value, src: ll.Value) -> ll.Value:
        """Each lane's `values` as held by lane `src` (a per-lane index)."""
    def warp_reads(self, values: ll.Value, srcs: list[ll.Value]) -> list[ll.Value]:
        """warp_read of one value from several source lanes (one exchange where the
        backend goes through memory)."""
    def warp_first(self, values: ll.Value, part: ll.Value) -> ll.Value: ...
    def warp_reduce(self, name: str, x: ll.Value, identity) -> ll.Value: ...
    def warp_match_any(self, a: ll.Value, part: ll.Value) -> ll.Value: ...

    # ---- asynchronous copies and mbarrier words (isa/async_copy.py)
    def copy_bytes(self, dst: ir.Mem, dst_space: str, src: ir.Mem, src_space: str,
                   size: int | ll.Value, count: ll.Value | None = None) -> None:
        """Each executing thread copies `size` bytes from [src] to [dst] (spaces shared or
        global; the ranges do not overlap, and are aligned to `size` when it is an int (4,
        8 or 16: cp.async), to 16 bytes otherwise (an i32 per thread, a multiple of 16:
        cp.async.bulk)). With `count` (an i32 per thread, at most the int `size`) only the
        first `count` bytes come from the source and the rest are zeros; the source is read
        no further than its aligned `size` bytes, and not at all where `count` is 0."""
    def sync_word_store(self, mem: ir.Mem, space: str, value: ll.Value) -> None:
        """Each executing thread stores the i64 `value` into the 64-bit word at [mem] (an
        mbarrier: `space` shared, or generic pointing there), atomically, unordered."""
    def sync_word_load(self, mem: ir.Mem, space: str) -> ll.Value:
        """The 64-bit word at [mem] (as sync_word_store's), per thread, read atomically with
        acquire ordering at CTA scope: what the thread reads after it sees what the
        updates it saw released."""
    def sync_word_update(self, mem: ir.Mem, space: str, args: list[ll.Value],
                         change: Callable[[ll.Value, list[ll.Value]], ll.Value],
                         together: bool = False) -> tuple[ll.Value, ll.Value]:
        """Each executing thread atomically replaces the 64-bit word at [mem] (as
        sync_word_store's) by change(old word, args), with release-acquire ordering at CTA
        scope (a warp's lanes in lane order where the backend runs them one by one).
        `change` computes on one thread's scalars (the i64 word, the i32 `args`) with em.b.
        Returns per thread (old, first): the word its update replaced, and
        - with `together` (an arrival: the args are counts that add up), the word before
          the updates this instruction of the thread's warp made to that word, where the
          backend makes them as one act of the warp (the CPU: its lanes one after another;
          Vulkan where a warp is a subgroup: one update by the sums of their args), else
          the thread's own `old`;
        - without, `old` again."""

    # ---- per-thread escapes and failures (isa/texture.py)
    def per_lane(self, args: list[ll.Value], body: Callable[[list[ll.Value]], list[ll.Value]],
                 nres: int = 0, t: ll.Type | None = None) -> list[ll.Value]:
        """Run `body` on the scalar arguments of each executing thread, in lane order."""
    def per_warp(self, key: ll.Value, args: list[ll.Value],
                 lane_body: Callable[[list[ll.Value]], list[ll.Value]],
                 warp_body: Callable[[ll.Value, list[ll.Value], ll.Value], list[ll.Value]],
                 nres: int = 0, t: ll.Type | None = None) -> list[ll.Value]:
        """per_lane([key, *args], lane_body), except that a backend that runs a warp's lanes
        together (the CPU) calls warp_body(key as a scalar, args as <32 x T>, the executing
        lanes as <32 x i1>) -> [<32 x t>] once instead where all executing threads hold the
        same `key` (a texture object: one descriptor, whose decisions stay scalar)."""
    def fail_if(self, bad: ll.Value, kind: str) -> None:
        """End the kernel with a launch error (illegal_address, trap, assert, misaligned,
        illegal_instruction)."""
    def fail_unless_member(self, member: ll.Value, kind: str) -> None:
        """fail_if when a thread that executes the instruction is not in the i32 lane mask
        `member` (current mode: it may differ between lanes)."""
    def zero_bytes(self, size: int) -> ll.Value:
        """The i64 address of at least `size` bytes of zeros that kernels may read (what a
        query of a NULL texture object reads, and a surface read that .zero drops)."""
    def texture_facts(self, image) -> Sampling | None:
        """What the texture object a `tex`/`tld4` operand holds is known to be when the code
        is made (isa/texture_layout.Sampling: its format, filter, address modes), else None:
        the sampler reads its descriptor."""

    # ---- code size
    def outline(self, key: str, args: list[ll.Value],
                body: Callable[[list[ll.Value]], list[ll.Value]]) -> list[ll.Value]:
        """body(args): per-thread values computed from `args` alone (em.b arithmetic,
        constants, intrinsics, warp reads of constant lanes). A backend may build it once per
        module as a function named by `key` and call it, or in place; both backends build
        it once (wmma.mma's hundreds of sites in a kernel: the CPU's LLVM functions, Vulkan's
        SPIR-V functions, backends/vulkan/lower_outline.py). A call runs for the threads that
        reach it, as the body in place would."""
    def outline_access(self, key: str, acc, args: list[ll.Value],
                       body: Callable[[Elements, list[ll.Value]], list[ll.Value]]) -> list[ll.Value]:
        """outline, where the body may also access memory: body(mem, args) loads and stores
        the element of `acc` (an isa.memory.Access of one plain element) through `mem` at
        per-lane offsets, as load_elements/store_elements with offsets do, at the address
        and for the executing threads of this call (a whole wmma.load or wmma.store)."""


class Elements(Protocol):
    """An access's element at per-lane byte offsets (i64 per thread) from its address."""

    def load(self, offsets: list[ll.Value], runs: int = 0) -> list[ll.Value]:
        """The element's bits at each offset (`runs`: as load_elements has it)."""
    def store(self, vals: list[ll.Value], offsets: list[ll.Value], runs: int = 0) -> None: ...

    # ---- calls (isa/control.py)
    def emit_call(self, ins: ir.Instr) -> None: ...
