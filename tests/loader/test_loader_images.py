"""Images in hand as bytes or files: what nvcc emits, read back and compared with `nvcc -ptx`."""

from __future__ import annotations

import pytest
from loader_support import (
    COMPRESS_MODES,
    fatbin_entries,
    fatbin_size,
    file_offset,
    ptx_version,
    statements,
    wrappers,
)

from cuport.loader import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    LoaderError,
    choose_ptx,
    parse_file,
    parse_image,
)

# What nvcc 13's -compress-mode does to the PTX entry (reference/cudart-protocol.md).
PTX_COMPRESSION = {"default": 0x8000, "size": 0x8000, "speed": 0x2000, "none": 0}


@pytest.mark.parametrize("mode", COMPRESS_MODES)
def test_each_compress_mode_gives_the_ptx_of_nvcc_ptx(built, mode):
    data = built.read(f"fatbin_{mode}")
    ptx_flags = [e["flags"] & 0xA000 for e in fatbin_entries(data) if e["kind"] == 1]
    assert ptx_flags == [PTX_COMPRESSION[mode]]  # the decompressor under test really ran

    image = parse_image(data)

    reference = built.text("ptx_75.ptx")
    assert image.kind == "fatbin"
    assert [(p.arch, p.target, p.version) for p in image.ptx] == [
        (75, "sm_75", ptx_version(reference))
    ]
    assert statements(image.ptx[0].text) == statements(reference)
    assert not image.ptx[0].text.endswith("\0")
    assert [s.arch for s in image.sass] == [75]


def test_compressed_sass_is_listed_with_its_unpacked_size(built):
    compressed = parse_image(built.read("fatbin_size")).sass
    plain = parse_image(built.read("fatbin_none")).sass
    assert [s.arch for s in compressed] == [75]
    assert [s.size for s in compressed] == [s.size for s in plain]


@pytest.mark.parametrize(
    ("device_cc", "target", "reference"),
    [
        (75, "sm_75", "ptx_75.ptx"),
        (80, "sm_80", "ptx_80.ptx"),
        (86, "sm_80", "ptx_80.ptx"),  # sm_86 SASS is ignored: only PTX is translated
        (89, "sm_80", "ptx_80.ptx"),
        (90, "sm_90a", "ptx_90a.ptx"),
        (100, "sm_80", "ptx_80.ptx"),  # sm_90a PTX runs on sm_90 only
        (120, "sm_80", "ptx_80.ptx"),
    ],
)
def test_the_newest_ptx_the_device_runs_is_chosen(built, device_cc, target, reference):
    image = parse_image(built.read("multi.fatbin"))
    assert sorted(p.target for p in image.ptx) == ["sm_75", "sm_80", "sm_90a"]
    assert [s.arch for s in image.sass] == [86]

    chosen = choose_ptx(image, device_cc)

    assert chosen.target == target
    assert chosen.arch == int(target[3:5])
    assert statements(chosen.text) == statements(built.text(reference))


def test_ptx_newer_than_the_device_is_taken_nearest_first(built):
    # cuport translates PTX: it is not bound by the compute capability it reports
    # (libcudadevrt.a and CuPy's CUB kernels carry sm_120/sm_121 PTX only)
    image = parse_image(built.read("multi.fatbin"))
    assert choose_ptx(image, 70).target == "sm_75"
    assert choose_ptx(image, 86).target == "sm_80"  # runs on an sm_86 GPU: preferred


def test_arch_specific_ptx_of_another_architecture_is_taken_when_alone(built):
    image = parse_image(built.read("ptx_90a.ptx"))
    assert choose_ptx(image, 90).target == "sm_90a"
    assert choose_ptx(image, 100).target == "sm_90a"
    assert choose_ptx(image, 80).target == "sm_90a"


def test_sass_only_is_an_error_that_says_how_to_rebuild(built):
    image = parse_image(built.read("sass_only.fatbin"))
    assert image.ptx == [] and [s.arch for s in image.sass] == [75]
    with pytest.raises(LoaderError) as caught:
        choose_ptx(image, 75)
    assert caught.value.code == CUDA_ERROR_NO_BINARY_FOR_GPU
    message = caught.value.message
    assert "only SASS" in message and "sm_75" in message
    assert "-gencode arch=compute_75,code=compute_75" in message
    assert "-arch=sm_75" in message


def test_lto_ir_only_is_an_error_that_names_it(built):
    image = parse_image(built.read("lto_only.fatbin"))
    assert image.ptx == [] and image.sass == [] and image.other == ["LTO-IR for sm_75"]
    with pytest.raises(LoaderError, match="only LTO-IR for sm_75.*compute_75,code=compute_75"):
        choose_ptx(image, 80)


def test_cubin_is_sass_for_its_architecture(built):
    image = parse_file(str(built["kernel_80.cubin"]))
    assert image.kind == "elf" and image.ptx == []
    assert [(s.arch, s.size) for s in image.sass] == [(80, len(built.read("kernel_80.cubin")))]
    with pytest.raises(LoaderError, match="is a cubin .* for sm_80.*load the PTX") as caught:
        choose_ptx(image, 80)
    assert caught.value.code == CUDA_ERROR_NO_BINARY_FOR_GPU
    assert "cuLink" in caught.value.message


def test_ptx_text_takes_its_arch_from_target(built):
    text = built.text("ptx_80.ptx")
    for data in (text.encode(), text.encode() + b"\0\0\0", b"  // lead\n/* x */\n" + text.encode()):
        image = parse_image(data)
        assert image.kind == "ptx"
        [entry] = image.ptx
        assert (entry.arch, entry.target, entry.version) == (80, "sm_80", ptx_version(text))
        assert statements(entry.text) == statements(text)
    assert choose_ptx(parse_image(text.encode()), 86).text.rstrip("\0") == text.rstrip("\0")


def test_ptx_text_without_target_is_invalid_ptx():
    """The loader passes it on; the PTX front end refuses it as the H200's JIT does, naming
    the line where ptxas looks for the .target (tests/ptx/gpu/h200_ptx_errors.json)."""
    from cuport import ptx

    [entry] = parse_image(b".version 8.0\n.address_size 64\n").ptx
    assert (entry.arch, entry.target) == (0, "")
    with pytest.raises(ptx.PtxSyntaxError) as caught:
        ptx.load([entry.text])
    assert ptx.log_of(caught.value).splitlines()[0] == (
        "ptxas application ptx input, line 2; fatal   : Missing .target directive at start of "
        "file 'application ptx input'")
    assert getattr(caught.value, "code", CUDA_ERROR_INVALID_PTX) == CUDA_ERROR_INVALID_PTX


def test_executable_carries_the_ptx_of_its_translation_unit(built):
    image = parse_file(str(built["program"]))
    assert image.kind == "elf"
    assert parse_image(built.read("program")).ptx == image.ptx
    assert statements(choose_ptx(image, 75).text) == statements(built.text("ptx_75.ptx"))
    assert image.relocatable == []


def test_wrapper_data_pointer_in_an_executable_names_its_fatbin(built):
    """The wrapper's pointer is a link-time address: map it to the file as the
    dynamic loader would map it to memory."""
    data = built.read("program")
    found = []
    for magic, version, pointer, _ in wrappers(data):
        assert magic == 0x466243B1 and version in (1, 2)
        offset = file_offset(data, pointer)
        image = parse_image(data[offset : offset + fatbin_size(data, offset)])
        found += [statements(p.text) for p in image.ptx]
    assert found == [statements(built.text("ptx_75.ptx"))]


def test_wrapper_bytes_ask_for_the_address_form():
    with pytest.raises(LoaderError, match="read_image_at") as caught:
        parse_image(bytes.fromhex("b1436246 01000000") + bytes(16))
    assert caught.value.code == CUDA_ERROR_INVALID_IMAGE
