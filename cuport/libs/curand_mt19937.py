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
polynomial of MT19937's transition A, and p(A) S is the XOR, over p's terms z^i, of the
624 words of S's sequence from word i on. The 8192 states come by doubling:
S[2^m + j] = q_m(A) S[j] with q_m = z^(2^(2048 + m)) mod P (tables/mt19937_jumps.txt,
written by `python -m cuport.libs.curand_mt19937`). That is 8191 jumps of about 10^4
terms of 624 words each (5e10 XORs), so the loop is native code (LLVM IR, compiled by
the CPU backend's JIT; a few seconds on one core, as NVIDIA's host generator takes).
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

# worker(args, row): args = {in, out, terms, nterms, scratch} (8 bytes each). Writes row
# `row` of `out` (624 words) = q(A) (row `row` of `in`), q's terms the nterms int32 at
# `terms`: the row's sequence (DEGREE + 624 words, into scratch), then the XOR of its
# windows at the terms, 48 words at a time in registers.
_JUMP_IR = r"""
define void @worker(ptr %args, i32 %row) {
entry:
  %in = load ptr, ptr %args
  %a1 = getelementptr i64, ptr %args, i64 1
  %out = load ptr, ptr %a1
  %a2 = getelementptr i64, ptr %args, i64 2
  %terms = load ptr, ptr %a2
  %a3 = getelementptr i64, ptr %args, i64 3
  %n = load i64, ptr %a3
  %a4 = getelementptr i64, ptr %args, i64 4
  %x = load ptr, ptr %a4
  %r = zext i32 %row to i64
  %base = mul i64 %r, 624
  %src = getelementptr i32, ptr %in, i64 %base
  %dst = getelementptr i32, ptr %out, i64 %base
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %x, ptr align 4 %src, i64 2496, i1 false)
  br label %gen
gen:
  %t = phi i64 [624, %entry], [%t.next, %gen]
  %i0 = sub i64 %t, 624
  %i1 = sub i64 %t, 623
  %im = sub i64 %t, 227
  %p0 = getelementptr i32, ptr %x, i64 %i0
  %p1 = getelementptr i32, ptr %x, i64 %i1
  %pm = getelementptr i32, ptr %x, i64 %im
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
  %pt = getelementptr i32, ptr %x, i64 %t
  store i32 %new, ptr %pt
  %t.next = add i64 %t, 1
  %gen.done = icmp eq i64 %t.next, LENGTH
  br i1 %gen.done, label %tile, label %gen
tile:
  %w0 = phi i64 [0, %gen], [%w0.next, %store]
  br label %sum
sum:
  %k = phi i64 [0, %tile], [%k.next, %sum]
  %sa = phi <16 x i32> [zeroinitializer, %tile], [%sa.next, %sum]
  %sb = phi <16 x i32> [zeroinitializer, %tile], [%sb.next, %sum]
  %sc = phi <16 x i32> [zeroinitializer, %tile], [%sc.next, %sum]
  %pk = getelementptr i32, ptr %terms, i64 %k
  %term32 = load i32, ptr %pk
  %term = zext i32 %term32 to i64
  %at = add i64 %term, %w0
  %qa = getelementptr i32, ptr %x, i64 %at
  %qb = getelementptr i32, ptr %qa, i64 16
  %qc = getelementptr i32, ptr %qa, i64 32
  %va = load <16 x i32>, ptr %qa, align 4
  %vb = load <16 x i32>, ptr %qb, align 4
  %vc = load <16 x i32>, ptr %qc, align 4
  %sa.next = xor <16 x i32> %sa, %va
  %sb.next = xor <16 x i32> %sb, %vb
  %sc.next = xor <16 x i32> %sc, %vc
  %k.next = add i64 %k, 1
  %sum.done = icmp eq i64 %k.next, %n
  br i1 %sum.done, label %store, label %sum
store:
  %oa = getelementptr i32, ptr %dst, i64 %w0
  %ob = getelementptr i32, ptr %oa, i64 16
  %oc = getelementptr i32, ptr %oa, i64 32
  store <16 x i32> %sa.next, ptr %oa, align 4
  store <16 x i32> %sb.next, ptr %ob, align 4
  store <16 x i32> %sc.next, ptr %oc, align 4
  %w0.next = add i64 %w0, 48
  %tile.done = icmp eq i64 %w0.next, 624
  br i1 %tile.done, label %exit, label %tile
exit:
  ret void
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
""".replace("LENGTH", str(DEGREE + N))


@cache
def _jump_kernel():
    from cuport.backends.cpu import jit

    return jit.link(jit.optimize_and_emit(_JUMP_IR), {})


def jump_table() -> list[int]:
    """q_m (bit i: the coefficient of z^i), m = 0, 1, ...: tables/mt19937_jumps.txt."""
    return [int(line.split()[1], 16) for line in TABLE.read_text().splitlines()
            if line and not line.startswith("#")]


@cache
def jump_terms() -> tuple[np.ndarray, ...]:
    """The exponents of q_m's terms (int32)."""
    out = []
    for q in jump_table():
        bits = np.unpackbits(np.frombuffer(q.to_bytes(DEGREE // 8 + 1, "little"), np.uint8),
                             bitorder="little")
        out.append(np.flatnonzero(bits).astype(np.int32))
    return tuple(out)


def _jump_rows(states: np.ndarray, rows: int, terms: np.ndarray) -> None:
    """states[rows + j] = q(A) states[j] for j < rows (q's terms given), on the cores."""
    kernel = _jump_kernel()
    terms = np.ascontiguousarray(terms, np.int32)
    out = states[rows:2 * rows]
    workers = max(1, min(len(os.sched_getaffinity(0)), 8, rows))

    def run(first: int) -> None:
        scratch = np.empty(DEGREE + N, U32)
        args = np.array([states.ctypes.data, out.ctypes.data, terms.ctypes.data, len(terms),
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
    terms = jump_terms()
    for m in range(GENERATORS.bit_length() - 1):
        _jump_rows(states, 1 << m, terms[m])
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
             "# python -m cuport.libs.curand_mt19937; read by curand_mt19937.jump_terms."]
    lines += [f"{m} {q:x}" for m, q in enumerate(jump_polynomials())]
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
