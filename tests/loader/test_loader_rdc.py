"""`-rdc=true` programs: the PTX of every object file, from the file on disk."""

from __future__ import annotations

import pytest
from loader_support import statements

from cuport.loader import (
    CUDA_ERROR_FILE_NOT_FOUND,
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    LoaderError,
    choose_ptx,
    parse_file,
    relocatable_ptx_in_file,
)


def test_relocatable_ptx_of_both_objects_is_found_in_link_order(built):
    modules = relocatable_ptx_in_file(str(built["rdc_program"]), 75)
    assert [statements(m.text) for m in modules] == [
        statements(built.text("rdc_a.ptx")),
        statements(built.text("rdc_b.ptx")),
    ]
    assert [m.target for m in modules] == ["sm_75", "sm_75"]
    # They refer to each other: what makes linking them necessary.
    assert ".extern .func (.param .b32 func_retval0) _Z6helperf" in statements(modules[0].text)
    assert ".visible .func (.param .b32 func_retval0) _Z6helperf(" in statements(modules[1].text)


def test_without_a_device_the_newest_ptx_of_each_object_is_given(built):
    assert relocatable_ptx_in_file(str(built["rdc_program"])) == relocatable_ptx_in_file(
        str(built["rdc_program"]), 90
    )


def test_rdc_program_registers_sass_only_and_says_where_its_ptx_is(built):
    image = parse_file(str(built["rdc_program"]))
    assert image.ptx == [] and [s.arch for s in image.sass] == [75]
    assert len(image.relocatable) == 2
    with pytest.raises(LoaderError, match="-rdc=true.*2 relocatable objects") as caught:
        choose_ptx(image, 75)
    assert caught.value.code == CUDA_ERROR_NO_BINARY_FOR_GPU


def test_relocatable_ptx_newer_than_the_device_is_taken(built):
    modules = relocatable_ptx_in_file(str(built["rdc_program"]), 70)
    assert [m.target for m in modules] == ["sm_75", "sm_75"]


def test_whole_program_build_has_no_relocatable_objects(built):
    assert relocatable_ptx_in_file(str(built["program"])) == []


def test_missing_file_and_non_elf_file(built, tmp_path):
    with pytest.raises(LoaderError) as missing:
        relocatable_ptx_in_file(str(tmp_path / "absent"))
    assert missing.value.code == CUDA_ERROR_FILE_NOT_FOUND
    with pytest.raises(LoaderError) as not_elf:
        relocatable_ptx_in_file(str(built["ptx_75.ptx"]))
    assert not_elf.value.code == CUDA_ERROR_INVALID_IMAGE
