"""Test support: spirv-val and spirv-dis (Debian's spirv-tools) on emitted modules, and small
helpers for building kernels with llvmlite the way the Vulkan emitter does."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
from llvmlite import ir as ll

from cuport.backends.vulkan.spirv import FloatModes, translate

SPIRV_VAL = shutil.which("spirv-val")
SPIRV_DIS = shutil.which("spirv-dis")
needs_spirv_val = pytest.mark.skipif(SPIRV_VAL is None, reason="spirv-val not installed (Debian: spirv-tools)")

I1, I8, I16, I32, I64 = (ll.IntType(w) for w in (1, 8, 16, 32, 64))
F16, F32, F64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()
PTR = ll.PointerType()
VOID = ll.VoidType()


def _run(tool: str, data: bytes, *args: str) -> subprocess.CompletedProcess:
    fd, path = tempfile.mkstemp(suffix=".spv")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return subprocess.run([tool, *args, path], capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)


def validate(spirv: bytes) -> None:
    """Fail with spirv-val's message (and the disassembly) unless the module is valid for
    Vulkan 1.2."""
    if SPIRV_VAL is None:
        pytest.skip("spirv-val not installed (Debian: spirv-tools)")
    r = _run(SPIRV_VAL, spirv, "--target-env", "vulkan1.2")
    if r.returncode != 0:
        raise AssertionError(f"spirv-val: {r.stderr}{r.stdout}\n{disassemble(spirv)}")


def disassemble(spirv: bytes) -> str:
    if SPIRV_DIS is None:
        return "(spirv-dis not installed)"
    r = _run(SPIRV_DIS, spirv, "--raw-id")
    return r.stdout + r.stderr


class Kernel:
    """A `void @name()` kernel under construction, with the `spv.*` declarations at hand."""

    def __init__(self, name: str = "k"):
        self.module = ll.Module()
        self.fn = ll.Function(self.module, ll.FunctionType(VOID, []), name)
        self.b = ll.IRBuilder(self.fn.append_basic_block("entry"))

    def block(self, name: str = "") -> ll.Block:
        return self.fn.append_basic_block(name)

    def declare(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        f = self.module.globals.get(name)
        if f is None:
            f = ll.Function(self.module, ll.FunctionType(ret, args), name)
        return f

    def builtin(self, name: str, comp: str | None = None) -> ll.Value:
        full = f"spv.builtin.{name}" + (f".{comp}" if comp else "")
        return self.b.call(self.declare(full, I32, []), [])

    def push(self, t: ll.Type, offset: int) -> ll.Value:
        return self.b.call(self.declare(f"spv.push.{t}", t, [I32]), [ll.Constant(I32, offset)])

    def push_ptr(self, offset: int) -> ll.Value:
        return self.b.inttoptr(self.push(I64, offset), PTR)

    def op(self, name: str, ret: ll.Type, args: list, suffix: str = "") -> ll.Value:
        args = [a if isinstance(a, ll.Value) else ll.Constant(I32, a) for a in args]
        full = f"spv.{name}" + (f".{suffix}" if suffix else "")
        return self.b.call(self.declare(full, ret, [a.type for a in args]), args)

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
        return self.b.call(self.declare(name, ret, [a.type for a in args]), args)

    def global_id(self, local: int) -> ll.Value:
        b = self.b
        return b.add(b.mul(self.builtin("WorkgroupId", "x"), ll.Constant(I32, local)),
                     self.builtin("LocalInvocationIndex"))

    def store(self, value: ll.Value, ptr: ll.Value, align: int | None = None):
        """A store without llvmlite's check against typed pointers (its allocas and
        globals are typed; the emitter's pointers are opaque)."""
        from llvmlite.ir import instructions as lli
        st = lli.StoreInstr(self.b.block, value, ptr)
        st.align = align
        self.b._insert(st)
        return st

    def element(self, base: ll.Value, index: ll.Value, t: ll.Type) -> ll.Value:
        return self.b.gep(base, [index], source_etype=t)

    def shader(self, local=(64, 1, 1), float_modes: FloatModes | None = None):
        return translate(self.module, self.fn.name, local, float_modes or FloatModes())


def translate_valid(k: Kernel, local=(64, 1, 1), **kw):
    """The kernel translated, and checked by spirv-val where it is installed (the tests
    that exist to validate are marked needs_spirv_val; device runs go on without it)."""
    sh = k.shader(local, **kw)
    if SPIRV_VAL is not None:
        validate(sh.spirv)
    return sh
