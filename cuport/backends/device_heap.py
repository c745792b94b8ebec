"""Device-side `malloc` and `free` (and so C++ `new`/`delete` in kernels): the allocator both
backends emit into kernels (Vulkan: vulkan/device_heap.py; CPU: cpu/hostcalls.py).

CUDA gives each context one heap of cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) bytes (8 MiB by
default), fixed once a kernel that uses it has run: `malloc(n)` returns 16-byte-aligned memory
inside it or NULL, `free(p)` lets it be reused, `free(NULL)` does nothing, and memory stays
allocated across launches until freed (the host may cudaMemcpy from it). A shader cannot call
the host, so the allocator is code emitted into the kernel, on the heap's metadata in device
memory; the CPU backend runs the same code, so both honour the limit alike. The driver
allocates the heap when such a kernel is first launched in a context (driver/device_heap.py)
and binds its address to the module (`bind_device_heap`: on Vulkan the globals table's last
slot, the push-constant block being full; on the CPU a cell the kernel links to). A backend
gives the allocator its atomics, blocks and the heap's address (Heap's abstract methods).

Layout (offsets from the heap's base, every chunk 16-byte aligned):

    0      u64 bump: the offset of the first byte never handed out (starts at HEADER_BYTES)
    8      u64 end: the heap's bytes (header + the limit)
    16     NCLASS x u64 free-list heads: low 32 bits the first chunk's offset / 16 (0: empty),
           high 32 bits a tag counting the head's changes
    HEADER_BYTES  chunks: u32 size class, u32 next chunk's offset / 16 (while free), 8 bytes
           unused, then the caller's bytes (the address malloc returns: chunk + 16)

Size classes, in 16-byte units u of header + request: 1, 2, 3, 4, then four per power of two
(5, 6, 7, 8, 10, 12, 14, 16, 20, 24, ...), so a chunk wastes under a quarter of its size.
Offsets / 16 fit 32 bits: the heap is at most 64 GiB (MAX_HEAP_BYTES).

malloc(n): the class's free list is popped; if empty, a new chunk is cut from the bump pointer
(a compare-and-swap that only advances it while the chunk fits, so a request too large for
what is left does not waste it for smaller ones); if that fails too, the first non-empty list
of a larger class gives a chunk, whose tail beyond the request goes back to the lists as
chunks of the largest classes that fit it. NULL only when no free chunk of the class or above
exists and the untouched tail is too small, on SCANS scans of the lists in a row (the
tails of chunks other threads are splitting appear meanwhile). Freed chunks are never merged: many small frees do
not make room for a large request (CUDA promises no more).

Why it is correct under any interleaving of any number of threads and blocks:
- bump: each successful CAS hands out [old, old + size), and old only grows, so chunks cut
  from it never overlap; a failed CAS changes nothing and retries with the value it read.
- free lists are Treiber stacks. push(c): write c.next = head's chunk, then CAS the head from
  the value read to (tag + 1, c); pop: read the head (tag, c), read c.next, CAS the head to
  (tag + 1, c.next). A CAS succeeds only if the head word is unchanged, and every change of
  it bumps the tag, so a pop whose c was popped and pushed back meanwhile (ABA: c.next may
  have changed) fails and retries; a stale c.next read from a chunk someone else holds is
  never installed. (The tag wraps after 2^32 changes between one thread's read and its CAS.)
  Each chunk is thus on at most one list or held by one caller; the next link lives in the
  chunk's header, which the caller's bytes never overlap.
- ordering: pushes release and pops acquire (acq_rel CAS), so a chunk's header and contents
  written before free are visible to the thread that next gets it; next links are atomic
  (relaxed) accesses, since a pop may read one while its owner rewrites it. On drivers whose
  memory barriers wait for the whole workgroup (lavapipe: lower_order.py) the loops carry no
  semantics and fences stand before and after them, where the code is block-uniform.
- progress: every retry follows another thread's successful CAS (lock-free), so no thread
  waits for another to be scheduled: safe where invocations run in lock step.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..isa.types import I32, I64, PTR

NCLASS = 128
HEAP_BUMP, HEAP_END, HEAP_LISTS = 0, 8, 16
HEADER_BYTES = HEAP_LISTS + 8 * NCLASS
CHUNK_HEADER = 16
MAX_HEAP_BYTES = 1 << 36  # offsets / 16 in 32 bits
MAX_REQUEST = MAX_HEAP_BYTES - CHUNK_HEADER - 16
#: scans of the lists before malloc answers NULL: a thread whose class and the larger ones are
#: empty while others split chunks of the larger ones finds their tails on a later scan (an
#: H100 after 256 threads freed 4 KiB blocks and 1024 asked for 32 bytes: NULL on one scan);
#: bounded, as a thread must never wait for another (devices that run threads in lock step)
SCANS = 32


def class_units(c: int) -> int:
    """The 16-byte units of a chunk of class `c` (header included)."""
    return c + 1 if c < 4 else (5 + (c - 4) % 4) << ((c - 4) // 4)


def header(limit: int) -> bytes:
    """The heap's first bytes for a heap of `limit` usable bytes: bump, end, empty lists."""
    return (HEADER_BYTES.to_bytes(8, "little") + (HEADER_BYTES + limit).to_bytes(8, "little")
            + bytes(8 * NCLASS))


def heap_bytes(limit: int) -> int:
    """The bytes of a heap of `limit` usable bytes (the header with it)."""
    from .base import CUDA_ERROR_OUT_OF_MEMORY, BackendError

    if limit + HEADER_BYTES > MAX_HEAP_BYTES:
        raise BackendError(CUDA_ERROR_OUT_OF_MEMORY,
                           f"a device malloc heap (CU_LIMIT_MALLOC_HEAP_SIZE) of {limit} bytes: "
                           f"cuport's heap holds at most {MAX_HEAP_BYTES - HEADER_BYTES} bytes")
    return HEADER_BYTES + limit


def _c32(v: int) -> ll.Constant:
    return ll.Constant(I32, v)


def _c64(v: int) -> ll.Constant:
    return ll.Constant(I64, v)


class Heap:
    """Emits one malloc or free at the builder's position (inline). A backend supplies the
    memory operations, the heap's address and the failure."""

    def __init__(self, b: ll.IRBuilder, fn: ll.Function) -> None:
        self.b, self.fn = b, fn

    def block(self, name: str) -> ll.Block:
        return self.fn.append_basic_block(f"heap_{name}")

    def ptr(self, address: ll.Value) -> ll.Value:
        return self.b.inttoptr(address, PTR)  # (inside the heap: no range check)

    # what a backend provides
    def load(self, address: ll.Value, t: ll.Type, acquire: bool = False) -> ll.Value:
        """An atomic load (relaxed, or acquiring)."""
        raise NotImplementedError

    def store(self, address: ll.Value, v: ll.Value) -> None:
        """A relaxed atomic store."""
        raise NotImplementedError

    def cas(self, address: ll.Value, expected: ll.Value, new: ll.Value, ordered: bool) -> ll.Value:
        """Compare-and-swap of an i64 (acquire-release where `ordered`, acquire on failure):
        the old value."""
        raise NotImplementedError

    def base(self) -> ll.Value:
        """The heap's address (0: none bound)."""
        raise NotImplementedError

    def ordered(self, body) -> None:
        """body(), with whatever the backend's ordering needs around it."""
        body()

    def alloca(self, t: ll.Type, name: str) -> ll.Value:
        raise NotImplementedError

    def fail_unless(self, ok: ll.Value) -> None:
        """A free of a pointer malloc did not return: fail the launch (an illegal address)."""
        raise NotImplementedError

    def ctlz(self, x: ll.Value) -> ll.Value:
        return self.b.ctlz(x, ll.Constant(ll.IntType(1), 0))

    # ------------------------------------------------------------ malloc
    def malloc(self, n: ll.Value) -> ll.Value:
        b = self.b
        result = self.alloca(I64, "heap_result")
        b.store(_c64(0), result)
        done = self.block("malloc_done")

        def body() -> None:
            heap = self.base()
            sized = self.block("malloc_sized")
            b.cbranch(b.and_(b.icmp_unsigned("<=", n, _c64(MAX_REQUEST)),
                             b.icmp_unsigned("!=", heap, _c64(0))), sized, done)
            b.position_at_end(sized)
            u = b.lshr(b.add(n, _c64(CHUNK_HEADER + 15)), _c64(4))  # units, header included
            u = b.select(b.icmp_unsigned("<", u, _c64(2)), _c64(2), u)  # (malloc(0): a byte)
            m = b.sub(u, _c64(1))
            k = b.sub(_c64(63), self.ctlz(b.or_(m, _c64(4))))
            sh = b.sub(k, _c64(2))
            q = b.and_(b.lshr(m, sh), _c64(3))
            small = b.icmp_unsigned("<=", u, _c64(4))
            cls = b.select(small, m, b.add(_c64(4), b.add(b.shl(sh, _c64(2)), q)))
            size = b.shl(b.select(small, u, b.shl(b.add(q, _c64(5)), sh)), _c64(4))
            # k: the class tried; its own first, then the bump pointer, then larger ones
            kvar = self.alloca(I64, "heap_class")
            b.store(cls, kvar)
            rounds = self.alloca(I64, "heap_rounds")
            b.store(_c64(0), rounds)
            scan = self.block("malloc_class")
            b.branch(scan)
            b.position_at_end(scan)
            k = b.load(kvar)
            have, again, retry = self.block("malloc_try"), self.block("malloc_again"), self.block("malloc_retry")
            b.cbranch(b.icmp_unsigned("<", k, _c64(NCLASS)), have, again)
            b.position_at_end(again)  # every list empty: other threads' splits may be returning tails
            r = b.load(rounds)
            b.cbranch(b.icmp_unsigned("<", r, _c64(SCANS - 1)), retry, done)
            b.position_at_end(retry)
            b.store(b.add(r, _c64(1)), rounds)
            b.store(cls, kvar)
            b.branch(scan)
            b.position_at_end(have)
            got = self.pop(heap, k)
            found, empty = self.block("malloc_found"), self.block("malloc_empty")
            b.cbranch(b.icmp_unsigned("!=", got, _c64(0)), found, empty)
            b.position_at_end(found)
            split, keep = self.block("malloc_split"), self.block("malloc_keep")
            b.cbranch(b.icmp_unsigned("!=", k, cls), split, keep)
            b.position_at_end(split)  # a larger class's chunk: its tail goes back to the lists
            self.split(heap, b.add(got, size), b.sub(b.shl(self.units(k), _c64(4)), size))
            b.store(b.trunc(cls, I32), self.ptr(got), align=4)
            b.branch(keep)
            b.position_at_end(keep)
            b.store(b.add(got, _c64(CHUNK_HEADER)), result)
            b.branch(done)
            b.position_at_end(empty)
            nxt = self.block("malloc_next")
            cut = self.block("malloc_cut")
            b.cbranch(b.icmp_unsigned("==", k, cls), cut, nxt)
            b.position_at_end(cut)
            chunk = self.bump(heap, size)
            carved = self.block("malloc_carved")
            b.cbranch(b.icmp_unsigned("!=", chunk, _c64(0)), carved, nxt)
            b.position_at_end(carved)
            b.store(b.trunc(cls, I32), self.ptr(chunk), align=4)
            b.store(b.add(chunk, _c64(CHUNK_HEADER)), result)
            b.branch(done)
            b.position_at_end(nxt)
            b.store(b.add(k, _c64(1)), kvar)
            b.branch(scan)
            b.position_at_end(done)

        self.ordered(body)
        return b.load(result)

    def pop(self, heap: ll.Value, cls: ll.Value) -> ll.Value:
        """The address of a chunk taken from class `cls`'s list, or 0 where it is empty."""
        b = self.b
        at = b.add(heap, b.add(_c64(HEAP_LISTS), b.shl(cls, _c64(3))))
        # acquire: the chunk's next link, written before the push's release, is read next
        first = self.load(at, I64, acquire=True)

        def step(h):
            unit = b.and_(h, _c64(0xFFFFFFFF))
            return b.icmp_unsigned("==", unit, _c64(0)), lambda: _popped(h, unit)

        def _popped(h, unit):
            chunk = b.add(heap, b.shl(unit, _c64(4)))
            nxt = b.zext(self.load(b.add(chunk, _c64(4)), I32), I64)
            tag = b.and_(b.add(h, _c64(1 << 32)), _c64(~0xFFFFFFFF))
            return b.or_(tag, nxt), chunk, True
        return self._cas_loop("pop", at, first, step)

    def bump(self, heap: ll.Value, size: ll.Value) -> ll.Value:
        """A new chunk of `size` bytes from the untouched tail, or 0 where it does not fit."""
        b = self.b
        at = b.add(heap, _c64(HEAP_BUMP))
        end = b.load(self.ptr(b.add(heap, _c64(HEAP_END))), typ=I64, align=8)
        first = self.load(at, I64)

        def step(o):
            return (b.icmp_unsigned(">", b.add(o, size), end),
                    lambda: (b.add(o, size), b.add(heap, o), False))
        return self._cas_loop("bump", at, first, step)

    def _cas_loop(self, name: str, at: ll.Value, first: ll.Value, step) -> ll.Value:
        """A compare-and-swap loop on the word at `at`, first read as `first`: step(word) gives
        (give up?, then() -> (new word, result, acquire-release?)); the loop retries with the
        word the failed CAS read. Answers the result, or 0 where it gave up."""
        b = self.b
        pre = b.block
        head, take, out = self.block(name), self.block(f"{name}_take"), self.block(f"{name}_out")
        b.branch(head)
        b.position_at_end(head)
        w = b.phi(I64)
        w.add_incoming(first, pre)
        give_up, then = step(w)
        b.cbranch(give_up, out, take)
        b.position_at_end(take)
        new, result, acq_rel = then()
        old = self.cas(at, w, new, acq_rel)
        tail = b.block  # (the CAS's own code may end in another block than `take`)
        w.add_incoming(old, tail)
        b.cbranch(b.icmp_unsigned("==", old, w), out, head)
        b.position_at_end(out)
        res = b.phi(I64)
        res.add_incoming(_c64(0), head)
        res.add_incoming(result, tail)
        return res

    def push(self, heap: ll.Value, chunk: ll.Value, cls: ll.Value) -> None:
        """Put `chunk` on class `cls`'s list."""
        b = self.b
        at = b.add(heap, b.add(_c64(HEAP_LISTS), b.shl(cls, _c64(3))))
        unit = b.lshr(b.sub(chunk, heap), _c64(4))
        pre = b.block
        first = self.load(at, I64)
        head, out = self.block("push"), self.block("pushed")
        b.branch(head)
        b.position_at_end(head)
        h = b.phi(I64)
        h.add_incoming(first, pre)
        self.store(b.add(chunk, _c64(4)), b.trunc(h, I32))
        tag = b.and_(b.add(h, _c64(1 << 32)), _c64(~0xFFFFFFFF))
        old = self.cas(at, h, b.or_(tag, unit), True)
        h.add_incoming(old, head)
        b.cbranch(b.icmp_unsigned("==", old, h), out, head)
        b.position_at_end(out)

    def units(self, cls: ll.Value) -> ll.Value:
        """class_units at run time."""
        b = self.b
        big = b.sub(cls, _c64(4))
        return b.select(b.icmp_unsigned("<", cls, _c64(4)), b.add(cls, _c64(1)),
                        b.shl(b.add(_c64(5), b.and_(big, _c64(3))), b.lshr(big, _c64(2))))

    def split(self, heap: ll.Value, at: ll.Value, rest: ll.Value) -> None:
        """Give the `rest` bytes at `at` (a multiple of 16) back as chunks, each of the largest
        class that fits what is left."""
        b = self.b
        pos, left = self.alloca(I64, "heap_split_at"), self.alloca(I64, "heap_split_left")
        b.store(at, pos)
        b.store(rest, left)
        head, body, out = self.block("split"), self.block("split_piece"), self.block("split_done")
        b.branch(head)
        b.position_at_end(head)
        r = b.load(left)
        b.cbranch(b.icmp_unsigned("==", r, _c64(0)), out, body)
        b.position_at_end(body)
        ru = b.lshr(r, _c64(4))
        k = b.sub(_c64(63), self.ctlz(b.or_(ru, _c64(4))))
        top = b.and_(b.lshr(ru, b.sub(k, _c64(2))), _c64(3))
        cls = b.select(b.icmp_unsigned("<", ru, _c64(4)), b.sub(ru, _c64(1)),
                       b.add(b.sub(b.shl(k, _c64(2)), _c64(5)), top))
        piece = b.load(pos)
        b.store(b.trunc(cls, I32), self.ptr(piece), align=4)
        self.push(heap, piece, cls)
        size = b.shl(self.units(cls), _c64(4))
        b.store(b.add(piece, size), pos)
        b.store(b.sub(r, size), left)
        b.branch(head)
        b.position_at_end(out)

    # ------------------------------------------------------------ free
    def free(self, p: ll.Value) -> None:
        b = self.b
        done = self.block("free_done")

        def body() -> None:
            heap = self.base()
            go, push = self.block("free"), self.block("free_push")
            b.cbranch(b.icmp_unsigned("!=", p, _c64(0)), go, done)
            b.position_at_end(go)
            chunk = b.sub(p, _c64(CHUNK_HEADER))
            # a pointer malloc did not return is undefined behaviour in CUDA; here it fails the
            # launch (an illegal address) instead of corrupting the heap
            inside = b.and_(b.icmp_unsigned("!=", heap, _c64(0)),
                            b.icmp_unsigned("<", b.sub(chunk, b.add(heap, _c64(HEADER_BYTES))),
                                            b.sub(b.load(self.ptr(b.add(heap, _c64(HEAP_END))), typ=I64,
                                                         align=8), _c64(HEADER_BYTES))))
            aligned = b.icmp_unsigned("==", b.and_(p, _c64(15)), _c64(0))
            ok = b.and_(inside, aligned)
            cls = b.zext(b.load(self.ptr(b.select(ok, chunk, heap)), typ=I32, align=4), I64)
            ok = b.and_(ok, b.icmp_unsigned("<", cls, _c64(NCLASS)))
            self.fail_unless(ok)
            b.branch(push)
            b.position_at_end(push)
            self.push(heap, chunk, cls)
            b.branch(done)
            b.position_at_end(done)

        self.ordered(body)
