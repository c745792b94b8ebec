"""Device-side malloc and free on the Vulkan backend: the shared allocator (backends/
device_heap.py) on SPIR-V atomics at device scope, the heap's address in the last slot of the
module's globals table (layout.py: the push-constant block is full).

Ordering: the list heads' compare-and-swaps are acquire-release with MakeVisible/
MakeAvailable (lower_sync.with_visibility). On drivers whose memory barriers wait for the whole
workgroup (lavapipe: lower_order.py) the retry loops carry no semantics and the ordering moves
to fences around the call, where the code is block-uniform (lower_order.around_loop).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ...isa.types import I32, I64
from .. import device_heap as shared
from . import lower_order
from .lower_sync import (
    DEVICE,
    SEM_ACQ_REL,
    SEM_ACQUIRE,
    SEM_UNIFORM,
    fail_semantics,
    with_visibility,
)


def _c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def heap_slot(plan) -> int:
    """The globals table's slot of the heap's address (after the module's variables)."""
    return len(plan.global_index)


class VulkanHeap(shared.Heap):
    def __init__(self, em) -> None:
        super().__init__(em.b, em.llfn)
        self.em = em
        self.with_semantics = em.plan.caps.divergent_memory_barriers

    def _sem(self, sem: int) -> int:
        return with_visibility(sem | SEM_UNIFORM) if self.with_semantics else 0

    def load(self, address: ll.Value, t: ll.Type, acquire: bool = False) -> ll.Value:
        sem = self._sem(SEM_ACQUIRE) if acquire else 0
        return self.em.spv("OpAtomicLoad", t, [self.ptr(address), _c32(DEVICE), _c32(sem)], "g")

    def store(self, address: ll.Value, v: ll.Value) -> None:
        self.em.spv("OpAtomicStore", ll.VoidType(), [self.ptr(address), _c32(DEVICE), _c32(0), v], "g")

    def cas(self, address: ll.Value, expected: ll.Value, new: ll.Value, ordered: bool) -> ll.Value:
        sem = self._sem(SEM_ACQ_REL) if ordered else 0
        return self.em.spv("OpAtomicCompareExchange", I64, [self.ptr(address), _c32(DEVICE), _c32(sem),
                                                            _c32(fail_semantics(sem)), new, expected], "g")

    def base(self) -> ll.Value:
        b = self.b
        at = b.add(self.em.push("globals"), ll.Constant(I64, 8 * heap_slot(self.em.plan)))
        return b.load(self.ptr(at), typ=I64, align=8)

    def ordered(self, body) -> None:
        if self.with_semantics:
            body()
        else:
            lower_order.around_loop(self.em, SEM_ACQ_REL | SEM_UNIFORM, body)

    def alloca(self, t: ll.Type, name: str) -> ll.Value:
        return self.em.entry_alloca(t, name)

    def ctlz(self, x: ll.Value) -> ll.Value:
        return self.em.intrinsic("llvm.ctlz", [x, ll.Constant(ll.IntType(1), 0)])

    def fail_unless(self, ok: ll.Value) -> None:
        self.em.fail_if(self.b.not_(ok), "illegal_address")


def lower_malloc(em, n: ll.Value) -> ll.Value:
    return VulkanHeap(em).malloc(n)


def lower_free(em, p: ll.Value) -> None:
    VulkanHeap(em).free(p)
