"""cuRAND's generators as NVIDIA's device code defines them, for many streams at once.

Each engine follows curand_kernel.h (curand_init's seeding, skip-ahead by subsequence
and by offset, the step, the 32-bit output) and runs k independent streams ("lanes")
as numpy arrays:

- XORWOW: the seed scrambling, subsequences 2^67 steps apart (the state transition is
  linear over GF(2): its 160x160 matrix, raised to powers of two by squaring, as 0/1
  float matrices multiplied with BLAS), the Weyl counter d;
- MRG32k3a: two order-3 recurrences mod m1 and m2, subsequences 2^76 steps apart
  (3x3 matrix powers mod m), the output in (0, m1] as the device computes it;
- Philox4x32-10: counter-based (counter = (offset/4, subsequence), key = seed);
- MTGP32: the Mersenne Twister for GPUs with NVIDIA's 200 parameter sets for 2^11213-1
  (tables/mtgp32_11213.txt, generated from curand_mtgp32dc_p_11213.h), one parameter
  set and state per block, seeded as curandMakeMTGP32KernelState does;
- Sobol32/64 and their scrambled forms: gray-code points from the direction vectors
  (Joe and Kuo's, as cuRAND's JOEKUO6 set: computed by scipy's Sobol initialisation,
  identical to curandGetDirectionVectors32/64's), XOR the scramble constant.

A lane's `draw` hands back its next values in its own order; the host API (curand.py)
decides which lane produces which output.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

U32, U64 = np.uint32, np.uint64
TABLES = Path(__file__).resolve().parent / "tables"


# -- GF(2) linear algebra for XORWOW ---------------------------------------------------------
# A linear map of the 160-bit state is a (160, 5) uint32 array: row i is the image of
# bit i (bit i % 32 of word i // 32). Applying it XORs the rows of the bits that are set,
# 160 vector operations for any number of states (no BLAS: it must stay fast on a
# loaded machine, where threaded BLAS on small matrices stalls).

def _apply(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The map m applied to states v (5, k)."""
    out = np.zeros_like(v)
    for i in range(160):
        bit = (v[i >> 5] >> U32(i & 31)) & U32(1)
        out ^= m[i][:, None] * bit[None, :]
    return out


def _compose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The map 'a, then b'."""
    return _apply(b, a.T).T.copy()


def _xorwow_linear_step(v: np.ndarray) -> np.ndarray:
    t = v[0] ^ (v[0] >> U32(2))
    return np.stack([v[1], v[2], v[3], v[4], (v[4] ^ (v[4] << U32(4))) ^ (t ^ (t << U32(1)))])


@cache
def _xorwow_powers(count: int) -> tuple[np.ndarray, ...]:
    """M^(2^i) for i < count, M the XORWOW step's linear part."""
    basis = np.zeros((5, 160), U32)
    for i in range(160):
        basis[i // 32, i] = U32(1) << U32(i % 32)
    out = [_xorwow_linear_step(basis).T.copy()]
    for _ in range(count - 1):
        out.append(_compose(out[-1], out[-1]))
    return tuple(out)


def _skip(v: np.ndarray, amounts: np.ndarray, shift: int) -> np.ndarray:
    """Advance each state (column of v) by amounts[column] * 2^shift XORWOW steps."""
    amounts = np.asarray(amounts, dtype=U64)
    top = int(amounts.max()).bit_length() if len(amounts) else 0
    if top == 0:
        return v
    powers = _xorwow_powers(shift + top)
    if (amounts == amounts[0]).all():  # one skip for every state: one map
        m = None
        for i in range(top):
            if (int(amounts[0]) >> i) & 1:
                m = powers[shift + i] if m is None else _compose(m, powers[shift + i])
        return _apply(m, v)
    for i in range(top):
        sel = ((amounts >> U64(i)) & U64(1)).astype(bool)
        if sel.any():
            v[:, sel] = _apply(powers[shift + i], v[:, sel])
    return v


class Xorwow:
    """curandStateXORWOW_t for many lanes: v (5, k) and d (k,) uint32."""

    name = "XORWOW"

    def __init__(self, seed: int | np.ndarray, subsequences: np.ndarray, offset: int = 0) -> None:
        """Lane i: curand_init(seed, subsequences[i], offset); `seed` may be one per lane."""
        k = len(subsequences)
        seeds = np.broadcast_to(np.asarray(seed, U64), (k,))
        s0 = (seeds & U64(0xFFFFFFFF)).astype(U32) ^ U32(0xAAD26B49)
        s1 = (seeds >> U64(32)).astype(U32) ^ U32(0xF7DCEFDD)
        with np.errstate(over="ignore"):
            t0 = U32(1099087573) * s0
            t1 = U32(2591861531) * s1
            d = U32(6615241) + t1 + t0
            v = np.stack([U32(123456789) + t0, U32(362436069) ^ t0, U32(521288629) + t1,
                          U32(88675123) ^ t1, U32(5783321) + t0])
        v = _skip(v, np.asarray(subsequences), 67)
        self.v = _skip(v, np.full(k, offset, dtype=U64), 0)
        with np.errstate(over="ignore"):
            self.d = d + U32((362437 * offset) & 0xFFFFFFFF)

    def draw(self, steps: int) -> np.ndarray:
        """(steps, k) curand() outputs; the lanes advance."""
        v, d = self.v, self.d
        out = np.empty((steps, v.shape[1]), U32)
        with np.errstate(over="ignore"):
            for s in range(steps):
                t = v[0] ^ (v[0] >> U32(2))
                v[0], v[1], v[2], v[3] = v[1], v[2], v[3], v[4]
                v[4] = (v[4] ^ (v[4] << U32(4))) ^ (t ^ (t << U32(1)))
                d += U32(362437)
                out[s] = v[4] + d
        return out


#: XORWOW under CURAND_ORDERING_PSEUDO_SEEDED: lane l is curand_init(seed + l * this
#: (mod 2^64), 0, offset) instead of subsequence l (NVIDIA's host generator: every lane of
#: six seeds, among them 0, 2^32 - 1 and 2^64 - 5)
SEEDED_STRIDE = 3133713


def xorwow_seeded(seed: int, lanes: np.ndarray, offset: int = 0) -> Xorwow:
    with np.errstate(over="ignore"):
        seeds = U64(seed) + lanes.astype(U64) * U64(SEEDED_STRIDE)
    return Xorwow(seeds, np.zeros(len(lanes), U64), offset)


# -- MRG32k3a ------------------------------------------------------------------------------

MRG_M1, MRG_M2 = 4294967087, 4294944443
MRG_A12, MRG_A13N, MRG_A21, MRG_A23N = 1403580, 810728, 527612, 1370589
MRG_NORM = 2.3283065498378288e-10
MRG_BITS_NORM = 1.000000048662
_MRG_MATRICES = (((0, 1, 0), (0, 0, 1), (MRG_M1 - MRG_A13N, MRG_A12, 0)),
                 ((0, 1, 0), (0, 0, 1), (MRG_M2 - MRG_A23N, 0, MRG_A21)))


def _mat_mul(a, b, m: int):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3))
                 for i in range(3))


@cache
def _mrg_powers(which: int, shift: int, count: int) -> tuple:
    """M^(2^(shift+i)) mod m for i < count (which: 0 for the first component, 1 the second)."""
    m = (MRG_M1, MRG_M2)[which]
    a = _MRG_MATRICES[which]
    for _ in range(shift):
        a = _mat_mul(a, a, m)
    out = [a]
    for _ in range(count - 1):
        out.append(_mat_mul(out[-1], out[-1], m))
    return tuple(out)


def _mrg_apply(s: np.ndarray, a, m: int) -> np.ndarray:
    """a @ s mod m for states s (3, k) uint64 (each product < 2^64)."""
    mm = U64(m)
    return np.stack([((U64(a[i][0]) * s[0]) % mm + (U64(a[i][1]) * s[1]) % mm
                      + (U64(a[i][2]) * s[2]) % mm) % mm for i in range(3)])


def _mrg_skip(s: np.ndarray, which: int, amounts: np.ndarray, shift: int, bits: int) -> np.ndarray:
    m = (MRG_M1, MRG_M2)[which]
    amounts = amounts.astype(U64)
    for i, a in enumerate(_mrg_powers(which, shift, bits)):
        sel = ((amounts >> U64(i)) & U64(1)).astype(bool)
        if sel.any():
            s[:, sel] = _mrg_apply(s[:, sel], a, m)
    return s


class Mrg32k3a:
    """curandStateMRG32k3a_t for many lanes; `draw` gives curand_MRG32k3a's double in (0, m1]."""

    name = "MRG32K3A"

    def __init__(self, seed: int, subsequences: np.ndarray, offset: int = 0) -> None:
        k = len(subsequences)
        s1 = np.full((3, k), 12345, U64)
        s2 = np.full((3, k), 12345, U64)
        if seed:
            x1 = (seed & 0xFFFFFFFF) ^ 0x55555555
            x2 = ((seed >> 32) ^ 0xAAAAAAAA) & 0xFFFFFFFF
            for i, (a, b) in enumerate(((x1, x2), (x2, x1), (x1, x2))):
                s1[i] = (a * 12345) % MRG_M1
                s2[i] = (b * 12345) % MRG_M2
        sub = np.asarray(subsequences, dtype=U64) & U64((1 << 51) - 1)
        off = np.full(k, offset, U64)
        for which, s in ((0, s1), (1, s2)):
            _mrg_skip(s, which, sub, 76, 51)
            _mrg_skip(s, which, off, 0, 64)
        self.s1, self.s2 = s1.astype(np.int64), s2.astype(np.int64)

    def draw(self, steps: int) -> np.ndarray:
        s1, s2 = self.s1, self.s2
        out = np.empty((steps, s1.shape[1]), np.float64)
        for s in range(steps):
            p1 = (MRG_A12 * s1[1] - MRG_A13N * s1[0]) % MRG_M1
            s1[0], s1[1], s1[2] = s1[1], s1[2], p1
            p2 = (MRG_A21 * s2[2] - MRG_A23N * s2[0]) % MRG_M2
            s2[0], s2[1], s2[2] = s2[1], s2[2], p2
            r = p1 - p2
            out[s] = np.where(p1 <= p2, r + MRG_M1, r)
        return out


def mrg_bits(r: np.ndarray) -> np.ndarray:
    """curand() of MRG32k3a: the double times 1.000000048662, truncated (saturating as cvt)."""
    return np.minimum(np.floor(r * MRG_BITS_NORM), 4294967295.0).astype(U32)


# -- Philox4x32-10 ---------------------------------------------------------------------------

PHILOX_M0, PHILOX_M1 = U64(0xD2511F53), U64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = U32(0x9E3779B9), U32(0xBB67AE85)


def philox_blocks(seed: int, counters: np.ndarray) -> np.ndarray:
    """Philox4x32-10 of (k, 4) uint32 counters with key = seed: (k, 4) outputs."""
    c = [counters[:, i].astype(U32) for i in range(4)]
    k0 = np.full(len(counters), U32(seed & 0xFFFFFFFF), U32)
    k1 = np.full(len(counters), U32((seed >> 32) & 0xFFFFFFFF), U32)
    with np.errstate(over="ignore"):
        for r in range(10):
            p0 = PHILOX_M0 * c[0].astype(U64)
            p1 = PHILOX_M1 * c[2].astype(U64)
            hi0, lo0 = (p0 >> U64(32)).astype(U32), p0.astype(U32)
            hi1, lo1 = (p1 >> U64(32)).astype(U32), p1.astype(U32)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
            if r < 9:
                k0 = k0 + PHILOX_W0
                k1 = k1 + PHILOX_W1
    return np.stack(c, axis=1)


class Philox:
    """curandStatePhilox4_32_10_t for many lanes: words counted from the lane's offset."""

    name = "PHILOX4_32_10"

    def __init__(self, seed: int, subsequences: np.ndarray, offset: int = 0) -> None:
        self.seed = seed
        self.sub = np.asarray(subsequences, dtype=U64)
        self.word = offset  # the next word's index in each lane

    def draw(self, steps: int) -> np.ndarray:
        k = len(self.sub)
        first, last = self.word // 4, (self.word + steps - 1) // 4
        blocks = []
        counters = np.zeros((k, 4), U32)
        counters[:, 2] = (self.sub & U64(0xFFFFFFFF)).astype(U32)
        counters[:, 3] = (self.sub >> U64(32)).astype(U32)
        for b in range(first, last + 1):
            counters[:, 0] = U32(b & 0xFFFFFFFF)
            counters[:, 1] = U32((b >> 32) & 0xFFFFFFFF)
            blocks.append(philox_blocks(self.seed, counters).T)
        words = np.concatenate(blocks)[self.word - 4 * first:][:steps]
        self.word += steps
        return words


# -- MTGP32 ----------------------------------------------------------------------------------

MTGP_N = 351  # state words for 2^11213 - 1
MTGP_THREADS = 256  # outputs a block makes per curand() round


@cache
def mtgp32_params() -> dict[str, np.ndarray]:
    """NVIDIA's 200 MTGP32 parameter sets (tables/mtgp32_11213.txt)."""
    rows = [line.split() for line in (TABLES / "mtgp32_11213.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    a = np.array([[int(x, 0) for x in r] for r in rows], dtype=np.int64)
    return {"mexp": a[:, 0], "pos": a[:, 1], "sh1": a[:, 2].astype(U32),
            "sh2": a[:, 3].astype(U32), "tbl": a[:, 4:20].astype(U32),
            "tmp_tbl": a[:, 20:36].astype(U32), "flt_tmp_tbl": a[:, 36:52].astype(U32),
            "mask": a[:, 52].astype(U32)}


def mtgp32_init_state(param: int, seed: int) -> np.ndarray:
    """curand_mtgp32_host.h's mtgp32_init_state: MTGP_N words for parameter set `param`."""
    p = mtgp32_params()
    tbl = p["tbl"][param]
    hidden = int(tbl[4]) ^ ((int(tbl[8]) << 16) & 0xFFFFFFFF)
    tmp = hidden
    tmp = (tmp + (tmp >> 16)) & 0xFFFFFFFF
    tmp = (tmp + (tmp >> 8)) & 0xFFFFFFFF
    fill = (tmp & 0xFF) * 0x01010101
    state = [fill] * MTGP_N
    state[0] = seed & 0xFFFFFFFF
    state[1] = hidden
    for i in range(1, MTGP_N):
        prev = state[i - 1]
        state[i] ^= (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
    return np.array(state, U32)


class Mtgp32:
    """curandStateMtgp32_t for blocks 0..k-1 (block i uses parameter set i), as
    curandMakeMTGP32KernelState seeds them: seed ^ (seed >> 32), plus i + 1."""

    name = "MTGP32"

    def __init__(self, seed: int, blocks: int) -> None:
        p = mtgp32_params()
        if blocks > len(p["pos"]):
            raise ValueError(f"{blocks} MTGP32 blocks, there are {len(p['pos'])} parameter sets")
        s = (seed ^ (seed >> 32)) & 0xFFFFFFFF
        self.state = np.stack([mtgp32_init_state(i, (s + i + 1) & 0xFFFFFFFF)
                               for i in range(blocks)])  # (blocks, N): the last N words
        b = np.arange(blocks)
        self.pos = p["pos"][b]
        self.sh1, self.sh2 = p["sh1"][b][:, None], p["sh2"][b][:, None]
        self.tbl, self.tmp_tbl = p["tbl"][b], p["tmp_tbl"][b]
        self.mask = p["mask"][0]

    def draw_rounds(self, rounds: int) -> np.ndarray:
        """(blocks, rounds * 256) outputs: each block's sequence in order."""
        blocks = self.state.shape[0]
        rows = np.arange(blocks)[:, None]
        t = np.arange(MTGP_THREADS)[None, :]
        buf = np.concatenate([self.state, np.zeros((blocks, rounds * MTGP_THREADS), U32)], axis=1)
        out = np.empty((blocks, rounds * MTGP_THREADS), U32)
        pos = self.pos[:, None]
        for r in range(rounds):
            j = r * MTGP_THREADS + t
            x1, x2, y = buf[rows, j], buf[rows, j + 1], buf[rows, j + pos]
            x = (x1 & self.mask) ^ x2
            x ^= x << self.sh1
            y = x ^ (y >> self.sh2)
            rec = y ^ self.tbl[rows, y & U32(0x0F)]
            buf[rows, j + MTGP_N] = rec
            tt = buf[rows, j + pos - 1]
            tt ^= tt >> U32(16)
            tt ^= tt >> U32(8)
            out[:, j[0]] = rec ^ self.tmp_tbl[rows, tt & U32(0x0F)]
        self.state = buf[:, -MTGP_N:].copy()
        return out


# -- Sobol -----------------------------------------------------------------------------------

SOBOL_DIMENSIONS = 20000  # what cuRAND's direction-vector tables hold


@cache
def sobol_directions(bits: int, dims: int = SOBOL_DIMENSIONS) -> np.ndarray:
    """(dims, bits) direction vectors of Joe and Kuo's new-joe-kuo-6.21201 set (cuRAND's
    CURAND_DIRECTION_VECTORS_{32,64}_JOEKUO6: its first 20000 dimensions), from scipy's
    Sobol initialisation."""
    from scipy.stats import _sobol

    v = np.zeros((dims, bits), dtype=U64)
    _sobol._initialize_v(v, dims, bits)
    return v.astype(U32) if bits == 32 else v


def sobol_points(directions: np.ndarray, start: int, count: int, scramble: int = 0) -> np.ndarray:
    """Points start .. start + count - 1 of one dimension (curand() of a Sobol state
    initialised at offset `start` and called count times)."""
    dtype = directions.dtype.type
    i = np.arange(start, start + count, dtype=U64)
    gray = i ^ (i >> U64(1))
    x = np.full(count, scramble, dtype)
    for k in range(len(directions)):
        if k >= 64 or not ((gray >> U64(k)) & U64(1)).any():
            continue
        x ^= np.where(((gray >> U64(k)) & U64(1)).astype(bool), directions[k], dtype(0))
    return x
