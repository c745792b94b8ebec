"""What a newcomer meets first: the example, `cuport info`, `cuport trace`, nvcc --version.

examples/hello.cu is the README's first command: it must launch a kernel and check
it. `cuport info | head` must end quietly. `cuport trace` folds the runtime's ~440
cuGetProcAddress lookups into one line unless --all is given. The nvcc that
`cuport run` puts first on PATH keeps nvcc --version's last lines NVIDIA's (tools parse
the release from them) and says what it is on stderr.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from capi_support import REPO, clean_env, cuport_command, need_nvcc, run


@pytest.fixture(scope="module")
def hello(tmp_path_factory):
    nvcc = need_nvcc()
    exe = tmp_path_factory.mktemp("hello") / "hello"
    r = run([nvcc, "-o", str(exe), str(REPO / "examples" / "hello.cu")], timeout=300)
    assert r.returncode == 0, r.stderr
    return exe


def test_hello_launches_a_kernel_and_checks_it(hello):
    r = run([*cuport_command(), "run", str(hello)], timeout=300)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[-1] == "PASS", r.stdout + r.stderr
    assert re.fullmatch(r"kernel axpi<<<\d+, 256>>> on 1048576 elements: y\[1048575\] = "
                        r"2\.09715e\+06", lines[-2]), r.stdout
    assert "cuport:" not in r.stderr, r.stderr


def _lookup_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines()
            if ln.startswith("cuport trace:") and " cuGetProcAddress" in ln]


def test_trace_folds_proc_address_lookups(hello):
    r = run([*cuport_command(), "trace", str(hello)], timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    folded = _lookup_lines(r.stderr)
    counts = [int(m[1]) for ln in folded if (m := re.search(r"cuGetProcAddress x (\d+) ", ln))]
    assert counts and sum(counts) > 300, folded
    assert len(folded) < 20, folded  # failed lookups print one by one, successes fold
    everything = _lookup_lines(run([*cuport_command(), "trace", "--all", str(hello)],
                                   timeout=300).stderr)
    assert len(everything) == sum(counts) + len(folded) - len(counts)
    calls = [ln for ln in r.stderr.splitlines() if ln.startswith("cuport trace:")]
    assert any(" cuLaunchKernel(" in ln for ln in calls)


def test_info_into_a_closed_pipe_is_quiet():
    p1 = subprocess.Popen([*cuport_command(), "info", "--coverage"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=clean_env())
    p2 = subprocess.run(["head", "-1"], stdin=p1.stdout, capture_output=True, text=True)
    p1.stdout.close()
    err = p1.stderr.read().decode()
    p1.wait(timeout=120)
    assert p2.stdout.split()[0] in ("implemented", "not"), p2.stdout
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_nvcc_version_through_the_shim():
    nvcc = need_nvcc()
    shim = REPO / "cuport" / "shims" / "nvcc"
    real = run([nvcc, "--version"]).stdout.splitlines()
    r = run([sys.executable, str(shim), "--version"])
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == len(real)
    assert lines[1:] == real[1:]  # the release and build lines, last, as NVIDIA's
    assert "cuport" in lines[0]  # version-keyed compile caches (PyCUDA's) stay apart
    assert "cuport: this nvcc makes PTX where a cubin is asked for" in r.stderr


def test_readme_first_command_names_the_example():
    readme = (REPO / "README.md").read_text()
    first = next(ln for ln in readme.splitlines() if ln.startswith("    "))
    assert "examples/hello.cu" in first and "cuport run" in first
    assert Path(REPO / "examples" / "hello.cu").exists()
