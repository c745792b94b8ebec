"""Correctly rounded division and square root (LLVM's fdiv and llvm.sqrt are IEEE
operations; Vulkan's OpFDiv is only good to 2.5 ulp and its Sqrt is an approximation)."""

from __future__ import annotations

from llvmlite import ir as ll

from .module import GLSL, OP


def div(tr, t: ll.Type, a: int, b: int) -> int:
    return tr.op(OP.OpFDiv, tr.ty(t), a, b)


def sqrt(tr, t: ll.Type, a: int) -> int:
    return tr.ext(tr.ty(t), GLSL.Sqrt, a)
