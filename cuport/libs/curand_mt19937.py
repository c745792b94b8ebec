"""MT19937 as NVIDIA's host library runs it (CURAND_RNG_PSEUDO_MT19937).

Read off NVIDIA's host generator (libcurand.so.10's curandCreateGeneratorHost, whose bits
are the H200's: tests/libs/recorded/curand_host.txt). The layout is rocRAND's mt19937
(library/src/rng/mt19937_octo_engine.hpp, written to match cuRAND's); the seeding and
the distance between generators are cuRAND's own:

- 8192 generators, each a standard MT19937 (Matsumoto and Nishimura's 2002 code).
  Generator 0 is init_genrand(the seed's low 32 bits); generator k is generator 0 jumped
  ahead by k * 2^2048 steps (rocRAND seeds with (seed >> 32) ^ seed, and jumps by
  k * 2^1000).
- 8 threads share a generator. A round twists every generator's 624 words once; thread t
  of generator k holds 78 of the new words: slot 0 is word SPECIAL[t], slot 1 + 7 i + j
  is word REGULAR[i] + 7 t + j.
- Output g is round g div (65536 * 78), slot (g div 65536) mod 78 of thread g mod 65536
  (generator thread div 8), tempered. A call continues where the last one stopped; a new
  seed starts over; there is no offset (curandSetGeneratorOffset answers TYPE_ERROR) and
  every ordering that MT19937 accepts (DEFAULT, BEST, LEGACY) gives this one.

The jump: the state after N steps is p(A) S for p = z^N mod P, P the characteristic
polynomial of MT19937's transition A (degree 19937; p(A) S is the XOR, over p's terms z^i,
of S's state i steps on). The 8192 states come by doubling: S[2^m + j] = q_m(A) S[j] with
q_m = z^(2^(2048 + m)) mod P (tables/mt19937_jumps.txt, written by
`python -m cuport.libs.curand_mt19937`). 8191 such jumps are too much for numpy (each is
some 10^4 XORs of 624 words), so they are a small native loop: LLVM IR compiled by the
CPU backend's JIT, Horner's rule a byte of q at a time (0.14 ms a jump; the 8192 states
of a seed in under a second on two cores, NVIDIA's host generator takes 4.6 s).
"""

from __future__ import annotations

import os
import threading
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

U32 = np.uint32
N, M = 624, 397  # state words; the recurrence's middle term
DEGREE = 19937  # of P: the state's bits that matter
MATRIX_A, UPPER, LOWER = 0x9908B0DF, 0x80000000, 0x7FFFFFFF
GENERATORS = 8192
THREADS = 8 * GENERATORS
SLOTS = 78  # words per thread per round
PER_ROUND = THREADS * SLOTS
JUMP_LOG2 = 2048  # generator k starts k * 2^2048 steps after generator 0
SPECIAL = (0, 113, 170, 283, 340, 397, 510, 567)
REGULAR = (1, 57, 114, 171, 227, 284, 341, 398, 454, 511, 568)
#: WORDS[t, s]: the state word thread t of a generator holds in slot s
WORDS = np.array([[SPECIAL[t]] + [r + 7 * t + j for r in REGULAR for j in range(7)]
                  for t in range(8)])
TABLE = Path(__file__).resolve().parent / "tables" / "mt19937_jumps.txt"


# -- the generator --------------------------------------------------------------------------

def init_genrand(seed: int) -> np.ndarray:
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, N):
        prev = mt[-1]
        mt.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return np.array(mt, U32)


def extend(x: np.ndarray, count: int) -> np.ndarray:
    """x (..., L >= 624) words of MT19937 sequences followed by their next `count` words:
    x[t] = x[t - 227] ^ twist(x[t - 624], x[t - 623]), 227 words at a time."""
    start = x.shape[-1]
    out = np.concatenate([x, np.zeros((*x.shape[:-1], count), U32)], axis=-1)
    for t in range(start, start + count, N - M):
        k = min(N - M, start + count - t)
        y = (out[..., t - N:t - N + k] & U32(UPPER)) | (out[..., t - N + 1:t - N + 1 + k] & U32(LOWER))
        out[..., t:t + k] = (out[..., t - N + M:t - N + M + k] ^ (y >> U32(1))
                             ^ ((y & U32(1)) * U32(MATRIX_A)))
    return out


def temper(y: np.ndarray) -> np.ndarray:
    y = y ^ (y >> U32(11))
    y = y ^ ((y << U32(7)) & U32(0x9D2C5680))
    y = y ^ ((y << U32(15)) & U32(0xEFC60000))
    return y ^ (y >> U32(18))


# -- jumping ahead -----------------------------------------------------------------------------

# worker(args, row): args = {in, out, chunks, nchunks, scratch} (8 bytes each). Writes row
# `row` of `out` (624 words) = q(A) (row `row` of `in`) by Horner's rule on q's bytes
# (`chunks`, the highest first): acc = A^8 acc ^ T[byte], T[b] the XOR of the windows
# r of the row's sequence (its state r steps on) for the bits r of b, 256 states built
# first. acc lives in a buffer as a window of its own sequence: A^8 appends 8 words.
# scratch: BUFFER words for that sequence, then the table.
BUFFER = N + 8 * ((DEGREE + 7) // 8 - 1)
_JUMP_IR = r"""
define internal void @next(ptr %buf, i64 %t) alwaysinline {
  %i0 = sub i64 %t, 624
  %i1 = sub i64 %t, 623
  %im = sub i64 %t, 227
  %p0 = getelementptr i32, ptr %buf, i64 %i0
  %p1 = getelementptr i32, ptr %buf, i64 %i1
  %pm = getelementptr i32, ptr %buf, i64 %im
  %v0 = load i32, ptr %p0
  %v1 = load i32, ptr %p1
  %vm = load i32, ptr %pm
  %hi = and i32 %v0, 2147483648
  %lo = and i32 %v1, 2147483647
  %y = or i32 %hi, %lo
  %half = lshr i32 %y, 1
  %odd = and i32 %y, 1
  %mag = mul i32 %odd, 2567483615
  %w = xor i32 %vm, %half
  %new = xor i32 %w, %mag
  %pt = getelementptr i32, ptr %buf, i64 %t
  store i32 %new, ptr %pt
  ret void
}

define internal void @xor_into(ptr %dst, ptr %a, ptr %b) alwaysinline {
entry:
  br label %loop
loop:
  %w = phi i64 [0, %entry], [%w.next, %loop]
  %pa = getelementptr i32, ptr %a, i64 %w
  %pb = getelementptr i32, ptr %b, i64 %w
  %pd = getelementptr i32, ptr %dst, i64 %w
  %va = load <16 x i32>, ptr %pa, align 4
  %vb = load <16 x i32>, ptr %pb, align 4
  %vx = xor <16 x i32> %va, %vb
  store <16 x i32> %vx, ptr %pd, align 4
  %w.next = add i64 %w, 16
  %done = icmp eq i64 %w.next, 624
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @worker(ptr %args, i32 %row) {
entry:
  %in = load ptr, ptr %args
  %a1 = getelementptr i64, ptr %args, i64 1
  %out = load ptr, ptr %a1
  %a2 = getelementptr i64, ptr %args, i64 2
  %bytes = load ptr, ptr %a2
  %a3 = getelementptr i64, ptr %args, i64 3
  %nb = load i64, ptr %a3
  %a4 = getelementptr i64, ptr %args, i64 4
  %buf = load ptr, ptr %a4
  %table = getelementptr i32, ptr %buf, i64 BUFLEN
  %r = zext i32 %row to i64
  %base = mul i64 %r, 624
  %src = getelementptr i32, ptr %in, i64 %base
  %dst = getelementptr i32, ptr %out, i64 %base
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %buf, ptr align 4 %src, i64 2496, i1 false)
  br label %seq
seq:
  %t = phi i64 [624, %entry], [%t.next, %seq]
  call void @next(ptr %buf, i64 %t)
  %t.next = add i64 %t, 1
  %seq.done = icmp eq i64 %t.next, 631
  br i1 %seq.done, label %zero, label %seq
zero:
  call void @llvm.memset.p0.i64(ptr align 4 %table, i8 0, i64 2496, i1 false)
  br label %tb
tb:
  %b = phi i64 [1, %zero], [%b.next, %tb]
  %neg = sub i64 0, %b
  %low = and i64 %b, %neg
  %bit = call i64 @llvm.cttz.i64(i64 %b, i1 true)
  %prev = xor i64 %b, %low
  %to = mul i64 %b, 624
  %from = mul i64 %prev, 624
  %pto = getelementptr i32, ptr %table, i64 %to
  %pfrom = getelementptr i32, ptr %table, i64 %from
  %pwin = getelementptr i32, ptr %buf, i64 %bit
  call void @xor_into(ptr %pto, ptr %pfrom, ptr %pwin)
  %b.next = add i64 %b, 1
  %tb.done = icmp eq i64 %b.next, 256
  br i1 %tb.done, label %first, label %tb
first:
  %c0 = load i8, ptr %bytes
  %c0w = zext i8 %c0 to i64
  %o0 = mul i64 %c0w, 624
  %t0 = getelementptr i32, ptr %table, i64 %o0
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %buf, ptr align 4 %t0, i64 2496, i1 false)
  br label %step
step:
  %c = phi i64 [1, %first], [%c.next, %gen8]
  %p = phi i64 [0, %first], [%p.next, %gen8]
  %g0 = add i64 %p, 624
  call void @next(ptr %buf, i64 %g0)
  %g1 = add i64 %p, 625
  call void @next(ptr %buf, i64 %g1)
  %g2 = add i64 %p, 626
  call void @next(ptr %buf, i64 %g2)
  %g3 = add i64 %p, 627
  call void @next(ptr %buf, i64 %g3)
  %g4 = add i64 %p, 628
  call void @next(ptr %buf, i64 %g4)
  %g5 = add i64 %p, 629
  call void @next(ptr %buf, i64 %g5)
  %g6 = add i64 %p, 630
  call void @next(ptr %buf, i64 %g6)
  %g7 = add i64 %p, 631
  call void @next(ptr %buf, i64 %g7)
  %p.next = add i64 %p, 8
  %pc = getelementptr i8, ptr %bytes, i64 %c
  %cv = load i8, ptr %pc
  %cw = zext i8 %cv to i64
  %oc = mul i64 %cw, 624
  %tc = getelementptr i32, ptr %table, i64 %oc
  %acc = getelementptr i32, ptr %buf, i64 %p.next
  call void @xor_into(ptr %acc, ptr %acc, ptr %tc)
  br label %gen8
gen8:
  %c.next = add i64 %c, 1
  %steps.done = icmp eq i64 %c.next, %nb
  br i1 %steps.done, label %fin, label %step
fin:
  %final = getelementptr i32, ptr %buf, i64 %p.next
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %dst, ptr align 4 %final, i64 2496, i1 false)
  ret void
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare i64 @llvm.cttz.i64(i64, i1)
""".replace("BUFLEN", str(BUFFER))


@cache
def _jump_kernel():
    from cuport.backends.cpu import jit

    return jit.link(jit.optimize_and_emit(_JUMP_IR), {})


def jump_table() -> list[int]:
    """q_m (bit i: the coefficient of z^i), m = 0, 1, ...: tables/mt19937_jumps.txt."""
    return [int(line.split()[1], 16) for line in TABLE.read_text().splitlines()
            if line and not line.startswith("#")]


@cache
def jump_chunks() -> tuple[np.ndarray, ...]:
    """q_m's coefficients in bytes (bit r of byte c: the coefficient of z^(8c + r)), the
    highest byte first."""
    return tuple(np.frombuffer(q.to_bytes((DEGREE + 7) // 8, "little")[::-1], np.uint8).copy()
                 for q in jump_table())


def _jump_rows(states: np.ndarray, rows: int, chunks: np.ndarray) -> None:
    """states[rows + j] = q(A) states[j] for j < rows (q's bytes given), on the cores."""
    kernel = _jump_kernel()
    out = states[rows:2 * rows]
    workers = max(1, min(len(os.sched_getaffinity(0)), 8, rows))

    def run(first: int) -> None:
        scratch = np.empty(BUFFER + 256 * N, U32)
        args = np.array([states.ctypes.data, out.ctypes.data, chunks.ctypes.data, len(chunks),
                         scratch.ctypes.data], np.uint64)
        for j in range(first, rows, workers):  # ctypes lets go of the GIL during each call
            kernel.worker(args.ctypes.data, j)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(1, workers)]
    for t in threads:
        t.start()
    run(0)
    for t in threads:
        t.join()


def initial_states(seed: int) -> np.ndarray:
    """The 8192 generators' states for `seed` (read-only: copied by whoever steps them)."""
    return _initial_states(seed & 0xFFFFFFFF)  # NVIDIA ignores the seed's high word


@lru_cache(maxsize=2)
def _initial_states(seed: int) -> np.ndarray:
    states = np.empty((GENERATORS, N), U32)
    states[0] = init_genrand(seed)
    chunks = jump_chunks()
    for m in range(GENERATORS.bit_length() - 1):
        _jump_rows(states, 1 << m, chunks[m])
    states.flags.writeable = False
    return states


# -- the host library's order ----------------------------------------------------------------

class Mt19937Order:
    """Outputs in the host library's order, from `position` on, a round at a time."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.position = 0
        self.round = -1  # the round `state` and `values` belong to
        self.state: np.ndarray | None = None
        self.values: np.ndarray | None = None

    def _to_round(self, r: int) -> np.ndarray:
        if r < self.round or self.state is None:
            self.round, self.state = -1, initial_states(self.seed)
        while self.round < r:
            self.state = extend(self.state, N)[:, N:]
            self.round += 1
            self.values = None
        if self.values is None:  # [slot, generator, thread of it]
            self.values = temper(self.state)[:, WORDS].reshape(THREADS, SLOTS).T.reshape(-1)
        return self.values

    def draws(self, count: int) -> np.ndarray:
        first, last = self.position // PER_ROUND, (self.position + count - 1) // PER_ROUND
        parts = [self._to_round(r) for r in range(first, last + 1)]
        flat = parts[0] if len(parts) == 1 else np.concatenate(parts)
        skip = self.position - first * PER_ROUND
        self.position += count
        return flat[skip:skip + count].copy()


# -- the jump polynomials (tables/mt19937_jumps.txt) -----------------------------------------

def characteristic_polynomial() -> int:
    """P (bit i: the coefficient of z^i), by Berlekamp-Massey on the top bits of a
    sequence (its minimal polynomial: P is irreducible)."""
    x = extend(init_genrand(5489), 2 * DEGREE + 8)
    bits = [int(v) >> 31 for v in x[1:2 * DEGREE + 9]]
    c, b, length, gap, window = 1, 1, 0, 1, 0
    for n, s in enumerate(bits):
        window = (window << 1) | s  # bit j: s[n - j]
        if bin(c & window).count("1") & 1 == 0:
            gap += 1
        elif 2 * length <= n:
            c, b, length, gap = c ^ (b << gap), c, n + 1 - length, 1
        else:
            c ^= b << gap
            gap += 1
    assert length == DEGREE
    return int(f"{c:0{DEGREE + 1}b}"[::-1], 2)  # the connection polynomial, reversed


def square_mod(a: int, p: int) -> int:
    """a^2 mod p over GF(2)."""
    sq = int("0".join(f"{a:b}"), 2)  # squaring over GF(2) spreads the bits
    while sq.bit_length() > DEGREE:
        sq ^= p << (sq.bit_length() - 1 - DEGREE)
    return sq


def jump_polynomials(count: int = 13) -> list[int]:
    """q_m = z^(2^(2048 + m)) mod P for m < count (a minute: 2060 squarings)."""
    p = characteristic_polynomial()
    q = 2
    for _ in range(JUMP_LOG2):
        q = square_mod(q, p)
    out = [q]
    for _ in range(count - 1):
        out.append(square_mod(out[-1], p))
    return out


def main() -> None:
    lines = ["# MT19937's jump polynomials q_m = z^(2^(2048+m)) mod P, P its characteristic",
             "# polynomial: m, then q_m in hex (bit i: the coefficient of z^i). Written by",
             "# python -m cuport.libs.curand_mt19937; read by curand_mt19937.jump_table."]
    lines += [f"{m} {q:x}" for m, q in enumerate(jump_polynomials())]
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
