"""cuRAND's host API (libcurand.so.10): NVIDIA's generators (curand_engines.py) and the
transforms curand_uniform.h / curand_normal.h / curand_lognormal.h / curand_poisson.h
define, vectorised.

How the host library spreads a request over its generator states is cuport's model,
checked against the H200 by tests/libs/record_gpu.sh (tests/libs/test_curand.py reads
the recording; until it exists the exact host-order tests are skipped):
- XORWOW, MRG32k3a, Philox4x32-10: 4096 lanes, lane l = subsequence l of the seed. A
  request is a run of units (an output, or a pair of normals), each made from k
  consecutive draws of one lane; unit U (counted over the generator's life from the
  offset, offset / k) is made by lane U mod 4096 from its draws k*(U div 4096) onwards.
  For raw and uniform outputs (k = 1) that is "output g is step g div 4096 of
  subsequence g mod 4096".
- MTGP32: 64 blocks, block b with NVIDIA's parameter set b, seeded as
  curandMakeMTGP32KernelState; output g comes from block (g div 256) mod 64, position
  256 (g div 16384) + g mod 256 of its sequence.
- Sobol (quasi): a request of n values for D dimensions is n/D points of dimension 0,
  then of dimension 1, ...; the offset counts points.
- Poisson: one draw per output (curand_poisson.h's _curand_poisson: Fishman's inversion
  below lambda 1000, the normal approximation above).
MT19937 and the SEEDED and DYNAMIC orderings answer CURAND_STATUS_INTERNAL_ERROR (cuRAND
has no NOT_SUPPORTED) naming what is missing.

Exactness: raw bits, uniforms and Poisson values are NVIDIA's arithmetic (IEEE operations
in the same order); normals and log-normals use logf/sinf/cosf/erfcinvf, which the GPU
computes with its own approximations, so they agree to a few ulp, not bit for bit.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from cuport.driver import handles
from cuport.libs import curand_engines as eng
from cuport.libs import device, table
from cuport.libs.device import Range
from cuport.libs.registry import Status, Unsupported, implements

K = table.constants("curand")
XORWOW = K["CURAND_RNG_PSEUDO_XORWOW"]
MRG32K3A = K["CURAND_RNG_PSEUDO_MRG32K3A"]
MTGP32 = K["CURAND_RNG_PSEUDO_MTGP32"]
MT19937 = K["CURAND_RNG_PSEUDO_MT19937"]
PHILOX = K["CURAND_RNG_PSEUDO_PHILOX4_32_10"]
DEFAULT = K["CURAND_RNG_PSEUDO_DEFAULT"]
SOBOL32 = K["CURAND_RNG_QUASI_SOBOL32"]
SCRAMBLED_SOBOL32 = K["CURAND_RNG_QUASI_SCRAMBLED_SOBOL32"]
SOBOL64 = K["CURAND_RNG_QUASI_SOBOL64"]
SCRAMBLED_SOBOL64 = K["CURAND_RNG_QUASI_SCRAMBLED_SOBOL64"]
QUASI_DEFAULT = K["CURAND_RNG_QUASI_DEFAULT"]
LANED = {XORWOW: eng.Xorwow, MRG32K3A: eng.Mrg32k3a, PHILOX: eng.Philox}
QUASI = {SOBOL32: (32, False), SCRAMBLED_SOBOL32: (32, True), SOBOL64: (64, False),
         SCRAMBLED_SOBOL64: (64, True)}
SUPPORTED = {XORWOW, MRG32K3A, PHILOX, MTGP32, DEFAULT, QUASI_DEFAULT, *QUASI}
NAMES = {v: k for k, v in K.items() if k.startswith("CURAND_RNG_")}
ORDERINGS = {v: k for k, v in K.items() if k.startswith("CURAND_ORDERING_")}
MODELLED_ORDERINGS = {K["CURAND_ORDERING_PSEUDO_DEFAULT"], K["CURAND_ORDERING_PSEUDO_BEST"],
                      K["CURAND_ORDERING_PSEUDO_LEGACY"]}
HOST_LANES = 4096  # lanes of XORWOW / MRG32k3a / Philox (cuport's model)
MTGP_BLOCKS = 64  # MTGP32 blocks (cuport's model)
F32 = np.float32
TWO_POW32_INV = F32(2.3283064e-10)
TWO_POW32_INV_2PI = F32(2.3283064e-10 * 6.2831855)
TWO_POW32_INV_DOUBLE = 2.3283064365386963e-10
TWO_POW53_INV = 2.0 ** -53
SQRT2, SQRT2_DOUBLE = F32(1.4142135), 1.4142135623730951
U32, U64 = np.uint32, np.uint64


# -- transforms (curand_uniform.h, curand_normal.h) ---------------------------------------

def uniform_float(x: np.ndarray) -> np.ndarray:
    """_curand_uniform of 32-bit draws: x 2^-32 + 2^-33 in float."""
    return x.astype(F32) * TWO_POW32_INV + TWO_POW32_INV / F32(2)


def uniform_double_hq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """_curand_uniform_double_hq: 53 bits from two draws."""
    z = x.astype(U64) ^ (y.astype(U64) << U64(21))
    return z.astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 2.0


def uniform_double_32(x: np.ndarray) -> np.ndarray:
    """_curand_uniform_double of one 32-bit draw: x 2^-32 + 2^-32."""
    return x.astype(np.float64) * TWO_POW32_INV_DOUBLE + TWO_POW32_INV_DOUBLE


def uniform_double_64(x: np.ndarray) -> np.ndarray:
    return (x >> U64(11)).astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 2.0


def box_muller(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """_curand_box_muller: pairs (s sin v, s cos v), interleaved."""
    u = x.astype(F32) * TWO_POW32_INV + TWO_POW32_INV / F32(2)
    v = y.astype(F32) * TWO_POW32_INV_2PI + TWO_POW32_INV_2PI / F32(2)
    return _pairs(np.sqrt(F32(-2.0) * np.log(u)), v)


def box_muller_mrg(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """curand_box_muller_mrg: uniforms of two MRG32k3a draws, the second times 2 pi."""
    u = (r1 * eng.MRG_NORM).astype(F32)
    v = (r2 * eng.MRG_NORM).astype(F32) * F32(6.2831855)
    return _pairs(np.sqrt(F32(-2.0) * np.log(u)), v)


def _pairs(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = np.empty(2 * len(s), s.dtype)
    out[0::2], out[1::2] = s * np.sin(v), s * np.cos(v)
    return out


def sincospi(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin(pi v), cos(pi v) without rounding pi v: v is reduced to a quarter turn exactly
    (as CUDA's sincospi does), then rotated by whole quarters."""
    x = 2.0 * v
    q = np.rint(x)
    f = (x - q) * (np.pi / 2)  # |f| <= pi/4
    s, c = np.sin(f), np.cos(f)
    q = q.astype(np.int64) & 3
    sin = np.select([q == 0, q == 1, q == 2], [s, c, -s], -c)
    cos = np.select([q == 0, q == 1, q == 2], [c, -s, -c], s)
    return sin, cos


def _pairs_sincospi(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    sin, cos = sincospi(v)
    out = np.empty(2 * len(s), s.dtype)
    out[0::2], out[1::2] = s * sin, s * cos
    return out


def box_muller_double(x0, x1, y0, y1) -> np.ndarray:
    """_curand_box_muller_double: 53-bit u and v from four draws, sincospi(v)."""
    u = uniform_double_hq(x0, x1)
    zy = y0.astype(U64) ^ (y1.astype(U64) << U64(21))
    v = zy.astype(np.float64) * (TWO_POW53_INV * 2.0) + TWO_POW53_INV
    return _pairs_sincospi(np.sqrt(-2.0 * np.log(u)), v)


def box_muller_mrg_double(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    u, v = r1 * eng.MRG_NORM, r2 * eng.MRG_NORM * 2.0
    return _pairs_sincospi(np.sqrt(-2.0 * np.log(u)), v)


def normal_icdf(x: np.ndarray) -> np.ndarray:
    """_curand_normal_icdf of 32-bit draws (64-bit ones use their high word)."""
    from scipy.special import erfcinv

    if x.dtype == U64:
        x = (x >> U64(32)).astype(U32)
    s = np.where(x > U32(0x80000000), -SQRT2, SQRT2).astype(F32)
    x = np.where(x > U32(0x80000000), U32(0xFFFFFFFF) - x, x)
    p = x.astype(F32) * TWO_POW32_INV + TWO_POW32_INV / F32(2)
    return s * erfcinv((F32(2.0) * p).astype(np.float64)).astype(F32)


def normal_icdf_double(x: np.ndarray) -> np.ndarray:
    from scipy.special import erfcinv

    if x.dtype == U64:
        x = x >> U64(11)
        big, top = U64(0x10000000000000), U64(0x1FFFFFFFFFFFFF)
        s = np.where(x > big, -SQRT2_DOUBLE, SQRT2_DOUBLE)
        x = np.where(x > big, top - x, x)
        p = x.astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 2.0
    else:
        s = np.where(x > U32(0x80000000), -SQRT2_DOUBLE, SQRT2_DOUBLE)
        x = np.where(x > U32(0x80000000), U32(0xFFFFFFFF) - x, x)
        p = x.astype(np.float64) * TWO_POW32_INV_DOUBLE + TWO_POW32_INV_DOUBLE / 2.0
    return s * erfcinv(2.0 * p)


def poisson(x: np.ndarray, lam: float) -> np.ndarray:
    """_curand_poisson of one draw per output: Fishman's ITR (in chunks of exp(-500))
    below lambda 1000, round(sqrt(lambda) icdf + lambda) above."""
    if lam >= 1000:
        return (np.sqrt(lam) * normal_icdf_double(x) + lam + 0.5).astype(U32)
    if x.dtype == U64:
        u = (x >> U64(11)).astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 4.0
    else:
        u = x.astype(np.float64) * TWO_POW32_INV_DOUBLE + TWO_POW32_INV_DOUBLE / 2.0
    n = len(u)
    k = np.zeros(n, U32)
    p = np.ones(n)
    q = np.ones(n)
    power = 0
    while True:
        chunk = np.exp(-500.0) if lam > power + 500.0 else np.exp(float(power) - lam)
        p *= chunk
        q *= chunk
        power += 500
        active = u > q
        while active.any():
            k[active] += U32(1)
            p[active] *= lam / k[active].astype(np.float64)
            q[active] += p[active]
            active = u > q
        if not float(power) < lam:
            return k


# -- the host generator ------------------------------------------------------------------

class Generator:
    def __init__(self, rng_type: int) -> None:
        self.context = device.ensure_context()
        self.rng_type = {DEFAULT: XORWOW, QUASI_DEFAULT: SOBOL32}.get(rng_type, rng_type)
        self.seed = 0
        self.offset = 0
        self.quasi = self.rng_type in QUASI
        self.ordering = K["CURAND_ORDERING_QUASI_DEFAULT" if self.quasi else
                          "CURAND_ORDERING_PSEUDO_DEFAULT"]
        self.dimensions = 1
        self.stream = 0
        self._lanes = None  # (next lane step, engine, the last rows drawn)
        self._mtgp = None  # (next round, engine, the current round's outputs)
        self.handle = handles.new(self)

    def reset(self) -> None:
        self._lanes = self._mtgp = None

    # lanes of XORWOW / MRG32k3a / Philox
    def _lane_draws(self, first_step: int, steps: int) -> np.ndarray:
        """Draws first_step .. first_step + steps - 1 of every lane: (steps, HOST_LANES).
        The lanes stay where the request left them, with their last rows kept, so a run
        of requests continues without a new skip-ahead."""
        cached = self._lanes
        parts = []
        if cached is not None and cached[0] - len(cached[2]) <= first_step <= cached[0]:
            next_step, engine, kept = cached
            parts.append(kept[len(kept) - (next_step - first_step):][:steps])
        else:
            engine = LANED[self.rng_type](self.seed, np.arange(HOST_LANES), first_step)
            next_step = first_step
        have = sum(p.shape[0] for p in parts)
        if steps > have:
            fresh = engine.draw(steps - have)
            parts.append(fresh)
            kept = np.concatenate([parts[0], fresh]) if have else fresh
            self._lanes = (next_step + steps - have, engine, kept[-4:])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def units(self, count: int, k: int) -> list[np.ndarray]:
        """The next `count` units of k draws each: k arrays (draw j of each unit)."""
        if self.offset % k:
            raise Unsupported(f"{k}-draw outputs after an offset of {self.offset} draws, which "
                              f"is not a multiple of {k} (cuport's model has no such order)")
        start = self.offset // k
        row0, row1 = start // HOST_LANES, (start + count - 1) // HOST_LANES
        draws = self._lane_draws(k * row0, k * (row1 - row0 + 1))  # (k rows per unit row, L)
        draws = draws.reshape(row1 - row0 + 1, k, HOST_LANES)
        begin = start - row0 * HOST_LANES
        parts = [draws[:, j, :].reshape(-1)[begin:begin + count] for j in range(k)]
        self.offset += count * k
        return parts

    def mtgp_draws(self, count: int) -> np.ndarray:
        per_round = eng.MTGP_THREADS * MTGP_BLOCKS
        first, last = self.offset // per_round, (self.offset + count - 1) // per_round
        cached = self._mtgp  # (next round, engine, that round's predecessor's outputs)
        if cached is not None and cached[0] == first + 1:
            rows, engine, done = [cached[2]], cached[1], first + 1
        elif cached is not None and cached[0] == first:
            rows, engine, done = [], cached[1], first
        else:
            engine = eng.Mtgp32(self.seed, MTGP_BLOCKS)
            if first:
                engine.draw_rounds(first)
            rows, done = [], first
        if last >= done:
            # (blocks, rounds*256) -> round-major, then block, then thread
            new = engine.draw_rounds(last - done + 1)
            new = new.reshape(MTGP_BLOCKS, -1, eng.MTGP_THREADS).transpose(1, 0, 2)
            rows.extend(new.reshape(-1, per_round))
        flat = np.concatenate(rows)[self.offset - first * per_round:][:count]
        self._mtgp = (last + 1, engine, rows[-1])
        self.offset += count
        return flat

    def draws(self, count: int) -> np.ndarray:
        """The next `count` native draws in the host order (one draw per output)."""
        if self.rng_type == MTGP32:
            return self.mtgp_draws(count)
        return self.units(count, 1)[0]

    def quasi_draws(self, count: int) -> np.ndarray:
        bits, scrambled = QUASI[self.rng_type]
        dims = self.dimensions
        if count % dims:
            raise Status("CURAND_STATUS_LENGTH_NOT_MULTIPLE",
                         f"{count} values for {dims} dimensions")
        points = count // dims
        directions = scrambled_directions(bits) if scrambled else eng.sobol_directions(bits, dims)
        constants = scramble_constants(bits) if scrambled else None
        out = np.concatenate([eng.sobol_points(directions[d], self.offset, points,
                                               int(constants[d]) if scrambled else 0)
                              for d in range(dims)])
        self.offset += points
        return out


# -- NVIDIA's data tables ----------------------------------------------------------------

@cache
def _nvidia_tables(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The scrambled direction vectors and scramble constants, which are data in NVIDIA's
    libcurand.so.10 (random numbers, not derivable): read from a copy of it in a
    site-packages nvidia wheel or the CUDA toolkit, in a child process."""
    import subprocess
    import sys

    path = _nvidia_libcurand()
    if path is None:
        raise Unsupported(f"scrambled Sobol{bits} needs NVIDIA's scramble tables, which only "
                          "NVIDIA's libcurand.so.10 holds: pip install nvidia-curand")
    code = (
        "import ctypes,sys\n"
        f"lib=ctypes.CDLL({str(path)!r})\n"
        "p=ctypes.c_void_p()\n"
        f"b={bits}; w=b//8; n=20000\n"
        f"assert lib.curandGetDirectionVectors{bits}(ctypes.byref(p), {102 if bits == 32 else 104}) == 0\n"
        "sys.stdout.buffer.write(ctypes.string_at(p.value, n*b*w))\n"
        f"assert lib.curandGetScrambleConstants{bits}(ctypes.byref(p)) == 0\n"
        "sys.stdout.buffer.write(ctypes.string_at(p.value, n*w))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    dtype = U32 if bits == 32 else U64
    n = eng.SOBOL_DIMENSIONS
    if r.returncode != 0 or len(r.stdout) != n * (bits + 1) * (bits // 8):
        raise Unsupported(f"could not read the scramble tables from {path}: "
                          f"{r.stderr.decode(errors='replace')[-300:]}")
    data = np.frombuffer(r.stdout, dtype)
    return data[:n * bits].reshape(n, bits).copy(), data[n * bits:].copy()


def _nvidia_libcurand():
    import os
    import site
    from pathlib import Path

    roots = [*site.getsitepackages(), site.getusersitepackages()]
    candidates = [Path(r) / "nvidia" / sub / "lib" / "libcurand.so.10"
                  for r in roots for sub in ("cu13", "curand", "cu12")]
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    candidates.append(Path(home) / "lib64" / "libcurand.so.10")
    uid = os.getuid()
    for c in candidates:
        try:
            st = c.stat()
        except OSError:
            continue
        if st.st_uid in (0, uid) and not st.st_mode & 0o022:  # nobody else could have written it
            return c
    return None


def scrambled_directions(bits: int) -> np.ndarray:
    return _nvidia_tables(bits)[0]


def scramble_constants(bits: int) -> np.ndarray:
    return _nvidia_tables(bits)[1]


_HOST_TABLES: dict[tuple[str, int], np.ndarray] = {}  # handed-out tables live for good


def _host_table(kind: str, bits: int, make) -> int:
    key = (kind, bits)
    if key not in _HOST_TABLES:
        _HOST_TABLES[key] = np.ascontiguousarray(make())
    return _HOST_TABLES[key].ctypes.data


@implements("curandGetDirectionVectors32")
def get_direction_vectors32(vector_set: int) -> int:
    if vector_set == K["CURAND_DIRECTION_VECTORS_32_JOEKUO6"]:
        return _host_table("directions", 32, lambda: eng.sobol_directions(32))
    if vector_set == K["CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6"]:
        return _host_table("scrambled", 32, lambda: scrambled_directions(32))
    raise Status("CURAND_STATUS_OUT_OF_RANGE", f"direction vector set {vector_set} for 32 bits")


@implements("curandGetDirectionVectors64")
def get_direction_vectors64(vector_set: int) -> int:
    if vector_set == K["CURAND_DIRECTION_VECTORS_64_JOEKUO6"]:
        return _host_table("directions", 64, lambda: eng.sobol_directions(64))
    if vector_set == K["CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6"]:
        return _host_table("scrambled", 64, lambda: scrambled_directions(64))
    raise Status("CURAND_STATUS_OUT_OF_RANGE", f"direction vector set {vector_set} for 64 bits")


@implements("curandGetScrambleConstants32")
def get_scramble_constants32() -> int:
    return _host_table("constants", 32, lambda: scramble_constants(32))


@implements("curandGetScrambleConstants64")
def get_scramble_constants64() -> int:
    return _host_table("constants", 64, lambda: scramble_constants(64))


# -- the API -------------------------------------------------------------------------------

def get(generator: int) -> Generator:
    g = handles.peek(generator) if generator else None
    if not isinstance(g, Generator):
        raise Status("CURAND_STATUS_NOT_INITIALIZED", f"{hex(generator)} is not a cuRAND generator")
    return g


def _create(rng_type: int) -> int:
    if rng_type not in NAMES:
        raise Status("CURAND_STATUS_TYPE_ERROR", f"curandRngType_t {rng_type}")
    if rng_type not in SUPPORTED:
        raise Unsupported(f"the {NAMES[rng_type]} generator is not implemented (cuport has "
                          "XORWOW, MRG32K3A, MTGP32, PHILOX4_32_10 and the Sobol generators)")
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
    if g.quasi:
        raise Status("CURAND_STATUS_TYPE_ERROR", "a quasirandom generator has no seed")
    g.seed = seed
    g.offset = 0
    g.reset()


@implements("curandSetGeneratorOffset")
def set_offset(generator: int, offset: int) -> None:
    g = get(generator)
    g.offset = offset
    g.reset()


@implements("curandSetQuasiRandomGeneratorDimensions")
def set_dimensions(generator: int, dims: int) -> None:
    g = get(generator)
    if not g.quasi:
        raise Status("CURAND_STATUS_TYPE_ERROR", "dimensions are for quasirandom generators")
    if not 1 <= dims <= eng.SOBOL_DIMENSIONS:
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"{dims} dimensions (1 to 20000)")
    g.dimensions = dims
    g.offset = 0


@implements("curandSetGeneratorOrdering")
def set_ordering(generator: int, order: int) -> None:
    g = get(generator)
    name = ORDERINGS.get(order, str(order))
    if g.quasi:
        if order != K["CURAND_ORDERING_QUASI_DEFAULT"]:
            raise Status("CURAND_STATUS_OUT_OF_RANGE", f"{name} for a quasirandom generator")
    elif order not in ORDERINGS or order == K["CURAND_ORDERING_QUASI_DEFAULT"]:
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"{name} for a pseudorandom generator")
    elif order not in MODELLED_ORDERINGS:
        raise Unsupported(f"{name} is not implemented (cuport has PSEUDO_DEFAULT, BEST and "
                          "LEGACY, one order)")
    g.ordering = order
    g.reset()


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
        raise Status("CURAND_STATUS_NOT_INITIALIZED", "outputPtr is NULL")
    if count == 0:
        return
    values = make()
    dt = np.dtype(dtype)

    def run(o):
        device.view(o, dt, count)[:] = values
    device.launch(g.stream, what, run, [(Range(out, count * dt.itemsize, "w"), "outputPtr")],
                  "CURAND_STATUS_LAUNCH_FAILURE")


def _even(g: Generator, n: int, what: str) -> None:
    if n % 2 and not g.quasi:
        raise Status("CURAND_STATUS_LENGTH_NOT_MULTIPLE", f"{what}: n = {n} is odd")


def raw32(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        if QUASI[g.rng_type][0] == 64:
            raise Status("CURAND_STATUS_TYPE_ERROR", "a 64-bit Sobol generator's values are "
                                                     "64-bit: curandGenerateLongLong")
        return g.quasi_draws(n)
    d = g.draws(n)
    return eng.mrg_bits(d) if g.rng_type == MRG32K3A else d


def uniform(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        d = g.quasi_draws(n)
        return uniform_float((d >> U64(32)).astype(U32) if d.dtype == U64 else d)
    d = g.draws(n)
    return (d * eng.MRG_NORM).astype(F32) if g.rng_type == MRG32K3A else uniform_float(d)


def uniform_double(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        d = g.quasi_draws(n)
        return uniform_double_64(d) if d.dtype == U64 else uniform_double_32(d)
    if g.rng_type == MRG32K3A:
        return g.draws(n) * eng.MRG_NORM
    if g.rng_type == MTGP32:
        return uniform_double_32(g.draws(n))
    return uniform_double_hq(*g.units(n, 2))


def normal(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        return normal_icdf(g.quasi_draws(n))
    if g.rng_type == MTGP32:
        return normal_icdf(g.draws(n))
    x, y = g.units(n // 2, 2)
    return box_muller_mrg(x, y) if g.rng_type == MRG32K3A else box_muller(x, y)


def normal_double(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        return normal_icdf_double(g.quasi_draws(n))
    if g.rng_type == MTGP32:
        return normal_icdf_double(g.draws(n))
    if g.rng_type == MRG32K3A:
        return box_muller_mrg_double(*g.units(n // 2, 2))
    return box_muller_double(*g.units(n // 2, 4))


@implements("curandGenerate")
def generate(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerate", out, n, U32, lambda: raw32(g, n))


@implements("curandGenerateLongLong")
def generate_long_long(generator: int, out: int, n: int) -> None:
    g = get(generator)
    if not g.quasi or QUASI[g.rng_type][0] != 64:
        raise Status("CURAND_STATUS_TYPE_ERROR", "64-bit outputs come from the 64-bit "
                                                 "quasirandom generators only")
    _fill(g, "curandGenerateLongLong", out, n, U64, lambda: g.quasi_draws(n))


@implements("curandGenerateUniform")
def generate_uniform(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerateUniform", out, n, F32, lambda: uniform(g, n))


@implements("curandGenerateUniformDouble")
def generate_uniform_double(generator: int, out: int, n: int) -> None:
    g = get(generator)
    _fill(g, "curandGenerateUniformDouble", out, n, np.float64, lambda: uniform_double(g, n))


@implements("curandGenerateNormal")
def generate_normal(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateNormal")
    _fill(g, "curandGenerateNormal", out, n, F32,
          lambda: F32(mean) + F32(stddev) * normal(g, n))


@implements("curandGenerateNormalDouble")
def generate_normal_double(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateNormalDouble")
    _fill(g, "curandGenerateNormalDouble", out, n, np.float64,
          lambda: mean + stddev * normal_double(g, n))


@implements("curandGenerateLogNormal")
def generate_log_normal(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateLogNormal")
    _fill(g, "curandGenerateLogNormal", out, n, F32,
          lambda: np.exp(F32(mean) + F32(stddev) * normal(g, n)))


@implements("curandGenerateLogNormalDouble")
def generate_log_normal_double(generator: int, out: int, n: int, mean: float,
                               stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateLogNormalDouble")
    _fill(g, "curandGenerateLogNormalDouble", out, n, np.float64,
          lambda: np.exp(mean + stddev * normal_double(g, n)))


def _poisson_values(g: Generator, n: int, lam: float) -> np.ndarray:
    if not lam > 0:
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"lambda = {lam}")
    d = g.quasi_draws(n) if g.quasi else g.draws(n)
    if g.rng_type == MRG32K3A:
        d = eng.mrg_bits(d)
    return poisson(d, lam)


@implements("curandGeneratePoisson")
def generate_poisson(generator: int, out: int, n: int, lam: float) -> None:
    g = get(generator)
    _fill(g, "curandGeneratePoisson", out, n, U32, lambda: _poisson_values(g, n, lam))


@implements("curandGeneratePoissonMethod")
def generate_poisson_method(generator: int, out: int, n: int, lam: float, method: int) -> None:
    if method not in (K["CURAND_POISSON"], K["CURAND_CHOOSE_BEST"]):
        raise Unsupported(f"curandGeneratePoissonMethod with method {method}")
    generate_poisson(generator, out, n, lam)
