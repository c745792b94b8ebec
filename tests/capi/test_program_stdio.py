"""The program's C streams are its own: the embedded Python leaves them as they were.

With PYTHONUNBUFFERED=1 in the environment (CI runners and containers often set it) the
embedded interpreter used to make the program's stdin unbuffered at cuInit, and glibc's
setvbuf dropped the lines stdin had already read ahead from a pipe: a program fed commands
through a pipe lost them all after its first CUDA call.
"""

from __future__ import annotations

import subprocess

from capi_support import clean_env, cuport_command, need_nvcc, run

PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>
int main() {
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 2;
    printf("before cuInit: %s", line);
    if (cudaFree(0) != cudaSuccess) return 3;
    while (fgets(line, sizeof line, stdin)) printf("after: %s", line);
    return 0;
}
"""


def test_lines_read_ahead_from_a_pipe_survive_cuinit(tmp_path):
    nvcc = need_nvcc()
    src, exe = tmp_path / "stdin.cu", tmp_path / "stdin"
    src.write_text(PROGRAM)
    r = run([nvcc, "-o", str(exe), str(src)], timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*cuport_command(), "run", str(exe)], input="a\nb\nc\n", text=True,
                       capture_output=True, env=clean_env(PYTHONUNBUFFERED="1"), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["before cuInit: a", "after: b", "after: c"]
