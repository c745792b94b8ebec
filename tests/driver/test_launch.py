"""Modules, libraries and launches from C, with the fake backend running the kernels.

The kernels are real nvcc output (tests/driver/c/kernels.cu as PTX and as a fatbin);
the fake backend runs each as a Python function, so these tests check the driver:
loading through the loader, parameter packing at the PTX layout, the launch checks,
streams, globals, unloading, and errors that happen after a launch returned.
"""

from __future__ import annotations

import pytest
from capi_support import clean_env, library, run


def run_launch(client, kernels, test, env):
    ptx, fatbin = kernels
    return run([str(client), str(library()), test, str(ptx), str(fatbin)], env=clean_env(**env))


@pytest.mark.parametrize("test", ["module_launch", "library_kernel", "launch_ex", "unload_waits"])
def test_launch(launch_client, kernels, fake_backend_env, test):
    result = run_launch(launch_client, kernels, test, fake_backend_env)
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr


def test_launch_errors_name_the_kernel(launch_client, kernels, fake_backend_env):
    result = run_launch(launch_client, kernels, "module_launch", fake_backend_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("cuport: cuLaunchKernel(vadd): CUDA_ERROR_INVALID_VALUE: 96 KiB of dynamic shared "
            "memory asked for, 48 KiB allowed unless cuFuncSetAttribute("
            "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) raised it") in result.stderr
    assert ("cuport: cuLaunchKernel(vadd): CUDA_ERROR_INVALID_VALUE: 2048 threads per block asked "
            "for (32x32x2), at most 1024 allowed") in result.stderr
    # a bad image: the loader's reason reaches both stderr and the JIT error log
    assert "log: not a fatbin, ELF image or PTX text" in result.stdout


def test_failures_after_the_launch(launch_client, kernels, fake_backend_env):
    result = run_launch(launch_client, kernels, "async_failure", fake_backend_env)
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr
    err = result.stderr
    # reported when it happens, and again by the call that returns it
    assert "cuport: cuLaunchKernel(trap): CUDA_ERROR_LAUNCH_FAILED: kernel trap" in err
    assert ("cuport: cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED: an earlier asynchronous "
            "operation failed: cuLaunchKernel(trap)") in err
    # a Python exception inside cuport: CUDA_ERROR_UNKNOWN and its traceback, on both paths
    assert "ZeroDivisionError" in err and "Traceback" in err
    assert "cuport: cuModuleLoadData: internal error, answering CUDA_ERROR_UNKNOWN" in err
    assert "RuntimeError: the fake backend was asked to fail while loading" in err
