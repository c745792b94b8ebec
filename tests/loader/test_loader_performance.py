"""A multi-MB fatbin is read in milliseconds: loading a module must not cost a launch's worth."""

from __future__ import annotations

import ctypes
import time

import pytest
from loader_support import statements

from cuport.loader import parse_image, read_image_at

LIMIT_S = 0.1  # measured ~10-15 ms for 8 MB of PTX; the margin is for a busy machine


def best_time(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


@pytest.mark.parametrize("mode", ["none", "default", "speed"])
def test_multi_megabyte_fatbin_is_read_in_milliseconds(big_fatbins, mode):
    data = big_fatbins[mode].read_bytes()
    image = parse_image(data)
    assert [p.arch for p in image.ptx] == [75, 80]
    assert all(len(p.text) > 4_000_000 for p in image.ptx)

    assert best_time(lambda: parse_image(data)) < LIMIT_S
    buffer = ctypes.create_string_buffer(data, len(data))
    assert best_time(lambda: read_image_at(ctypes.addressof(buffer))) < LIMIT_S


def test_big_ptx_comes_back_whole(big_fatbins):
    image = parse_image(big_fatbins["default"].read_bytes())
    assert statements(image.ptx[0].text) == statements(big_fatbins["ptx"].read_text())
