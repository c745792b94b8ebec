"""cuFFT's two ways to pocketfft (cuport/libs/cufft.transform): scipy's private binding,
which writes into cuFFT's output (pypocketfft to SciPy 1.17, ducc0's pyduccfft from 1.18),
and scipy.fft's public functions, for a SciPy that has neither. Both must give cuFFT's
unnormalised transforms, the same bits where both exist."""

from __future__ import annotations

import numpy as np
import pytest

from cuport.libs import cufft

CASES = [  # (op, logical sizes n, batch, dtype of the complex side)
    ("c2c", (64,), 3, np.complex64), ("c2c", (12, 10), 2, np.complex128),
    ("c2c", (4, 6, 8), 1, np.complex64), ("r2c", (30,), 4, np.complex64),
    ("r2c", (8, 9), 2, np.complex128), ("c2r", (16,), 3, np.complex64),
    ("c2r", (6, 7, 10), 2, np.complex128),
    # one transform (cufft.execute hands a batch of one over without its batch axis)
    ("c2c", (256,), 1, np.complex64), ("r2c", (50,), 1, np.complex128), ("c2r", (18,), 1, np.complex64),
]


def _inputs(op, n, batch, ctype, rng):
    real = np.float32 if ctype == np.complex64 else np.float64
    half = n[:-1] + (n[-1] // 2 + 1,)
    if op == "r2c":
        return rng.standard_normal((batch, *n)).astype(real), (batch, *half), ctype
    if op == "c2r":  # the Hermitian half of a real signal's spectrum
        x = np.fft.rfftn(rng.standard_normal((batch, *n)), axes=range(1, len(n) + 1))
        return x.astype(ctype), (batch, *n), real
    x = rng.standard_normal((batch, *n)) + 1j * rng.standard_normal((batch, *n))
    return x.astype(ctype), (batch, *n), ctype


def _reference(op, x, n, forward):
    axes = tuple(range(1, len(n) + 1))
    if op == "r2c":
        return np.fft.rfftn(x.astype(np.float64), axes=axes)
    if op == "c2r":
        return np.fft.irfftn(x.astype(np.complex128), s=n, axes=axes) * np.prod(n)
    return (np.fft.fftn(x, axes=axes) if forward else np.fft.ifftn(x, axes=axes) * np.prod(n))


# r2c is forward and c2r inverse by definition; c2c both ways
RUNS = [(c, c[0] != "c2r") for c in CASES] + [(c, False) for c in CASES if c[0] == "c2c"]


@pytest.mark.parametrize(("case", "forward"), RUNS,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}-{'fwd' if f else 'inv'}" for c, f in RUNS])
def test_both_paths_give_the_unnormalised_transform(case, forward):
    op, n, batch, ctype = case
    rng = np.random.default_rng(len(n) * 100 + batch)
    x, oshape, otype = _inputs(op, n, batch, ctype, rng)
    axes = list(range(1, len(n) + 1))
    outs = {}
    for name, fft in (("private", cufft._pocketfft()), ("scipy.fft", None)):
        if name == "private" and fft is None:
            continue
        dst = np.full(oshape, np.nan, dtype=otype)
        cufft.transform(op, x.copy(), dst, axes, forward, n[-1], 2, fft)
        outs[name] = dst
    want = _reference(op, x, n, forward)
    tol = 1e-4 if ctype == np.complex64 else 1e-11
    scale = np.abs(want).max()
    for name, got in outs.items():
        assert np.abs(got - want).max() <= tol * scale, name
    if len(outs) == 2:
        assert outs["private"].tobytes() == outs["scipy.fft"].tobytes()
