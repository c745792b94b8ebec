"""cuGetProcAddress's choice over the whole table (the C client checks the answers end to end)."""

import pytest

from cuport.capi import proc_address, table
from cuport.driver.errors import CudaError

PTDS = 2


def test_newest_variant_a_version_has():
    for name, variants in table.proc_variants().items():
        plain = [v for v in variants if not v[1]]
        if not plain:
            continue
        newest = max(plain)
        assert proc_address.choose(name, 99999, 0) == (newest[2], 0), name
        oldest = min(plain)
        assert proc_address.choose(name, oldest[0], 0) == (oldest[2], 0), name
        if oldest[0] > 0:
            assert proc_address.choose(name, oldest[0] - 1, 0) == (None, 2), name


def test_per_thread_variants():
    chosen = {name: proc_address.choose(name, 13000, PTDS)[0] for name in table.proc_variants()}
    assert chosen["cuMemcpy"] == "cuMemcpy_ptds"
    assert chosen["cuMemsetD8"] == "cuMemsetD8_v2_ptds"
    assert chosen["cuStreamSynchronize"] == "cuStreamSynchronize_ptsz"
    assert chosen["cuMemAlloc"] == "cuMemAlloc_v2"  # no per-thread variant: the plain one
    for name, symbol in chosen.items():
        if any(v[1] for v in table.proc_variants()[name] if v[0] <= 13000):
            assert symbol.endswith(("_ptds", "_ptsz")), name


def test_unknown_names_and_bad_flags():
    assert proc_address.choose("", 13000, 0) == (None, 1)
    assert proc_address.choose(None, 13000, 0) == (None, 1)
    assert proc_address.choose("cuMemAlloc_v2", 13000, 0) == (None, 1)  # symbols are not names
    with pytest.raises(CudaError):
        proc_address.choose("cuInit", 13000, 4)
