"""tex, tld4, txq, suld, sust, sured, suq: textures and surfaces through object handles.

PTX ISA §9.7.10 (texture instructions) and §9.7.11 (surface instructions). Unified mode
only: the texture or surface is a `.u64` object handle (`cudaTextureObject_t`,
`cudaSurfaceObject_t`) in a register or kernel parameter, which on the CPU backend is the
address of a descriptor (cuport/backends/cpu/texture_layout.py). Module-scope `.texref`
/ `.surfref` variables (texture references, removed in CUDA 12) and independent mode
(`[tex, sampler, coords]`) are refused with a clear error.

    tex{.level,.grad,.base}.geom.v4.dtype.ctype  d, [a, c] {, lod | , dPdx, dPdy};
        .geom = 1d 2d 3d a1d a2d cube acube; .dtype = f32 s32 u32; .ctype = f32 s32
    tld4.comp.2d.v4.dtype.f32                    d, [a, c];       comp = r g b a
    txq{.level}.query.b32                        d, [a]{, lod};
    suld.b.geom{.cop}{.v2,.v4}.btype{.clamp}     d, [a, c];       geom = 1d 2d 3d a1d a2d
    sust.{b,p}.geom{.cop}{.v2,.v4}.btype{.clamp} [a, c], v;
    sured.b.op.geom.ctype{.clamp}                [a, c], v;       op = add min max and or
    suq.query.b32                                d, [a];
A surface's x coordinate counts bytes (`.b`) or elements (`.p`); .clamp is .trap, .clamp
or .zero. A lane whose object handle is NULL, or whose surface access is out of bounds
under .trap, stops the kernel (an "illegal address" launch failure naming the PTX line).

How a warp does it: the sampling itself is an LLVM function (texture_sampler.py) in two
shapes made from the same code: where the executing lanes of a CPU warp hold one texture
object, one call of the warp's function samples for all of them (`em.per_warp`); otherwise
(and per thread on Vulkan) the per-thread function is called once per executing lane, in
lane order, its results gathered back into the warp's vectors. Surface accesses go lane by
lane; queries (txq, suq) are plain loads of descriptor fields. Where the backend knows
what the operand's object is (`em.texture_facts`: the Vulkan backend's variant for a launch
whose parameter holds a live texture object, passes/texture_params.py), the sampler is made
for that object's format, filter and address modes, which are then constants.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ..ptx import ir
from ..ptx.ir import TYPE_BITS
from . import texture_layout as T
from . import texture_sampler as rt
from .registry import lowers
from .types import I1, I8, I32, I64, PTR, WARP, vec

# -- operands -----------------------------------------------------------------------------


def texture_operand(em, op) -> tuple[object, tuple]:
    """(image, coordinate operands) of `[a, c]`; refuses independent mode."""
    if not (isinstance(op, ir.Vec) and op.items and isinstance(op.items[-1], ir.Vec)):
        raise em.error("a texture or surface operand that is not [object, {coordinates}]")
    if len(op.items) == 3:
        raise em.error("independent texturing mode ([texture, sampler, coordinates]); cuport "
                       "supports unified mode (texture objects) only")
    return op.items[0], op.items[-1].items


def handle(em, image) -> ll.Value:
    """The object handle (u64) of a texture or surface operand, in the current mode."""
    if isinstance(image, ir.Reg):
        return em.read_bits(image, "u64")
    if isinstance(image, ir.Sym):
        if em.is_kernel_param(image.name):
            ptr = em.address(ir.Mem(image, 0), "param")
            return em.load(ptr, I64, 8)
        var = next((v for v in em.ptx.variables if v.name == image.name), None)
        if var is not None and var.type in ("texref", "surfref", "samplerref"):
            raise em.error(f"the texture reference {image.name} (.{var.type} variables were removed "
                           "in CUDA 12; texture and surface objects are supported)")
    raise em.error(f"a texture or surface object that is not a .u64 register ({ir.format_operand(image)})")


def _need(em, coords: tuple, n: int, what: str) -> None:
    if len(coords) < n:
        raise em.error(f"{what} takes {n} coordinates, {len(coords)} given")


def _out_slot(em, name: str, t: ll.Type = I32) -> ll.Value:
    """A stack slot of four `t` (a sampler's result words) as an opaque pointer."""
    slot = em.entry_alloca(ll.ArrayType(t, 4), name)
    slot.type = PTR
    return slot


def _fault(em, bad: ll.Value) -> None:
    """Stop the kernel (CUDA_ERROR_ILLEGAL_ADDRESS) when the i1 `bad` holds."""
    em.fail_if(bad, "illegal_address")


def per_lane(em, args: list[ll.Value], body, nres: int = 0, t: ll.Type = I32) -> list[ll.Value]:
    """Run `body(scalar args) -> [results of type t]` for each executing thread (see
    isa/api.py `per_lane`) and return the results in the current mode."""
    return em.per_lane(args, body, nres, t)


def _sample(em, h: ll.Value, args: list[ll.Value], make) -> list[ll.Value]:
    """The four result words of `make(lanes)` (texture_sampler.sampler or gather, a
    function of (desc, *args, out) that returns 1 for a NULL object) for each executing
    thread: once for the warp where its executing lanes share the object `h`, else lane by
    lane."""
    b = em.b

    def lane(a: list[ll.Value]) -> list[ll.Value]:
        out = _out_slot(em, "tex_out")
        status = b.call(make(1), [b.inttoptr(a[0], PTR), *a[1:], out])
        _fault(em, b.icmp_unsigned("!=", status, ll.Constant(I32, 0)))
        return [b.load(b.gep(out, [ll.Constant(I64, 4 * k)], source_etype=I8), typ=I32)
                for k in range(4)]

    def warp(desc: ll.Value, a: list[ll.Value], lanes: ll.Value) -> list[ll.Value]:
        fn = make(WARP)
        wout = _out_slot(em, "tex_warp_out", vec(I32))
        status = b.call(fn, [b.inttoptr(desc, PTR), *a, wout, lanes])
        _fault(em, b.icmp_unsigned("!=", status, ll.Constant(I32, 0)))
        return [b.load(b.gep(wout, [ll.Constant(I64, 4 * WARP * k)], source_etype=I8),
                       typ=vec(I32), align=4) for k in range(4)]

    return em.per_warp(h, args, lane, warp, 4)


def _write_words(em, dst, words: list[ll.Value]) -> None:
    items = dst.items if isinstance(dst, ir.Vec) else (dst,)
    if len(items) != len(words):
        raise em.error(f"{len(items)} destinations for {len(words)} results")
    for d, w in zip(items, words, strict=True):
        em.write(d, "b32", w)


# -- tex, tld4 ----------------------------------------------------------------------------

_COORDS = {"1d": 1, "2d": 2, "3d": 3, "a1d": 2, "a2d": 3, "cube": 3, "acube": 4}
_RESULTS = ("f32", "s32", "u32")


def _coordinate_values(em, coords: tuple, geom: str, ctype: str) -> list[ll.Value]:
    """The four coordinate arguments of a sampler: f32 (array indices as their bits) or s32."""
    n = _COORDS[geom]
    _need(em, coords, n, f"tex.{geom}")
    out = []
    for k, c in enumerate(coords[:n]):
        index = k == 0 and geom in ("a1d", "a2d", "acube")
        if ctype == "s32":
            out.append(em.read_bits(c, "s32"))
        elif index:
            out.append(em.to_value(em.read_bits(c, "b32"), "f32"))
        else:
            out.append(em.read(c, "f32"))
    zero = em.read(ir.Imm(0), "s32") if ctype == "s32" else em.const("f32", 0.0)
    return (out + [zero] * 4)[:4]


def _kinds(em, ins: ir.Instr, first: int) -> tuple[str, str, str, str]:
    mods = list(ins.mods[first:])
    lod = mods.pop(0) if mods and mods[0] in ("level", "grad", "base") else "none"
    if not mods or mods[0] not in rt.GEOMETRIES:
        geom = mods[0] if mods else "?"
        raise em.error(f"texture geometry .{geom} (1d, 2d, 3d, a1d, a2d, cube and acube are "
                       "supported)")
    geom = mods.pop(0)
    if mods[:1] != ["v4"]:
        raise em.error("a texture result other than .v4 (.v2.f16x2 is not supported)")
    dtype, ctype = mods[-2], mods[-1]
    if dtype not in _RESULTS:
        raise em.error(f"texture results of type .{dtype} (f32, s32 and u32 are supported)")
    if ctype not in ("f32", "s32"):
        raise em.error(f"texture coordinates of type .{ctype}")
    return lod, geom, dtype, ctype


@lowers("tex")
def lower_tex(em, ins: ir.Instr) -> None:
    lod, geom, _dtype, ctype = _kinds(em, ins, 0)
    dst = ins.args[0]
    if isinstance(dst, ir.PredPair):
        raise em.error("the residency predicate of tex (d|p; sparse textures)")
    image, coords = texture_operand(em, ins.args[1])
    extra = ins.args[2:]
    want = {"none": 0, "base": 0, "level": 1, "grad": 2}[lod]
    if len(extra) != want:
        raise em.error("texel offsets or a depth-compare operand (not supported)"
                       if len(extra) > want else f"tex.{lod} without its operands")
    if geom in ("cube", "acube") and ctype != "f32":
        raise em.error("cubemap coordinates must be .f32")
    if lod == "grad" and geom in ("cube", "acube"):
        raise em.error("tex.grad on a cubemap (not supported)")
    h = handle(em, image)
    cs = _coordinate_values(em, coords, geom, ctype)
    lodv = em.read(extra[0], "f32") if lod == "level" else em.const("f32", 0.0)
    grads = [em.const("f32", 0.0)] * 6
    if lod == "grad":
        dims = rt.GEOMETRIES[geom][0]
        grads = []
        for g in extra:
            items = g.items if isinstance(g, ir.Vec) else (g,)
            if len(items) < dims:
                raise em.error(f"a gradient of {len(items)} components for a {dims}D texture")
            grads += [em.read(x, "f32") for x in items[:dims]] + [em.const("f32", 0.0)] * (3 - dims)

    spec = em.texture_facts(image)

    def make(lanes: int) -> ll.Function:
        return rt.sampler(em.module, geom, ctype == "s32", lod, lanes, spec)

    _write_words(em, dst, _sample(em, h, [*cs, lodv, *grads], make))


@lowers("tld4")
def lower_tld4(em, ins: ir.Instr) -> None:
    comp = ins.mods[0] if ins.mods else "?"
    if comp not in ("r", "g", "b", "a"):
        raise em.error(f"tld4 component .{comp}")
    lod, geom, _dtype, ctype = _kinds(em, ins, 1)
    if lod != "none" or geom not in ("2d", "a2d") or ctype != "f32":
        raise em.error("tld4 other than .2d/.a2d with .f32 coordinates")
    if len(ins.args) != 2 or isinstance(ins.args[0], ir.PredPair):
        raise em.error("tld4 with offsets, depth compare or a residency predicate")
    image, coords = texture_operand(em, ins.args[1])
    h = handle(em, image)
    cs = _coordinate_values(em, coords, geom, "f32")

    spec = em.texture_facts(image)

    def make(lanes: int) -> ll.Function:
        return rt.gather(em.module, geom, "rgba".index(comp), lanes, spec)

    _write_words(em, ins.args[0], _sample(em, h, cs, make))


# -- txq, suq -----------------------------------------------------------------------------

#: query -> byte offset of the descriptor word that answers it (level 0 for sizes)
_TXQ = {
    "width": T.offset("levels") + T.level_offset("width"),
    "height": T.offset("levels") + T.level_offset("height"),
    "depth": T.offset("levels") + T.level_offset("depth"),
    "num_mipmap_levels": T.offset("num_levels"),
    "array_size": T.offset("query_array_size"),
    "normalized_coords": T.offset("query_normalized"),
    "filter_mode": T.offset("query_filter"),
    "addr_mode_0": T.offset("query_address"),
    "addr_mode_1": T.offset("query_address") + 4,
    "addr_mode_2": T.offset("query_address") + 8,
}
_SUQ = ("width", "height", "depth", "array_size")


DESCRIPTOR_BYTES = T.offset("levels") + T.MAX_LEVELS * T.LEVEL_SIZE


def _null_descriptor(em) -> ll.Value:
    """A zeroed descriptor's address: what a query of a NULL object reads."""
    return em.zero_bytes(DESCRIPTOR_BYTES)


def _query(em, ins: ir.Instr, table: dict, what: str) -> None:
    mods = list(ins.mods)
    level = mods[0] == "level" if mods else False
    if level:
        mods.pop(0)
    query = mods[0] if mods else "?"
    if query not in table or mods[1:] != ["b32"]:
        raise em.error(f"{what}.{query} (queries {', '.join(table)} are supported)")
    mem = ins.args[1]
    if not isinstance(mem, ir.Mem) or mem.offset:
        raise em.error(f"{what} of an operand that is not [object]")
    b = em.b
    h = handle(em, mem.base)
    null = em.const_int(64, 0)
    zeros = _null_descriptor(em)
    h = b.select(b.icmp_unsigned("==", h, null), em.splat(zeros) if em.vec else zeros, h)
    off = em.const_int(64, table[query])
    if level:
        if query not in ("width", "height", "depth"):
            raise em.error(f"{what}.level.{query}")
        lod = em.read_bits(ins.args[2], "s32")
        off = b.add(off, b.mul(b.sext(lod, em.bty("s64")), em.const_int(64, T.LEVEL_SIZE)))
    addr = b.add(h, off)
    ptr = b.inttoptr(addr, vec(PTR) if em.vec else PTR)
    em.write(ins.args[0], "b32", em.load(ptr, I32, 4))


@lowers("txq")
def lower_txq(em, ins: ir.Instr) -> None:
    _query(em, ins, _TXQ, "txq")


@lowers("suq")
def lower_suq(em, ins: ir.Instr) -> None:
    _query(em, ins, {k: _TXQ[k] for k in _SUQ}, "suq")


# -- surfaces -----------------------------------------------------------------------------

_CLAMP = {"trap": rt.SURF_TRAP, "clamp": rt.SURF_CLAMP, "zero": rt.SURF_ZERO}
_SURF_COORDS = {"1d": 1, "2d": 2, "3d": 3, "a1d": 2, "a2d": 3}


def _surface(em, ins: ir.Instr, kinds: tuple[str, ...]):
    """(kind b/p, geometry, element count, element type, clamp mode, extra modifiers)."""
    mods = list(ins.mods)
    kind = mods.pop(0) if mods and mods[0] in ("b", "p") else "?"
    if kind not in kinds:
        raise em.error(f"{ins.op}.{kind} (" + ", ".join(f"{ins.op}.{k}" for k in kinds)
                       + " supported)")
    extra = []
    while mods and mods[0] not in _SURF_COORDS:
        extra.append(mods.pop(0))
    if not mods:
        raise em.error("a surface geometry (1d, 2d, 3d, a1d, a2d are supported)")
    geom = mods.pop(0)
    mode = rt.SURF_TRAP
    if mods and mods[-1] in _CLAMP:
        mode = _CLAMP[mods.pop()]
    n = 1
    for m in list(mods):
        if m in ("v2", "v4"):
            n = int(m[1])
            mods.remove(m)
        elif m in ("ca", "cg", "cs", "cv", "wb", "wt"):
            mods.remove(m)  # cache operators: no cache here
    return kind, geom, n, mods, mode, extra


def _surface_coords(em, coords: tuple, geom: str) -> list[ll.Value]:
    """(x, y, z, layer) of a surface access as s32 values."""
    n = _SURF_COORDS[geom]
    _need(em, coords, n, f"a .{geom} surface")
    vals = [em.read_bits(c, "s32") for c in coords[:n]]
    zero = em.const_int(32, 0)
    layer = zero
    if geom.startswith("a"):
        layer = vals.pop(0)
    vals = (vals + [zero, zero, zero])[:3]
    return [*vals, layer]


def _zeros(em) -> ll.Value:
    return _null_descriptor(em)  # at least 32 zero bytes: what .zero reads out of bounds


@lowers("suld")
def lower_suld(em, ins: ir.Instr) -> None:
    _, geom, n, rest, mode, _ = _surface(em, ins, ("b",))
    if len(rest) != 1 or rest[0] not in ("b8", "b16", "b32", "b64"):
        raise em.error("suld.b needs one of .b8 .b16 .b32 .b64")
    t = rest[0]
    size = TYPE_BITS[t] // 8
    image, coords = texture_operand(em, ins.args[1])
    dst = ins.args[0]
    items = dst.items if isinstance(dst, ir.Vec) else (dst,)
    if len(items) != n:
        raise em.error(f"a .v{n} load into {len(items)} registers")
    b = em.b
    h = handle(em, image)
    cs = _surface_coords(em, coords, geom)
    fn = rt.surface_address(em.module, geom)
    et = ll.IntType(8 * size)
    zeros = _zeros(em)

    def body(a: list[ll.Value]) -> list[ll.Value]:
        addr = b.call(fn, [b.inttoptr(a[0], PTR), *a[1:], ll.Constant(I32, size * n),
                           ll.Constant(I32, mode), ll.Constant(I1, 0)])
        _fault(em, b.icmp_unsigned("==", addr, ll.Constant(I64, rt.ADDR_TRAP)))
        addr = b.select(b.icmp_unsigned("==", addr, ll.Constant(I64, rt.ADDR_DROP)), zeros, addr)
        out = []
        for k in range(n):
            p = b.inttoptr(b.add(addr, ll.Constant(I64, k * size)), PTR)
            v = b.load(p, typ=et, align=size)
            out.append(b.zext(v, I64) if size < 8 else v)
        return out

    for d, v in zip(items, per_lane(em, [h, *cs], body, n, I64), strict=True):
        em.write(d, t, v if size == 8 else b.trunc(v, em.bty(t)))


def _store_lanes(em, args: list[ll.Value], body) -> None:
    """Side effects per executing thread, in lane order (uniform operands included)."""

    def run(xs: list[ll.Value]) -> list[ll.Value]:
        body(xs)
        return []

    em.per_lane(args, run, 0)


@lowers("sust")
def lower_sust(em, ins: ir.Instr) -> None:
    kind, geom, n, rest, mode, _ = _surface(em, ins, ("b", "p"))
    if len(rest) != 1 or rest[0] not in (("b8", "b16", "b32", "b64") if kind == "b" else ("b32",)):
        raise em.error(f"sust.{kind} with element type {'.'.join(rest) or 'missing'}")
    t = rest[0]
    size = TYPE_BITS[t] // 8
    image, coords = texture_operand(em, ins.args[0])
    src = ins.args[1]
    items = src.items if isinstance(src, ir.Vec) else (src,)
    if len(items) != n:
        raise em.error(f"a .v{n} store of {len(items)} values")
    b = em.b
    h = handle(em, image)
    cs = _surface_coords(em, coords, geom)
    vals = [em.read_bits(x, t) for x in items]
    fn = rt.surface_address(em.module, geom)
    access = size * n if kind == "b" else 0  # .p: the element's size, known at run time
    fmt = rt.formatted_store(em.module) if kind == "p" else None

    def body(a: list[ll.Value]) -> None:
        desc = b.inttoptr(a[0], PTR)
        nbytes = ll.Constant(I32, access) if kind == "b" else b.load(
            b.gep(desc, [ll.Constant(I64, T.offset("elem_bytes"))], source_etype=I8), typ=I32)
        addr = b.call(fn, [desc, *a[1:5], nbytes, ll.Constant(I32, mode),
                           ll.Constant(I1, kind == "p")])
        _fault(em, b.icmp_unsigned("==", addr, ll.Constant(I64, rt.ADDR_TRAP)))
        with b.if_then(b.icmp_unsigned("!=", addr, ll.Constant(I64, rt.ADDR_DROP))):
            if kind == "b":
                for k, v in enumerate(a[5:]):
                    p = b.inttoptr(b.add(addr, ll.Constant(I64, k * size)), PTR)
                    b.store(v, p, align=size)
            else:
                words = ll.Constant(vec(I32, 4), None)
                for k, v in enumerate(a[5:]):
                    words = b.insert_element(words, v, ll.Constant(I32, k))
                b.call(fmt, [desc, addr, words])

    _store_lanes(em, [h, *cs, *vals], body)


_RED = {("add", "u"): "add", ("add", "s"): "add", ("min", "u"): "umin", ("min", "s"): "min",
        ("max", "u"): "umax", ("max", "s"): "max", ("and", "b"): "and", ("or", "b"): "or"}


@lowers("sured")
def lower_sured(em, ins: ir.Instr) -> None:
    _, geom, n, rest, mode, extra = _surface(em, ins, ("b",))
    if n != 1 or len(extra) != 1 or len(rest) != 1:
        raise em.error("sured.b.op.geom.type{.clamp} with one operation and one type")
    op, t = extra[0], rest[0]
    key = (op, "u" if t[0] == "b" and op in ("add", "min", "max") else t[0])
    if key not in _RED or t not in ("u32", "s32", "b32", "u64", "s64", "b64"):
        raise em.error(f"sured.{op} on .{t}")
    size = TYPE_BITS[t] // 8
    image, coords = texture_operand(em, ins.args[0])
    b = em.b
    h = handle(em, image)
    cs = _surface_coords(em, coords, geom)
    v = em.read_bits(ins.args[1], t)
    fn = rt.surface_address(em.module, geom)

    def body(a: list[ll.Value]) -> None:
        addr = b.call(fn, [b.inttoptr(a[0], PTR), *a[1:5], ll.Constant(I32, size),
                           ll.Constant(I32, mode), ll.Constant(I1, 0)])
        _fault(em, b.icmp_unsigned("==", addr, ll.Constant(I64, rt.ADDR_TRAP)))
        with b.if_then(b.icmp_unsigned("!=", addr, ll.Constant(I64, rt.ADDR_DROP))):
            b.atomic_rmw(_RED[key], b.inttoptr(addr, PTR), a[5], "monotonic")

    _store_lanes(em, [h, *cs, v], body)

