"""cuRAND's host API (libcurand.so.10): NVIDIA's generators and transforms, vectorised.

The generators are NVIDIA's device algorithms (curand_kernel.h), run for many
subsequences at once with numpy:
- XORWOW: curand_init's seed scrambling, subsequence skip-ahead by 2^67 steps per
  subsequence (the transition is linear over GF(2): its 160x160 matrix is squared up
  to 2^67 and beyond once, at first use) and the step with its Weyl counter;
- Philox4x32-10: the counter-based block function, key = seed, counter's upper half =
  subsequence, lower half = step; four outputs a block.
Distributions follow curand_uniform / curand_normal (Box-Muller on two draws) /
curand_log_normal / curand_uniform_double. How the host library spreads a request
over its subsequences (HOST_STATES below: output i comes from subsequence i mod
HOST_STATES) is cuport's model of NVIDIA's output order, to be checked against
tests/libs/record_curand.cu's recording on an H200; until that is recorded the
exact-sequence tests are skipped and only the distributions' moments are tested.
MRG32k3a, MTGP32, MT19937, Sobol and Poisson answer CURAND_STATUS_INTERNAL_ERROR
(cuRAND has no NOT_SUPPORTED) naming what is missing.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from cuport.driver import handles
from cuport.libs import device, table
from cuport.libs.device import Range
from cuport.libs.registry import Status, Unsupported, implements

K = table.constants("curand")
XORWOW = K["CURAND_RNG_PSEUDO_XORWOW"]
PHILOX = K["CURAND_RNG_PSEUDO_PHILOX4_32_10"]
DEFAULT = K["CURAND_RNG_PSEUDO_DEFAULT"]
SUPPORTED = {XORWOW: "XORWOW", DEFAULT: "XORWOW", PHILOX: "PHILOX4_32_10"}
NAMES = {v: k for k, v in K.items() if k.startswith("CURAND_RNG_")}
HOST_STATES = 4096  # subsequences the host API spreads a request over (cuport's model)
TWO_POW32_INV = np.float32(2.3283064e-10)
TWO_POW32_INV_2PI = np.float32(2.3283064e-10 * 6.2831855)
TWO_POW53_INV = 2.0 ** -53
U32 = np.uint32


# -- XORWOW ---------------------------------------------------------------------------

def _xorwow_step_bits(v: np.ndarray) -> np.ndarray:
    """One XORWOW step on a (5, k) uint32 array of states (the linear part only)."""
    t = v[0] ^ (v[0] >> U32(2))
    new4 = (v[4] ^ (v[4] << U32(4))) ^ (t ^ (t << U32(1)))
    return np.stack([v[1], v[2], v[3], v[4], new4])


def _to_bits(v: np.ndarray) -> np.ndarray:
    """(5, k) uint32 -> (k, 160) bits."""
    b = ((v[:, None, :] >> np.arange(32, dtype=U32)[None, :, None]) & U32(1))
    return b.reshape(160, -1).T.astype(np.uint8)


def _from_bits(bits: np.ndarray) -> np.ndarray:
    words = bits.T.reshape(5, 32, -1).astype(U32)
    return (words << np.arange(32, dtype=U32)[None, :, None]).sum(axis=1, dtype=np.uint64) \
        .astype(U32)


@cache
def _step_matrix() -> np.ndarray:
    """M with bits(next) = bits(state) @ M (mod 2)."""
    basis = np.zeros((5, 160), U32)
    for i in range(160):
        basis[i // 32, i] = U32(1) << U32(i % 32)
    return _to_bits(_xorwow_step_bits(basis))


def _square(m: np.ndarray) -> np.ndarray:
    return (m.astype(np.int64) @ m.astype(np.int64) % 2).astype(np.uint8)


@cache
def _power_of_two_matrices(start: int, count: int) -> tuple[np.ndarray, ...]:
    """M^(2^start), M^(2^(start+1)), ...: the skip-ahead matrices."""
    m = _step_matrix()
    for _ in range(start):
        m = _square(m)
    out = [m]
    for _ in range(count - 1):
        out.append(_square(out[-1]))
    return tuple(out)


def _apply(bits: np.ndarray, m: np.ndarray) -> np.ndarray:
    return (bits.astype(np.int64) @ m.astype(np.int64) % 2).astype(np.uint8)


def xorwow_init(seed: int, subsequences: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """curand_init(seed, subsequence, offset) for many subsequences: (v (5, k), d (k,))."""
    k = len(subsequences)
    s0 = U32(seed & 0xFFFFFFFF) ^ U32(0xAAD26B49)
    s1 = U32((seed >> 32) & 0xFFFFFFFF) ^ U32(0xF7DCEFDD)
    with np.errstate(over="ignore"):
        t0 = U32(1099087573) * s0
        t1 = U32(2591861531) * s1
        d = np.full(k, U32(6615241) + t1 + t0, U32)
        v = np.array([U32(123456789) + t0, U32(362436069) ^ t0, U32(521288629) + t1,
                      U32(88675123) ^ t1, U32(5783321) + t0], U32)[:, None].repeat(k, axis=1)
    bits = _to_bits(v)
    seq = subsequences.astype(np.uint64)
    nbits = max(1, int(seq.max()).bit_length()) if k else 1
    for i, m in enumerate(_power_of_two_matrices(67, nbits)):
        sel = ((seq >> np.uint64(i)) & np.uint64(1)).astype(bool)
        if sel.any():
            bits[sel] = _apply(bits[sel], m)
    if offset:
        for i, m in enumerate(_power_of_two_matrices(0, int(offset).bit_length())):
            if (offset >> i) & 1:
                bits = _apply(bits, m)
        with np.errstate(over="ignore"):
            d = d + U32((362437 * offset) & 0xFFFFFFFF)
    return _from_bits(bits), d


def xorwow_generate(v: np.ndarray, d: np.ndarray, steps: int) -> np.ndarray:
    """(steps, k) outputs of k XORWOW states (v and d are advanced in place)."""
    out = np.empty((steps, v.shape[1]), U32)
    with np.errstate(over="ignore"):
        for s in range(steps):
            t = v[0] ^ (v[0] >> U32(2))
            v[0], v[1], v[2], v[3] = v[1], v[2], v[3], v[4]
            v[4] = (v[4] ^ (v[4] << U32(4))) ^ (t ^ (t << U32(1)))
            d += U32(362437)
            out[s] = v[4] + d
    return out


# -- Philox4x32-10 ----------------------------------------------------------------------

PHILOX_M0, PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
PHILOX_W0, PHILOX_W1 = U32(0x9E3779B9), U32(0xBB67AE85)


def philox_blocks(seed: int, counters: np.ndarray) -> np.ndarray:
    """Philox4x32-10 of (k, 4) uint32 counters with key = seed: (k, 4) outputs."""
    c = [counters[:, i].astype(U32) for i in range(4)]
    k0 = np.full(len(counters), U32(seed & 0xFFFFFFFF), U32)
    k1 = np.full(len(counters), U32((seed >> 32) & 0xFFFFFFFF), U32)
    with np.errstate(over="ignore"):
        for r in range(10):
            p0 = PHILOX_M0 * c[0].astype(np.uint64)
            p1 = PHILOX_M1 * c[2].astype(np.uint64)
            hi0, lo0 = (p0 >> np.uint64(32)).astype(U32), p0.astype(U32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(U32), p1.astype(U32)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
            if r < 9:
                k0 = k0 + PHILOX_W0
                k1 = k1 + PHILOX_W1
    return np.stack(c, axis=1)


# -- the host generator ----------------------------------------------------------------

class Generator:
    def __init__(self, rng_type: int) -> None:
        self.context = device.ensure_context()
        self.rng_type = rng_type
        self.seed = 0
        self.offset = 0
        self.ordering = K["CURAND_ORDERING_PSEUDO_DEFAULT"]
        self.stream = 0
        self.handle = handles.new(self)

    def raw(self, count: int) -> np.ndarray:
        """The next `count` 32-bit outputs in the host API's order, advancing the offset.

        Output g (counting from the seed's start) is step g // HOST_STATES of
        subsequence g % HOST_STATES; a Philox step is one of a block's four words."""
        states = HOST_STATES
        first, last = self.offset // states, (self.offset + count - 1) // states
        if self.rng_type == PHILOX:
            b0, b1 = first // 4, last // 4
            counters = np.zeros((states, 4), U32)
            counters[:, 2] = np.arange(states, dtype=U32)
            rows = []
            for b in range(b0, b1 + 1):
                counters[:, 0] = U32(b & 0xFFFFFFFF)
                counters[:, 1] = U32(b >> 32)
                rows.append(philox_blocks(self.seed, counters).T)
            table = np.concatenate(rows)[first - 4 * b0:last - 4 * b0 + 1]
        else:
            v, d = xorwow_init(self.seed, np.arange(states), first)
            table = xorwow_generate(v, d, last - first + 1)
        start = self.offset % states
        flat = table.reshape(-1)[start:start + count]
        self.offset += count
        return flat


def get(generator: int) -> Generator:
    g = handles.peek(generator) if generator else None
    if not isinstance(g, Generator):
        raise Status("CURAND_STATUS_NOT_INITIALIZED", f"{hex(generator)} is not a cuRAND generator")
    return g


def _create(rng_type: int) -> int:
    if rng_type not in NAMES:
        raise Status("CURAND_STATUS_TYPE_ERROR", f"curandRngType_t {rng_type}")
    if rng_type not in SUPPORTED:
        raise Unsupported(f"the {NAMES[rng_type]} generator is not implemented "
                          "(cuport has XORWOW and PHILOX4_32_10)")
    return Generator(rng_type).handle


@implements("curandCreateGenerator")
def create_generator(rng_type: int) -> int:
    return _create(rng_type)


@implements("curandCreateGeneratorHost")
def create_generator_host(rng_type: int) -> int:
    return _create(rng_type)


@implements("curandDestroyGenerator")
def destroy_generator(generator: int) -> None:
    get(generator)
    handles.drop(generator)


@implements("curandSetPseudoRandomGeneratorSeed")
def set_seed(generator: int, seed: int) -> None:
    g = get(generator)
    g.seed = seed
    g.offset = 0


@implements("curandSetGeneratorOffset")
def set_offset(generator: int, offset: int) -> None:
    get(generator).offset = offset


@implements("curandSetGeneratorOrdering")
def set_ordering(generator: int, order: int) -> None:
    g = get(generator)
    if order not in (K["CURAND_ORDERING_PSEUDO_DEFAULT"], K["CURAND_ORDERING_PSEUDO_BEST"],
                     K["CURAND_ORDERING_PSEUDO_SEEDED"], K["CURAND_ORDERING_PSEUDO_LEGACY"]):
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"ordering {order} for a pseudo-random generator")
    g.ordering = order


@implements("curandSetStream")
def set_stream(generator: int, stream: int) -> None:
    g = get(generator)
    device.resolve_stream(stream)
    g.stream = stream


@implements("curandGenerateSeeds")
def generate_seeds(generator: int) -> None:
    get(generator)


@implements("curandGetVersion")
def get_version() -> int:
    return K.get("CURAND_VERSION", 10000)


@implements("curandGetProperty")
def get_property(kind: int) -> int:
    v = K.get("CURAND_VERSION", 10000)
    values = (K.get("CURAND_VER_MAJOR", v // 1000), K.get("CURAND_VER_MINOR", v % 1000 // 100),
              K.get("CURAND_VER_PATCH", v % 100))
    if kind not in (0, 1, 2):
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"libraryPropertyType {kind}")
    return values[kind]


def _fill(g: Generator, what: str, out: int, count: int, dtype, make) -> None:
    """Draw now (the generator's state is the call's), write when the stream gets there."""
    if out == 0:
        raise Status("CURAND_STATUS_LENGTH_NOT_MULTIPLE" if count < 0 else
                     "CURAND_STATUS_NOT_INITIALIZED", "outputPtr is NULL")
    if count == 0:
        return
    values = make()
    dt = np.dtype(dtype)

    def run(o):
        device.view(o, dt, count)[:] = values
    device.launch(g.stream, what, run, [(Range(out, count * dt.itemsize, "w"), "outputPtr")],
                  "CURAND_STATUS_LAUNCH_FAILURE")


def uniform_float(raw: np.ndarray) -> np.ndarray:
    return raw.astype(np.float32) * TWO_POW32_INV + TWO_POW32_INV / np.float32(2)


def box_muller(raw: np.ndarray) -> np.ndarray:
    """curand_box_muller on consecutive pairs: (x, y) -> s sin v, s cos v."""
    x, y = raw[0::2], raw[1::2]
    u = x.astype(np.float32) * TWO_POW32_INV + TWO_POW32_INV / np.float32(2)
    v = y.astype(np.float32) * TWO_POW32_INV_2PI + TWO_POW32_INV_2PI / np.float32(2)
    s = np.sqrt(np.float32(-2.0) * np.log(u))
    out = np.empty(len(raw), np.float32)
    out[0::2], out[1::2] = s * np.sin(v), s * np.cos(v)
    return out


def uniform_double(raw: np.ndarray) -> np.ndarray:
    x, y = raw[0::2].astype(np.uint64), raw[1::2].astype(np.uint64)
    z = x ^ (y << np.uint64(21))
    return z.astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 2.0


def box_muller_double(raw: np.ndarray) -> np.ndarray:
    quads = raw.reshape(-1, 4)
    a = uniform_double(quads[:, :2].reshape(-1))
    b = uniform_double(quads[:, 2:].reshape(-1))
    s = np.sqrt(-2.0 * np.log(a))
    v = b * 2.0 * np.pi
    out = np.empty(len(quads) * 2, np.float64)
    out[0::2], out[1::2] = s * np.sin(v), s * np.cos(v)
    return out


def _even(n: int, what: str) -> None:
    if n % 2:
        raise Status("CURAND_STATUS_LENGTH_NOT_MULTIPLE", f"{what}: n = {n} is odd")


@implements("curandGenerate")
def generate(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerate", out, n, np.uint32, lambda: g.raw(n))


@implements("curandGenerateUniform")
def generate_uniform(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerateUniform", out, n, np.float32, lambda: uniform_float(g.raw(n)))


@implements("curandGenerateUniformDouble")
def generate_uniform_double(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerateUniformDouble", out, n, np.float64,
          lambda: uniform_double(g.raw(2 * n)))


@implements("curandGenerateNormal")
def generate_normal(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(n, "curandGenerateNormal")
    _fill(g, "curandGenerateNormal", out, n, np.float32,
          lambda: np.float32(mean) + np.float32(stddev) * box_muller(g.raw(n)))


@implements("curandGenerateNormalDouble")
def generate_normal_double(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(n, "curandGenerateNormalDouble")
    _fill(g, "curandGenerateNormalDouble", out, n, np.float64,
          lambda: mean + stddev * box_muller_double(g.raw(2 * n)))


@implements("curandGenerateLogNormal")
def generate_log_normal(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(n, "curandGenerateLogNormal")
    _fill(g, "curandGenerateLogNormal", out, n, np.float32,
          lambda: np.exp(np.float32(mean) + np.float32(stddev) * box_muller(g.raw(n))))


@implements("curandGenerateLogNormalDouble")
def generate_log_normal_double(generator: int, out: int, n: int, mean: float,
                               stddev: float) -> None:
    g = get(generator)
    _even(n, "curandGenerateLogNormalDouble")
    _fill(g, "curandGenerateLogNormalDouble", out, n, np.float64,
          lambda: np.exp(mean + stddev * box_muller_double(g.raw(2 * n))))


@implements("curandGenerateLongLong")
def generate_long_long(generator: int, out: int, n: int) -> None:
    get(generator)
    raise Status("CURAND_STATUS_TYPE_ERROR", "64-bit outputs come from the 64-bit quasirandom "
                                             "generators only")


@implements("curandGeneratePoisson")
def generate_poisson(generator: int, out: int, n: int, lam: float) -> None:
    get(generator)
    raise Unsupported("curandGeneratePoisson: NVIDIA's Poisson algorithm is not implemented yet")
