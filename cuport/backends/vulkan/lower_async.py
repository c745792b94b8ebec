"""The Vulkan emitter's asynchronous copies and mbarrier words, per invocation (isa/api.py's
copy_bytes and sync_word_*; the semantics are cuport/isa/async_copy.py's).

Invocations run at the same time: every change of an mbarrier word is an atomic
compare-and-swap (release semantics at workgroup scope, so the copies and stores before an
arrive are visible to whoever sees the phase complete), a test is an atomic acquire load;
in code that part of the block skips, on drivers whose memory barriers are workgroup
barriers (lavapipe), none of them carries memory semantics (lower_order.py). Shared memory
holds 64-bit words in kernels with mbarriers (lower.py's plan_layout), so a copy moves
whole 8-byte words where it can.

Where a warp is a subgroup, the warp's threads that arrive at one barrier together do so at
once, as NVIDIA's hardware does (the first lane updates the word once for all, with the
counts summed; every thread's state is the word before the warp's arrivals: an H200
answers one pending count for all of them, measured); elsewhere each thread arrives for
itself.

A loop that waits on an mbarrier waits for other threads of the block; devices that run a
workgroup in lock step (lavapipe) refuse it like any such loop (compiler.py
check_progress).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ...ptx import ir
from .lower_order import relaxed_here
from .lower_sync import (
    SEM_ACQ_REL,
    SEM_ACQUIRE,
    SEM_UNIFORM,
    SEM_WORKGROUP,
    SUBGROUP,
    WORKGROUP,
    with_visibility,
)

I1, I32, I64 = ll.IntType(1), ll.IntType(32), ll.IntType(64)


def _c(t: ll.IntType, v: int) -> ll.Constant:
    return ll.Constant(t, v & ((1 << t.width) - 1))


def needs_64bit_shared_words(ins: ir.Instr) -> bool:
    """Whether an instruction keeps an mbarrier word in shared memory (plan_layout)."""
    return ins.op == "mbarrier" or (ins.op == "cp" and any("mbarrier" in m for m in ins.mods))


class AsyncOps:
    """Mixin of the VulkanEmitter."""

    # ================================================================ copies
    def _copy_load(self, space: str, a: ll.Value, t: ll.IntType) -> ll.Value:
        if space == "global":
            return self.b.load(self._global_ptr(a), typ=t, align=t.width // 8)
        return self._word_load(space, a, t)

    def _copy_store(self, space: str, a: ll.Value, v: ll.Value) -> None:
        if space == "global":
            self.b.store(v, self._global_ptr(a, write=True), align=v.type.width // 8)
        else:
            self._word_store(space, a, v)

    def copy_bytes(self, dst: ir.Mem, dst_space: str, src: ir.Mem, src_space: str,
                   size: int | ll.Value, count: ll.Value | None = None) -> None:
        for space in (dst_space, src_space):
            if space not in ("shared", "global"):
                raise self.error(f"an asynchronous copy to or from .{space} memory")
        d, s = self.address(dst, dst_space), self.address(src, src_space)
        if isinstance(size, int):
            self._copy_words(d, dst_space, s, src_space, size, count)
        else:
            self._copy_loop(d, dst_space, s, src_space, size)

    def _copy_words(self, dst: ll.Value, dst_space: str, src: ll.Value, src_space: str,
                    size: int, count: ll.Value | None) -> None:
        """cp.async's copy: words of the widest access shared memory's words allow, those
        past `count` bytes zeros (a source word is read only where some of it is wanted,
        never past the source's aligned cp-size chunk)."""
        b = self.b
        t = I64 if size % 8 == 0 and self.shared_word.width == 64 else I32
        step = t.width // 8
        for off in range(0, size, step):
            s, d = self._offset(src_space, src, off), self._offset(dst_space, dst, off)
            if count is None:
                self._copy_store(dst_space, d, self._copy_load(src_space, s, t))
                continue
            # the bytes of this word that come from the source: clamp(count - off, 0, step)
            valid = b.sub(count, _c(I32, off))
            valid = b.select(b.icmp_signed("<", valid, _c(I32, 0)), _c(I32, 0), valid)
            valid = b.select(b.icmp_signed(">", valid, _c(I32, step)), _c(I32, step), valid)
            slot = self.entry_alloca(t, "cp_word")
            b.store(_c(t, 0), slot)
            with b.if_then(b.icmp_unsigned(">", valid, _c(I32, 0))):
                word = self._copy_load(src_space, s, t)
                bits = b.zext(b.mul(valid, _c(I32, 8)), t) if t.width > 32 else b.mul(valid, _c(I32, 8))
                full = b.icmp_unsigned("==", valid, _c(I32, step))
                mask = b.select(full, _c(t, -1), b.sub(b.shl(_c(t, 1), bits), _c(t, 1)))
                b.store(b.and_(word, mask), slot)
            self._copy_store(dst_space, d, b.load(slot, typ=t))

    def _copy_loop(self, dst: ll.Value, dst_space: str, src: ll.Value, src_space: str,
                   size: ll.Value) -> None:
        """cp.async.bulk's copy: a loop over words (bulk sizes are multiples of 16 bytes)."""
        b = self.b
        n = b.zext(size, I64)
        t = I64 if self.shared_word.width == 64 else I32
        pre = b.block
        head = self.llfn.append_basic_block("bulk")
        body = self.llfn.append_basic_block("bulk_body")
        done = self.llfn.append_basic_block("bulk_done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(_c(I64, 0), pre)
        b.cbranch(b.icmp_unsigned("<", i, n), body, done)
        b.position_at_end(body)
        self._copy_store(dst_space, b.add(dst, i), self._copy_load(src_space, b.add(src, i), t))
        nxt = b.add(i, _c(I64, t.width // 8))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)

    # ================================================================ mbarrier words
    def _sync_word_ptr(self, space: str, a: ll.Value) -> tuple[ll.Value, str]:
        if space == "shared":
            if not self.plan.caps.int64_shared_atomics and self.shared is not None:
                raise self.error("an mbarrier in shared memory on a device without 64-bit atomics on "
                                 "shared memory (shaderSharedInt64Atomics)")
            if self.shared_word.width != 64:
                raise self.error("an mbarrier in a kernel whose shared memory has 32-bit words (internal)")
            return self._word_ptr("shared", self._split("shared", a)[0]), "s"
        if space == "global":
            return self._global_ptr(a, write=True), "g"
        raise self.error(f"an mbarrier in {space} memory")

    def _sync_semantics(self, acquire_only: bool = False) -> int:
        """Memory semantics of an mbarrier access (none where lower_order.py says so)."""
        if relaxed_here(self):
            return 0
        return with_visibility((SEM_ACQUIRE if acquire_only else SEM_ACQ_REL) | SEM_WORKGROUP | SEM_UNIFORM)

    def _on_sync_word(self, mem: ir.Mem, space: str, go, types: list[ll.Type]) -> list[ll.Value]:
        """go(pointer, storage tag) for the word at [mem], in each space it may be in."""
        def at(where: str, addr: ll.Value) -> list[ll.Value]:
            return go(*self._sync_word_ptr(where, addr))

        return self._by_space(self._space_for(space, mem), self.address(mem, space), at, types)

    def sync_word_store(self, mem: ir.Mem, space: str, value: ll.Value) -> None:
        def go(p: ll.Value, tag: str) -> list[ll.Value]:
            self.spv("OpAtomicStore", ll.VoidType(), [p, _c(I32, WORKGROUP), _c(I32, 0), value], tag)
            return []

        self._on_sync_word(mem, space, go, [])

    def sync_word_load(self, mem: ir.Mem, space: str) -> ll.Value:
        def go(p: ll.Value, tag: str) -> list[ll.Value]:
            sem = self._sync_semantics(True)
            return [self.spv("OpAtomicLoad", I64, [p, _c(I32, WORKGROUP), _c(I32, sem)], tag)]

        return self._on_sync_word(mem, space, go, [I64])[0]

    def _sync_update(self, mem: ir.Mem, space: str, new_of: Callable[[ll.Value], ll.Value]) -> ll.Value:
        """Atomically replace the word by new_of(old): the old word of the attempt that won."""
        def go(p: ll.Value, tag: str) -> list[ll.Value]:
            return [self._cas_loop(p, tag, I64, WORKGROUP, self._sync_semantics(), new_of)]

        return self._on_sync_word(mem, space, go, [I64])[0]

    def sync_word_update(self, mem: ir.Mem, space: str, args: list[ll.Value],
                         change: Callable[[ll.Value, list[ll.Value]], ll.Value],
                         together: bool = False) -> tuple[ll.Value, ll.Value]:
        def alone() -> ll.Value:
            return self._sync_update(mem, space, lambda old: change(old, args))

        if not together or self.emulated or not isinstance(self._space_for(space, mem), str):
            old = alone()
        else:
            old = self._update_as_warp(mem, space, args, change, alone)
        return old, old

    def _update_as_warp(self, mem: ir.Mem, space: str, args: list[ll.Value], change, alone) -> ll.Value:
        """The subgroup's threads that update one word make one update, of the sums of
        their args, by the first of them; each gets the word before it (the others update
        alone)."""
        b = self.b
        a = self.address(mem, space)
        sg = _c(I32, SUBGROUP)
        lo, hi = b.trunc(a, I32), b.trunc(b.lshr(a, _c(I64, 32)), I32)
        same = b.and_(self.spv("OpGroupNonUniformAllEqual", I1, [sg, lo]),
                      self.spv("OpGroupNonUniformAllEqual", I1, [sg, hi]))
        slot = self.entry_alloca(I64, "mbar_state")
        with b.if_else(same) as (together, apart):
            with together:
                totals = [self.spv("OpGroupNonUniformIAdd", I32, [sg, _c(I32, 0), v], "reduce") for v in args]
                old_slot = self.entry_alloca(I64, "mbar_old")
                with b.if_then(self.spv("OpGroupNonUniformElect", I1, [sg])):
                    b.store(self._sync_update(mem, space, lambda old: change(old, totals)), old_slot)
                old = b.load(old_slot, typ=I64)
                olo = self.spv("OpGroupNonUniformBroadcastFirst", I32, [sg, b.trunc(old, I32)])
                ohi = self.spv("OpGroupNonUniformBroadcastFirst", I32, [sg, b.trunc(b.lshr(old, _c(I64, 32)), I32)])
                b.store(b.or_(b.zext(olo, I64), b.shl(b.zext(ohi, I64), _c(I64, 32))), slot)
            with apart:
                b.store(alone(), slot)
        return b.load(slot, typ=I64)


__all__ = ["AsyncOps", "needs_64bit_shared_words"]
