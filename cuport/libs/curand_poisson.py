"""curandGeneratePoisson as cuRAND's host library computes it.

Read off the H200's recording (tests/libs/recorded/curand_host.txt) and NVIDIA's host
generators, which give the same values: which method serves a lambda depends on the
generator (lambda must be in (0, 400000], else CURAND_STATUS_OUT_OF_RANGE):

- XORWOW, MRG32k3a, Philox4x32-10: below 2000, Marsaglia, Tsang and Wang's square
  histogram ("M2", curand_poisson.h's _curand_M2_double) of one 32-bit draw per output;
  from 2000, (unsigned)(sqrt(lambda) z + lambda + 0.5) of one normal per output.
- MTGP32: M2 below 32; inversion (curand_poisson.h's _curand_poisson_ITR_double) up to
  8000; the normal approximation above, z the inverse normal CDF of the same draw.
- MT19937: M2 below 2000; from 2000, the normal approximation in float arithmetic,
  (unsigned)(sqrtf(lambda) z + lambda + 0.5f), z the float inverse normal CDF of the
  draw (NVIDIA's host generator: 7 million values, every one equal; in double, 1 in
  50000 is one off above lambda 100000).
- Sobol32: inversion up to 8000, then the normal approximation. Sobol64: inversion of
  53 bits below 2000, then the normal approximation of the high 32 bits.

The histogram is the one curandCreatePoissonDistribution builds: the probabilities
exp(-l + k ln l - lgamma(k + 1)) of every k where that does not underflow, as many
columns as values; then passes in increasing index over the columns below the mean
height 1/n, each topped up from the richest remaining column counted down from the
highest index (a donor that falls below the mean becomes a column to top up), until
every column is full. After a Poisson call NVIDIA's host generator holds two arrays of
heights in its memory: one equal to these bit for bit (lambda 0.5, 3.5, 10, 31.5, 100,
1000, 1999.5), the other off at the donor columns by up to 7.4e-12 (lambda 1000). Which
one it draws from does not matter: no u = (x + 1) 2^-32 of a 32-bit x lies between the
two in its own column (lambda 10, 100, 1000, 1999.5), so the values are the same.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

U32, U64 = np.uint32, np.uint64
MAX_LAMBDA = 400000.0
TWO_POW32_INV = 2.0 ** -32
TWO_POW53_INV = 2.0 ** -53


@cache
def histogram(lam: float) -> tuple[int, np.ndarray, np.ndarray]:
    """(shift, V, K) of the square histogram of Poisson(lam)."""
    probs, k = [], 0
    while k <= lam or probs[-1] > 0:
        probs.append(math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1)))
        k += 1
    nonzero = [k for k, p in enumerate(probs) if p > 0]
    shift = nonzero[0]
    p = probs[shift:nonzero[-1] + 1]
    n = len(p)
    a = 1.0 / n
    alias = list(range(n))
    v = [(i + 1) * a for i in range(n)]
    rich = [i for i in range(n) if p[i] >= a]
    done = [False] * n
    r = len(rich) - 1
    j = rich[r]
    progress = True
    while progress:
        progress = False
        for i in range(n):
            if done[i] or i == j or p[i] >= a:
                continue
            alias[i], v[i] = j, i * a + p[i]
            p[j] = p[j] - (a - p[i])
            p[i], done[i], progress = a, True, True
            if p[j] < a:
                if r == 0:
                    break
                r -= 1
                j = rich[r]
    for i in range(n):
        if not done[i]:
            v[i] = i * a + p[i]
    return shift, np.array(v), np.array(alias, np.int64)


def square_histogram(x: np.ndarray, lam: float) -> np.ndarray:
    """_curand_M2_double of 32-bit draws."""
    shift, v, alias = histogram(lam)
    u = x.astype(np.float64) * TWO_POW32_INV + TWO_POW32_INV
    j = np.minimum(np.floor(len(v) * u).astype(np.int64), len(v) - 1)
    return np.where(u < v[j], shift + j, shift + alias[j]).astype(U32)


def inversion(x: np.ndarray, lam: float) -> np.ndarray:
    """_curand_poisson_ITR_double, exactly: the CDF is summed in chunks of exp(-500), so an
    output's arithmetic depends on where it crossed each chunk; outputs that share that
    path share their sums, which are walked once per path."""
    if x.dtype == U64:
        u = (x >> U64(11)).astype(np.float64) * TWO_POW53_INV + TWO_POW53_INV / 4.0
    else:
        u = x.astype(np.float64) * TWO_POW32_INV + TWO_POW32_INV / 2.0
    out = np.empty(len(u), U32)
    paths = [(0, 1.0, 1.0, np.arange(len(u)))]  # k, p, q and the outputs on that path
    power = 0
    while paths:
        chunk = math.exp(-500.0) if lam > power + 500.0 else math.exp(power - lam)
        power += 500
        last = not power < lam
        following = []
        for k, p, q, members in paths:
            p *= chunk
            q *= chunk
            mine = u[members]
            ks, ps, qs = [k], [p], [q]
            target = float(mine.max())
            while target > q:
                k += 1
                p *= lam / k
                q += p
                ks.append(k)
                ps.append(p)
                qs.append(q)
            stop = np.searchsorted(np.array(qs), mine, side="left")  # the first q >= u
            if last:
                out[members] = np.array(ks, np.int64)[stop]
                continue
            order = np.argsort(stop, kind="stable")
            values, starts = np.unique(stop[order], return_index=True)
            for s, part in zip(values, np.split(members[order], starts[1:]), strict=True):
                following.append((ks[s], ps[s], qs[s], part))
        if last:
            return out
        paths = following
    return out


def normal_approximation(z: np.ndarray, lam: float) -> np.ndarray:
    return (math.sqrt(lam) * z.astype(np.float64) + lam + 0.5).astype(U32)


def normal_approximation_float(z: np.ndarray, lam: float) -> np.ndarray:
    """MT19937's: every operation rounded to float (lambda too)."""
    f = np.float32(lam)
    return (np.sqrt(f) * z.astype(np.float32) + f + np.float32(0.5)).astype(U32)
