"""cuport's SPIR-V emitter: grammar tables generated from Khronos' JSON, a module builder,
a CFG structurizer, and the translation of the Vulkan emitter's llvmlite IR into a compute
shader (see translate.py)."""

from .probe import (
    contract_probe_push,
    contract_probe_shader,
    contract_probe_variant,
    fma_probe_fused,
    fma_probe_push,
    fma_probe_shader,
    subnormal_probe_flushes,
    subnormal_probe_push,
    subnormal_probe_shader,
)
from .structurize import Irreducible
from .translate import FloatModes, Shader, TranslateError, translate

__all__ = ["translate", "Shader", "FloatModes", "TranslateError", "Irreducible", "fma_probe_shader",
           "fma_probe_push", "fma_probe_fused", "subnormal_probe_shader", "subnormal_probe_push",
           "subnormal_probe_flushes", "contract_probe_shader", "contract_probe_push",
           "contract_probe_variant"]
