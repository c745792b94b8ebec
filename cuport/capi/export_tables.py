"""cuGetExportTable: the private tables NVIDIA's runtime needs, and what their slots do.

The layout (UUIDs, slot counts, which slot is which function) is data in
capi/export_layout.py, shared with the C build. At start-up `install` builds each
table in memory: slot 0 the size where the table has one, the implemented slots
pointing at their C entries, every other slot at a stub that reports the table and
slot and returns CUDA_ERROR_NOT_SUPPORTED.

The INTEGRITY_CHECK digest is HMAC-MD2 over the values the runtime checks it
against (cudart-protocol.md): get any of them wrong and every later runtime call
fails with error 103.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
import traceback

from cuport.capi import dispatch, export_layout, md2, types
from cuport.driver import context, device, trace
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E, report

INTEGRITY_KEY = bytes.fromhex("146ADDAE53A9A752AA0841360BF55A9F")
INTEGRITY_CONSTANTS = {
    0: (0x3341181C03CB675C, 0x8ED383AA1F4CD1E8),
    1: (0x1841181C03CB675C, 0x8ED383AA1F4CD1E8),
}
HOOK_FLAG_COUNT = 1024  # more profiler callback ids than any runtime has (567 in 13.5)

_tables: dict[bytes, tuple[export_layout.ExportTable, object, int]] = {}  # uuid -> (layout, cdata, address)
_keep: list[object] = []


def integrity_digest(version: int, unix_seconds: int, *, driver_version: int, pid: int,
                     thread: int, cudart_table: int, integrity_table: int, slot_function: int,
                     devices: list[tuple[bytes, int, int, int]]) -> tuple[int, int]:
    """INTEGRITY_CHECK slot 1's answer, as two 64-bit words."""
    if version % 10 in INTEGRITY_CONSTANTS:
        return INTEGRITY_CONSTANTS[version % 10]
    message = struct.pack("<IIIIQQQQ", driver_version, version, pid & 0xFFFFFFFF,
                          thread & 0xFFFFFFFF, cudart_table, integrity_table, slot_function,
                          unix_seconds)
    for uuid, domain, bus, dev in devices:
        message += struct.pack("<16siii", uuid, domain, bus, dev)
    digest = md2.hmac_md2(INTEGRITY_KEY, message)
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


def _device_identities() -> list[tuple[bytes, int, int, int]]:
    out = []
    for d in device.devices():
        out.append((d.uuid, d.attribute(K.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                    d.attribute(K.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
                    d.attribute(K.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)))
    return out


def table_slot(name: str, slot: int) -> int:
    """The address a table's slot holds (the C entry the runtime calls)."""
    for layout, cdata, _ in _tables.values():
        if layout.name == name:
            return int(types.ffi().cast("uintptr_t", cdata[slot]))
    raise KeyError(name)


def table_address(name: str) -> int:
    for layout, _, address in _tables.values():
        if layout.name == name:
            return address
    raise KeyError(name)


@implements("cuGetExportTable", before_init=True)
def get_export_table(uuid_address: int) -> int:
    if uuid_address == 0:
        raise CudaError(E.INVALID_VALUE, "pExportTableId is NULL")
    uuid = types.read_bytes(uuid_address, 16)
    entry = _tables.get(uuid)
    if entry is None:
        raise CudaError(E.NOT_FOUND, f"no export table {uuid.hex()}", quiet=True, outs=(0,))
    return entry[2]


# -- the slots --------------------------------------------------------------------------

def install(ffi, lib) -> None:
    """Build the tables and attach the slot implementations (called once at start-up)."""
    handlers = _handlers(ffi, lib)
    for name, (ret, _) in export_layout.SLOT_SIGNATURES.items():
        error = None if ret == "void" else (0 if ret == "uint32_t" else int(E.UNKNOWN))
        ffi.def_extern(name=f"cuport_slot_{name}", error=error)(_guard(name, handlers[name], ret))
    ffi.def_extern(name="cuport_unknown_slot", error=int(E.UNKNOWN))(_unknown_slot)

    def void_cls_memo() -> None:  # (boot.c's memo of cls_get answers)
        lib.cuport_cls_generation += 1

    context.STACK_HOOKS.append(void_cls_memo)
    # C entries in front of the slots' Python (capi/build.py), in SLOT_SIGNATURES order
    entries = dict(zip(export_layout.SLOT_SIGNATURES, lib.cuport_slot_entries, strict=True))
    stub = 0
    for layout in export_layout.TABLES:
        cdata = ffi.new(f"void *[{layout.slots}]")
        for slot in range(layout.slots):
            if slot in layout.functions:
                cdata[slot] = entries[layout.functions[slot]]
            elif slot in layout.null_slots:
                cdata[slot] = ffi.NULL
            else:
                cdata[slot] = lib.cuport_unknown_slots[stub + slot]
        if layout.size_in_slot0:
            cdata[0] = ffi.cast("void *", 8 * layout.slots)
        stub += layout.slots
        _keep.append(cdata)
        _tables[layout.uuid_bytes] = (layout, cdata, int(ffi.cast("uintptr_t", cdata)))


def _unknown_slot(table_index: int, slot: int) -> int:
    layout = export_layout.TABLES[table_index]
    report(f"cuGetExportTable({layout.name})", E.NOT_SUPPORTED,
           f"slot {slot} of export table {layout.name} ({layout.uuid}) was called; cuport does "
           "not implement it")
    return int(E.NOT_SUPPORTED)


def _guard(name: str, fn, ret: str):
    """No exception reaches C: a CudaError becomes its code, anything else UNKNOWN."""
    failure = None if ret == "void" else (0 if ret == "uint32_t" else int(E.UNKNOWN))

    def call(*args):
        try:
            result = fn(*args)
        except CudaError as e:
            if not e.quiet:
                report(f"export table slot {name}", e.code, e.message, e.subject)
            result = None if ret == "void" else e.code
        except Exception:  # noqa: BLE001
            print(f"cuport: export table slot {name}: internal error:", file=sys.stderr)
            traceback.print_exc()
            result = failure
        if tracing:
            trace.print_slot(name, result)
        return result

    tracing = dispatch.tracing()
    return call


def _handlers(ffi, lib) -> dict:
    def handle(ptr) -> int:
        return int(ffi.cast("uintptr_t", ptr))

    def need_init() -> None:
        if not device.initialized():
            raise CudaError(E.NOT_INITIALIZED, "cuInit(0) has not been called yet")

    def cudart_primary_context(out, dev):
        need_init()
        ctx = context.primary(dev)
        out[0] = ffi.cast("CUcontext", ctx.handle)
        return 0

    def cudart_load_compilers():
        return 0  # its result becomes the error of every later runtime call

    hook_buffers = [ffi.new(f"uint32_t[{HOOK_FLAG_COUNT}]") for _ in range(2)]
    _keep.extend(hook_buffers)

    def flags_of(buffer):
        def callback_flags(buf, count):
            buf[0] = ffi.cast("void *", buffer)
            count[0] = HOOK_FLAG_COUNT
        return callback_flags

    def cls_put(ctx, key, value, dtor):
        destructor = None
        if dtor != ffi.NULL:
            def destructor(c, k, v, dtor=dtor):
                dtor(ffi.cast("CUcontext", c), ffi.cast("void *", k), ffi.cast("void *", v))
        context.cls_put(handle(ctx), handle(key), handle(value), destructor)
        return 0

    def cls_delete(ctx, key):
        context.cls_delete(handle(ctx), handle(key))
        return 0

    def cls_get(out, ctx, key):
        value = context.cls_get(handle(ctx), handle(key))
        if out != ffi.NULL:
            out[0] = ffi.cast("void *", value)
        return 0

    def checks_context(ctx, out, _unused):  # (answered in C unless tracing: build.py)
        if out != ffi.NULL:
            out[0] = 0
        return 0

    def checks_flag():
        return 0

    def integrity(version, unix_seconds, out):
        lo, hi = integrity_digest(
            version, unix_seconds, driver_version=device.driver_version(), pid=os.getpid(),
            thread=threading.get_ident(), cudart_table=table_address("CUDART_INTERFACE"),
            integrity_table=table_address("INTEGRITY_CHECK"),
            slot_function=table_slot("INTEGRITY_CHECK", 1),
            devices=_device_identities())
        out[0], out[1] = lo, hi
        return 0

    return {
        "cudart_primary_context": cudart_primary_context,
        "cudart_load_compilers": cudart_load_compilers,
        "hooks_callback_flags": flags_of(hook_buffers[0]),
        "hooks_callback_flags_6": flags_of(hook_buffers[1]),
        "cls_put": cls_put,
        "cls_delete": cls_delete,
        "cls_get": cls_get,
        "checks_context": checks_context,
        "checks_flag": checks_flag,
        "integrity_digest": integrity,
    }
