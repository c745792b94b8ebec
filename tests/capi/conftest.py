"""Fixtures of the C API tests: the library, and the C client compiled against cuda.h."""

from __future__ import annotations

import pytest
from capi_support import HERE, compile_c, library


@pytest.fixture(scope="session")
def libcuda():
    return library()


@pytest.fixture(scope="session")
def c_client(tmp_path_factory):
    out = tmp_path_factory.mktemp("capi") / "client"
    return compile_c([HERE / "c" / "client.c"], out)
