"""Kernel variants per kind of texture object (issue 7: cuda-samples' stereoDisparity).

A launch whose texture parameters hold live texture objects runs a variant of the kernel
whose sampler takes the objects' format, filter and address modes as constants
(passes/texture_params.py, isa/texture_layout.Sampling, backends/vulkan/backend.py).
texture_variants.cu sends four kinds of objects through the same kernels alternately (one
parameter, two parameters both ways round, objects read from memory, an object destroyed
and replaced) and checks every sample against a host model; it runs on the CPU and on
Vulkan, twice there with one kernel cache (the second run takes every variant from the
cache, so a key that left the facts out would hand one kind's variant to another), and the
backends' per-launch checksums must agree. The last tests look at nvcc's PTX of the same
kernels: which parameters are found, and what the variants' SPIR-V is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from nvcc_ptx import ptx_of
from spvtools import validate

from cuport.backends import facts
from cuport.backends.vulkan import compiler
from cuport.backends.vulkan.lower import DeviceCaps
from cuport.isa import texture_layout as T
from cuport.passes.texture_params import texture_params

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))
sys.path.insert(0, str(HERE.parent))

from capi_support import clean_env, cuport_command, need_nvcc, run  # noqa: E402
from device_limits import devices  # noqa: E402 (tests/device_limits.py)


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("texture_variants") / "texture_variants"
    r = run([need_nvcc(), "-O3", "-o", str(out), str(HERE / "texture_variants.cu")], timeout=600)
    if r.returncode != 0:
        pytest.fail(f"nvcc failed:\n{r.stderr}")
    return out


def _checksums(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if "checksum" in ln]


@pytest.fixture(scope="module")
def cpu_lines(exe) -> list[str]:
    r = run([*cuport_command(), "run", str(exe)], env=clean_env(CUPORT_DEVICE="cpu"), timeout=600)
    assert r.returncode == 0 and r.stdout.splitlines()[-1] == "PASS", r.stdout + r.stderr
    return _checksums(r.stdout)


def test_alternating_objects_match_the_host_model_on_the_cpu(cpu_lines):
    assert len(cpu_lines) == 15 and all(" 0 of " in ln for ln in cpu_lines), cpu_lines


@pytest.mark.skipif("vulkan" not in devices(), reason="no Vulkan device")
def test_alternating_objects_on_vulkan_match_the_model_and_the_cpu(exe, cpu_lines, tmp_path):
    env = clean_env(CUPORT_DEVICE="vulkan", CUPORT_SPIRV_VALIDATE="1",
                    CUPORT_CACHE_DIR=str(tmp_path / "cache"))
    for attempt in ("compiled", "from the cache"):
        if attempt == "from the cache":
            env.pop("CUPORT_SPIRV_VALIDATE")  # (validating reads nothing from the cache)
        r = run([*cuport_command(), "run", str(exe)], env=env, timeout=600)
        assert r.returncode == 0 and r.stdout.splitlines()[-1] == "PASS", \
            f"{attempt}:\n{r.stdout}{r.stderr}"
        assert _checksums(r.stdout) == cpu_lines, attempt


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return facts.load_ptx([ptx_of(tmp_path_factory, HERE / "texture_variants.cu", "sm_80")])


def _kernel(module, part: str):
    return next(f for n, f in module.functions.items() if f.is_entry and part in n)


def test_the_parameters_that_texture_operands_hold(module):
    sample, pair, indirect = (_kernel(module, k) for k in ("sample", "pair", "indirect"))
    assert texture_params(sample) == [sample.params[0].name]
    assert texture_params(pair) == [pair.params[0].name, pair.params[1].name]
    assert texture_params(indirect) == []  # an object loaded from memory: no variant knows it


# what driver/texture.py makes of texture_variants.cu's first two kinds
FLOAT_LINEAR_CLAMP = T.Sampling(T.DECODE_BITS32, 1, 4, T.F_FLOAT_RESULT | T.F_LINEAR_FILTER,
                                (T.ADDRESS_CLAMP,) * 3, (0, 0, 0, 0x3F800000), False)
UCHAR4_POINT_WRAP = T.Sampling(T.DECODE_UNORM8, 4, 4, T.F_FLOAT_RESULT | T.F_NORMALIZED,
                               (T.ADDRESS_WRAP,) * 3, (0, 0, 0, 0x3F800000), False)


@pytest.mark.parametrize("kind", [FLOAT_LINEAR_CLAMP, UCHAR4_POINT_WRAP])
def test_a_variant_holds_one_sampler_and_is_smaller(module, kind):
    fn = _kernel(module, "sample")
    param = fn.params[0].name
    generic = compiler.compile_kernel(module, fn.name, (128, 1, 1), 0, DeviceCaps())
    variant = compiler.compile_kernel(module, fn.name, (128, 1, 1), 0, DeviceCaps(),
                                      textures=((param, kind),))
    validate(bytes(variant.shader.spirv))
    names = [f.name for f in variant.llmod.functions if f.name.startswith("cuport_tex")]
    assert names and all(kind.tag in n for n in names), names
    assert len(variant.shader.spirv) < len(generic.shader.spirv) / 2


def test_the_object_a_register_holds_only_where_every_definition_loads_the_parameter():
    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u32 %r1, [n];
    mov.b64 %rd3, %rd1;
    tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd3, {%f1, %f1}];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra SKIP;
    mov.b64 %rd2, %rd1;
SKIP:
    tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [%rd2, {%f1, %f1}];
    tex.2d.v4.f32.f32 {%f1, %f1, %f1, %f1}, [b, {%f1, %f1}];
    ret;
}
"""
    from cuport.passes.texture_params import texture_handles

    fn = facts.load_ptx([ptx]).functions["k"]
    # %rd3 copies a; %rd2 is b or a, chosen at run time: the generic sampler; b by name
    assert texture_handles(fn) == {"%rd3": "a", "b": "b"}
