"""LLVM IR → optimised native object for the host CPU → linked, callable code.

One LLJIT instance per process. Every compiled kernel specialization is an object file
(kept in the disk cache, see cache.py) linked into its own JIT library together with the
addresses of the module's global variables and of the host callbacks it imports.
"""

from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.binding as llvm
from llvmlite.binding import orcjit

_lock = threading.Lock()
_state: dict = {}
#: every JIT library ever linked, never disposed: disposing one (ORC's resource-tracker
#: removal, llvmlite 0.50) was seen to spin forever now and then, at a module's unload at
#: exit (tests/programs/dynamic_parallelism, 1 run in 3 from the disk cache). The code of
#: an unloaded module stays mapped until the process exits; its globals are freed as before.
_linked: list = []


def _init() -> dict:
    with _lock:
        if not _state:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            target = llvm.Target.from_default_triple()
            cpu = llvm.get_host_cpu_name()
            features = llvm.get_host_cpu_features().flatten()
            # CUPORT_CPU_FEATURES="-avx512f" (LLVM's +/- feature list, appended): measure
            # what another vector width costs on this host (part of the cache key below)
            extra = os.environ.get("CUPORT_CPU_FEATURES", "").strip(", ")
            if extra:
                features = f"{features},{extra}" if features else extra
            # the JIT's code model (large on x86-64): RuntimeDyld maps code and data apart,
            # and the small model's 32-bit offsets between them aborted programs whose
            # mappings landed 2 GiB apart (tests/backend/test_jit_relocations.py)
            tm = target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic",
                                              codemodel="jitdefault")
            _state["tm"] = tm
            _state["cpu"] = cpu
            _state["features"] = features
            _state["triple"] = llvm.get_process_triple()
            _state["jit"] = llvm.create_lljit_compiler(tm)
            _state["count"] = 0
    return _state


def host_description() -> str:
    """CPU name and features: part of every cache key."""
    s = _init()
    return f"{s['triple']}|{s['cpu']}|{s['features']}"


def _features_on() -> dict[str, bool]:
    s = _init()
    on = s.get("on")
    if on is None:
        on = {}
        for f in s["features"].split(","):  # (a later +/- of a feature overrides)
            if f[:1] in "+-" and f[1:]:
                on[f[1:]] = f[0] == "+"
        s["on"] = on
    return on


def mask_registers() -> bool:
    """Whether the host has AVX-512 mask registers for 32 lanes (an i32 lane mask is then a
    vector mask in one instruction)."""
    on = _features_on()
    return on.get("avx512f", False) and on.get("avx512bw", False)


def single_access_16() -> bool:
    """Whether LLVM makes a 16-byte atomic load or store one access here (no libatomic
    call), so that an ordered 16-byte vector access never tears: x86-64 with AVX (Intel and
    AMD document aligned 16-byte vector accesses as atomic there; LLVM emits vmovdqa) or
    else CMPXCHG16B (a load is then a locked compare-and-swap, which needs writable memory:
    cuport's device memory is), and AArch64 (LDP/STP with LSE2, an exclusive pair without)."""
    triple = _init()["triple"]
    if triple.startswith(("aarch64", "arm64")):
        return True
    on = _features_on()
    return triple.startswith("x86_64") and (on.get("avx", False) or on.get("cx16", False))


def target_machine():
    return _init()["tm"]


def _pass_builder(tm):
    """O3 without LLVM's own vectorizers: the code is vectorized already (a warp's 32 lanes
    are LLVM vectors), and the SLP vectorizer took a third of the compile time of large
    kernels for nothing. PTX loops come unrolled by nvcc as the programmer asked."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pto.loop_unrolling = False
    return llvm.create_pass_builder(tm, pto)


def parse(ir_text: str):
    """The LLVM module of `ir_text`, verified, for this host, with every function marked
    null_pointer_is_valid: a kernel that reads or writes address 0 must fault
    (CUDA_ERROR_ILLEGAL_ADDRESS) as on a GPU, where LLVM would otherwise delete the access
    as undefined behaviour, and the rest of the kernel after it."""
    s = _init()
    mod = llvm.parse_assembly(ir_text)
    mod.triple = s["triple"]
    mod.data_layout = str(s["tm"].target_data)
    mod.verify()
    for f in mod.functions:
        f.add_function_attribute("null_pointer_is_valid")
    return mod


def optimize(mod):
    """O3 without the vectorizers (see _pass_builder), no fast-math; in place."""
    if os.environ.get("CUPORT_NO_OPT") != "1":
        tm = _init()["tm"]
        pb = _pass_builder(tm)
        pb.getModulePassManager().run(mod, pb)
    return mod


def emit_object(mod) -> bytes:
    return _init()["tm"].emit_object(mod)


def emit_assembly(mod) -> str:
    return _init()["tm"].emit_assembly(mod)


def optimize_and_emit(ir_text: str) -> bytes:
    """Parse, verify, optimise and emit an object file."""
    return emit_object(optimize(parse(ir_text)))


def assembly(ir_text: str) -> str:
    """The optimised native assembly, for `cuport ptx --dump-after codegen` and debugging."""
    return emit_assembly(optimize(parse(ir_text)))


class Linked:
    """A linked object: its exported `worker` entry as a ctypes function."""

    WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32)

    def __init__(self, lib, worker_addr: int) -> None:
        self._lib = lib  # keeps the JIT library alive
        self.worker_addr = worker_addr
        self.worker = self.WORKER(worker_addr)


def link(obj: bytes, symbols: dict[str, int]) -> Linked:
    """Link an object file, binding each imported symbol name to its address."""
    s = _init()
    with _lock:
        s["count"] += 1
        name = f"cuport_lib{s['count']}"
    builder = orcjit.JITLibraryBuilder().add_object_img(obj).add_current_process()
    for sym, addr in symbols.items():
        builder.import_symbol(sym, addr)
    builder.export_symbol("worker")
    lib = builder.link(s["jit"], name)
    with _lock:
        _linked.append(lib)
    return Linked(lib, lib["worker"])
