"""The private export tables cuGetExportTable serves: UUIDs, slot counts, slot signatures.

Pure data, shared by the C build (which declares one C entry per implemented slot
and a reporting stub for every other slot) and by capi/export_tables.py (which fills
the tables at start-up). What each slot does: /work/shared/reference/cudart-protocol.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_SLOTS = 64  # stubs the C build provides per table

# Slot implementations: handler name -> (C return type, C parameter types).
SLOT_SIGNATURES: dict[str, tuple[str, str]] = {
    "cudart_primary_context": ("CUresult", "CUcontext *, CUdevice"),
    "cudart_load_compilers": ("CUresult", "void"),
    "hooks_callback_flags": ("void", "void **, size_t *"),
    "hooks_callback_flags_6": ("void", "void **, size_t *"),
    "cls_put": ("CUresult", "CUcontext, void *, void *, void (*)(CUcontext, void *, void *)"),
    "cls_delete": ("CUresult", "CUcontext, void *"),
    "cls_get": ("CUresult", "void **, CUcontext, void *"),
    "checks_context": ("CUresult", "CUcontext, uint32_t *, void **"),
    "checks_flag": ("uint32_t", "void"),
    "integrity_digest": ("CUresult", "uint32_t, uint64_t, uint64_t *"),
}


@dataclass(frozen=True)
class ExportTable:
    name: str
    uuid: str  # hex of the 16 bytes in the order the caller passes them
    slots: int
    functions: dict[int, str] = field(default_factory=dict)  # slot -> SLOT_SIGNATURES key
    size_in_slot0: bool = True  # slot 0 holds the table's size in bytes
    null_slots: frozenset[int] = frozenset()

    @property
    def uuid_bytes(self) -> bytes:
        return bytes.fromhex(self.uuid)


TABLES: tuple[ExportTable, ...] = (
    ExportTable("CUDART_INTERFACE", "6bd5fb6c5bf4e74a8987d93912fd9df9", 13,
                {2: "cudart_primary_context", 12: "cudart_load_compilers"}),
    ExportTable("TOOLS_RUNTIME_CALLBACK_HOOKS", "a094798c2e742e7493f20800200c0a66", 7,
                {2: "hooks_callback_flags", 6: "hooks_callback_flags_6"}),
    ExportTable("TOOLS_TLS", "42d85a8123f6cb478298f6e78a3aecdc", 4),
    # Asked for by 13.4 and 13.5 right after TOOLS_TLS; only slots 39 and 51 are ever
    # called, on the profiler-callback path that our zeroed HOOKS flags keep closed.
    ExportTable("UNNAMED_21318C60", "21318c60971432488ca641ff7324c8f2", MAX_SLOTS),
    ExportTable("CONTEXT_LOCAL_STORAGE_INTERFACE_V0301", "c693336e1121df11a8c368f355d89593", 4,
                {0: "cls_put", 1: "cls_delete", 2: "cls_get"},
                size_in_slot0=False, null_slots=frozenset({3})),
    ExportTable("CONTEXT_CHECKS", "263e88607cd2614392f6bbd5006dfa7e", 4,
                {2: "checks_context", 3: "checks_flag"}),
    ExportTable("INTEGRITY_CHECK", "d4082055bde6704b8d34ba123c66e1f2", 3,
                {1: "integrity_digest"}),
)
