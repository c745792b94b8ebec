"""CUDA IPC between real processes, on the CPU and on a Vulkan device.

tests/driver/c/ipc_peer.cu is both ends: an exporter, and an importer started separately by
the test (not a child of the exporter) that gets the handles through its stdin. What the
tests check is what a program sees: the same pointer for a handle opened twice, writes seen
from both processes, a stream ordered after another process's event record, NVIDIA's error
codes for a handle whose memory was freed, whose process has exited, or that the exporter
opens itself. The socket that carries the descriptors (driver/ipc_channel.py) is tested
directly too: it answers no other user's process, and a client uses no other user's answer
(simulated with setuid in a child, as root).

On a machine with an NVIDIA GPU, CUPORT_TEST_NATIVE_CUDA=1 adds a "native" run of the same
scenarios without cuport: NVIDIA's own driver must answer what these tests expect of cuport.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run

HERE = Path(__file__).resolve().parent
N = 1 << 16  # elements of the shared buffer (256 KiB: a block shared with other allocations)
NOBODY = 65534


def _vulkan() -> bool:
    from cuport.backends.vulkan import runtime

    return bool(runtime.devices())


CPU = {}
# CUPORT_VK_EXPORTABLE=1: exportable memory on lavapipe too (runtime/external.py COSTLY)
VULKAN = {"CUPORT_DEVICE": "vulkan", "CUPORT_VK_EXPORTABLE": "1"}
NEEDS_VULKAN = pytest.mark.skipif(not _vulkan(), reason="no Vulkan device")
NATIVE = None  # NVIDIA's driver, no cuport
DEVICES = [pytest.param(CPU, id="cpu"),
           pytest.param(VULKAN, id="vulkan", marks=NEEDS_VULKAN),
           # the host reaches device memory only through copies, as on a discrete GPU
           pytest.param({**VULKAN, "CUPORT_VK_COPIES": "1"}, id="vulkan-copies",
                        marks=NEEDS_VULKAN),
           pytest.param(NATIVE, id="native", marks=pytest.mark.skipif(
               os.environ.get("CUPORT_TEST_NATIVE_CUDA") != "1",
               reason="CUPORT_TEST_NATIVE_CUDA=1 (a machine with an NVIDIA GPU) runs these natively"))]


@pytest.fixture(scope="module")
def peer(tmp_path_factory) -> Path:
    nvcc = need_nvcc()
    exe = tmp_path_factory.mktemp("ipc") / "ipc_peer"
    r = run([nvcc, "-O3", "-o", str(exe), str(HERE / "c" / "ipc_peer.cu")], timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


class Peer:
    """ipc_peer under `cuport run` (env None: natively), one command line in, one answer
    line out."""

    def __init__(self, exe: Path, env: dict[str, str] | None, *args: str) -> None:
        prefix = [] if env is None else [*cuport_command(), "run"]
        self.proc = subprocess.Popen([*prefix, str(exe), *args, str(N)],
                                     env=clean_env(**(env or {})), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 120) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer in {timeout} s; stderr: {''.join(self.stderr)[-2000:]}") from None
        assert line is not None, f"the peer ended ({self.proc.wait()}): {''.join(self.stderr)[-2000:]}"
        return line

    def ask(self, line: str, timeout: float = 120) -> str:
        self.send(line)
        return self.reply(timeout)

    def silent_for(self, seconds: float) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def finish(self) -> int:
        if self.proc.poll() is None:
            self.send("exit")
        return self.proc.wait(timeout=120)

    def stop(self) -> None:
        """After a failure: SIGTERM, which `cuport run` passes on to the program."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def start_exporter(exe: Path, env: dict[str, str] | None) -> tuple[Peer, list[str]]:
    e = Peer(exe, env, "export")
    handles = [e.reply(), e.reply()]
    assert handles[0].startswith("MEM ") and handles[1].startswith("EVENT "), handles
    return e, handles


def start_importer(exe: Path, env: dict[str, str] | None, handles: list[str]) -> Peer:
    i = Peer(exe, env, "import")
    for h in handles:  # the handles go through the importer's stdin, a pipe
        i.send(h)
    return i


@pytest.mark.parametrize("env", DEVICES)
def test_memory_and_event_shared_with_a_separate_program(peer, env):
    e, handles = start_exporter(peer, env)
    i = start_importer(peer, env, handles)
    try:
        assert i.ask("open") == "OPEN same pointer"
        assert i.ask("openevent") == "EVENT opened"
        # the exporter's iota is there, through the importer's own pointer
        assert i.ask("check 1") == "CHECK bad at 1: 8"  # (element 0 is 1, element 1 is 8)
        assert i.ask("write 5") == "WROTE"
        assert e.ask("check 5") == "CHECK ok"  # the importer's kernel wrote the exporter's memory

        # the importer's stream waits for the exporter's record, queued behind a closed gate
        assert e.ask("gate 100") == "GATED"
        i.send("waitadd 23")
        assert i.silent_for(2.0), "the importer's stream ran before the exporter's record"
        assert e.ask("go") == "WENT"
        assert i.reply() == "ADDED"
        assert e.ask("check 123") == "CHECK ok"  # 100 set by the exporter, then 23 added
        assert i.ask("check 123") == "CHECK ok"

        # CUDA_ERROR_INVALID_CONTEXT, which the runtime names cudaErrorDeviceUninitialized
        # ("invalid device context", as NVIDIA's driver answers: UCX's cuda_ipc logs it)
        assert e.ask("selfopen") == "SELFOPEN error cudaErrorDeviceUninitialized"
        assert i.ask("close") == "CLOSED, then a copy from it: cudaErrorInvalidValue"
        assert i.finish() == 0
        assert e.finish() == 0
    finally:
        i.stop()
        e.stop()


@pytest.mark.parametrize("env", DEVICES)
def test_handle_of_freed_memory_and_of_an_exited_process(peer, env):
    e, handles = start_exporter(peer, env)
    i = None
    try:
        assert e.ask("free") == "FREED"
        i = start_importer(peer, env, handles)
        assert i.ask("open") == "OPEN error cudaErrorInvalidValue"
        assert i.ask("openevent") == "EVENT opened"  # (the event still lives)
        assert i.finish() == 0
        assert e.finish() == 0
        i = start_importer(peer, env, handles)
        assert i.ask("open") == "OPEN error cudaErrorInvalidValue"
        assert i.ask("openevent") == "EVENT error cudaErrorInvalidValue"
        assert i.finish() == 0
    finally:
        e.stop()
        if i is not None:
            i.stop()


@NEEDS_VULKAN
@pytest.mark.parametrize("exporter, importer", [(VULKAN, CPU), (CPU, VULKAN)],
                         ids=["vulkan-to-cpu", "cpu-to-vulkan"])
def test_memory_of_another_backend_is_refused(peer, exporter, importer):
    e, handles = start_exporter(peer, exporter)
    i = start_importer(peer, importer, handles)
    try:
        assert i.ask("open") == "OPEN error cudaErrorInvalidValue"
        assert i.ask("openevent") == "EVENT opened"  # (events are host pages on both)
        assert i.finish() == 0
        assert e.finish() == 0
    finally:
        i.stop()
        e.stop()
    assert "another backend's" in "".join(i.stderr), i.stderr


# -- the socket itself ----------------------------------------------------------------------

def _memfd(data: bytes) -> int:
    fd = os.memfd_create("ipc-test")
    os.write(fd, data)
    return fd


def _in_child(fn) -> int:
    """Run fn in a forked child; its exit status (0: fn returned True)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if fn() else 1
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _ask_raw(address: str) -> tuple[bytes, list[int]]:
    """What the server at `address` answers a request for ("mem", 7): (b"", []) if it
    closes the connection without a word (abstract sockets let anyone connect)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(10)
        s.connect(address)
        try:
            s.sendall(b"mem".ljust(8, b"\0") + (7).to_bytes(8, "little"))
            data, fds, _, _ = socket.recv_fds(s, 1024, 1)
        except (BrokenPipeError, ConnectionResetError):
            return b"", []
        return data, fds


def test_channel_serves_its_user_and_no_other():
    from cuport.driver import ipc_channel

    server = ipc_channel.Server()
    fd = _memfd(b"exported bytes")
    server.offer(b"mem", 7, fd, b"description")
    os.close(fd)
    address = ipc_channel._address(os.getpid(), server.token)

    def same_user() -> bool:
        got, description = ipc_channel.fetch(os.getppid(), server.token, b"mem", 7, "mem")
        return description == b"description" and os.pread(got, 14, 0) == b"exported bytes"

    def same_user_raw() -> bool:  # (the raw request below is one the server answers)
        data, fds = _ask_raw(address)
        return data == b"\0\0\0\0description" and len(fds) == 1

    assert _in_child(same_user) == 0
    assert _in_child(same_user_raw) == 0
    if os.getuid() != 0:
        pytest.skip("another user is simulated with setuid, which needs root")

    def other_user() -> bool:
        os.setuid(NOBODY)
        data, fds = _ask_raw(address)
        return data == b"" and fds == []  # the connection closed, nothing said

    assert _in_child(other_user) == 0
    server.withdraw(b"mem", 7)


def test_client_uses_no_answer_of_another_process_or_user():
    from cuport.driver import ipc_channel
    from cuport.driver.errors import CudaError, E

    token = 0x1234_5678_9ABC_DEF0
    for uid in ((NOBODY,) if os.getuid() == 0 else ()) + (os.getuid(),):
        ready_r, ready_w = os.pipe()
        heard_r, heard_w = os.pipe()
        address = ipc_channel._address(os.getpid(), token)  # (the name has this user's uid)
        pid = os.fork()
        if pid == 0:  # a squatter on the name a handle of the parent's would give
            try:
                os.setuid(uid)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.settimeout(30)
                s.bind(address)
                s.listen(1)
                os.write(ready_w, b"1")
                conn, _ = s.accept()
                conn.settimeout(10)
                fd = _memfd(b"planted")
                request = conn.recv(64)
                if request:
                    socket.send_fds(conn, [b"\0\0\0\0planted"], [fd])
                os.write(heard_w, b"request" if request else b"nothing")
            finally:
                os._exit(0)
        os.read(ready_r, 1)
        with pytest.raises(CudaError) as err:
            ipc_channel.fetch(os.getpid(), token, b"mem", 1, "mem")
        assert err.value.code == E.INVALID_VALUE
        assert f"served by process {pid} of user {uid}" in err.value.message
        assert os.read(heard_r, 16) == b"nothing"  # (it never saw what was asked for)
        os.waitpid(pid, 0)
        for f in (ready_r, ready_w, heard_r, heard_w):
            os.close(f)
