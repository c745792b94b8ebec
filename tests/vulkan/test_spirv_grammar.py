"""The SPIR-V tables are generated from Khronos' grammar JSON (Debian's spirv-headers): the
committed grammar.py must be what the generator makes of the installed JSON; and the
module builder encodes and chooses capabilities from those tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuport.backends.vulkan.spirv import gen_grammar, grammar
from cuport.backends.vulkan.spirv.module import (
    Module,
    SpirvError,
    encode_operands,
    enum,
    string_words,
)

GRAMMAR = Path(gen_grammar.DEFAULT_DIR)


@pytest.mark.skipif(not (GRAMMAR / gen_grammar.CORE).exists(), reason="SPIR-V grammar JSON not installed (Debian: spirv-headers)")
def test_committed_tables_match_the_grammar_json() -> None:
    committed = Path(grammar.__file__).read_text()
    assert gen_grammar.generate(GRAMMAR) == committed, (
        "grammar.py is stale: python -m cuport.backends.vulkan.spirv.gen_grammar > cuport/backends/vulkan/spirv/grammar.py")


def test_known_values() -> None:
    # values from the SPIR-V specification, as the tables give them
    assert grammar.INSTRUCTIONS["OpIAdd"][0] == 128
    assert enum("StorageClass", "PhysicalStorageBuffer") == 5349
    assert grammar.GLSL_STD_450["Fma"][0] == 50


def test_operand_encoding() -> None:
    m = Module()
    # OpLoad: result type, result, pointer, MemoryAccess Aligned 4
    words = m.encode("OpLoad", 1, 2, 3, "Aligned|NonPrivatePointer", 4)
    assert words == [(6 << 16) | 61, 1, 2, 3, 0x22, 4]
    assert "VulkanMemoryModel" in m.capabilities  # NonPrivatePointer needs it
    assert string_words("abc") == [0x00636261]
    with pytest.raises(SpirvError):
        encode_operands(m, grammar.INSTRUCTIONS["OpIAdd"][1], [1, 2, 3], "OpIAdd")


def test_capability_choice_prefers_core_and_vulkan() -> None:
    m = Module()
    m.require_enum("BuiltIn", "SubgroupLocalInvocationId")  # Kernel, GroupNonUniform or SubgroupBallotKHR
    assert "GroupNonUniform" in m.capabilities and "Kernel" not in m.capabilities
    assert not m.extensions
    m.require_op("OpReadClockKHR")
    assert "ShaderClockKHR" in m.capabilities and "SPV_KHR_shader_clock" in m.extensions
