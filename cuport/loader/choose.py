"""Which PTX a device runs, and the error that says why none fits and how to rebuild.

Compatibility follows NVIDIA's rules for PTX targets: `sm_XY` runs on compute
capability XY and newer, `sm_XYa` (arch-specific) only on XY, `sm_XYf`
(family-specific) on XY and newer devices of the same major version.
"""

from __future__ import annotations

from .errors import CUDA_ERROR_NO_BINARY_FOR_GPU, LoaderError
from .image import relocatable_objects_in_file
from .model import Image, PtxEntry

# At equal arch prefer portable PTX: arch- and family-specific PTX may use
# instructions (wgmma, tcgen05 ...) that a portable build of the same code avoids.
_VARIANT_RANK = {"": 2, "f": 1, "a": 0}


def runs_on(entry: PtxEntry, device_cc: int) -> bool:
    if entry.variant == "a":
        return entry.arch == device_cc
    if entry.variant == "f":
        return entry.arch // 10 == device_cc // 10 and entry.arch <= device_cc
    return entry.arch <= device_cc


def _preference(entry: PtxEntry) -> tuple[int, int, tuple[int, int]]:
    return (entry.arch, _VARIANT_RANK[entry.variant], entry.version)


def choose_ptx(image: Image, device_cc: int | None) -> PtxEntry:
    """The newest PTX the device can run; `device_cc` None means the newest of all."""
    usable = [p for p in image.ptx if device_cc is None or runs_on(p, device_cc)]
    if usable:
        return max(usable, key=_preference)
    raise LoaderError(CUDA_ERROR_NO_BINARY_FOR_GPU, _why_none(image, device_cc))


def choose_relocatable_ptx(
    objects: list[Image], device_cc: int | None = None, source: str = ""
) -> list[PtxEntry]:
    """One PTX module per relocatable object (`Image.relocatable`), in link order: the
    newest usable on `device_cc`, or the newest. An object without one is an error
    that names it (`source` says where the objects came from)."""
    chosen = []
    for number, obj in enumerate(objects):
        try:
            chosen.append(choose_ptx(obj, device_cc))
        except LoaderError as error:
            where = f"{source}: " if source else ""
            raise LoaderError(
                error.code,
                f"{where}relocatable object {number + 1} of {len(objects)}: {error.message}",
            ) from None
    return chosen


def relocatable_ptx_in_file(path: str, device_cc: int | None = None) -> list[PtxEntry]:
    """The PTX modules to link for a `-rdc=true` program or library on disk (from its
    `__nv_relfatbin` section); empty when it was not built with `-rdc=true`."""
    return choose_relocatable_ptx(relocatable_objects_in_file(path), device_cc, path)


def _names(arches: list[int], prefix: str) -> str:
    return ", ".join(f"{prefix}_{a}" for a in sorted(set(arches)))


def _why_none(image: Image, device_cc: int | None) -> str:
    if image.ptx:
        targets = ", ".join(sorted({p.target or f"sm_{p.arch}" for p in image.ptx}))
        if all(p.arch > device_cc for p in image.ptx):
            why = "all are newer than the device"
        else:
            why = "those not newer are specific to another architecture (sm_XYa runs on sm_XY only, sm_XYf on the sm_X family only)"
        return (
            f"the image has PTX for {targets}, none of which runs on the device "
            f"(sm_{device_cc}): {why}; rebuild with PTX for the device or an older target, "
            f"e.g. -gencode arch=compute_{device_cc},code=compute_{device_cc}"
        )
    rebuild_arch = min([s.arch for s in image.sass] or [75])
    rebuild = (
        f"rebuild with PTX embedded: add -gencode arch=compute_{rebuild_arch},"
        f"code=compute_{rebuild_arch} to the nvcc options, or use -arch=sm_{rebuild_arch} "
        f"(which embeds compute_{rebuild_arch} PTX by default)"
    )
    if image.relocatable:
        return (
            f"the image has no PTX of its own: it is the device-linked part of a -rdc=true "
            f"program, whose PTX is in its {len(image.relocatable)} relocatable objects "
            f"and must be linked together"
        )
    if image.sass and image.kind == "elf" and not image.ptx:
        # A bare cubin: ptxas, nvJitLink or nvrtc's cubin output, not an nvcc program.
        return (
            f"the image is a cubin (SASS, GPU machine code, for "
            f"{_names([s.arch for s in image.sass], 'sm')}) and holds no PTX; cuport runs PTX "
            f"only: load the PTX instead (numba-cuda, CuPy and cuda.core link PTX through the "
            f"driver's cuLink* calls, which cuport implements, when the nvidia-nvjitlink "
            f"package is not installed)"
        )
    if image.sass:
        return (
            f"the image has only SASS (GPU machine code) for "
            f"{_names([s.arch for s in image.sass], 'sm')} and no PTX; cuport runs PTX only: "
            f"{rebuild}"
        )
    if image.other:
        return f"the image has only {', '.join(image.other)} and no PTX; cuport runs PTX only: {rebuild}"
    return f"the image holds no device code (no PTX, no SASS): {rebuild}"
