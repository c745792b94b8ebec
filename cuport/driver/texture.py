"""Texture and surface objects: cuTexObject*, cuSurfObject*.

A texture or surface object handle is the address of a descriptor laid out as
cuport/isa/texture_layout.py says (host memory where kernels run on the host; on a
device whose backend allocates the memory, a copy in device memory, which a discrete
GPU's kernels can read where they could not read the host's); kernels receive it as a 64-bit parameter
and the code generated for `tex`, `suld`, `sust`... reads the descriptor directly. This
module checks the program's resource, texture and view descriptors the way NVIDIA's
driver does (CUDA_ERROR_INVALID_VALUE, with a message naming the field), and resolves
them into that descriptor: which bytes, how a channel decodes, which address mode and
filter apply.

The CUDA_RESOURCE_DESC / CUDA_TEXTURE_DESC / CUDA_RESOURCE_VIEW_DESC layouts are
declared below with ctypes (the driver table carries no fields for them); the C test
client in tests/driver checks them against the C compiler's.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from dataclasses import dataclass, field

from cuport.driver import array, context, device, memory, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E
from cuport.isa import texture_layout as T

# -- the C structs ------------------------------------------------------------------------


class _Linear(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_uint64), ("format", ctypes.c_uint32),
                ("numChannels", ctypes.c_uint32), ("sizeInBytes", ctypes.c_size_t)]


class _Pitch2D(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_uint64), ("format", ctypes.c_uint32),
                ("numChannels", ctypes.c_uint32), ("width", ctypes.c_size_t),
                ("height", ctypes.c_size_t), ("pitchInBytes", ctypes.c_size_t)]


class _Res(ctypes.Union):
    _fields_ = [("hArray", ctypes.c_uint64), ("hMipmappedArray", ctypes.c_uint64),
                ("linear", _Linear), ("pitch2D", _Pitch2D), ("reserved", ctypes.c_int * 32)]


class ResourceDesc(ctypes.Structure):
    """CUDA_RESOURCE_DESC"""

    _fields_ = [("resType", ctypes.c_uint32), ("res", _Res), ("flags", ctypes.c_uint32)]


class TextureDesc(ctypes.Structure):
    """CUDA_TEXTURE_DESC"""

    _fields_ = [("addressMode", ctypes.c_uint32 * 3), ("filterMode", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("maxAnisotropy", ctypes.c_uint32),
                ("mipmapFilterMode", ctypes.c_uint32), ("mipmapLevelBias", ctypes.c_float),
                ("minMipmapLevelClamp", ctypes.c_float), ("maxMipmapLevelClamp", ctypes.c_float),
                ("borderColor", ctypes.c_float * 4), ("reserved", ctypes.c_int * 12)]


class ResourceViewDesc(ctypes.Structure):
    """CUDA_RESOURCE_VIEW_DESC"""

    _fields_ = [("format", ctypes.c_uint32), ("width", ctypes.c_size_t),
                ("height", ctypes.c_size_t), ("depth", ctypes.c_size_t),
                ("firstMipmapLevel", ctypes.c_uint32), ("lastMipmapLevel", ctypes.c_uint32),
                ("firstLayer", ctypes.c_uint32), ("lastLayer", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32 * 16)]


def _read(cls, address: int, what: str):
    if address == 0:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    return cls.from_buffer_copy(ctypes.string_at(address, ctypes.sizeof(cls)))


def _write(address: int, value: ctypes.Structure, what: str) -> None:
    if address == 0:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    ctypes.memmove(address, ctypes.addressof(value), ctypes.sizeof(value))


# -- resources ----------------------------------------------------------------------------

@dataclass
class Resource:
    """What a CUDA_RESOURCE_DESC points at, as levels of texels."""

    kind: int  # CUresourcetype
    format: int
    channels: int
    shape: array.Shape
    levels: list[T.Level] = field(default_factory=list)
    arrays: list = field(default_factory=list)  # the Array/MipmappedArray objects it uses

    @property
    def element(self) -> int:
        return array.FORMAT_BYTES[self.format] * self.channels


def _level(a: array.Array, first_layer: int = 0) -> T.Level:
    s = a.shape
    return T.Level(data=a.base + first_layer * a.slice_bytes, row_pitch=a.row_bytes,
                   slice_pitch=a.slice_bytes, width=s.width, height=max(s.height, 1),
                   depth=max(s.depth, 1) if s.dims == 3 else 1)


def _resource(d: ResourceDesc) -> Resource:
    if d.flags != 0:
        raise CudaError(E.INVALID_VALUE, f"pResDesc->flags must be 0, not {d.flags:#x}")
    kind = d.resType
    if kind == K.CU_RESOURCE_TYPE_ARRAY:
        a = array.lookup(d.res.hArray, E.INVALID_VALUE)
        return Resource(kind, a.format, a.channels, a.shape, [_level(a)], [a])
    if kind == K.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        m = array.lookup_mipmapped(d.res.hMipmappedArray, E.INVALID_VALUE)
        return Resource(kind, m.format, m.channels, m.shape, [_level(a) for a in m.levels], [m])
    if kind == K.CU_RESOURCE_TYPE_LINEAR:
        lin = d.res.linear
        cb = array.check_format(lin.format, lin.numChannels, "res.linear.format")
        _aligned(lin.devPtr, "res.linear.devPtr")
        element = cb * lin.numChannels
        count = lin.sizeInBytes // element
        if count == 0:
            raise CudaError(E.INVALID_VALUE, f"res.linear.sizeInBytes {lin.sizeInBytes} holds no "
                                             f"{element}-byte element")
        limit = device.ATTRIBUTES["MAXIMUM_TEXTURE1D_LINEAR_WIDTH"]
        if count > limit:
            raise CudaError(E.INVALID_VALUE, f"{count} elements exceed the device's limit {limit} "
                                             "(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)")
        memory.check_device_range(lin.devPtr, lin.sizeInBytes, "res.linear.devPtr")
        level = T.Level(data=lin.devPtr, row_pitch=count * element, slice_pitch=count * element,
                        width=count, height=1, depth=1)
        return Resource(kind, lin.format, lin.numChannels, array.Shape(count, 0, 0, 0), [level])
    if kind == K.CU_RESOURCE_TYPE_PITCH2D:
        p = d.res.pitch2D
        cb = array.check_format(p.format, p.numChannels, "res.pitch2D.format")
        _aligned(p.devPtr, "res.pitch2D.devPtr")
        row = cb * p.numChannels * p.width
        limits = device.ATTRIBUTES
        if p.width == 0 or p.height == 0:
            raise CudaError(E.INVALID_VALUE, "res.pitch2D.width and height must not be 0")
        if p.width > limits["MAXIMUM_TEXTURE2D_LINEAR_WIDTH"] or \
                p.height > limits["MAXIMUM_TEXTURE2D_LINEAR_HEIGHT"]:
            raise CudaError(E.INVALID_VALUE, f"{p.width}x{p.height} exceeds the device's 2D linear "
                                             f"texture limit {limits['MAXIMUM_TEXTURE2D_LINEAR_WIDTH']}"
                                             f"x{limits['MAXIMUM_TEXTURE2D_LINEAR_HEIGHT']}")
        align = limits["TEXTURE_PITCH_ALIGNMENT"]
        if p.pitchInBytes % align or p.pitchInBytes > limits["MAXIMUM_TEXTURE2D_LINEAR_PITCH"]:
            raise CudaError(E.INVALID_VALUE, f"res.pitch2D.pitchInBytes {p.pitchInBytes} must be a "
                                             f"multiple of {align} "
                                             "(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT) and at "
                                             f"most {limits['MAXIMUM_TEXTURE2D_LINEAR_PITCH']}")
        if p.pitchInBytes < row:
            raise CudaError(E.INVALID_VALUE, f"res.pitch2D.pitchInBytes {p.pitchInBytes} is less "
                                             f"than a row's {row} bytes")
        memory.check_device_range(p.devPtr, (p.height - 1) * p.pitchInBytes + row,
                                  "res.pitch2D.devPtr")
        level = T.Level(data=p.devPtr, row_pitch=p.pitchInBytes,
                        slice_pitch=p.pitchInBytes * p.height, width=p.width, height=p.height,
                        depth=1)
        return Resource(kind, p.format, p.numChannels, array.Shape(p.width, p.height, 0, 0),
                        [level])
    raise CudaError(E.INVALID_VALUE, f"pResDesc->resType {kind} is not a CUresourcetype")


def _aligned(ptr: int, what: str) -> None:
    align = device.ATTRIBUTES["TEXTURE_ALIGNMENT"]
    if ptr % align:
        raise CudaError(E.INVALID_VALUE, f"{what} {hex(ptr)} is not aligned to {align} bytes "
                                         "(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)")


_VIEW_NAMES = {v: k for k, v in vars(K).items() if k.startswith("CU_RES_VIEW_FORMAT_")}


def _natural_view(fmt: int, channels: int) -> int:
    """The CUresourceViewFormat that reads an array of this format as it is."""
    base = {K.CU_AD_FORMAT_UNSIGNED_INT8: K.CU_RES_VIEW_FORMAT_UINT_1X8,
            K.CU_AD_FORMAT_SIGNED_INT8: K.CU_RES_VIEW_FORMAT_SINT_1X8,
            K.CU_AD_FORMAT_UNSIGNED_INT16: K.CU_RES_VIEW_FORMAT_UINT_1X16,
            K.CU_AD_FORMAT_SIGNED_INT16: K.CU_RES_VIEW_FORMAT_SINT_1X16,
            K.CU_AD_FORMAT_UNSIGNED_INT32: K.CU_RES_VIEW_FORMAT_UINT_1X32,
            K.CU_AD_FORMAT_SIGNED_INT32: K.CU_RES_VIEW_FORMAT_SINT_1X32,
            K.CU_AD_FORMAT_HALF: K.CU_RES_VIEW_FORMAT_FLOAT_1X16,
            K.CU_AD_FORMAT_FLOAT: K.CU_RES_VIEW_FORMAT_FLOAT_1X32}[fmt]
    return base + {1: 0, 2: 1, 4: 2}[channels]


def _apply_view(res: Resource, v: ResourceViewDesc) -> None:
    """Restrict `res` to a view's levels and layers (formats are never reinterpreted)."""
    if res.kind not in (K.CU_RESOURCE_TYPE_ARRAY, K.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY):
        raise CudaError(E.INVALID_VALUE, "pResViewDesc is only allowed for a CUDA array or "
                                         "mipmapped array resource")
    natural = _natural_view(res.format, res.channels)
    if v.format not in (K.CU_RES_VIEW_FORMAT_NONE, natural):
        raise CudaError(E.NOT_SUPPORTED, f"pResViewDesc->format {_VIEW_NAMES.get(v.format, v.format)} "
                                         "reinterprets the array's texels; cuport supports only "
                                         f"CU_RES_VIEW_FORMAT_NONE or {_VIEW_NAMES[natural]} (the "
                                         "array's own format)")
    s = res.shape
    if (v.width, v.height, v.depth) != (s.width, s.height, s.depth):
        raise CudaError(E.INVALID_VALUE, f"pResViewDesc extents {v.width}x{v.height}x{v.depth} "
                                         f"differ from the resource's {s.width}x{s.height}x{s.depth}")
    nlevels = len(res.levels)
    if not v.firstMipmapLevel <= v.lastMipmapLevel < nlevels or \
            (res.kind == K.CU_RESOURCE_TYPE_ARRAY and v.lastMipmapLevel):
        raise CudaError(E.INVALID_VALUE, f"mipmap levels {v.firstMipmapLevel}..{v.lastMipmapLevel}"
                                         f" of a resource with {nlevels} level(s)")
    layers = s.layers if (s.layered or s.cubemap) else 1
    if not v.firstLayer <= v.lastLayer < layers or (layers == 1 and v.lastLayer):
        raise CudaError(E.INVALID_VALUE, f"layers {v.firstLayer}..{v.lastLayer} of a resource with "
                                         f"{layers} layer(s)")
    res.levels = res.levels[v.firstMipmapLevel:v.lastMipmapLevel + 1]
    for lv in res.levels:
        lv.data += v.firstLayer * lv.slice_pitch
    nlayers = v.lastLayer - v.firstLayer + 1
    if s.layered or s.cubemap:
        res.shape = array.Shape(s.width, s.height, nlayers, s.flags)


# -- decoding -----------------------------------------------------------------------------

_INT_DECODE = {K.CU_AD_FORMAT_UNSIGNED_INT8: T.DECODE_U8, K.CU_AD_FORMAT_SIGNED_INT8: T.DECODE_S8,
               K.CU_AD_FORMAT_UNSIGNED_INT16: T.DECODE_U16,
               K.CU_AD_FORMAT_SIGNED_INT16: T.DECODE_S16}
_NORM_DECODE = {K.CU_AD_FORMAT_UNSIGNED_INT8: T.DECODE_UNORM8,
                K.CU_AD_FORMAT_SIGNED_INT8: T.DECODE_SNORM8,
                K.CU_AD_FORMAT_UNSIGNED_INT16: T.DECODE_UNORM16,
                K.CU_AD_FORMAT_SIGNED_INT16: T.DECODE_SNORM16}


def decode_of(fmt: int, read_as_integer: bool, srgb: bool) -> tuple[int, bool]:
    """(DECODE_*, whether the result words are floats) for a format and read mode."""
    if fmt == K.CU_AD_FORMAT_FLOAT:
        return T.DECODE_BITS32, True
    if fmt == K.CU_AD_FORMAT_HALF:
        return T.DECODE_F16, True
    if fmt in (K.CU_AD_FORMAT_UNSIGNED_INT32, K.CU_AD_FORMAT_SIGNED_INT32):
        return T.DECODE_BITS32, False  # 32-bit integers are never promoted
    if read_as_integer:
        return _INT_DECODE[fmt], False
    if srgb and fmt == K.CU_AD_FORMAT_UNSIGNED_INT8:
        return T.DECODE_SRGB8, True
    return _NORM_DECODE[fmt], True


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


# -- objects ------------------------------------------------------------------------------

_objects: dict[int, _Object] = {}
_lock = threading.Lock()


class _Object:
    """A texture or surface object: its descriptor (whose address is the handle)."""

    what = "object"

    def __init__(self, ctx: context.Context, res: Resource, res_desc: ResourceDesc) -> None:
        self.context = ctx
        self.resource = res
        self.res_desc = res_desc
        self.desc = T.Descriptor()
        self.handle = ctypes.addressof(self.desc)
        self.storage: memory.Allocation | None = None  # the descriptor in device memory

    def fill_levels(self) -> None:
        d, res = self.desc, self.resource
        s = res.shape
        d.channels = res.channels
        d.elem_bytes = res.element
        d.num_levels = len(res.levels)
        d.layers = s.layers if (s.layered or s.cubemap) else 1
        d.flags |= (T.F_LAYERED if s.layered else 0) | (T.F_CUBE if s.cubemap else 0)
        d.query_array_size = (d.layers // 6 if s.cubemap else d.layers) if s.layered else 0
        for i, lv in enumerate(res.levels):
            d.levels[i] = lv

    def register(self) -> int:
        if memory.device_allocates(self.context):
            size = ctypes.sizeof(self.desc)
            # mapped directly, not through memory.allocate: no unsafe call under capture
            self.storage = memory.track(memory.Allocation(memory.map_pages(size, self.context), size,
                                                          "device", self.context))
            memory.move(self.storage.base, ctypes.addressof(self.desc), size)
            self.handle = self.storage.base
        with _lock:
            _objects[self.handle] = self
        return self.handle


class TextureObject(_Object):
    what = "texture object"
    sampling: T.Sampling  # what the descriptor says about sampling (compiled-in facts)


class SurfaceObject(_Object):
    what = "surface object"


def _lookup(handle: int, kind: type[_Object]) -> _Object:
    obj = _objects.get(handle)
    if not isinstance(obj, kind):
        other = f" (it is a {obj.what})" if obj is not None else ""
        raise CudaError(E.INVALID_VALUE, f"{hex(handle)} is not a live {kind.what}{other}")
    return obj


def _destroy(handle: int, kind: type[_Object]) -> None:
    obj = _lookup(handle, kind)
    # kernels queued before the destroy may still read the descriptor
    stream.synchronize_context(obj.context)
    with _lock:
        _objects.pop(handle, None)
    if obj.storage is not None:
        memory.release_now(obj.storage)  # after the synchronisation above


_FLAGS = (K.CU_TRSF_READ_AS_INTEGER | K.CU_TRSF_NORMALIZED_COORDINATES | K.CU_TRSF_SRGB
          | K.CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION | K.CU_TRSF_SEAMLESS_CUBEMAP)


def _texture(res: Resource, t: TextureDesc, res_desc: ResourceDesc) -> TextureObject:
    for axis, mode in enumerate(t.addressMode):
        if mode > K.CU_TR_ADDRESS_MODE_BORDER:
            raise CudaError(E.INVALID_VALUE, f"pTexDesc->addressMode[{axis}] {mode} is not a "
                                             "CUaddress_mode")
    for name in ("filterMode", "mipmapFilterMode"):
        if getattr(t, name) > K.CU_TR_FILTER_MODE_LINEAR:
            raise CudaError(E.INVALID_VALUE, f"pTexDesc->{name} {getattr(t, name)} is not a "
                                             "CUfilter_mode")
    if t.flags & ~_FLAGS:
        raise CudaError(E.INVALID_VALUE, f"pTexDesc->flags {t.flags:#x} has bits that are no "
                                         "CU_TRSF_* flag")
    normalized = bool(t.flags & K.CU_TRSF_NORMALIZED_COORDINATES)
    s = res.shape
    if res.kind == K.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY and not normalized:
        raise CudaError(E.INVALID_VALUE, "a mipmapped array needs CU_TRSF_NORMALIZED_COORDINATES")
    if t.flags & K.CU_TRSF_SEAMLESS_CUBEMAP:
        if not s.cubemap:
            raise CudaError(E.INVALID_VALUE, "CU_TRSF_SEAMLESS_CUBEMAP needs a cubemap array")
        if t.filterMode == K.CU_TR_FILTER_MODE_LINEAR:
            raise CudaError(E.NOT_SUPPORTED, "seamless cubemap filtering (CU_TRSF_SEAMLESS_CUBEMAP "
                                             "with linear filtering) is not supported by cuport")
    decode, float_result = decode_of(res.format, bool(t.flags & K.CU_TRSF_READ_AS_INTEGER),
                                     bool(t.flags & K.CU_TRSF_SRGB))
    obj = TextureObject(context.current(), res, res_desc)
    obj.tex_desc = t
    d = obj.desc
    d.magic = T.MAGIC_TEXTURE
    d.decode = decode
    linear_memory = res.kind == K.CU_RESOURCE_TYPE_LINEAR
    linear_filter = t.filterMode == K.CU_TR_FILTER_MODE_LINEAR and not linear_memory
    d.flags = ((T.F_NORMALIZED if normalized else 0) | (T.F_FLOAT_RESULT if float_result else 0)
               # filtering needs float results; with integer results a texel is picked
               | (T.F_LINEAR_FILTER if linear_filter and float_result else 0)
               | (T.F_MIP_LINEAR if t.mipmapFilterMode == K.CU_TR_FILTER_MODE_LINEAR
                  and float_result else 0))
    seamless = bool(t.flags & K.CU_TRSF_SEAMLESS_CUBEMAP)
    for axis, mode in enumerate(t.addressMode):
        if linear_memory:
            mode = T.ADDRESS_BORDER  # tex1Dfetch out of range reads zeros
        elif seamless:
            mode = T.ADDRESS_CLAMP
        elif not normalized and mode in (T.ADDRESS_WRAP, T.ADDRESS_MIRROR):
            mode = T.ADDRESS_CLAMP  # wrap and mirror need normalized coordinates
        d.address[axis] = mode
    border = [0.0] * 4 if linear_memory else list(t.borderColor)
    for c in range(4):
        d.border[c] = _f32_bits(border[c])
    d.fill[3] = _f32_bits(1.0) if float_result else 1
    d.lod_bias = t.mipmapLevelBias
    d.min_lod = t.minMipmapLevelClamp
    d.max_lod = t.maxMipmapLevelClamp
    d.query_filter = t.filterMode
    for axis in range(3):
        d.query_address[axis] = t.addressMode[axis]
    d.query_normalized = int(normalized)
    obj.fill_levels()
    obj.sampling = T.sampling_of(d)
    return obj


def sampling_of(params: bytes, slots: tuple[tuple[str, int], ...]) -> tuple[tuple[str, T.Sampling], ...]:
    """(parameter, Sampling) for each of a launch's parameters `slots` ((name, byte offset)
    in the packed `params`) that holds a live texture object: what the Vulkan backend compiles
    the launch's variant for. A descriptor never changes, and one is destroyed only after
    the kernels queued before (_destroy), so the facts hold while the launch runs."""
    out = []
    for name, off in slots:
        obj = _objects.get(int.from_bytes(params[off:off + 8], "little"))
        if isinstance(obj, TextureObject):
            out.append((name, obj.sampling))
    return tuple(out)


@implements("cuTexObjectCreate")
def tex_object_create(p_res: int, p_tex: int, p_view: int) -> int:
    res_desc = _read(ResourceDesc, p_res, "pResDesc")
    tex_desc = _read(TextureDesc, p_tex, "pTexDesc")
    context.current()
    res = _resource(res_desc)
    view = None
    if p_view:
        view = _read(ResourceViewDesc, p_view, "pResViewDesc")
        _apply_view(res, view)
    obj = _texture(res, tex_desc, res_desc)
    obj.view_desc = view
    return obj.register()


@implements("cuTexObjectDestroy")
def tex_object_destroy(handle: int) -> None:
    _destroy(handle, TextureObject)


@implements("cuTexObjectGetResourceDesc")
def tex_object_get_resource_desc(p: int, handle: int) -> None:
    _write(p, _lookup(handle, TextureObject).res_desc, "pResDesc")


@implements("cuTexObjectGetTextureDesc")
def tex_object_get_texture_desc(p: int, handle: int) -> None:
    _write(p, _lookup(handle, TextureObject).tex_desc, "pTexDesc")


@implements("cuTexObjectGetResourceViewDesc")
def tex_object_get_resource_view_desc(p: int, handle: int) -> None:
    obj = _lookup(handle, TextureObject)
    if obj.view_desc is None:
        raise CudaError(E.INVALID_VALUE, f"texture object {hex(handle)} was created without a "
                                         "resource view")
    _write(p, obj.view_desc, "pResViewDesc")


# -- surfaces -----------------------------------------------------------------------------

@implements("cuSurfObjectCreate")
def surf_object_create(p_res: int) -> int:
    res_desc = _read(ResourceDesc, p_res, "pResDesc")
    context.current()
    if res_desc.resType != K.CU_RESOURCE_TYPE_ARRAY:
        raise CudaError(E.INVALID_VALUE, f"a surface needs pResDesc->resType "
                                         f"CU_RESOURCE_TYPE_ARRAY, not {res_desc.resType}")
    res = _resource(res_desc)
    a = res.arrays[0]
    if not a.flags & array.SURFACE_LDST:
        raise CudaError(E.INVALID_VALUE, f"array {hex(a.handle)} was created without "
                                         "CUDA_ARRAY3D_SURFACE_LDST (cudaArraySurfaceLoadStore)")
    obj = SurfaceObject(context.current(), res, res_desc)
    d = obj.desc
    d.magic = T.MAGIC_SURFACE
    d.decode, float_result = decode_of(res.format, True, False)
    d.flags = T.F_FLOAT_RESULT if float_result else 0
    obj.fill_levels()
    return obj.register()


@implements("cuSurfObjectDestroy")
def surf_object_destroy(handle: int) -> None:
    _destroy(handle, SurfaceObject)


@implements("cuSurfObjectGetResourceDesc")
def surf_object_get_resource_desc(p: int, handle: int) -> None:
    _write(p, _lookup(handle, SurfaceObject).res_desc, "pResDesc")


def _release(ctx: context.Context) -> None:
    with _lock:
        for handle in [h for h, o in _objects.items() if o.context is ctx]:
            del _objects[handle]


context.RESOURCE_HOOKS.append(_release)
