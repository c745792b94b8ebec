"""A C program dlopens cuport's libcuda.so.1 and uses the driver API as a C client would.

Each test runs one function of tests/capi/c/client.c in its own process (the library
starts an embedded Python there); the C code checks results and NVIDIA's error codes
for misuse, these tests check what it printed.
"""

from __future__ import annotations

import os
import re
import struct

import pytest
from capi_support import clean_env, run

from cuport.capi.md2 import md2


def client_run(client, lib, test: str, *args: str, **env: str):
    return run([str(client), str(lib), test, *args], env=clean_env(**env))


def assert_passed(result) -> None:
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


@pytest.mark.parametrize("test", ["contexts", "primary_context", "memory", "memory_misuse",
                                  "streams_events", "proc_address", "threads"])
def test_client(c_client, libcuda, test):
    assert_passed(client_run(c_client, libcuda, test))


@pytest.mark.parametrize("cc", [None, "8.6", "sm_75"])
def test_device_presented(c_client, libcuda, cc):
    cores = len(os.sched_getaffinity(0))
    major, minor = {None: ("9", "0"), "8.6": ("8", "6"), "sm_75": ("7", "5")}[cc]
    env = {"CUPORT_CC": cc} if cc else {}
    assert_passed(client_run(c_client, libcuda, "init_and_device", str(cores), major, minor, **env))


def test_errors_name_the_call(c_client, libcuda):
    result = client_run(c_client, libcuda, "errors")
    assert_passed(result)
    lines = result.stderr.splitlines()
    # an unimplemented function is reported once, however often it is called
    assert lines.count("cuport: cuGraphicsUnregisterResource is not implemented") == 1
    assert any(re.fullmatch(r"cuport: cuMemFree_v2: CUDA_ERROR_INVALID_VALUE: 0x[0-9a-f]+ is no "
                            r"longer allocated \(device memory, freed\): double free", line)
               for line in lines), result.stderr


def test_quiet_silences_reports(c_client, libcuda):
    result = client_run(c_client, libcuda, "errors", CUPORT_QUIET="1")
    assert_passed(result)
    assert "cuport:" not in result.stderr


def test_misuse_reports(c_client, libcuda):
    result = client_run(c_client, libcuda, "memory_misuse")
    assert_passed(result)
    assert re.search(r"cuport: cuMemcpyHtoD_v2: CUDA_ERROR_INVALID_VALUE: dstDevice: 101 bytes "
                     r"from 0x[0-9a-f]+ run 1 bytes past the end of the 100-byte device "
                     r"allocation", result.stderr), result.stderr


# -- the export tables, and the integrity digest checked by an independent HMAC -----------

class MD2Hash:
    """MD2 in hashlib's shape, so that the standard library's hmac module drives it."""

    block_size = 16
    digest_size = 16
    name = "md2"

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytes(data)

    def update(self, data: bytes) -> None:
        self.data += bytes(data)

    def copy(self) -> MD2Hash:
        return MD2Hash(self.data)

    def digest(self) -> bytes:
        return md2(self.data)


def expected_digest(fields: dict[str, str]) -> str:
    import hmac

    message = struct.pack(
        "<IIIIQQQQ", int(fields["driver"]), int(fields["version"]), int(fields["pid"]),
        int(fields["thread"]), int(fields["cudart"]), int(fields["integrity"]),
        int(fields["slot"]), int(fields["seconds"]))
    domain, bus, dev = (int(x) for x in fields["pci"].split(","))
    message += bytes.fromhex(fields["uuid"]) + struct.pack("<iii", domain, bus, dev)
    key = bytes.fromhex("146ADDAE53A9A752AA0841360BF55A9F")
    digest = hmac.new(key, message, digestmod=MD2Hash).digest()
    lo, hi = struct.unpack("<QQ", digest)
    return f"{lo:016x}{hi:016x}"


def test_export_tables(c_client, libcuda):
    result = client_run(c_client, libcuda, "export_tables")
    assert_passed(result)
    digests = [dict(kv.split("=", 1) for kv in line.split()[1:])
               for line in result.stdout.splitlines() if line.startswith("DIGEST ")]
    assert [d["version"] for d in digests] == ["13002", "12092", "13052"]
    for fields in digests:
        assert fields["out"] == expected_digest(fields), fields
    # the slots nobody calls say which table and slot they are
    assert "slot 5 of export table CUDART_INTERFACE" in result.stderr
    assert "slot 39 of export table UNNAMED_21318C60" in result.stderr
