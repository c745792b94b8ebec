"""Device memory shared with another process (runtime/external.py, Memory.export_fd/import_fd).

The exporter is this process; the importer is a separate Python process that gets the
descriptor as an inherited file and the description on its command line, binds the memory to
a buffer with a device address of its own and runs a shader on it; the exporter then sees the
shader's writes, and its own writes were seen there. Under CUPORT_VK_VALIDATION=1 (where the
Khronos layer is installed) both processes' calls are validated.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import vkrt_support as vs
from vkrt_support import device, vkrt

from cuport.backends.vulkan.runtime import external

HERE = Path(__file__).resolve().parent
SIZE = 20 << 20  # more than half a block: a block of its own, allocated exportable below

IMPORTER = textwrap.dedent("""
    import struct, sys
    import numpy as np
    import vkrt_support as vs
    from vkrt_support import device

    fd, description = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
    dev = device()
    buf = dev.import_memory(fd, description)
    n = buf.size // 4
    got = np.empty(n, dtype=np.uint32)
    s = dev.stream()
    s.copy_to_host(got.ctypes.data, buf.address, buf.size)
    ok = bool(np.array_equal(got, np.arange(n, dtype=np.uint32) * 3))
    pipe = dev.pipeline(vs.glsl(vs.INCR), "main", (64, 1, 1), 16)
    s.dispatch(pipe, ((n + 63) // 64, 1, 1), struct.pack("<QI", buf.address, n))
    s.synchronize()
    dev.free(buf)
    dev.synchronize()
    print("read", "ok" if ok else "wrong", "kind", buf.kind, "validation", vs.validation_messages())
""")


@pytest.fixture(scope="module")
def dev():
    d = device()
    if d.memory.export_refusal is not None:
        pytest.skip(f"{d.info.name}: {d.memory.export_refusal}")
    return d


@pytest.fixture
def exportable(dev):
    """New blocks of device memory exportable, whatever the driver's default."""
    before = dev.memory.exportable
    dev.memory.exportable = True
    yield
    dev.memory.exportable = before


def _export(dev) -> tuple[vkrt.Buffer, int, bytes]:
    buf = dev.alloc(SIZE)
    data = np.arange(SIZE // 4, dtype=np.uint32) * 3
    dev.stream().copy_to_device(buf.address, data.tobytes())
    fd, description = dev.export_memory(buf)
    return buf, fd, description


def test_another_process_reads_and_writes_exported_memory(dev, exportable):
    buf, fd, description = _export(dev)
    try:
        desc = external.Description.unpack(description)
        assert (desc.size, desc.block_size) == (SIZE, buf.block.size)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
        r = subprocess.run([sys.executable, "-c", IMPORTER, str(fd), description.hex()],
                           pass_fds=[fd], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["read", "ok", "kind", "imported", "validation", "[]"]
        got = np.empty(SIZE // 4, dtype=np.uint32)
        dev.stream().copy_to_host(got.ctypes.data, buf.address, SIZE)
        assert np.array_equal(got, np.arange(SIZE // 4, dtype=np.uint32) * 3 + 1)
    finally:
        os.close(fd)
        dev.free(buf)


def test_an_import_this_device_cannot_use_is_refused_and_the_descriptor_closed(dev, exportable):
    buf, fd, description = _export(dev)
    try:
        other = dataclasses.replace(external.Description.unpack(description),
                                    device_uuid=bytes(16))
        with pytest.raises(ValueError, match="another Vulkan device"):
            dev.import_memory(fd, other.pack())
        with pytest.raises(OSError):
            os.fstat(fd)  # (consumed)
        with pytest.raises(ValueError, match="another backend's"):
            dev.import_memory(os.dup(0), b"cuport host pages")
    finally:
        dev.free(buf)


def test_memory_allocated_before_it_was_exportable_is_refused_by_name(dev):
    before = dev.memory.exportable
    dev.memory.exportable = False
    try:
        buf = dev.alloc(SIZE)
    finally:
        dev.memory.exportable = before
    try:
        with pytest.raises(vkrt.Unsupported, match="was not allocated exportable"):
            dev.export_memory(buf)
    finally:
        dev.free(buf)
    host = dev.alloc(4096, vkrt.HOST)
    try:
        with pytest.raises(vkrt.Unsupported, match="host memory cannot be shared"):
            dev.export_memory(host)
    finally:
        dev.free(host)


def test_driver_default_and_switch(monkeypatch):
    assert external.wanted("NVIDIA_PROPRIETARY") == (True, "")
    want, why = external.wanted("MESA_LLVMPIPE")
    assert not want and "CUPORT_VK_EXPORTABLE=1" in why
    monkeypatch.setenv("CUPORT_VK_EXPORTABLE", "1")
    assert external.wanted("MESA_LLVMPIPE") == (True, "")
    monkeypatch.setenv("CUPORT_VK_EXPORTABLE", "0")
    assert external.wanted("NVIDIA_PROPRIETARY") == (False, "CUPORT_VK_EXPORTABLE=0")


def test_validation_layer_saw_nothing_wrong(dev):
    assert vs.validation_messages() == []
