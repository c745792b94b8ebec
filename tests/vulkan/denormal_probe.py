"""What a Vulkan device does with subnormal floats, operation by operation (a diagnostic, not
a test): each operation runs once as the bare SPIR-V instruction (`raw`, no emulation, no
DenormPreserve mode) and once as cuport translates it for this device (`cuport`: the float
modes the backend would use). For every operation it prints how many results differ from
IEEE arithmetic with subnormals kept (numpy's), how many of those equal the result with
subnormal inputs flushed, with a flushed result, or both, and the first differing cases.

    python tests/vulkan/denormal_probe.py            # the first usable Vulkan device

Run on the H200 host from the repository root (see tests/vulkan/gpu_check_spirv.sh for the
environment); takes a few seconds."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from elementwise import apply  # noqa: E402
from llvmlite import ir as ll  # noqa: E402
from spvtools import F16, F32, F64  # noqa: E402

from cuport.backends.vulkan.spirv import FloatModes  # noqa: E402


def _values(dt) -> np.ndarray:
    if dt == np.float32:
        tiny = 2.0 ** -126
        v = [0.0, -0.0, 1e-45, -1e-45, 2.0 ** -140, -(2.0 ** -133), 2.0 ** -127, 1.1754942e-38,
             tiny, -tiny, 1.5 * tiny, 2.0 ** -125, 2.0 ** -100, 2.0 ** -70, 2.0 ** -60, 0.75, 1.0,
             -1.0, 3.0, 2.0 ** 20, 2.0 ** 60, 2.0 ** 100, 3.4028235e38, np.inf, -np.inf, np.nan]
    elif dt == np.float64:
        tiny = 2.0 ** -1022
        v = [0.0, -0.0, 5e-324, -5e-324, 2.0 ** -1040, 2.0 ** -1023, tiny, -tiny, 1.5 * tiny,
             2.0 ** -1000, 2.0 ** -540, 1.0, -1.0, 3.0, 2.0 ** 540, 2.0 ** 1000, np.inf, np.nan]
    else:
        tiny = 2.0 ** -14
        v = [0.0, -0.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -20, tiny, -tiny, 1.5 * tiny, 2.0 ** -7,
             1.0, -1.0, 3.0, 2.0 ** 7, 2.0 ** 14, np.inf, np.nan]
    return np.array(v, dtype=dt)


def _pairs(dt):
    v = _values(dt)
    a, b = np.meshgrid(v, v)
    return a.ravel(), b.ravel()


def _flush(x: np.ndarray) -> np.ndarray:
    tiny = np.finfo(x.dtype).tiny
    return np.where((np.abs(x) < tiny) & (x != 0), np.copysign(np.zeros_like(x), x), x)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _same(g: np.ndarray, w: np.ndarray) -> np.ndarray:
    if g.dtype.kind == "f":
        return (_bits(g) == _bits(w)) | (np.isnan(g) & np.isnan(w))
    return g == w


def _hex(x) -> str:
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return f"{x.item()!r}(0x{int(_bits(x.reshape(1))[0]):0{x.dtype.itemsize * 2}x})"
    return str(x.item())


def report(name: str, inputs: list[np.ndarray], got: np.ndarray, ref) -> str:
    """One line (and the first cases) for an operation: ref(*inputs) is the IEEE result."""
    with np.errstate(all="ignore"):
        want = ref(*inputs)
        flushed_in = ref(*[_flush(x) if x.dtype.kind == "f" else x for x in inputs])

    def fo(x):
        return _flush(x) if x.dtype.kind == "f" else x
    bad = ~_same(got, want)
    n = int(bad.sum())
    if not n:
        return f"{name:<24} ok ({len(got)} cases)"
    cats = {"inputs flushed": _same(got, flushed_in), "result flushed": _same(got, fo(want)),
            "both flushed": _same(got, fo(flushed_in))}
    parts = ", ".join(f"{k} {int((bad & v).sum())}" for k, v in cats.items())
    lines = [f"{name:<24} {n}/{len(got)} differ ({parts})"]
    for i in np.nonzero(bad)[0][:4]:
        args = " ".join(_hex(x[i]) for x in inputs)
        lines.append(f"    {args} -> {_hex(got[i])}, IEEE {_hex(want[i])}")
    return "\n".join(lines)


def device_modes() -> FloatModes:
    """The float modes cuport's backend uses on this device (backend.caps_of, and the
    subnormal handling VulkanBackend._subnormal_modes adds)."""
    from spvrun import device, on_device

    from cuport.backends.vulkan.backend import caps_of

    return on_device(caps_of(device().info).float_modes())


def main() -> int:
    from spvrun import device

    info = device().info
    print(f"device: {info.name} ({info.driver_name} {info.driver_info})")
    print("float controls:", {k: v for k, v in info.float_controls.items() if "Denorm" in k})
    import test_spirv_fpmath

    fused = all(test_spirv_fpmath._probe())
    print("fma fused:", fused)
    sim = "--simulate" in sys.argv  # lavapipe made to flush as NVIDIA's driver does
    raw = FloatModes(fused_fma=fused, simulate_flush32=sim)
    try:
        mine = dataclasses.replace(device_modes(), fused_fma=fused, simulate_flush32=sim,
                                   flush32=device_modes().flush32 or sim)
    except Exception as e:  # noqa: BLE001 (a diagnostic: say why and go on)
        print("cuport's float modes unavailable:", e)
        mine = None
    preserve = dataclasses.replace(raw, denorm_preserve=(16, 32, 64))
    variants = [("raw", raw), ("cuport", mine)] + ([("raw+DenormPreserve", preserve)]
                                                   if "--preserve-mode" in sys.argv else [])
    for dt, t, w in ((np.float32, F32, 32), (np.float64, F64, 64), (np.float16, F16, 16)):
        ops = _ops(dt, t, w)
        print(f"--- f{w}")
        for name, build, ins, ref in ops:
            for label, modes in variants:
                if modes is None:
                    continue
                try:
                    out_dt = np.uint8 if name.startswith("fcmp") else None
                    got = _run(build, ins, dt, out_dt, modes, name)
                except Exception as e:  # noqa: BLE001 (a diagnostic: report and go on)
                    print(f"{label:<8} {name:<24} failed: {type(e).__name__}: {str(e)[:300]}")
                    continue
                if ref is None:
                    print(f"{label:<8} {name:<24} " + "; ".join(
                        " ".join(_hex(x[i]) for x in ins) + f" -> {_hex(got[i])}" for i in range(min(len(got), 12))
                        if any(x.dtype.kind == "f" and 0 < abs(float(x[i])) < float(np.finfo(x.dtype).tiny) for x in ins)
                        or (got.dtype.kind == "f" and 0 < abs(float(got[i])) < float(np.finfo(got.dtype).tiny))
                        or name == "exp2"))
                    continue
                print(f"{label:<8} " + report(name, ins, got, ref).replace("\n", "\n         "))
    return 0


def _ops(dt, t, w) -> list:
    """(name, build, inputs, IEEE reference or None: print the subnormal cases) per operation."""
    a, b = _pairs(dt)
    c = np.roll(b, 7)
    ops = [
        ("fadd", lambda k, v: k.b.fadd(*v), [a, b], np.add),
        ("fsub", lambda k, v: k.b.fsub(*v), [a, b], np.subtract),
        ("fmul", lambda k, v: k.b.fmul(*v), [a, b], np.multiply),
        ("fneg", lambda k, v: k.b.fneg(v[0]), [a], np.negative),
        ("fabs", lambda k, v: k.intrinsic(f"llvm.fabs.f{w}", t, v), [a], np.abs),
        ("fcmp olt", lambda k, v: k.b.fcmp_ordered("<", *v), [a, b], np.less),
        ("fcmp oeq", lambda k, v: k.b.fcmp_ordered("==", *v), [a, b], np.equal),
        ("fcmp une", lambda k, v: k.b.fcmp_unordered("!=", *v), [a, b], np.not_equal),
        ("select", lambda k, v: k.b.select(k.b.fcmp_ordered("ord", v[0], v[0]), v[1], v[0]), [a, b],
         lambda x, y: np.where(np.isnan(x), x, y)),
    ]
    if w != 16:
        ops += [
            ("fma", lambda k, v: k.intrinsic(f"llvm.fma.f{w}", t, v), [a, b, c], None),
            ("OpFDiv", lambda k, v: k.op("OpFDiv", t, list(v)), [a, b], None),
            ("fdiv", lambda k, v: k.b.fdiv(*v), [a, b], np.divide),
            ("sqrt", lambda k, v: k.intrinsic(f"llvm.sqrt.f{w}", t, v), [np.abs(a)], np.sqrt),
            ("minnum", lambda k, v: k.intrinsic(f"llvm.minnum.f{w}", t, v), [a, b], np.fmin),
            ("maxnum", lambda k, v: k.intrinsic(f"llvm.maxnum.f{w}", t, v), [a, b], np.fmax),
            ("floor", lambda k, v: k.intrinsic(f"llvm.floor.f{w}", t, v), [a], np.floor),
            ("ceil", lambda k, v: k.intrinsic(f"llvm.ceil.f{w}", t, v), [a], np.ceil),
            ("trunc", lambda k, v: k.intrinsic(f"llvm.trunc.f{w}", t, v), [a], np.trunc),
            ("rint", lambda k, v: k.intrinsic(f"llvm.rint.f{w}", t, v), [a], np.rint),
            ("fptosi i32", lambda k, v: k.b.fptosi(v[0], ll.IntType(32)), [np.clip(np.nan_to_num(a), -1e9, 1e9)],
             lambda x: np.nan_to_num(x).astype(np.int32)),
        ]
    if w == 32:
        x64 = _values(np.float64)
        ops += [
            ("fpext f32->f64", lambda k, v: k.b.fpext(v[0], F64), [a], lambda x: x.astype(np.float64)),
            ("fptrunc f32->f16", lambda k, v: k.b.fptrunc(v[0], F16), [a * np.float32(2.0 ** 110)],
             lambda x: x.astype(np.float16)),
            ("exp2", lambda k, v: k.intrinsic("llvm.exp2.f32", t, v),
             [np.array([-126, -127, -130, -140, -149, -150, 0, 1], np.float32)], None),
            ("log2", lambda k, v: k.intrinsic("llvm.log2.f32", t, v), [np.abs(a)], None),
            ("fptrunc f64->f32", lambda k, v: k.b.fptrunc(v[0], F32),
             [np.concatenate([x64, x64 * 2.0 ** 877, x64 * 2.0 ** 880])], lambda x: x.astype(np.float32)),
        ]
    if w == 16:
        ops += [("fpext f16->f32", lambda k, v: k.b.fpext(v[0], F32), [a], lambda x: x.astype(np.float32))]
    return ops


_OUT = {"fpext f32->f64": np.float64, "fptrunc f32->f16": np.float16, "fptrunc f64->f32": np.float32,
        "fpext f16->f32": np.float32, "fptosi i32": np.int32}


def _run(build, ins, dt, out_dt, modes, name):
    return apply(build, ins, out_dt or _OUT.get(name, dt), device_modes=False, float_modes=modes)


if __name__ == "__main__":
    sys.exit(main())
