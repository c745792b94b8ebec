"""cuSOLVER's dense API (cusolverDn*) on OpenBLAS's LAPACK.

Each routine runs LAPACK's in place on the device matrix (column-major, as cuSOLVER's),
in the handle's stream, and writes LAPACK's info to devInfo. The _bufferSize queries
answer 1 element (LAPACK's workspace is cuport's own, so the program's stays unused);
the pivot vectors cuSOLVER returns as int32 are converted from LAPACK's int64.
getrf with devIpiv NULL factors without pivoting, as cuSOLVER does.
"""

from __future__ import annotations

import numpy as np

from cuport.driver import handles
from cuport.libs import device, openblas, table
from cuport.libs.blas_common import mat_bytes, matrix
from cuport.libs.device import Range
from cuport.libs.dtypes import LETTERS, REAL_OF
from cuport.libs.registry import Status, implements, lookup

INVALID = "CUSOLVER_STATUS_INVALID_VALUE"
K = table.constants("cusolver")
FUNCS = table.functions("cusolver")


class DnHandle:
    def __init__(self) -> None:
        self.context = device.ensure_context()
        self.stream = 0
        self.handle = handles.new(self)


def get(handle: int) -> DnHandle:
    return lookup(handle, DnHandle, "CUSOLVER_STATUS_NOT_INITIALIZED", "a cuSOLVER handle")


@implements("cusolverDnCreate")
def create() -> int:
    return DnHandle().handle


@implements("cusolverDnDestroy")
def destroy(handle: int) -> None:
    get(handle)
    handles.drop(handle)


@implements("cusolverDnSetStream")
def set_stream(handle: int, stream: int) -> None:
    h = get(handle)
    device.resolve_stream(stream)
    h.stream = stream


@implements("cusolverDnGetStream")
def get_stream(handle: int) -> int:
    return get(handle).stream


@implements("cusolverGetProperty")
def get_property(kind: int) -> int:
    values = (K.get("CUSOLVER_VER_MAJOR", 12), K.get("CUSOLVER_VER_MINOR", 0),
              K.get("CUSOLVER_VER_PATCH", 0))
    if kind not in (0, 1, 2):
        raise Status(INVALID, f"libraryPropertyType {kind}")
    return values[kind]


@implements("cusolverGetVersion")
def get_version() -> int:
    return K.get("CUSOLVER_VERSION", 12000)


def _i64(*values: int) -> list[np.ndarray]:
    return [np.array([v], np.int64) for v in values]


def _c(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), np.uint8).copy()


def _addr(a: np.ndarray) -> int:
    return a.ctypes.data


def _write_info(address: int, value: int) -> None:
    if address:
        device.write_scalar(device.map_range(address, 4, "w"), np.int32, value)


def _launch(h: DnHandle, what: str, fn, ranges) -> None:
    device.launch(h.stream, what, fn, ranges, INVALID)


def _check(**sizes: int) -> None:
    for name, v in sizes.items():
        if v < 0:
            raise Status(INVALID, f"{name} = {v} < 0")


def _check_ld(name: str, ld: int, rows: int) -> None:
    if ld < max(1, rows):
        raise Status(INVALID, f"{name} = {ld} < max(1, {rows})")


def _buffer_size(*args) -> int:
    return 1


def _register(name: str, fn) -> None:
    if name in FUNCS:
        implements(name)(fn)


def _lu_no_pivot(a: np.ndarray) -> int:
    """LU without row exchanges, in place; LAPACK-style info (first zero pivot, 1-based)."""
    n = min(a.shape)
    info = 0
    for j in range(n):
        if a[j, j] == 0:
            info = info or j + 1
            continue
        a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return info


def _getrf(t: str):
    f, dt = openblas.lapack(f"{t.lower()}getrf"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, m, n, A, lda, work, ipiv, info):
        h = get(handle)
        _check(m=m, n=n)
        _check_ld("lda", lda, m)

        def run(a):
            if ipiv == 0:
                _write_info(info, _lu_no_pivot(matrix(a, dt, m, n, lda)))
                return
            mm, nn, ld = _i64(m, n, lda)
            piv = np.zeros(max(1, min(m, n)), np.int64)
            out = np.zeros(1, np.int64)
            f(_addr(mm), _addr(nn), a, _addr(ld), _addr(piv), _addr(out))
            k = min(m, n)
            if k:
                device.view(device.map_range(ipiv, 4 * k, "w"), np.int32, k)[:] = piv[:k]
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}getrf", run, [(Range(A, mat_bytes(m, n, lda, sz), "rw"), "A")])
    return impl


def _getrs(t: str):
    f, dt = openblas.lapack(f"{t.lower()}getrs"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, trans, n, nrhs, A, lda, ipiv, B, ldb, info):
        h = get(handle)
        _check(n=n, nrhs=nrhs)
        _check_ld("lda", lda, n)
        _check_ld("ldb", ldb, n)
        if trans not in (0, 1, 2):
            raise Status(INVALID, f"trans {trans}")
        tr = _c("NTC"[trans])

        def run(a, p, b):
            piv = device.view(p, np.int32, n).astype(np.int64) if n else np.zeros(1, np.int64)
            nn, nr, la, lb = _i64(n, nrhs, lda, ldb)
            out = np.zeros(1, np.int64)
            f(_addr(tr), _addr(nn), _addr(nr), a, _addr(la), _addr(piv), b, _addr(lb), _addr(out), 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}getrs", run, [(Range(A, mat_bytes(n, n, lda, sz)), "A"),
                                               (Range(ipiv, 4 * n), "devIpiv"),
                                               (Range(B, mat_bytes(n, nrhs, ldb, sz), "rw"), "B")])
    return impl


def _uplo(uplo: int) -> np.ndarray:
    if uplo not in (0, 1):
        raise Status(INVALID, f"uplo {uplo}")
    return _c("LU"[uplo])


def _potrf(t: str):
    f, dt = openblas.lapack(f"{t.lower()}potrf"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, uplo, n, A, lda, work, lwork, info):
        h = get(handle)
        _check(n=n)
        _check_ld("lda", lda, n)
        ul = _uplo(uplo)

        def run(a):
            nn, la = _i64(n, lda)
            out = np.zeros(1, np.int64)
            f(_addr(ul), _addr(nn), a, _addr(la), _addr(out), 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}potrf", run, [(Range(A, mat_bytes(n, n, lda, sz), "rw"), "A")])
    return impl


def _potrs(t: str):
    f, dt = openblas.lapack(f"{t.lower()}potrs"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, uplo, n, nrhs, A, lda, B, ldb, info):
        h = get(handle)
        _check(n=n, nrhs=nrhs)
        _check_ld("lda", lda, n)
        _check_ld("ldb", ldb, n)
        ul = _uplo(uplo)

        def run(a, b):
            nn, nr, la, lb = _i64(n, nrhs, lda, ldb)
            out = np.zeros(1, np.int64)
            f(_addr(ul), _addr(nn), _addr(nr), a, _addr(la), b, _addr(lb), _addr(out), 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}potrs", run, [(Range(A, mat_bytes(n, n, lda, sz)), "A"),
                                               (Range(B, mat_bytes(n, nrhs, ldb, sz), "rw"), "B")])
    return impl


def _potrf_batched(t: str):
    f, dt = openblas.lapack(f"{t.lower()}potrf"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, uplo, n, Aarray, lda, infoArray, batch):
        h = get(handle)
        _check(n=n, batchSize=batch)
        _check_ld("lda", lda, n)
        ul = _uplo(uplo)

        def run(pa):
            nn, la = _i64(n, lda)
            infos = np.zeros(batch, np.int32)
            for i, a in enumerate(device.read_pointers(pa, batch)):
                out = np.zeros(1, np.int64)
                f(_addr(ul), _addr(nn), device.map_range(a, mat_bytes(n, n, lda, sz), "rw"),
                  _addr(la), _addr(out), 1)
                infos[i] = out[0]
            device.view(device.map_range(infoArray, 4 * batch, "w"), np.int32, batch)[:] = infos
        _launch(h, f"cusolverDn{t}potrfBatched", run, [(Range(Aarray, 8 * batch), "Aarray"),
                                                      (Range(infoArray, 4 * batch, "w"), "info")])
    return impl


def _potrs_batched(t: str):
    f, dt = openblas.lapack(f"{t.lower()}potrs"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, uplo, n, nrhs, Aarray, lda, Barray, ldb, info, batch):
        h = get(handle)
        _check(n=n, nrhs=nrhs, batchSize=batch)
        if nrhs != 1:
            raise Status(INVALID, f"nrhs = {nrhs}: cuSOLVER's potrsBatched takes nrhs = 1")
        ul = _uplo(uplo)

        def run(pa, pb):
            nn, nr, la, lb = _i64(n, nrhs, lda, ldb)
            worst = 0
            for a, b in zip(device.read_pointers(pa, batch), device.read_pointers(pb, batch),
                            strict=True):
                out = np.zeros(1, np.int64)
                f(_addr(ul), _addr(nn), _addr(nr), device.map_range(a, mat_bytes(n, n, lda, sz)),
                  _addr(la), device.map_range(b, mat_bytes(n, nrhs, ldb, sz), "rw"), _addr(lb),
                  _addr(out), 1)
                worst = worst or int(out[0])
            _write_info(info, worst)
        _launch(h, f"cusolverDn{t}potrsBatched", run, [(Range(Aarray, 8 * batch), "Aarray"),
                                                      (Range(Barray, 8 * batch), "Barray")])
    return impl


def _geqrf(t: str):
    f, dt = openblas.lapack(f"{t.lower()}geqrf"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, m, n, A, lda, tau, work, lwork, info):
        h = get(handle)
        _check(m=m, n=n)
        _check_ld("lda", lda, m)
        k = min(m, n)

        def run(a, ta):
            mm, nn, la = _i64(m, n, lda)
            query = np.zeros(1, dt)
            out = np.zeros(1, np.int64)
            f(_addr(mm), _addr(nn), a, _addr(la), ta, _addr(query), _addr(np.array([-1], np.int64)),
              _addr(out))
            wk = np.zeros(max(1, int(query[0].real)), dt)
            f(_addr(mm), _addr(nn), a, _addr(la), ta, _addr(wk), _addr(np.array([wk.size], np.int64)),
              _addr(out))
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}geqrf", run, [(Range(A, mat_bytes(m, n, lda, sz), "rw"), "A"),
                                               (Range(tau, k * sz, "w"), "tau")])
    return impl


def _orgqr(t: str):
    name = "orgqr" if t in "SD" else "ungqr"
    f, dt = openblas.lapack(f"{t.lower()}orgqr"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, m, n, k, A, lda, tau, work, lwork, info):
        h = get(handle)
        _check(m=m, n=n, k=k)
        _check_ld("lda", lda, m)

        def run(a, ta):
            mm, nn, kk, la = _i64(m, n, k, lda)
            out = np.zeros(1, np.int64)
            query = np.zeros(1, dt)
            f(_addr(mm), _addr(nn), _addr(kk), a, _addr(la), ta, _addr(query),
              _addr(np.array([-1], np.int64)), _addr(out))
            wk = np.zeros(max(1, int(query[0].real)), dt)
            f(_addr(mm), _addr(nn), _addr(kk), a, _addr(la), ta, _addr(wk),
              _addr(np.array([wk.size], np.int64)), _addr(out))
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}{name}", run, [(Range(A, mat_bytes(m, n, lda, sz), "rw"), "A"),
                                                (Range(tau, k * sz), "tau")])
    return impl


def _ormqr(t: str):
    name = "ormqr" if t in "SD" else "unmqr"
    f, dt = openblas.lapack(f"{t.lower()}ormqr"), LETTERS[t]
    sz = np.dtype(dt).itemsize

    def impl(handle, side, trans, m, n, k, A, lda, tau, C, ldc, work, lwork, info):
        h = get(handle)
        _check(m=m, n=n, k=k)
        ka = m if side == 0 else n
        _check_ld("lda", lda, ka)
        _check_ld("ldc", ldc, m)
        sd, tr = _c("LR"[side]), _c("NTC"[trans] if t in "SD" or trans != 1 else "T")

        def run(a, ta, c):
            mm, nn, kk, la, lc = _i64(m, n, k, lda, ldc)
            out = np.zeros(1, np.int64)
            query = np.zeros(1, dt)
            f(_addr(sd), _addr(tr), _addr(mm), _addr(nn), _addr(kk), a, _addr(la), ta, c,
              _addr(lc), _addr(query), _addr(np.array([-1], np.int64)), _addr(out), 1, 1)
            wk = np.zeros(max(1, int(query[0].real)), dt)
            f(_addr(sd), _addr(tr), _addr(mm), _addr(nn), _addr(kk), a, _addr(la), ta, c,
              _addr(lc), _addr(wk), _addr(np.array([wk.size], np.int64)), _addr(out), 1, 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}{name}", run, [(Range(A, mat_bytes(ka, k, lda, sz)), "A"),
                                                (Range(tau, k * sz), "tau"),
                                                (Range(C, mat_bytes(m, n, ldc, sz), "rw"), "C")])
    return impl


def _gesvd(t: str):
    f, dt = openblas.lapack(f"{t.lower()}gesvd"), LETTERS[t]
    rt = REAL_OF.get(dt, dt)
    sz, rsz = np.dtype(dt).itemsize, np.dtype(rt).itemsize

    def impl(handle, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, work, lwork, rwork, info):
        h = get(handle)
        _check(m=m, n=n)
        _check_ld("lda", lda, m)
        ju, jv = (j.decode() if isinstance(j, bytes) else chr(j) for j in (jobu, jobvt))
        if ju not in "ASON" or jv not in "ASON":
            raise Status(INVALID, f"jobu {ju!r}, jobvt {jv!r}")
        if m < n:
            raise Status(INVALID, f"m = {m} < n = {n}: cuSOLVER's gesvd needs m >= n")
        k = min(m, n)
        ucols = m if ju == "A" else k
        vrows = n if jv == "A" else k
        ranges = [(Range(A, mat_bytes(m, n, lda, sz), "rw"), "A"), (Range(S, k * rsz, "w"), "S")]
        if ju in "AS":
            _check_ld("ldu", ldu, m)
            ranges.append((Range(U, mat_bytes(m, ucols, ldu, sz), "w"), "U"))
        if jv in "AS":
            _check_ld("ldvt", ldvt, vrows)
            ranges.append((Range(VT, mat_bytes(vrows, n, ldvt, sz), "w"), "VT"))

        def run(a, s, *rest):
            u = rest[0] if ju in "AS" else 0
            vt = rest[-1] if jv in "AS" else 0
            dummy = np.zeros(1, dt)
            ua, la_u = (u, ldu) if u else (_addr(dummy), 1)
            va, la_v = (vt, ldvt) if vt else (_addr(dummy), 1)
            mm, nn, la, lu, lv = _i64(m, n, lda, la_u, la_v)
            out = np.zeros(1, np.int64)
            query = np.zeros(1, dt)
            rw = np.zeros(max(1, 5 * k), rt)
            extra = [_addr(rw)] if t in "CZ" else []
            jua, jva = _c(ju), _c(jv)
            f(_addr(jua), _addr(jva), _addr(mm), _addr(nn), a, _addr(la), s, ua, _addr(lu), va,
              _addr(lv), _addr(query), _addr(np.array([-1], np.int64)), *extra, _addr(out), 1, 1)
            wk = np.zeros(max(1, int(query[0].real)), dt)
            f(_addr(jua), _addr(jva), _addr(mm), _addr(nn), a, _addr(la), s, ua, _addr(lu), va,
              _addr(lv), _addr(wk), _addr(np.array([wk.size], np.int64)), *extra, _addr(out), 1, 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}gesvd", run, ranges)
    return impl


def _syevd(t: str):
    name = "syevd" if t in "SD" else "heevd"
    f, dt = openblas.lapack(f"{t.lower()}{name}"), LETTERS[t]
    rt = REAL_OF.get(dt, dt)
    sz, rsz = np.dtype(dt).itemsize, np.dtype(rt).itemsize

    def impl(handle, jobz, uplo, n, A, lda, W, work, lwork, info):
        h = get(handle)
        _check(n=n)
        _check_ld("lda", lda, n)
        jz, ul = _c("NV"[jobz] if jobz in (0, 1) else "?"), _uplo(uplo)
        if jobz not in (0, 1):
            raise Status(INVALID, f"jobz {jobz}")

        def run(a, w):
            nn, la = _i64(n, lda)
            out = np.zeros(1, np.int64)
            q, rq, iq = np.zeros(1, dt), np.zeros(1, rt), np.zeros(1, np.int64)
            m1 = np.array([-1], np.int64)
            if t in "SD":
                f(_addr(jz), _addr(ul), _addr(nn), a, _addr(la), w, _addr(q), _addr(m1), _addr(iq),
                  _addr(m1), _addr(out), 1, 1)
                wk, iw = np.zeros(max(1, int(q[0])), dt), np.zeros(max(1, int(iq[0])), np.int64)
                f(_addr(jz), _addr(ul), _addr(nn), a, _addr(la), w, _addr(wk),
                  _addr(np.array([wk.size], np.int64)), _addr(iw), _addr(np.array([iw.size], np.int64)),
                  _addr(out), 1, 1)
            else:
                f(_addr(jz), _addr(ul), _addr(nn), a, _addr(la), w, _addr(q), _addr(m1), _addr(rq),
                  _addr(m1), _addr(iq), _addr(m1), _addr(out), 1, 1)
                wk, rw = np.zeros(max(1, int(q[0].real)), dt), np.zeros(max(1, int(rq[0])), rt)
                iw = np.zeros(max(1, int(iq[0])), np.int64)
                f(_addr(jz), _addr(ul), _addr(nn), a, _addr(la), w, _addr(wk),
                  _addr(np.array([wk.size], np.int64)), _addr(rw), _addr(np.array([rw.size], np.int64)),
                  _addr(iw), _addr(np.array([iw.size], np.int64)), _addr(out), 1, 1)
            _write_info(info, int(out[0]))
        _launch(h, f"cusolverDn{t}{name}", run, [(Range(A, mat_bytes(n, n, lda, sz), "rw"), "A"),
                                                (Range(W, n * rsz, "w"), "W")])
    return impl


for _t in "SDCZ":
    _register(f"cusolverDn{_t}getrf", _getrf(_t))
    _register(f"cusolverDn{_t}getrs", _getrs(_t))
    _register(f"cusolverDn{_t}potrf", _potrf(_t))
    _register(f"cusolverDn{_t}potrs", _potrs(_t))
    _register(f"cusolverDn{_t}potrfBatched", _potrf_batched(_t))
    _register(f"cusolverDn{_t}potrsBatched", _potrs_batched(_t))
    _register(f"cusolverDn{_t}geqrf", _geqrf(_t))
    _register(f"cusolverDn{_t}{'orgqr' if _t in 'SD' else 'ungqr'}", _orgqr(_t))
    _register(f"cusolverDn{_t}{'ormqr' if _t in 'SD' else 'unmqr'}", _ormqr(_t))
    _register(f"cusolverDn{_t}gesvd", _gesvd(_t))
    _register(f"cusolverDn{_t}{'syevd' if _t in 'SD' else 'heevd'}", _syevd(_t))
    for _base in ("getrf", "potrf", "potri", "geqrf", "gesvd", "syevd", "heevd", "orgqr",
                  "ungqr", "ormqr", "unmqr"):
        _register(f"cusolverDn{_t}{_base}_bufferSize", _buffer_size)
