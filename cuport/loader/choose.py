"""Which PTX to translate, and the error that says why there is none and how to rebuild.

A GPU follows NVIDIA's rules for PTX targets: `sm_XY` runs on compute capability XY
and newer, `sm_XYa` (arch-specific) only on XY, `sm_XYf` (family-specific) on XY and
newer devices of the same major version. The PTX that a GPU of the reported compute
capability would run is taken first (the newest of it). cuport translates PTX and is
not bound by that capability, so when there is none (libcudadevrt.a, CuPy's CUB
kernels and NVIDIA's library wheels carry PTX for sm_120/sm_121 only) the PTX nearest
above the device is taken: the compiler translates what it implements and refuses an
instruction it lacks by name, at load or launch.
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


def _nearness(entry: PtxEntry) -> tuple[int, int, tuple[int, int]]:
    """For PTX no GPU of the device's capability runs: the lowest target (the fewest
    instructions newer than the device), portable before family- and arch-specific."""
    return (-entry.arch, _VARIANT_RANK[entry.variant], entry.version)


def choose_ptx(image: Image, device_cc: int | None) -> PtxEntry:
    """The newest PTX the device can run, else the PTX nearest above it; `device_cc`
    None means the newest of all. An image without PTX is an error saying how to
    rebuild."""
    if not image.ptx:
        raise LoaderError(CUDA_ERROR_NO_BINARY_FOR_GPU, _why_none(image, device_cc))
    usable = [p for p in image.ptx if device_cc is None or runs_on(p, device_cc)]
    if usable:
        return max(usable, key=_preference)
    return max(image.ptx, key=_nearness)


def choose_relocatable_ptx(
    objects: list[Image], device_cc: int | None = None, source: str = ""
) -> list[PtxEntry]:
    """One PTX module per relocatable object (`Image.relocatable`), in link order, as
    `choose_ptx` picks it. An object without PTX is an error that names it (`source`
    says where the objects came from)."""
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
    """Why an image without PTX cannot run, and how to rebuild it."""
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
            f"package is not installed; under `cuport run`, NVRTC asked for a cubin makes PTX)"
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
