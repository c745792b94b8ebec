"""Shared by the runtime tests: the device (or the reason to skip) and GLSL compiled at test time.

Shaders are GLSL with GL_EXT_buffer_reference, compiled by glslangValidator (Debian's
glslang-tools) into a temporary directory; no SPIR-V binary is kept in the repository.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
# The Khronos validation layer, where installed, checks every Vulkan call the tests make.
os.environ.setdefault("CUPORT_VK_VALIDATION", "1")

from cuport.backends.vulkan import runtime as vkrt  # noqa: E402

GLSLANG = shutil.which("glslangValidator")
_spv_dir = Path(tempfile.mkdtemp(prefix="cuport-vkrt-spv-"))


def device() -> vkrt.Device:
    """The first usable Vulkan device, or skip with the reason."""
    infos = [d for d in vkrt.devices() if d.usable]
    if not infos:
        why = vkrt.unavailable_reason() or "; ".join(
            f"{d.name}: {', '.join(m for m in d.missing if m.startswith('required'))}"
            for d in vkrt.devices())
        pytest.skip(f"no usable Vulkan device: {why}")
    return vkrt.open(infos[0].index)


def glsl(source: str) -> bytes:
    """SPIR-V for a GLSL compute shader (glslangValidator -V --target-env vulkan1.2)."""
    if GLSLANG is None:
        pytest.skip("glslangValidator is not installed (Debian: glslang-tools)")
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    out = _spv_dir / f"{key}.spv"
    if not out.exists():
        src = _spv_dir / f"{key}.comp"
        src.write_text(source)
        r = subprocess.run([GLSLANG, "-V", "--target-env", "vulkan1.2", "-S", "comp", str(src),
                            "-o", str(out)], capture_output=True, text=True)
        if r.returncode:
            raise AssertionError(f"glslangValidator failed:\n{r.stdout}{r.stderr}")
    return out.read_bytes()


def validation_messages() -> list[str]:
    from cuport.backends.vulkan.runtime import instance

    return list(instance.get().messages)


HEADER = """#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
"""

# c[i] = a[i] + b[i] through three device addresses in push constants.
VADD = HEADER + """
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(push_constant) uniform P { F32 a; F32 b; F32 c; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) p.c.v[i] = p.a.v[i] + p.b.v[i];
}
"""

# buf[i] += 1: every launch depends on the previous one's writes.
INCR = HEADER + """
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 buf; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) p.buf.v[i] += 1u;
}
"""

# Walks a linked list whose `next` pointers are device addresses stored in device memory.
CHASE = HEADER + """
layout(local_size_x = 1) in;
layout(buffer_reference) buffer Node;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Node { Node next; uint value; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { Node head; U32 out_; } p;
void main() {
    uint s = 0u, k = 0u;
    Node n = p.head;
    while (uint64_t(n) != 0ul) { s += n.value * (k + 1u); k += 1u; n = n.next; }
    p.out_.v[0] = s;
    p.out_.v[1] = k;
}
"""

# out[workgroup id] = workgroup id + 1: which workgroups of a (split) grid ran.
WGID = HEADER + """
layout(local_size_x = 1) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 out_; } p;
void main() {
    p.out_.v[gl_WorkGroupID.x] = gl_WorkGroupID.x + 1u;
}
"""

# out[y * nx + x] = that + 1 for workgroup (x, y): nx comes in push constants, since a split
# grid's pieces see their own NumWorkgroups.
WGID2 = HEADER + """
layout(local_size_x = 1) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 out_; uint nx; } p;
void main() {
    uint k = gl_WorkGroupID.y * p.nx + gl_WorkGroupID.x;
    p.out_.v[k] = k + 1u;
}
"""

# out[i] = subgroup size, out[n + i] = invocation id in its subgroup.
SUBGROUP = HEADER + """
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 out_; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    p.out_.v[i] = gl_SubgroupSize;
    p.out_.v[p.n + i] = gl_SubgroupInvocationID;
}
"""

# out[i] = an LCG iterated `iters` times from i: slow enough to overlap with other work.
SPIN = HEADER + """
layout(local_size_x = 64) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(push_constant) uniform P { U32 out_; uint n; uint iters; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint x = i;
    for (uint k = 0u; k < p.iters; k++) x = x * 1664525u + 1013904223u;
    p.out_.v[i] = x;
}
"""

EMPTY = """#version 460
layout(local_size_x = 1) in;
void main() {}
"""


def lcg(n: int, iters: int):
    import numpy as np

    x = np.arange(n, dtype=np.uint32)
    for _ in range(iters):
        x = x * np.uint32(1664525) + np.uint32(1013904223)
    return x
