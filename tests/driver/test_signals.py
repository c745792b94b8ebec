"""^C and other signals: `cuport run` stops as the program would without it.

^C is typed on a real terminal (a pseudo-terminal whose foreground process group is
cuport's), so the kernel's tty driver sends SIGINT as it would to a user's shell job.
Kernels that never end (tests/driver/c/spin.cu, built with nvcc) are stopped too: a C
program has SIGINT at its default, so the process ends at once whatever its kernels do;
a Python program gets KeyboardInterrupt and the kernels in flight are stopped.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from capi_support import clean_env, cuport_command, need_nvcc, run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPIN = HERE / "c" / "spin.cu"


def default_dispositions() -> None:
    """What a user's shell gives a foreground job: the test runner may have been started
    with SIGINT ignored (a background job of a non-interactive shell, nohup), and a program
    keeps what it inherits, under cuport too."""
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Terminal:
    """A command run as the foreground job of its own pseudo-terminal."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()

        def controlling_tty() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            default_dispositions()

        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, preexec_fn=controlling_tty,
                                     env=env if env is not None else clean_env())
        os.close(slave)
        self.output = b""

    def read_until(self, text: bytes, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} in {self.output[-2000:]!r}"
            if select.select([self.master], [], [], min(left, 1))[0]:
                try:
                    self.output += os.read(self.master, 4096)
                except OSError:
                    break
        assert text in self.output, self.output[-2000:]

    def ctrl_c(self) -> float:
        """Type ^C; the seconds until the command ended."""
        t0 = time.monotonic()
        os.write(self.master, b"\x03")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            pytest.fail(f"still running 20 s after ^C: {self.output[-2000:]!r}")
        elapsed = time.monotonic() - t0
        while select.select([self.master], [], [], 0.1)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        os.close(self.master)
        return elapsed


@pytest.fixture(scope="module")
def spin_program(tmp_path_factory):
    nvcc = need_nvcc()
    out = tmp_path_factory.mktemp("spin")
    exe, ptx = out / "spin", out / "spin.ptx"
    for args in (["-O3", "-o", str(exe)], ["-ptx", "-o", str(ptx)]):
        r = run([nvcc, *args, str(SPIN)], timeout=300)
        assert r.returncode == 0, r.stderr
    return exe, ptx


def test_ctrl_c_stops_a_sleeping_program():
    t = Terminal([*cuport_command(), "run", "sh", "-c", "echo started; exec sleep 60"])
    t.read_until(b"started")
    assert t.ctrl_c() < 1.0
    assert t.proc.returncode == -signal.SIGINT  # cuport ends as the program did


@pytest.mark.parametrize("kernel", ["spin", "alu"])
def test_ctrl_c_stops_a_spinning_kernel(spin_program, kernel):
    exe, _ = spin_program
    t = Terminal([*cuport_command(), "run", str(exe), kernel])
    t.read_until(b"spinning: cudaSuccess")
    time.sleep(0.5)  # well inside the kernel
    assert t.ctrl_c() < 1.0
    assert t.proc.returncode == -signal.SIGINT
    assert b"synchronize returned" not in t.output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_sent_to_cuport_reach_the_program(tmp_path, sig):
    pidfile = tmp_path / "pid"
    p = subprocess.Popen([*cuport_command(), "run", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"],
                         env=clean_env(), preexec_fn=default_dispositions)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    program = int(pidfile.read_text())
    t0 = time.monotonic()
    p.send_signal(sig)
    p.wait(timeout=10)
    assert time.monotonic() - t0 < 1.0
    assert p.returncode == -sig
    with pytest.raises(ProcessLookupError):
        os.kill(program, 0)  # not left running, orphaned


def _ignored_signals(argv: list[str], ignore_sigint: bool) -> str:
    def setup() -> None:
        default_dispositions()
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    r = subprocess.run(argv, capture_output=True, text=True, env=clean_env(), timeout=120,
                       preexec_fn=setup)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["default", "ignored"])
def test_the_program_keeps_the_dispositions_it_would_have_had(ignore_sigint):
    show = ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"]
    alone = _ignored_signals(show, ignore_sigint)
    under = _ignored_signals([*cuport_command(), "run", *show], ignore_sigint)
    assert under == alone
    assert ("SigIgn:\t" in alone) and (int(alone.split("SigIgn:\t")[1].split()[0], 16) & 2) \
        == (2 if ignore_sigint else 0)


PYTHON_SPIN = """
import sys, time
import numpy as np
sys.path.insert(0, {root!r})
import cuport
mod = cuport.Module(open({ptx!r}).read())
flag, out = np.zeros(1, np.int32), np.zeros(256, np.int32)
print("spinning", flush=True)
try:
    mod.kernel("_Z4spinPViPi")(4, 64, (flag, out))
except KeyboardInterrupt:
    # the workers were stopped: the next launch runs (the flag set, it ends at once)
    flag[0] = 1
    mod.kernel("_Z4spinPViPi")(4, 64, (flag, out))
    print("KeyboardInterrupt, then a launch that ran", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_stops_a_kernel_launched_from_python(spin_program, tmp_path):
    _, ptx = spin_program
    script = tmp_path / "spin.py"
    script.write_text(PYTHON_SPIN.format(root=str(ROOT), ptx=str(ptx)))
    t = Terminal([sys.executable, str(script)], env=dict(clean_env(), CUPORT_THREADS="2"))
    t.read_until(b"spinning")
    time.sleep(3)  # compiled and spinning
    assert t.ctrl_c() < 1.5
    assert t.proc.returncode == 3, t.output
    assert b"KeyboardInterrupt, then a launch that ran" in t.output


CUDA_PYTHON_SPIN = """
import sys, time
import numpy as np
from cuda.bindings import driver as cu

def ok(r):
    assert r[0] == cu.CUresult.CUDA_SUCCESS, r
    return r[1] if len(r) == 2 else None

ok(cu.cuInit(0))
ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
ok(cu.cuCtxSetCurrent(ctx))
mod = ok(cu.cuModuleLoadData(open({ptx!r}, "rb").read() + b"\\0"))
f = ok(cu.cuModuleGetFunction(mod, b"_Z8spin_aluPij"))
out = ok(cu.cuMemAlloc(4096))
a0, a1 = np.array([int(out)], np.uint64), np.array([7], np.uint32)
args = np.array([a0.ctypes.data, a1.ctypes.data], np.uint64)
ok(cu.cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, 0, args.ctypes.data, 0))
print("spinning", flush=True)
try:
    r = cu.cuCtxSynchronize()
    print("synchronize returned", r, flush=True)
    time.sleep(5)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(3)
"""


def test_ctrl_c_stops_a_kernel_of_a_cuda_python_program(spin_program, tmp_path):
    pytest.importorskip("cuda.bindings")
    _, ptx = spin_program
    script = tmp_path / "spin.py"
    script.write_text(CUDA_PYTHON_SPIN.format(ptx=str(ptx)))
    t = Terminal([*cuport_command(), "run", sys.executable, str(script)])
    t.read_until(b"spinning")
    time.sleep(2.0)  # compiled and spinning (a loaded 2-core machine compiled past 0.5 s)
    assert t.ctrl_c() < 1.5
    assert t.proc.returncode == 3, t.output
    assert b"KeyboardInterrupt" in t.output
    assert b"CUDA_ERROR_LAUNCH_FAILED: kernel _Z8spin_aluPij: interrupted (SIGINT)" in t.output
