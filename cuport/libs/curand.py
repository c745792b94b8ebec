"""cuRAND's host API (libcurand.so.10): NVIDIA's generators (curand_engines.py), laid over
their states as NVIDIA's host library lays them (curand_order.py), with the transforms
curand_uniform.h / curand_normal.h / curand_lognormal.h define, vectorised, and the
Poisson methods of curand_poisson.py.

All of it was read off the H200 (tests/libs/recorded/curand_host.txt, tests/libs/
curand_record.cu's output there) and NVIDIA's host generators, which give the same bits
on the CPU; tests/libs/test_curand.py holds cuport to both:
- the orderings: curand_order.py (MT19937's: curand_mt19937.py); PSEUDO_BEST and
  PSEUDO_DEFAULT are one order, PSEUDO_LEGACY has 4096 MRG32k3a lanes and 64 MTGP32
  blocks; XORWOW's PSEUDO_SEEDED seeds lane l with seed + 3133713 l instead of skipping
  to subsequence l (curand_engines.xorwow_seeded). Sobol (quasi): n values for D
  dimensions are n/D points of dimension 0, then of dimension 1, ...; the offset counts
  points.
- PSEUDO_DYNAMIC: NVIDIA's host generators refuse it (CURAND_STATUS_OUT_OF_RANGE, every
  type), as MT19937 does everywhere. On a GPU the order is the GPU's ("can be different
  on different GPUs", cuRAND's documentation); cuport's GPU gives PSEUDO_DEFAULT's. The
  H200's, from its recording: Philox's is its default; XORWOW's raw and uniform doubles
  are dealt round robin over 2816 subsequences; MRG32k3a's raw, normals and uniform
  doubles take one subsequence per unit (262144 of them for 262144 values); XORWOW's
  normals and MTGP32's beyond its first blocks follow patterns the recording is too
  sparse to pin down.
- normals: Box-Muller in pairs (XORWOW and MRG32k3a answer an odd count
  CURAND_STATUS_LENGTH_NOT_MULTIPLE; Philox takes any), the inverse normal CDF for
  MTGP32, MT19937 and Sobol, rising with the draw (the device header's form falls).
- the offset NVIDIA keeps, where states made anew (a new seed, an ordering) start, moves
  by a call's units (XORWOW, MRG32k3a), by Philox's count of values (Generator.count),
  not at all (MTGP32, MT19937).

Exactness: raw bits, uniforms and Poisson values below the normal approximation are
NVIDIA's arithmetic (IEEE operations in the same order); normals and log-normals use
logf/sinf/cosf/erfcinvf, which the GPU computes with its own approximations, so they
agree to a few ulp, not bit for bit.
"""

from __future__ import annotations

import ctypes
import mmap
from functools import cache

import numpy as np

from cuport.driver import handles
from cuport.libs import curand_engines as eng
from cuport.libs import curand_mt19937 as mt19937
from cuport.libs import curand_order as order
from cuport.libs import curand_poisson as poisson_methods
from cuport.libs import device, table
from cuport.libs.device import Range
from cuport.libs.registry import Status, Unsupported, implements, lookup

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
LANED = {XORWOW: eng.Xorwow, MRG32K3A: eng.Mrg32k3a}  # curand_order.Lanes
QUASI = {SOBOL32: (32, False), SCRAMBLED_SOBOL32: (32, True), SOBOL64: (64, False),
         SCRAMBLED_SOBOL64: (64, True)}
SUPPORTED = {XORWOW, MRG32K3A, PHILOX, MTGP32, MT19937, DEFAULT, QUASI_DEFAULT, *QUASI}
NAMES = {v: k for k, v in K.items() if k.startswith("CURAND_RNG_")}
ORDERINGS = {v: k for k, v in K.items() if k.startswith("CURAND_ORDERING_")}
SEEDED, DYNAMIC = K["CURAND_ORDERING_PSEUDO_SEEDED"], K["CURAND_ORDERING_PSEUDO_DYNAMIC"]
HOST_LANES = {XORWOW: 4096, MRG32K3A: 81920}  # lanes of the host generators (the H200's)
MTGP_BLOCKS = 192  # MTGP32's blocks (the H200's; 64 under PSEUDO_LEGACY)
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


def uniform_double_mt19937(x: np.ndarray) -> np.ndarray:
    """MT19937's uniform double of a draw: x 2^-32 + 2^-33 (its float is this, rounded)."""
    return x.astype(np.float64) * TWO_POW32_INV_DOUBLE + TWO_POW32_INV_DOUBLE / 2.0


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
    """The host library's normal of a 32-bit draw by the inverse normal CDF (64-bit draws
    use their high word): curand_normal_static.h's _curand_normal_icdf with the sign
    turned, as the H200 gives it (the value rises with the draw)."""
    from scipy.special import erfcinv

    if x.dtype == U64:
        x = (x >> U64(32)).astype(U32)
    s = np.where(x > U32(0x80000000), SQRT2, -SQRT2).astype(F32)
    x = np.where(x > U32(0x80000000), U32(0xFFFFFFFF) - x, x)
    p = x.astype(F32) * TWO_POW32_INV + TWO_POW32_INV / F32(2)
    return s * erfcinv((F32(2.0) * p).astype(np.float64)).astype(F32)


def normal_icdf_double(x: np.ndarray) -> np.ndarray:
    """normal_icdf in double (53 bits of a 64-bit draw)."""
    from scipy.special import erfcinv

    if x.dtype == U64:
        x = x >> U64(11)
        big, top = U64(0x10000000000000), U64(0x1FFFFFFFFFFFFF)
        s = np.where(x > big, SQRT2_DOUBLE, -SQRT2_DOUBLE)
        x = np.where(x > big, top - x, x)
        p = x.astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 2.0
    else:
        s = np.where(x > U32(0x80000000), SQRT2_DOUBLE, -SQRT2_DOUBLE)
        x = np.where(x > U32(0x80000000), U32(0xFFFFFFFF) - x, x)
        p = x.astype(np.float64) * TWO_POW32_INV_DOUBLE + TWO_POW32_INV_DOUBLE / 2.0
    return s * erfcinv(2.0 * p)


# -- the host generator ------------------------------------------------------------------

class Generator:
    """A generator's settings and, made when it first generates, its ordering's state
    (curand_order.py): lanes, Philox's position or MTGP32's blocks. A host generator
    (curandCreateGeneratorHost) fills host memory at the call, as NVIDIA's does on the CPU;
    its values are the device generator's."""

    def __init__(self, rng_type: int, host: bool = False) -> None:
        self.host = host
        self.context = None if host else device.ensure_context()
        self.rng_type = {DEFAULT: XORWOW, QUASI_DEFAULT: SOBOL32}.get(rng_type, rng_type)
        self.seed = 0
        self.offset = 0  # quasirandom: the next point; pseudorandom: as set (the order counts)
        self.values = 0  # Philox: NVIDIA's count behind its offset (count())
        self.quasi = self.rng_type in QUASI
        self.ordering = K["CURAND_ORDERING_QUASI_DEFAULT" if self.quasi else
                          "CURAND_ORDERING_PSEUDO_DEFAULT"]
        self.dimensions = 1
        self.stream = 0
        self._order = None
        self.handle = handles.new(self)

    def reset(self) -> None:
        self._order = None

    def count(self, units: int) -> None:
        """Where states made anew (a new seed or ordering) start: NVIDIA's offset moves by a
        call's units (XORWOW, MRG32k3a), not at all for MTGP32 and MT19937; a quasirandom
        generator's by its points (quasi_draws). Philox's follows a count of values: an
        offset o sets it to 4 o + o mod 4, every value generated (of any kind) adds one,
        and the offset is the count div 4, the count itself while it is below 4 (NVIDIA's
        host generator, calls of 1 to 562151 values in a row from offsets 0 to 4099)."""
        if self.quasi or self.rng_type in (MTGP32, MT19937):
            return
        if self.rng_type == PHILOX:
            self.values += units
            self.offset = self.values if self.values < 4 else self.values // 4
            return
        self.offset += units

    def order(self):
        if self._order is None:
            legacy = self.ordering == K["CURAND_ORDERING_PSEUDO_LEGACY"]
            if self.rng_type in LANED:
                lanes = 4096 if legacy else HOST_LANES[self.rng_type]
                engine = eng.xorwow_seeded if self.ordering == SEEDED else LANED[self.rng_type]
                self._order = order.Lanes(engine, self.seed, lanes, self.offset)
            elif self.rng_type == PHILOX:
                self._order = order.PhiloxOrder(self.seed, self.offset)
            elif self.rng_type == MTGP32:
                self._order = order.MtgpOrder(self.seed, 64 if legacy else MTGP_BLOCKS,
                                              self.offset)
            elif self.rng_type == MT19937:
                self._order = mt19937.Mt19937Order(self.seed)
            else:
                raise Unsupported(f"the {NAMES[self.rng_type]} generator is not implemented")
        return self._order

    def units(self, count: int, k: int) -> list[np.ndarray]:
        """XORWOW / MRG32k3a: the next `count` units of k draws (k arrays)."""
        return self.order().units(count, k)

    def draws(self, count: int) -> np.ndarray:
        """XORWOW / MRG32k3a / MTGP32 / MT19937: the next `count` draws, one per output."""
        if self.rng_type in (MTGP32, MT19937):
            return self.order().draws(count)
        return self.order().units(count, 1)[0]

    def philox(self, count: int, blocks: int, make) -> np.ndarray:
        return self.order().take(count, blocks, make)

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
    r = subprocess.run([_python(), "-c", code], capture_output=True, timeout=120)
    dtype = U32 if bits == 32 else U64
    n = eng.SOBOL_DIMENSIONS
    if r.returncode != 0 or len(r.stdout) != n * (bits + 1) * (bits // 8):
        raise Unsupported(f"could not read the scramble tables from {path}: "
                          f"{r.stderr.decode(errors='replace')[-300:]}")
    data = np.frombuffer(r.stdout, dtype)
    return data[:n * bits].reshape(n, bits).copy(), data[n * bits:].copy()


def _python() -> str:
    """An interpreter for the child: under `cuport run` sys.executable names whatever
    `python3` the PATH gives (the embedded interpreter has no program of its own)."""
    import os
    import sys

    base = os.path.join(sys.base_exec_prefix, "bin", "python3")
    return base if os.path.exists(base) else sys.executable


def _nvidia_libcurand():
    import os
    import site
    import sys
    from pathlib import Path

    # sys.path too: under `cuport run` the embedded interpreter's site knows only the base
    roots = [*site.getsitepackages(), site.getusersitepackages(),
             *(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))]
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
    return lookup(generator, Generator, "CURAND_STATUS_NOT_INITIALIZED", "a cuRAND generator")


def _create(rng_type: int, host: bool) -> int:
    if rng_type not in NAMES:
        raise Status("CURAND_STATUS_TYPE_ERROR", f"curandRngType_t {rng_type}")
    if rng_type not in SUPPORTED:
        raise Unsupported(f"the {NAMES[rng_type]} generator is not implemented")
    return Generator(rng_type, host).handle


@implements("curandCreateGenerator")
def create_generator(rng_type: int) -> int:
    return _create(rng_type, False)


@implements("curandCreateGeneratorHost")
def create_generator_host(rng_type: int) -> int:
    return _create(rng_type, True)


@implements("curandDestroyGenerator")
def destroy_generator(generator: int) -> None:
    get(generator)
    handles.drop(generator)


@implements("curandSetPseudoRandomGeneratorSeed")
def set_seed(generator: int, seed: int) -> None:
    g = get(generator)
    if g.quasi:
        raise Status("CURAND_STATUS_TYPE_ERROR", "a quasirandom generator has no seed")
    g.seed = seed  # the offset stays: the states are made anew where the generator is
    # but the H200 keeps an MTGP32 device generator's states once it has generated: the
    # outputs after a new seed are those without it, for a while (measured: the first 6 to
    # 384+ rounds of 256 words, by the calls before; then other values, not modelled).
    # NVIDIA's host generator starts anew, as cuport's host generators do.
    if not (g.rng_type == MTGP32 and not g.host and g._order is not None):
        g.reset()


@implements("curandSetGeneratorOffset")
def set_offset(generator: int, offset: int) -> None:
    g = get(generator)
    if g.rng_type in (MTGP32, MT19937):
        raise Status("CURAND_STATUS_TYPE_ERROR", f"{NAMES[g.rng_type]} has no offset")
    g.offset = offset
    g.values = 4 * offset + offset % 4
    g.reset()


@implements("curandSetQuasiRandomGeneratorDimensions")
def set_dimensions(generator: int, dims: int) -> None:
    g = get(generator)
    if not g.quasi:
        raise Status("CURAND_STATUS_TYPE_ERROR", "dimensions are for quasirandom generators")
    if not 1 <= dims <= eng.SOBOL_DIMENSIONS:
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"{dims} dimensions (1 to 20000)")
    g.dimensions = dims


@implements("curandSetGeneratorOrdering")
def set_ordering(generator: int, order: int) -> None:
    g = get(generator)
    name = ORDERINGS.get(order, str(order))
    if g.quasi:
        if order != K["CURAND_ORDERING_QUASI_DEFAULT"]:
            raise Status("CURAND_STATUS_OUT_OF_RANGE", f"{name} for a quasirandom generator")
    elif (order not in ORDERINGS or order == K["CURAND_ORDERING_QUASI_DEFAULT"]
          or (order == SEEDED and g.rng_type != XORWOW)
          or (order == DYNAMIC and (g.host or g.rng_type == MT19937))):
        # NVIDIA's host generators have no DYNAMIC ordering (OUT_OF_RANGE, every type)
        raise Status("CURAND_STATUS_OUT_OF_RANGE",
                     f"{name} for {'a host ' if g.host else ''}{NAMES[g.rng_type]}")
    g.ordering = order
    g.reset()


@implements("curandSetStream")
def set_stream(generator: int, stream: int) -> None:
    g = get(generator)
    if not g.host:  # a host generator works at the call
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


def _fill(g: Generator, what: str, out: int, count: int, dtype, make, pairs: bool = False) -> None:
    """Draw now (the generator's state is the call's), write when the stream gets there.
    `pairs`: the values come in pairs (normals), which XORWOW and MRG32k3a count once."""
    if out == 0:
        raise Status("CURAND_STATUS_NOT_INITIALIZED", "outputPtr is NULL")
    if count == 0:
        return
    values = make()
    g.count(count // 2 if pairs and g.rng_type in LANED else count)
    dt = np.dtype(dtype)
    if g.host:
        _check_host(out, count * dt.itemsize)
        device.view(out, dt, count)[:] = values
        return

    def run(o):
        device.view(o, dt, count)[:] = values
    device.launch(g.stream, what, run, [(Range(out, count * dt.itemsize, "w"), "outputPtr")],
                  "CURAND_STATUS_LAUNCH_FAILURE")


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def _check_host(address: int, size: int) -> None:
    """A host generator's output must be mapped memory (mincore fails on a hole): a bad
    pointer answers LAUNCH_FAILURE rather than crashing the program."""
    page = mmap.PAGESIZE
    base = address & ~(page - 1)
    length = (address + size - base + page - 1) & ~(page - 1)
    vec = (ctypes.c_ubyte * (length // page))()
    if _libc.mincore(base, length, vec) != 0:
        raise Status("CURAND_STATUS_LAUNCH_FAILURE",
                     f"outputPtr {address:#x} (+{size} bytes) is not mapped host memory")


def _even(g: Generator, n: int, what: str) -> None:
    """XORWOW and MRG32k3a make normals in pairs and answer an odd count so (the H200);
    Philox, MTGP32 and the quasirandom generators take any count."""
    if n % 2 and g.rng_type in LANED:
        raise Status("CURAND_STATUS_LENGTH_NOT_MULTIPLE", f"{what}: n = {n} is odd")


def _quads(*parts: np.ndarray) -> np.ndarray:
    """Philox: per thread, pairs of values side by side -> (threads, 4)."""
    return np.concatenate([p.reshape(-1, 2) for p in parts], axis=1)


def raw32(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        if QUASI[g.rng_type][0] == 64:
            raise Status("CURAND_STATUS_TYPE_ERROR", "a 64-bit Sobol generator's values are "
                                                     "64-bit: curandGenerateLongLong")
        return g.quasi_draws(n)
    if g.rng_type == PHILOX:
        return g.philox(n, 1, lambda w: w)
    d = g.draws(n)
    return eng.mrg_bits(d) if g.rng_type == MRG32K3A else d


def uniform(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        d = g.quasi_draws(n)
        return uniform_float((d >> U64(32)).astype(U32) if d.dtype == U64 else d)
    if g.rng_type == PHILOX:
        return g.philox(n, 1, uniform_float)
    d = g.draws(n)
    if g.rng_type == MT19937:
        return uniform_double_mt19937(d).astype(F32)
    return (d * eng.MRG_NORM).astype(F32) if g.rng_type == MRG32K3A else uniform_float(d)


def uniform_double(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        d = g.quasi_draws(n)
        return uniform_double_64(d) if d.dtype == U64 else uniform_double_32(d)
    if g.rng_type == MRG32K3A:
        return g.draws(n) * eng.MRG_NORM
    if g.rng_type == MTGP32:
        return uniform_double_32(g.draws(n))
    if g.rng_type == MT19937:
        return uniform_double_mt19937(g.draws(n))
    if g.rng_type == PHILOX:
        return g.philox(n, 2, lambda w: np.stack(
            [uniform_double_hq(w[:, i], w[:, i + 1]) for i in range(0, 8, 2)], axis=1))
    return uniform_double_hq(*g.units(n, 2))


def _philox_normals(w: np.ndarray) -> np.ndarray:
    return _quads(box_muller(w[:, 0], w[:, 1]), box_muller(w[:, 2], w[:, 3]))


def normal(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        return normal_icdf(g.quasi_draws(n))
    if g.rng_type in (MTGP32, MT19937):
        return normal_icdf(g.draws(n))
    if g.rng_type == PHILOX:
        return g.philox(n, 1, _philox_normals)
    x, y = g.units(n // 2, 2)
    return box_muller_mrg(x, y) if g.rng_type == MRG32K3A else box_muller(x, y)


def normal_double(g: Generator, n: int) -> np.ndarray:
    if g.quasi:
        return normal_icdf_double(g.quasi_draws(n))
    if g.rng_type in (MTGP32, MT19937):
        return normal_icdf_double(g.draws(n))
    if g.rng_type == PHILOX:
        return g.philox(n, 2, lambda w: _quads(box_muller_double(*(w[:, i] for i in range(4))),
                                               box_muller_double(*(w[:, i] for i in range(4, 8)))))
    if g.rng_type == MRG32K3A:
        return box_muller_mrg_double(*g.units(n // 2, 2))
    return box_muller_double(*g.units(n // 2, 4))


def poisson(g: Generator, n: int, lam: float) -> np.ndarray:
    """curandGeneratePoisson's values; curand_poisson.py says which method serves which
    lambda for which generator."""
    pm = poisson_methods
    if not 0 < lam <= pm.MAX_LAMBDA:
        raise Status("CURAND_STATUS_OUT_OF_RANGE", f"lambda = {lam} (0 < lambda <= 400000)")
    if g.quasi:
        d = g.quasi_draws(n)
        if lam < 2000 if d.dtype == U64 else lam <= 8000:
            return pm.inversion(d, lam)
        high = (d >> U64(32)).astype(U32) if d.dtype == U64 else d
        return pm.normal_approximation(normal_icdf_double(high), lam)
    if g.rng_type == MT19937:
        d = g.draws(n)
        if lam < 2000:
            return pm.square_histogram(d, lam)
        return pm.normal_approximation_float(normal_icdf(d), lam)
    if g.rng_type == MTGP32:
        d = g.draws(n)
        if lam < 32:
            return pm.square_histogram(d, lam)
        if lam <= 8000:
            return pm.inversion(d, lam)
        return pm.normal_approximation(normal_icdf_double(d), lam)
    if lam < 2000:
        return pm.square_histogram(raw32(g, n), lam)
    if g.rng_type == PHILOX:
        return pm.normal_approximation(g.philox(n, 1, _philox_normals), lam)
    z = g.order().single_normals(n, box_muller_mrg if g.rng_type == MRG32K3A else box_muller)
    return pm.normal_approximation(z, lam)


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
          lambda: F32(mean) + F32(stddev) * normal(g, n), pairs=True)


@implements("curandGenerateNormalDouble")
def generate_normal_double(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateNormalDouble")
    _fill(g, "curandGenerateNormalDouble", out, n, np.float64,
          lambda: mean + stddev * normal_double(g, n), pairs=True)


@implements("curandGenerateLogNormal")
def generate_log_normal(generator: int, out: int, n: int, mean: float, stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateLogNormal")
    _fill(g, "curandGenerateLogNormal", out, n, F32,
          lambda: np.exp(F32(mean) + F32(stddev) * normal(g, n)), pairs=True)


@implements("curandGenerateLogNormalDouble")
def generate_log_normal_double(generator: int, out: int, n: int, mean: float,
                               stddev: float) -> None:
    g = get(generator)
    _even(g, n, "curandGenerateLogNormalDouble")
    _fill(g, "curandGenerateLogNormalDouble", out, n, np.float64,
          lambda: np.exp(mean + stddev * normal_double(g, n)), pairs=True)


@implements("curandGeneratePoisson")
def generate_poisson(generator: int, out: int, n: int, lam: float) -> None:
    g = get(generator)
    _fill(g, "curandGeneratePoisson", out, n, U32, lambda: poisson(g, n, lam))


@implements("curandGeneratePoissonMethod")
def generate_poisson_method(generator: int, out: int, n: int, lam: float, method: int) -> None:
    if method not in (K["CURAND_POISSON"], K["CURAND_CHOOSE_BEST"]):
        raise Unsupported(f"curandGeneratePoissonMethod with method {method}")
    generate_poisson(generator, out, n, lam)
