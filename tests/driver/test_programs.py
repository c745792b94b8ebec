"""nvcc-built CUDA programs under `cuport run`: NVIDIA's runtime, unmodified, on cuport.

The tiny program (c/runtime_basics.cu) needs no kernel: device queries, memory,
memset, streams, events. It is built against the CUDA toolkit's runtime (static,
the default, and `-cudart shared`) and against the newest 12.x and 13.x runtimes
from PyPI (nvidia-cuda-runtime-cu12, nvidia-cuda-runtime), each of which asks the
driver for more at start-up (cudart-protocol.md). The launch program (c/
launch_program.cu) adds kernels, run by the fake backend.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from capi_support import build_flags, clean_env, cuport_command, need_nvcc, run

HERE = Path(__file__).resolve().parent
C = HERE / "c"


RUNTIMES = ["toolkit-static", "toolkit-shared", "12-static", "12-shared", "13-static",
            "13-shared"]
LAUNCH_RUNTIMES = ["toolkit-static", "toolkit-rdc", "12-static", "13-static"]


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    """Builds every (program, runtime) pair once, two at a time."""
    nvcc = need_nvcc()
    out = tmp_path_factory.mktemp("programs")
    jobs = [("runtime_basics", r) for r in RUNTIMES] + [("launch_program", r)
                                                        for r in LAUNCH_RUNTIMES]

    def build(job):
        name, runtime = job
        try:
            flags = build_flags(runtime)
        except pytest.skip.Exception as e:
            return job, None, str(e)
        exe = out / f"{name}-{runtime}"
        result = run([nvcc, f"-I{C}", "-o", str(exe), str(C / f"{name}.cu"), *flags])
        return job, exe if result.returncode == 0 else None, result.stderr

    with ThreadPoolExecutor(2) as pool:
        built = {job: (exe, log) for job, exe, log in pool.map(build, jobs)}
    return built


def program(programs, name: str, runtime: str) -> Path:
    exe, log = programs[(name, runtime)]
    if exe is None:
        if "not installed" in log:
            pytest.skip(log)
        pytest.fail(f"nvcc failed for {name} ({runtime}):\n{log}")
    return exe


def cuport_run(*argv: str, env: dict[str, str] | None = None):
    return run([*cuport_command(), "run", *argv], env=env or clean_env())


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_runtime_basics(programs, runtime):
    result = cuport_run(str(program(programs, "runtime_basics", runtime)))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "devices 1"
    cores = len(os.sched_getaffinity(0))
    assert lines[1].startswith("name cuport CPU") and f"cc 9.0 sms {cores} warp 32 smem 49152" \
        in lines[1], lines[1]
    assert lines[-1] == "PASS"
    # nothing the runtime asked for was missing or failed
    assert "cuport:" not in result.stderr, result.stderr


@pytest.mark.parametrize("runtime", LAUNCH_RUNTIMES)
def test_kernel_launches(programs, runtime):
    env = clean_env(PYTHONPATH=str(HERE), CUPORT_BACKEND="fake_backend:FakeBackend")
    result = cuport_run(str(program(programs, "launch_program", runtime)), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "counter 7, c[0] 355, c[255] 100" in result.stdout
    assert result.stdout.rstrip().endswith("PASS")


def test_trace_and_ptx_dir(programs, tmp_path):
    env = clean_env(PYTHONPATH=str(HERE), CUPORT_BACKEND="fake_backend:FakeBackend")
    exe = program(programs, "launch_program", "toolkit-static")
    result = run([*cuport_command(), "trace", "--ptx-dir", str(tmp_path / "ptx"), str(exe)],
                 env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    trace = [line for line in result.stderr.splitlines() if line.startswith("cuport trace:")]
    assert trace[0].split()[3].startswith("cuGetProcAddress_v2(symbol=''")
    names = {line.split()[3].split("(")[0] for line in trace}
    assert {"cuInit", "cuLibraryLoadData", "cuLibraryGetKernel", "cuLaunchKernel",
            "cuMemcpyHtoD_v2"} <= names
    launch = next(line for line in trace if " cuLaunchKernel(" in line)
    assert "gridDimX=4" in launch and "blockDimX=256" in launch and "-> CUDA_SUCCESS" in launch
    dumped = list((tmp_path / "ptx").glob("*.ptx"))
    assert len(dumped) == 1 and ".entry vadd(" in dumped[0].read_text()


def test_exit_status_and_signals(tmp_path):
    src = tmp_path / "exits.c"
    src.write_text('#include <signal.h>\n#include <stdlib.h>\n'
                   'int main(int c, char **v) { if (v[1][0] == \'k\') raise(SIGABRT); '
                   'return atoi(v[1]); }\n')
    exe = tmp_path / "exits"
    assert run(["gcc", str(src), "-o", str(exe)]).returncode == 0
    assert cuport_run(str(exe), "3").returncode == 3
    assert cuport_run(str(exe), "0").returncode == 0
    assert cuport_run(str(exe), "kill").returncode == 128 + 6
    missing = cuport_run(str(tmp_path / "no-such-program"))
    assert missing.returncode == 127 and "no-such-program" in missing.stderr


def test_run_finds_programs_on_path(tmp_path):
    result = cuport_run("true")
    assert result.returncode == 0, result.stderr
    result = run([*cuport_command(), "run", "sh", "-c", 'echo "$LD_LIBRARY_PATH"'])
    from cuport.capi import build

    assert result.stdout.split(os.pathsep)[0].strip() == str(build.library_dir())


def test_info():
    result = run([*cuport_command(), "info"])
    assert result.returncode == 0, result.stderr
    table_part, _, devices = result.stdout.partition("\n\n")
    info = dict((part.strip() for part in line.split("  ", 1))
                for line in table_part.splitlines())
    assert info["device"].startswith("cuport CPU")
    # then every device cuport can run on: the CPU first, and a line per Vulkan device (or why none)
    rows = [ln.strip() for ln in devices.splitlines()[1:]]
    assert rows[0].startswith("cpu ") and any(r.startswith("vulkan") for r in rows)
    assert info["compute capability"].startswith("9.0")
    assert info["libcuda.so.1"].endswith("libcuda.so.1") and Path(info["libcuda.so.1"]).exists()
    assert info["LLVM"][0].isdigit()
    assert sys.version.split()[0] in info["python"]


def test_info_coverage():
    from cuport.capi import table

    result = run([*cuport_command(), "info", "--coverage"])
    assert result.returncode == 0, result.stderr
    rows = dict(reversed(line.rsplit(None, 1)) for line in result.stdout.splitlines())
    assert set(rows) == set(table.functions())
    assert rows["cuLaunchKernel"] == "implemented"
    assert rows["cuGraphAddBatchMemOpNode"] == "not implemented"
