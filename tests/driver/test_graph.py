"""CUDA graphs and stream capture from C, with the kernels on the real CPU backend.

tests/driver/c/graph.c builds graphs explicitly and by capture and checks what they
compute, the order their nodes run in, the queries, parameter changes of instantiated
graphs, and the error codes NVIDIA documents for misuse; tests/programs/graphs.cu does the
same through NVIDIA's runtime.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from capi_support import clean_env, compile_c, library, need_nvcc, run

C = Path(__file__).resolve().parent / "c"

TESTS = ["explicit", "order", "update", "misuse", "capture", "events", "user_objects",
         "memory_nodes", "async_failure"]


@pytest.fixture(scope="session")
def graph_client(tmp_path_factory):
    return compile_c([C / "graph.c"], tmp_path_factory.mktemp("graph") / "graph")


@pytest.fixture(scope="session")
def graph_ptx(tmp_path_factory):
    ptx = tmp_path_factory.mktemp("graph-kernels") / "graph_kernels.ptx"
    result = run([need_nvcc(), "-ptx", "-o", str(ptx), str(C / "graph_kernels.cu")])
    assert result.returncode == 0, result.stderr
    return ptx


def run_graph(client, ptx, test, *extra):
    return run([str(client), str(library()), test, str(ptx), *map(str, extra)], env=clean_env())


@pytest.mark.parametrize("test", TESTS)
def test_graph(graph_client, graph_ptx, test, tmp_path):
    dot = tmp_path / "graph.dot"
    result = run_graph(graph_client, graph_ptx, test, dot)
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr
    if test == "memory_nodes":
        text = dot.read_text()
        assert text.startswith("digraph") and text.rstrip().endswith("}")
        assert "mem alloc" in text and "mem free" in text and "memset" in text
        assert text.count("kernel append") == 2 and text.count(" -> ") == 5


def test_errors_name_the_call(graph_client, graph_ptx):
    result = run_graph(graph_client, graph_ptx, "misuse")
    assert "log: the graph has a cycle through" in result.stdout
    assert ("cuport: cuGraphInstantiateWithFlags: CUDA_ERROR_INVALID_VALUE: the graph has a "
            "cycle through") in result.stderr
    assert "cuport: cuGraphConditionalHandleCreate: CUDA_ERROR_INVALID_VALUE: flags 0x2 are " \
        "not CU_GRAPH_COND_* flags" in result.stderr
    result = run_graph(graph_client, graph_ptx, "capture")
    assert ("cuport: cuStreamSynchronize: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: "
            "cuStreamSynchronize is not permitted on a capturing stream") in result.stderr
    assert "cuport: cuMemAlloc_v2: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: allocating memory is " \
        "not permitted while the capture begun on stream" in result.stderr


def test_failure_inside_a_graph_names_the_kernel(graph_client, graph_ptx):
    result = run_graph(graph_client, graph_ptx, "async_failure")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cuport: cuGraphLaunch(trap_kernel): CUDA_ERROR_" in result.stderr, result.stderr
