"""cuFFT (libcufft.so.12/.11) on pocketfft (scipy.fft's C++ core, called with `out=`).

A plan records rank, sizes, the advanced layout (inembed/istride/idist, the same for
the output) and the batch; executing it views the input and output as strided numpy
arrays of shape (batch, n0, ..., n_{r-1}) and hands both to pocketfft, which writes
the result in place of the output: no copies for out-of-place transforms. As cuFFT
does, transforms are unnormalised in both directions, and with the basic layout
(inembed NULL) an in-place real transform's real side is padded to 2*(n/2+1) elements
in its last dimension while an out-of-place one is compact. In-place transforms whose
input and output views overlap differently (R2C/C2R) read a copy of the input.
Work runs on the plan's stream, on every core.
"""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass
from math import prod

import numpy as np

from cuport.libs import device, table
from cuport.libs.device import Range
from cuport.libs.registry import Status, Unsupported, implements

K = table.constants("cufft")
C2C, R2C, C2R = K["CUFFT_C2C"], K["CUFFT_R2C"], K["CUFFT_C2R"]
Z2Z, D2Z, Z2D = K["CUFFT_Z2Z"], K["CUFFT_D2Z"], K["CUFFT_Z2D"]
# cufftType -> (input dtype, output dtype, kind)
TYPES = {
    C2C: (np.complex64, np.complex64, "c2c"), Z2Z: (np.complex128, np.complex128, "c2c"),
    R2C: (np.float32, np.complex64, "r2c"), D2Z: (np.float64, np.complex128, "r2c"),
    C2R: (np.complex64, np.float32, "c2r"), Z2D: (np.complex128, np.float64, "c2r"),
}
FORWARD, INVERSE = K["CUFFT_FORWARD"], K["CUFFT_INVERSE"]
VERSION = K.get("CUFFT_VERSION", 12000)


@functools.cache
def _pocketfft():
    """scipy's pocketfft binding, which writes into a given output array: pypocketfft up to
    SciPy 1.17, pyduccfft (ducc0's pocketfft, the same calls: c2c/r2c/c2r(a, axes, [lastsize,]
    forward, inorm, out, nthreads)) from 1.18. Neither is public, so where neither is found
    `transform` uses scipy.fft's public functions and copies their result. Looked up once: a
    failed import is not cached by Python and would be retried at every exec."""
    try:
        from scipy.fft._pocketfft import pypocketfft
        return pypocketfft
    except ImportError:
        pass
    try:
        from scipy.fft._duccfft import pyduccfft
        return pyduccfft
    except ImportError:
        return None


def transform(op: str, src: np.ndarray, dst: np.ndarray, axes: list[int], forward: bool,
              last: int, nthreads: int, fft=None) -> None:
    """dst = the unnormalised transform of src over `axes` (op c2c, r2c or c2r; `last` is
    the real length of the last axis for c2r), as cuFFT computes it. `fft`: scipy's private
    binding (_pocketfft()), or None for the public scipy.fft path (one copy more)."""
    if fft is not None:
        if op == "c2c":
            fft.c2c(src, axes, forward, 0, dst, nthreads)
        elif op == "r2c":
            fft.r2c(src, axes, True, 0, dst, nthreads)
        else:
            # pocketfft's multi-axis c2r overwrites its input: callers hand it a copy
            fft.c2r(src, axes, last, False, 0, dst, nthreads)
        return
    import scipy.fft as sf

    # norm "backward" leaves the forward transform unscaled, "forward" the inverse one.
    # One axis through the 1-D functions: SciPy 1.18's fftn over one axis of a 1-D array
    # took 27.6 ms where fft took 20.0 (2^22 points, 16 workers, the H100 host)
    if op == "c2c":
        if len(axes) == 1:
            r = (sf.fft(src, axis=axes[0], norm="backward", workers=nthreads) if forward
                 else sf.ifft(src, axis=axes[0], norm="forward", workers=nthreads))
        else:
            r = (sf.fftn(src, axes=axes, norm="backward", workers=nthreads) if forward
                 else sf.ifftn(src, axes=axes, norm="forward", workers=nthreads))
    elif op == "r2c":
        r = (sf.rfft(src, axis=axes[0], norm="backward", workers=nthreads) if len(axes) == 1
             else sf.rfftn(src, axes=axes, norm="backward", workers=nthreads))
    elif len(axes) == 1:
        r = sf.irfft(src, n=last, axis=axes[0], norm="forward", workers=nthreads)
    else:
        shape = [src.shape[a] for a in axes[:-1]] + [last]
        r = sf.irfftn(src, s=shape, axes=axes, norm="forward", workers=nthreads)
    np.copyto(dst, r, casting="same_kind")


def threads() -> int:
    return int(os.environ.get("CUPORT_THREADS", "0")) or (os.cpu_count() or 1)


@dataclass
class Layout:
    embed: tuple[int, ...]  # the (padded) array sizes, outermost first
    stride: int
    dist: int


_PLANS: dict[int, Plan] = {}
_plan_ids = itertools.count(1)


class Plan:
    """A cufftHandle is an int: plans are numbered, not given driver handles."""

    def __init__(self) -> None:
        self.handle = next(_plan_ids)
        _PLANS[self.handle] = self
        self.context = device.ensure_context()
        self.stream = 0
        self.made = False
        self.auto_allocation = True
        self.work_area = 0

    def make(self, n: list[int], inembed, istride, idist, onembed, ostride, odist, kind, batch):
        if kind not in TYPES:
            raise Status("CUFFT_INVALID_TYPE", f"cufftType {kind:#x}")
        if not n or len(n) > 3 or any(x < 1 for x in n) or batch < 1:
            raise Status("CUFFT_INVALID_SIZE", f"sizes {n} with batch {batch}")
        self.n, self.kind, self.batch = list(n), kind, batch
        self.in_dtype, self.out_dtype, self.op = TYPES[kind]
        self.basic = inembed is None or onembed is None
        if not self.basic:
            self.ilayout = Layout(tuple(inembed), istride, idist)
            self.olayout = Layout(tuple(onembed), ostride, odist)
        self.made = True

    def sizes(self) -> tuple[list[int], list[int]]:
        """The logical input and output sizes of one transform."""
        half = self.n[:-1] + [self.n[-1] // 2 + 1]
        if self.op == "r2c":
            return self.n, half
        if self.op == "c2r":
            return half, self.n
        return self.n, self.n

    def layouts(self, in_place: bool) -> tuple[Layout, Layout]:
        if not self.basic:
            return self.ilayout, self.olayout
        ni, no = self.sizes()
        real_pad = self.n[:-1] + [2 * (self.n[-1] // 2 + 1)] if in_place else self.n
        ei = real_pad if self.op == "r2c" else ni
        eo = real_pad if self.op == "c2r" else no
        return Layout(tuple(ei), 1, prod(ei)), Layout(tuple(eo), 1, prod(eo))


def view(address: int, dtype, logical: list[int], layout: Layout, batch: int) -> np.ndarray:
    """The batch of arrays as a strided (batch, n0, ...) view of host memory."""
    dt = np.dtype(dtype)
    steps = [layout.stride]
    for e in reversed(layout.embed[1:]):
        steps.insert(0, steps[0] * e)
    count = extent(logical, layout, batch)
    flat = device.view(address, dt, count)
    strides = [layout.dist * dt.itemsize] + [s * dt.itemsize for s in steps]
    return np.lib.stride_tricks.as_strided(flat, shape=[batch, *logical], strides=strides)


def extent(logical: list[int], layout: Layout, batch: int) -> int:
    """Elements from the first to one past the last the layout touches."""
    steps = [layout.stride]
    for e in reversed(layout.embed[1:]):
        steps.insert(0, steps[0] * e)
    last = (batch - 1) * layout.dist + sum((n - 1) * s for n, s in zip(logical, steps, strict=True))
    return last + 1


def get(plan: int) -> Plan:
    p = _PLANS.get(plan)
    if p is None:
        raise Status("CUFFT_INVALID_PLAN", f"{plan} is not a cuFFT plan")
    return p


def _read_ints(address: int, count: int, dtype=np.int32) -> list[int] | None:
    if address == 0:
        return None
    return [int(v) for v in device.view(address, dtype, count)]


def _work_size(p: Plan) -> int:
    return 0  # pocketfft allocates its own scratch: cuport asks for no work area


# -- plans --------------------------------------------------------------------------------

@implements("cufftCreate")
def create() -> int:
    return Plan().handle


@implements("cufftDestroy")
def destroy(plan: int) -> None:
    p = get(plan)
    _PLANS.pop(p.handle, None)


def _make(plan: int, rank: int, n, inembed, istride, idist, onembed, ostride, odist, kind,
          batch, ints=np.int32) -> int:
    p = get(plan)
    if not 1 <= rank <= 3:
        raise Status("CUFFT_INVALID_SIZE", f"rank {rank}")
    if n == 0:
        raise Status("CUFFT_INVALID_VALUE", "n is NULL")
    p.make(_read_ints(n, rank, ints), _read_ints(inembed, rank, ints), istride, idist,
           _read_ints(onembed, rank, ints), ostride, odist, kind, batch)
    return _work_size(p)


@implements("cufftMakePlan1d")
def make_plan_1d(plan, nx, kind, batch) -> int:
    p = get(plan)
    p.make([nx], None, 1, 0, None, 1, 0, kind, batch)
    return 0


@implements("cufftMakePlan2d")
def make_plan_2d(plan, nx, ny, kind) -> int:
    get(plan).make([nx, ny], None, 1, 0, None, 1, 0, kind, 1)
    return 0


@implements("cufftMakePlan3d")
def make_plan_3d(plan, nx, ny, nz, kind) -> int:
    get(plan).make([nx, ny, nz], None, 1, 0, None, 1, 0, kind, 1)
    return 0


@implements("cufftMakePlanMany")
def make_plan_many(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch):
    return _make(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch)


@implements("cufftMakePlanMany64")
def make_plan_many64(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, kind,
                     batch):
    return _make(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
                 np.int64)


XT_TYPES = {  # (input cudaDataType, output, execution) -> cufftType
    (4, 4, 4): C2C, (5, 5, 5): Z2Z, (0, 4, 4): R2C, (1, 5, 5): D2Z, (4, 0, 4): C2R,
    (5, 1, 5): Z2D,
}


@implements("cufftXtMakePlanMany")
def xt_make_plan_many(plan, rank, n, inembed, istride, idist, itype, onembed, ostride, odist,
                      otype, batch, exec_type):
    kind = XT_TYPES.get((itype, otype, exec_type))
    if kind is None:
        raise Unsupported(f"cufftXtMakePlanMany for cudaDataType {itype} -> {otype} "
                          f"(execution {exec_type}); f16/bf16 transforms are not implemented")
    return _make(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch,
                 np.int64)


@implements("cufftPlan1d")
def plan_1d(nx, kind, batch) -> int:
    p = Plan()
    p.make([nx], None, 1, 0, None, 1, 0, kind, batch)
    return p.handle


@implements("cufftPlan2d")
def plan_2d(nx, ny, kind) -> int:
    p = Plan()
    p.make([nx, ny], None, 1, 0, None, 1, 0, kind, 1)
    return p.handle


@implements("cufftPlan3d")
def plan_3d(nx, ny, nz, kind) -> int:
    p = Plan()
    p.make([nx, ny, nz], None, 1, 0, None, 1, 0, kind, 1)
    return p.handle


@implements("cufftPlanMany")
def plan_many(rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch) -> int:
    p = Plan()
    try:
        _make(p.handle, rank, n, inembed, istride, idist, onembed, ostride, odist, kind, batch)
    except Status:
        _PLANS.pop(p.handle, None)
        raise
    return p.handle


def _no_work(*args) -> int:
    return 0


for _name in ("cufftEstimate1d", "cufftEstimate2d", "cufftEstimate3d", "cufftEstimateMany",
              "cufftGetSize1d", "cufftGetSize2d", "cufftGetSize3d", "cufftGetSizeMany",
              "cufftGetSizeMany64", "cufftXtGetSizeMany"):
    implements(_name)(_no_work)


@implements("cufftGetSize")
def get_size(plan) -> int:
    get(plan)
    return 0


@implements("cufftSetAutoAllocation")
def set_auto_allocation(plan, auto) -> None:
    get(plan).auto_allocation = bool(auto)


@implements("cufftSetWorkArea")
def set_work_area(plan, area) -> None:
    get(plan).work_area = area


@implements("cufftSetStream")
def set_stream(plan, stream) -> None:
    p = get(plan)
    device.resolve_stream(stream)
    p.stream = stream


@implements("cufftGetVersion")
def get_version() -> int:
    return VERSION


@implements("cufftGetProperty")
def get_property(kind: int) -> int:
    v = VERSION
    values = (v // 1000, (v % 1000) // 10, v % 10)
    if kind not in (0, 1, 2):
        raise Status("CUFFT_INVALID_VALUE", f"libraryPropertyType {kind}")
    return values[kind]


# -- execution --------------------------------------------------------------------------

def execute(plan: int, idata: int, odata: int, direction: int, what: str) -> None:
    """Run the plan's transform. As NVIDIA's cuFFT does (the H200 answers CUFFT_SUCCESS to
    cufftExecR2C on a Z2Z plan), the Exec function does not have to match the plan's type:
    the plan decides, the call only gives the direction (R2C and D2Z forward, C2R and Z2D
    inverse)."""
    p = get(plan)
    if not p.made:
        raise Status("CUFFT_INVALID_PLAN", "the plan has not been made (cufftMakePlan*)")
    if p.op == "c2c" and direction not in (FORWARD, INVERSE):
        raise Status("CUFFT_INVALID_VALUE", f"direction {direction}")
    if idata == 0 or odata == 0:
        raise Status("CUFFT_INVALID_VALUE", "a data pointer is NULL")
    in_place = idata == odata
    li, lo = p.layouts(in_place)
    ni, no = p.sizes()
    isz, osz = np.dtype(p.in_dtype).itemsize, np.dtype(p.out_dtype).itemsize
    rin = Range(idata, extent(ni, li, p.batch) * isz, "r")
    rout = Range(odata, extent(no, lo, p.batch) * osz, "w")
    axes = list(range(1, len(p.n) + 1))
    forward = p.op == "r2c" or (p.op == "c2c" and direction == FORWARD)
    nthreads = threads()

    def run(ia, oa):
        src = view(ia, p.in_dtype, ni, li, p.batch)
        dst = view(oa, p.out_dtype, no, lo, p.batch)
        fft = _pocketfft()
        if in_place and p.op != "c2c" or p.op == "c2r" and fft is not None:
            src = src.copy()  # an overlapping input, or pocketfft's c2r, which overwrites it
        if p.batch == 1:
            # one transform: without the batch axis, so that a pocketfft that parallelises
            # one transform (SciPy 1.18's scipy.fft) uses every worker; over a (1, n) array
            # it split the single row among threads, that is: ran it on one (82 ms vs 20 ms
            # for 2^22 points on 16 cores)
            src, dst = src[0], dst[0]
            ax = [a - 1 for a in axes]
        else:
            ax = axes
        transform(p.op, src, dst, ax, forward, p.n[-1], nthreads, fft)
    device.launch(p.stream, what, run, [(rin, "idata"), (rout, "odata")], "CUFFT_INVALID_VALUE")


@implements("cufftExecC2C")
def exec_c2c(plan, idata, odata, direction):
    execute(plan, idata, odata, direction, "cufftExecC2C")


@implements("cufftExecZ2Z")
def exec_z2z(plan, idata, odata, direction):
    execute(plan, idata, odata, direction, "cufftExecZ2Z")


@implements("cufftExecR2C")
def exec_r2c(plan, idata, odata):
    execute(plan, idata, odata, FORWARD, "cufftExecR2C")


@implements("cufftExecD2Z")
def exec_d2z(plan, idata, odata):
    execute(plan, idata, odata, FORWARD, "cufftExecD2Z")


@implements("cufftExecC2R")
def exec_c2r(plan, idata, odata):
    execute(plan, idata, odata, INVERSE, "cufftExecC2R")


@implements("cufftExecZ2D")
def exec_z2d(plan, idata, odata):
    execute(plan, idata, odata, INVERSE, "cufftExecZ2D")


@implements("cufftXtExec")
def xt_exec(plan, idata, odata, direction):
    execute(plan, idata, odata, direction, "cufftXtExec")
