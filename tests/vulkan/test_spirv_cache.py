"""The Vulkan backend's SPIR-V in the kernel cache (backends/cache.py): a second load of the
same PTX runs the cached SPIR-V without compiling, with the same results; an entry that does
not verify (copied under another kernel's key) is compiled anew; CUPORT_SPIRV_VALIDATE=1
reads nothing from the cache; launches of a cached kernel still report a wild address.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cuport.backends.base import BackendError

KERNEL = r"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry {name}(.param .u64 p, .param .u32 k)
{{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r3, [k];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    {op}
    st.global.u32 [%rd3], %r2;
    ret;
}}
"""
ADD = KERNEL.format(name="spv_cache_add", op="add.u32 %r2, %r2, %r3;")
MUL = KERNEL.format(name="spv_cache_mul", op="mul.lo.u32 %r2, %r2, %r3;")


@pytest.fixture()
def be(tmp_path, monkeypatch):
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    monkeypatch.setenv("CUPORT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUPORT_CACHE", raising=False)
    monkeypatch.delenv("CUPORT_SPIRV_VALIDATE", raising=False)
    return get_vulkan_backend()


@pytest.fixture()
def compiles(monkeypatch):
    """How many times the backend compiled a kernel (compile_kernel calls)."""
    from cuport.backends.vulkan import backend as vb

    calls: list[str] = []
    real = vb.compile_kernel

    def counting(ptx, name, *args, **kw):
        calls.append(name)
        return real(ptx, name, *args, **kw)

    monkeypatch.setattr(vb, "compile_kernel", counting)
    return calls


def _run(be, ptx: str, name: str, k: int, address: int | None = None) -> np.ndarray:
    x = np.arange(64, dtype=np.uint32) + 10
    p = be.allocate(x.nbytes)
    be.copy_htod(p, x.ctypes.data, x.nbytes)
    be.load_module([ptx]).kernel(name).launch((1, 1, 1), (64, 1, 1), 0,
                                              struct.pack("<QI", address or p, k))
    failed = be.drain()
    if failed is not None:
        raise failed[1]
    be.copy_dtoh(x.ctypes.data, p, x.nbytes)
    be.free(p, x.nbytes)
    return x


def test_a_second_load_runs_the_cached_spirv(be, compiles):
    want = np.arange(64, dtype=np.uint32) + 13
    assert (_run(be, ADD, "spv_cache_add", 3) == want).all()
    assert compiles == ["spv_cache_add"]
    assert (_run(be, ADD, "spv_cache_add", 3) == want).all()  # a new module: its own pipelines
    assert compiles == ["spv_cache_add"]  # ... from the cache
    assert (_run(be, ADD, "spv_cache_add", 7) == want + 4).all()  # parameters are not in the key


def test_an_entry_under_another_key_is_compiled_anew(be, compiles, tmp_path):
    def entries() -> set:
        return set((tmp_path / "cache").glob("*.k"))

    start = entries()
    _run(be, ADD, "spv_cache_add", 3)
    (add_entry,) = entries() - start
    made = entries()
    _run(be, MUL, "spv_cache_mul", 3)
    (mul_entry,) = entries() - made
    # the add kernel's SPIR-V put where the mul kernel's key points: its tag does not verify
    mul_entry.write_bytes(add_entry.read_bytes())
    compiles.clear()
    assert (_run(be, MUL, "spv_cache_mul", 3) == (np.arange(64, dtype=np.uint32) + 10) * 3).all()
    assert compiles == ["spv_cache_mul"]


def test_validation_reads_nothing_from_the_cache(be, compiles, monkeypatch):
    _run(be, ADD, "spv_cache_add", 1)
    monkeypatch.setenv("CUPORT_SPIRV_VALIDATE", "1")
    _run(be, ADD, "spv_cache_add", 1)
    assert compiles == ["spv_cache_add", "spv_cache_add"]


def test_a_cached_kernel_still_reports_a_wild_address(be, compiles):
    _run(be, ADD, "spv_cache_add", 1)
    with pytest.raises(BackendError, match="illegal address 0x40"):
        _run(be, ADD, "spv_cache_add", 1, address=0x40)
    assert compiles == ["spv_cache_add"]
