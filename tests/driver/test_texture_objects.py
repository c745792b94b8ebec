"""CUDA arrays, texture and surface objects from C (tests/driver/c/texture.c).

The C client creates arrays (layered, cubemap, mipmapped) and objects with descriptors a
program would pass, reads them back through the Get functions, checks NVIDIA's error codes
for the descriptors the driver refuses, and launches small kernels on the CPU backend that
sample through resource views.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from capi_support import clean_env, compile_c, library, run

from cuport.driver import texture

C = Path(__file__).resolve().parent / "c"


@pytest.fixture(scope="session")
def texture_client(tmp_path_factory):
    return compile_c([C / "texture.c"], tmp_path_factory.mktemp("texture") / "texture")


def test_descriptor_structs_match_the_c_compiler(texture_client):
    result = run([str(texture_client), str(library()), "layout"])
    assert result.returncode == 0, result.stderr
    classes = {"CUDA_RESOURCE_DESC": texture.ResourceDesc, "CUDA_TEXTURE_DESC": texture.TextureDesc,
               "CUDA_RESOURCE_VIEW_DESC": texture.ResourceViewDesc}
    lines = result.stdout.splitlines()
    assert len(lines) == 24
    for line in lines:
        name, member, value = line.split()
        cls = classes[name]
        if member == "size":
            assert ctypes.sizeof(cls) == int(value), line
            continue
        off, t = 0, cls
        for part in member.split("."):
            f = getattr(t, part)
            off += f.offset
            t = dict(t._fields_)[part]
        assert off == int(value), line


def test_arrays_and_objects(texture_client):
    result = run([str(texture_client), str(library()), "objects"], env=clean_env())
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASS"), \
        result.stdout + result.stderr
    err = result.stderr
    # refusals name the field and the rule
    assert ("cuport: cuArray3DCreate_v2: CUDA_ERROR_INVALID_VALUE: a cubemap's faces are square: "
            "Width 4 and Height 5 differ") in err
    assert ("cuport: cuTexObjectCreate: CUDA_ERROR_INVALID_VALUE: res.linear.devPtr "
            in err and "is not aligned to 512 bytes (CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)" in err)
    assert ("cuport: cuTexObjectCreate: CUDA_ERROR_INVALID_VALUE: a mipmapped array needs "
            "CU_TRSF_NORMALIZED_COORDINATES") in err
    assert ("cuport: cuSurfObjectCreate: CUDA_ERROR_INVALID_VALUE: array " in err
            and "was created without CUDA_ARRAY3D_SURFACE_LDST" in err)
    assert ("cuport: cuTexObjectGetResourceViewDesc: CUDA_ERROR_INVALID_VALUE: texture object "
            in err and "was created without a resource view" in err)
