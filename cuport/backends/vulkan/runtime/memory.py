"""Device memory with buffer device addresses: blocks, sub-allocations and the address table.

A block is one VkDeviceMemory with one VkBuffer over all of it (storage, device address,
transfer source and destination), so an allocation is (block, offset) and its CUdeviceptr
is the block's device address plus the offset, 512-byte aligned as cudaMalloc's are.
Requests up to half a block share blocks; larger ones get a block of their own. An empty
block goes back to the driver, except the last one of each kind, kept for the next request.

Kinds:
- "device": device-local memory (cudaMalloc). Host-visible device-local memory is preferred
  where its heap is about as large as the device-local one (UMA, CPU drivers, resizable
  BAR); it is then mapped and small copies skip staging.
- "host": host-visible coherent system memory with a device address (cuMemHostAlloc, pinned
  and mapped memory). Where possible (see below) its host pointer is its device address.
- "managed": like "host", and the host pointer must be the device address (cuMemAllocManaged);
  the allocation fails where the device cannot give that.
- "host" allocations of up to SIGNAL_MAX bytes on a driver that shows a running kernel host
  writes to system memory only at the next submission (SIGNALS_IN_DEVICE_MEMORY: NVIDIA's)
  are device-local, host-visible memory mapped on the host at its device address
  (VK_EXT_map_memory_placed), in blocks of their own ("signal" blocks): a kernel spinning on
  a flag the host sets in mapped memory sees it, as on a GPU with CUDA. Host reads of that
  memory cross the bus uncached, so larger pinned buffers stay in system memory.

One address for host and device ("same address"):
- identity: the driver's device address of host-visible memory is its host pointer (CPU
  drivers such as lavapipe); checked on a probe block when the device opens.
- alias: the block's pages are a memfd imported with VK_EXT_external_memory_host and mapped a
  second time on the host at the device address the driver chose (hostmap.SharedPages).
- otherwise host and device pointers differ and "managed" is refused.
Unified addressing: every block whose device address is not host memory of its own reserves
that range on the host (PROT_NONE), so no host object ever has a device allocation's address.

Sharing with other processes (external.py): where the device can, every "device" block is
allocated exportable; export_fd hands out a descriptor of an allocation's block, import_fd
makes another process's allocation an "imported" buffer here, its block this process's own
VkDeviceMemory of the same payload, freed with the buffer.
"""

from __future__ import annotations

import bisect
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import external, hostmap, placed
from .errors import OutOfDeviceMemory, Unsupported, VulkanError

if TYPE_CHECKING:
    from .device import Device

ALIGN = 512  # what cudaMalloc gives on NVIDIA (256 guaranteed; 512 = TEXTURE_ALIGNMENT, which
#               programs binding cudaMalloc memory to linear textures rely on)
BLOCK = 32 << 20
DEVICE, HOST, MANAGED, REGISTERED, IMPORTED = "device", "host", "managed", "registered", "imported"
KINDS = (DEVICE, HOST, MANAGED)
_RESERVE_TRIES = 4
#: drivers whose running kernels see host writes to system memory only at the next
#: submission: NVIDIA 580 on an H100 (every system-memory type, imported or allocated, with
#: or without clflush, every load form; device-local host-visible memory it sees at once)
SIGNALS_IN_DEVICE_MEMORY = frozenset({"NVIDIA_PROPRIETARY"})
SIGNAL = "signal"  # the blocks of small "host" allocations there (a block kind, not a kind)
SIGNAL_MAX = 64 << 10
SIGNAL_BLOCK = 2 << 20


class BadAddress(VulkanError):
    """An address (range) that no allocation of this device holds (CUDA_ERROR_INVALID_VALUE)."""


@dataclass(eq=False)
class Block:
    memory: Any  # VkDeviceMemory
    buffer: Any  # VkBuffer over the whole block
    size: int
    address: int  # device address of offset 0
    kind: str
    type_index: int
    host_ptr: int | None = None  # host address of offset 0 when mapped
    host_reads_fast: bool = False  # mapped and cached (or a CPU/UMA device): D2H may read it
    pages: hostmap.SharedPages | None = None
    reserved: bool = False  # [address, address+size) held on the host (unified addressing)
    free: list[list[int]] = field(default_factory=list)  # [offset, size], sorted, coalesced
    used: int = 0
    bytes: int = 0  # device memory it holds (0 for imported host pages and other processes' memory)
    exportable: bool = False  # allocated with VkExportMemoryAllocateInfo (external.py)
    placed: bool = False  # mapped at its device address (placed.py): unmapped keeping the range
    start: int = 0  # first offset whose address is ALIGN-aligned

    def take(self, size: int) -> int | None:
        for i, (off, n) in enumerate(self.free):
            if n >= size:
                if n == size:
                    del self.free[i]
                else:
                    self.free[i] = [off + size, n - size]
                self.used += size
                return off
        return None

    def give(self, off: int, size: int) -> None:
        self.used -= size
        i = bisect.bisect_left(self.free, [off, 0])
        self.free.insert(i, [off, size])
        if i + 1 < len(self.free) and off + size == self.free[i + 1][0]:
            self.free[i][1] += self.free.pop(i + 1)[1]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == off:
            self.free[i - 1][1] += self.free.pop(i)[1]


@dataclass(eq=False)
class Buffer:
    """One allocation: `address` is the CUdeviceptr, `host_ptr` its host mapping (or None)."""

    address: int
    size: int  # as asked for
    kind: str
    block: Block
    offset: int  # within block.buffer
    reserved_size: int  # bytes taken from the block (size rounded up)
    host_ptr: int | None = None

    @property
    def same_address(self) -> bool:
        return self.host_ptr is not None and self.host_ptr == self.address


class Memory:
    """The allocations of one device, by device address and by host address."""

    def __init__(self, dev: Device) -> None:
        self.dev = dev
        self.vk = dev.vk
        self.cmd = dev.cmd
        self._lock = threading.RLock()
        self._blocks: dict[str, list[Block]] = {k: [] for k in (*KINDS, SIGNAL)}
        self._starts: list[int] = []  # sorted device addresses of live buffers
        self._by_start: dict[int, Buffer] = {}
        self._host_starts: list[int] = []  # sorted host addresses of host-visible buffers
        self._by_host: dict[int, Buffer] = {}
        self.allocated = 0  # bytes of VkDeviceMemory held (imported host pages not counted)
        self._usage = BUFFER_USAGE(self.vk)
        types = dev.info.memory_types
        self._types = types
        heaps = dev.info.memory_heaps
        self._device_heap_size = max((h.size for h in heaps if h.device_local), default=0)
        self._ext_host = "VK_EXT_external_memory_host" in dev.enabled_extensions
        self._import_align = max(dev.info.limits.min_imported_host_pointer_alignment, hostmap.PAGE)
        self._uma = dev.info.device_type in ("cpu", "integrated")
        self.strategy = "none"  # how host and kinds "host"/"managed" share an address
        self.unified = True  # no host object can have a device allocation's address
        # the lowest and highest device address any block ever had: kernels check that
        # their global addresses lie inside (a wild pointer hangs a GPU's queue)
        self.lowest, self.highest = 1 << 64, 0
        # why "device" memory cannot be shared with other processes here (None: it can), and
        # whether new "device" blocks are allocated exportable (external.wanted)
        self.export_refusal = external.refusal(self.vk, dev.physical, dev.enabled_extensions,
                                               self._usage)
        want, self._not_wanted = external.wanted(dev.info.driver_id)
        self.exportable = self.export_refusal is None and want
        self._probe()
        self._signal_type = self._signal_memory_type()

    # -- public ---------------------------------------------------------------------------------
    def alloc(self, size: int, kind: str = DEVICE) -> Buffer:
        if kind not in KINDS:
            raise ValueError(f"unknown memory kind {kind!r}")
        if size <= 0:
            raise ValueError("allocation size must be positive")
        lim = self.dev.info.limits
        biggest = min(lim.max_memory_allocation_size, lim.max_buffer_size)
        rsize = hostmap.round_up(size, ALIGN)
        if rsize > biggest:
            raise OutOfDeviceMemory(
                f"{size} bytes asked for in one allocation; this device allows at most {biggest} "
                "(maxMemoryAllocationSize / maxBufferSize)", "vkAllocateMemory")
        if kind == MANAGED and self.strategy == "none":
            raise Unsupported(
                "managed memory needs one address for host and device; this device gives "
                "neither host-visible memory at its own address nor VK_EXT_external_memory_host",
                "cuMemAllocManaged")
        self.dev.collect()
        with self._lock:
            if kind == HOST and self._signal_type is not None and size <= SIGNAL_MAX:
                try:
                    return self._alloc_in(SIGNAL, size, rsize, kind)
                except VulkanError as e:  # system memory then, as on other drivers
                    self._signal_failed(e)
            return self._alloc_in(kind, size, rsize, kind)

    def _alloc_in(self, where: str, size: int, rsize: int, kind: str) -> Buffer:
        """An allocation of `kind` in the blocks of `where` (a kind, or SIGNAL)."""
        if rsize <= _block_size(where) // 2:
            for blk in self._blocks[where]:
                off = blk.take(rsize)
                if off is not None:
                    return self._register(blk, off, size, rsize, kind)
            blk = self._new_block(where, _block_size(where))
        else:
            blk = self._new_block(where, hostmap.round_up(rsize + ALIGN, 1 << 16))
        off = blk.take(rsize)
        assert off is not None
        return self._register(blk, off, size, rsize, kind)

    def _signal_failed(self, e: VulkanError) -> None:
        """No signal block could be made: with its memory spent, this allocation goes to
        system memory; for any other cause every later one does too, said once."""
        if isinstance(e, OutOfDeviceMemory):
            return
        self._signal_type = None
        print(f"cuport: small pinned allocations stay in system memory, where a running kernel "
              f"does not see the host's writes on this driver ({e})", file=sys.stderr)

    def free(self, buf: Buffer) -> None:
        """Forget `buf` at once (its address is invalid from now on); its memory is reused or
        returned to the driver once the work queued before this call has finished."""
        with self._lock:
            if self._by_start.get(buf.address) is not buf:
                raise BadAddress(f"0x{buf.address:x} is not an allocation of this device")
            del self._by_start[buf.address]
            del self._starts[bisect.bisect_left(self._starts, buf.address)]
            if buf.host_ptr is not None and self._by_host.get(buf.host_ptr) is buf:
                del self._by_host[buf.host_ptr]
                del self._host_starts[bisect.bisect_left(self._host_starts, buf.host_ptr)]
        self.dev.defer(lambda: self._release(buf))

    def _release(self, buf: Buffer) -> None:
        with self._lock:
            blk = buf.block
            if buf.kind in (REGISTERED, IMPORTED):
                self._destroy_block(blk)
                return
            blk.give(buf.offset, buf.reserved_size)
            if blk.used == 0:
                blocks = self._blocks[blk.kind]
                spare = [b for b in blocks if b.used == 0 and b is not blk]
                if spare or blk.size != _block_size(blk.kind):
                    blocks.remove(blk)
                    self._destroy_block(blk)

    def find(self, address: int, size: int = 1) -> Buffer:
        """The allocation holding [address, address+size); BadAddress if none holds all of it."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            if i >= 0:
                buf = self._by_start[self._starts[i]]
                if address + size <= buf.address + buf.size:
                    return buf
        raise BadAddress(f"[0x{address:x}, +{size}) is not inside one allocation of this device")

    def find_host(self, ptr: int, size: int = 1) -> Buffer | None:
        """The host-visible allocation whose mapping holds [ptr, ptr+size), if any (pinned memory)."""
        with self._lock:
            i = bisect.bisect_right(self._host_starts, ptr) - 1
            if i >= 0:
                buf = self._by_host[self._host_starts[i]]
                if ptr + size <= buf.host_ptr + buf.size:
                    return buf
        return None

    def register_host(self, ptr: int, size: int) -> Buffer:
        """Import existing host memory (cuMemHostRegister): pages stay where they are."""
        if not self._ext_host:
            raise Unsupported("registering host memory needs VK_EXT_external_memory_host",
                              "cuMemHostRegister")
        a = self._import_align
        start = ptr // a * a
        end = hostmap.round_up(ptr + size, a)
        with self._lock:
            blk = self._import_block(start, end - start, REGISTERED)
            if not self._reserve(blk):
                self.unified = False
            buf = Buffer(address=blk.address + (ptr - start), size=size, kind=REGISTERED,
                         block=blk, offset=ptr - start, reserved_size=end - start, host_ptr=ptr)
            self._insert(buf)
            return buf

    def export_fd(self, buf: Buffer) -> tuple[int, external.Description]:
        """A new descriptor of the memory behind `buf` (its whole block; the caller closes it)
        and what another process needs to import it (import_fd)."""
        if self.export_refusal is not None:
            raise Unsupported(f"device memory cannot be shared with other processes: "
                              f"{self.export_refusal}", "vkGetMemoryFdKHR")
        blk = buf.block
        if buf.kind != DEVICE:
            raise Unsupported(f"{buf.kind} memory cannot be shared with other processes",
                              "vkGetMemoryFdKHR")
        if not blk.exportable:
            why = self._not_wanted or "its block was made while new blocks were not exportable"
            raise Unsupported(f"the device memory at 0x{buf.address:x} was not allocated "
                              f"exportable: {why}", "vkGetMemoryFdKHR")
        vk, ffi = self.vk, self.vk.ffi
        info = vk.new("VkMemoryGetFdInfoKHR", memory=blk.memory, handleType=external.handle_type(vk))
        fd = ffi.new("int*")
        vk.check(self.cmd.vkGetMemoryFdKHR(self.dev.handle, info, fd), "vkGetMemoryFdKHR")
        dev = self.dev.info
        return fd[0], external.Description(dev.uuid, dev.driver_uuid, blk.bytes, blk.type_index,
                                           blk.size, buf.offset, buf.size)

    def import_fd(self, fd: int, desc: external.Description) -> Buffer:
        """Another process's allocation (export_fd there) as an "imported" buffer with a device
        address of this process's. The descriptor is consumed: the driver owns it once the
        import succeeds, and it is closed if the import fails."""
        vk, cmd, dev = self.vk, self.cmd, self.dev
        ffi, lib = vk.ffi, vk.lib
        try:
            desc.check(dev.info.uuid, dev.info.driver_uuid, len(self._types))
            if self.export_refusal is not None:
                raise Unsupported(f"this device cannot import shared memory: {self.export_refusal}",
                                  "vkAllocateMemory")
            handles = external.handle_type(vk)
            ext = vk.new("VkExternalMemoryBufferCreateInfo", handleTypes=handles)
            buffer, req = self._create_buffer(desc.block_size, ext)
        except BaseException:
            os.close(fd)
            raise
        try:
            if not req.memoryTypeBits & (1 << desc.type_index) or req.size > desc.allocation_size:
                raise ValueError("the shared memory's size or type does not fit a buffer here")
            imp = vk.new("VkImportMemoryFdInfoKHR", handleType=handles, fd=fd)
            flags = vk.new("VkMemoryAllocateFlagsInfo", pNext=imp,
                           flags=lib.VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT)
            info = vk.new("VkMemoryAllocateInfo", pNext=flags, allocationSize=desc.allocation_size,
                          memoryTypeIndex=desc.type_index)
            mem = ffi.new("VkDeviceMemory*")
            vk.check(cmd.vkAllocateMemory(dev.handle, info, ffi.NULL, mem), "vkAllocateMemory")
        except BaseException:
            cmd.vkDestroyBuffer(dev.handle, buffer, ffi.NULL)
            os.close(fd)
            raise
        try:  # (from here the driver owns the descriptor)
            blk = self._bind(buffer, mem[0], desc.block_size, IMPORTED, desc.type_index)
        except BaseException:
            cmd.vkFreeMemory(dev.handle, mem[0], ffi.NULL)
            raise
        with self._lock:
            try:
                self._map(blk)
                if not self._reserve(blk):
                    self.unified = False
            except BaseException:
                self._destroy_block(blk)
                raise
            host = blk.host_ptr + desc.offset if blk.host_ptr is not None else None
            buf = Buffer(address=blk.address + desc.offset, size=desc.size, kind=IMPORTED,
                         block=blk, offset=desc.offset, reserved_size=desc.size, host_ptr=host)
            self._insert(buf)
            return buf

    def buffers(self) -> list[Buffer]:
        with self._lock:
            return [self._by_start[s] for s in self._starts]

    def release_all(self) -> None:
        with self._lock:
            for buf in list(self._by_start.values()):
                if buf.kind in (REGISTERED, IMPORTED):
                    self._destroy_block(buf.block)
            self._by_start.clear()
            self._starts.clear()
            self._by_host.clear()
            self._host_starts.clear()
            for blocks in self._blocks.values():
                for blk in blocks:
                    self._destroy_block(blk)
                blocks.clear()

    # -- blocks -----------------------------------------------------------------------------------
    def _register(self, blk: Block, off: int, size: int, rsize: int, kind: str) -> Buffer:
        host = blk.host_ptr + off if blk.host_ptr is not None else None
        buf = Buffer(address=blk.address + off, size=size, kind=kind, block=blk, offset=off,
                     reserved_size=rsize, host_ptr=host)
        self._insert(buf)
        return buf

    def _insert(self, buf: Buffer) -> None:
        bisect.insort(self._starts, buf.address)
        self._by_start[buf.address] = buf
        if buf.host_ptr is not None and buf.kind not in (DEVICE, IMPORTED):
            bisect.insort(self._host_starts, buf.host_ptr)
            self._by_host[buf.host_ptr] = buf

    def _new_block(self, kind: str, size: int) -> Block:
        """A fresh block of `kind`, its host side set up (mapping, alias, reservation)."""
        if kind == SIGNAL:
            blk = self._signal_block(size)
        elif kind in (HOST, MANAGED) and self.strategy == "alias":
            blk = self._alias_block(size, kind)
        else:
            blk = self._reserved_block(size, kind)
            if kind == MANAGED and blk.host_ptr != blk.address:
                self._destroy_block(blk)
                raise Unsupported("the device gave host-visible memory a device address other "
                                  "than its host pointer; managed memory cannot share an address",
                                  "cuMemAllocManaged")
        blk.start = (-blk.address) % ALIGN
        blk.free = [[blk.start, blk.size - blk.start]]
        self._blocks[kind].append(blk)
        return blk

    def _reserved_block(self, size: int, kind: str) -> Block:
        """A plain block whose device range is held on the host (unified addressing). A range
        the host already uses is retried with the failed blocks kept, so that the driver
        picks other addresses; if all tries collide, the last block is used unreserved and
        the device stops claiming unified addressing."""
        failed: list[Block] = []
        try:
            for _ in range(_RESERVE_TRIES):
                blk = self._plain_block(size, kind)
                if self._reserve(blk):
                    return blk
                failed.append(blk)
            self.unified = False
            return failed.pop()
        finally:
            for b in failed:
                self._destroy_block(b)

    def _reserve(self, blk: Block) -> bool:
        """Hold the block's device range on the host unless it is the block's own host memory;
        False if the host already uses part of that range."""
        if blk.host_ptr == blk.address or blk.pages is not None or blk.reserved:
            return True
        if not hostmap.SUPPORTED:
            self.unified = False
            return True
        if hostmap.reserve(blk.address, blk.size):
            blk.reserved = True
            return True
        return False

    def _plain_block(self, size: int, kind: str) -> Block:
        vk, cmd, dev = self.vk, self.cmd, self.dev
        ffi = vk.ffi
        exporting = kind == DEVICE and self.exportable
        handles = external.handle_type(vk)
        ext = vk.new("VkExternalMemoryBufferCreateInfo", handleTypes=handles) if exporting else None
        buffer, req = self._create_buffer(size, ext)
        last: Exception | None = None
        for ti in self._type_candidates(kind, req.memoryTypeBits):
            export = vk.new("VkExportMemoryAllocateInfo", handleTypes=handles) if exporting else None
            try:
                mem = self._allocate(req, ti, export)
            except OutOfDeviceMemory as e:
                last = e
                continue
            try:
                blk = self._bind(buffer, mem, size, kind, ti)
                self._map(blk)
                blk.exportable = exporting
                blk.bytes = req.size
                self.allocated += req.size
                return blk
            except BaseException:
                cmd.vkFreeMemory(dev.handle, mem, ffi.NULL)
                raise
        cmd.vkDestroyBuffer(dev.handle, buffer, ffi.NULL)
        raise OutOfDeviceMemory(f"out of {kind} memory allocating {size} bytes"
                                + (f" ({last})" if last else ""), "vkAllocateMemory")

    def _allocate(self, req: Any, ti: int, pnext: Any = None) -> Any:
        """A VkDeviceMemory of type `ti` with a device address, for a buffer whose
        requirements are `req` (`pnext`: more of VkMemoryAllocateFlagsInfo's chain)."""
        vk, ffi = self.vk, self.vk.ffi
        flags = vk.new("VkMemoryAllocateFlagsInfo", flags=vk.lib.VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT)
        if pnext is not None:
            flags.pNext = pnext
        info = vk.new("VkMemoryAllocateInfo", pNext=flags, allocationSize=req.size, memoryTypeIndex=ti)
        mem = ffi.new("VkDeviceMemory*")
        vk.check(self.cmd.vkAllocateMemory(self.dev.handle, info, ffi.NULL, mem), "vkAllocateMemory")
        return mem[0]

    def _map(self, blk: Block) -> None:
        """Map a block of host-visible, coherent memory (host_ptr); others stay unmapped."""
        vk, ffi = self.vk, self.vk.ffi
        flags = self._types[blk.type_index].flags
        if not {"host_visible", "host_coherent"} <= flags:
            return
        p = ffi.new("void**")
        vk.check(self.cmd.vkMapMemory(self.dev.handle, blk.memory, 0, 0xFFFFFFFFFFFFFFFF, 0, p),
                 "vkMapMemory")
        blk.host_ptr = int(ffi.cast("uintptr_t", p[0]))
        blk.host_reads_fast = "host_cached" in flags or self._uma

    def _signal_block(self, size: int) -> Block:
        """Device-local, host-visible memory mapped on the host at its device address (a
        range the host already uses is retried, the failed blocks kept meanwhile)."""
        vk, cmd, dev = self.vk, self.cmd, self.dev
        ffi = vk.ffi
        size = hostmap.round_up(size, max(dev.placed_alignment, hostmap.PAGE))
        failed: list[Block] = []
        try:
            for _ in range(_RESERVE_TRIES):
                buffer, req = self._create_buffer(size)
                try:
                    mem = self._allocate(req, self._signal_type)
                except BaseException:
                    cmd.vkDestroyBuffer(dev.handle, buffer, ffi.NULL)
                    raise
                try:
                    blk = self._bind(buffer, mem, size, SIGNAL, self._signal_type)
                except BaseException:
                    cmd.vkFreeMemory(dev.handle, mem, ffi.NULL)
                    raise
                blk.bytes = req.size
                self.allocated += req.size
                if blk.address % dev.placed_alignment or not hostmap.reserve(blk.address, req.size):
                    failed.append(blk)
                    continue
                try:
                    placed.map_at(vk, cmd, dev.handle, blk.memory, blk.address)
                except BaseException:
                    self._destroy_block(blk)
                    hostmap.release(blk.address, req.size)
                    raise
                blk.reserved = blk.placed = True  # (the map covers req.size: blk.bytes)
                blk.host_ptr = blk.address
                return blk
        finally:
            for b in failed:
                self._destroy_block(b)
        raise VulkanError(f"no host range was free at the device address of signal memory "
                          f"({_RESERVE_TRIES} tries)", "vkAllocateMemory")

    def _alias_block(self, size: int, kind: str) -> Block:
        """Host-visible pages at one address for host and device (see the module's docstring).
        The driver picks the device address; a range the host already uses is retried."""
        failed: list[Block] = []
        try:
            for _ in range(_RESERVE_TRIES):
                pages = hostmap.SharedPages(size, self._import_align)
                try:
                    blk = self._import_block(pages.base, pages.size, kind)
                except BaseException:
                    pages.free()
                    raise
                blk.pages = pages
                if blk.address == pages.base or pages.alias_at(blk.address):
                    pages.close_fd()
                    blk.host_ptr = blk.address
                    blk.host_reads_fast = True
                    return blk
                failed.append(blk)  # kept until done, so the driver picks another address
        finally:
            for b in failed:
                self._destroy_block(b)
        raise OutOfDeviceMemory(f"no device address for {kind} memory was free on the host "
                          f"({_RESERVE_TRIES} tries)", "vkAllocateMemory")

    def _import_block(self, host: int, size: int, kind: str) -> Block:
        vk, cmd, dev = self.vk, self.cmd, self.dev
        ffi, lib = vk.ffi, vk.lib
        handle_type = lib.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
        ext = vk.new("VkExternalMemoryBufferCreateInfo", handleTypes=handle_type)
        buffer, req = self._create_buffer(size, ext)
        hp = vk.new("VkMemoryHostPointerPropertiesEXT")
        try:
            vk.check(cmd.vkGetMemoryHostPointerPropertiesEXT(
                dev.handle, handle_type, ffi.cast("void*", host), hp),
                "vkGetMemoryHostPointerPropertiesEXT")
            cands = self._type_candidates(HOST, req.memoryTypeBits & hp.memoryTypeBits,
                                          need_host_visible=False)
            if not cands:
                raise Unsupported("no memory type can import this host memory",
                                  "vkAllocateMemory")
            imp = vk.new("VkImportMemoryHostPointerInfoEXT", handleType=handle_type,
                         pHostPointer=ffi.cast("void*", host))
            flags = vk.new("VkMemoryAllocateFlagsInfo", pNext=imp,
                           flags=lib.VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT)
            info = vk.new("VkMemoryAllocateInfo", pNext=flags, allocationSize=size,
                          memoryTypeIndex=cands[0])
            mem = ffi.new("VkDeviceMemory*")
            vk.check(cmd.vkAllocateMemory(dev.handle, info, ffi.NULL, mem), "vkAllocateMemory")
        except BaseException:
            cmd.vkDestroyBuffer(dev.handle, buffer, ffi.NULL)
            raise
        try:
            blk = self._bind(buffer, mem[0], size, kind, cands[0])
        except BaseException:
            cmd.vkFreeMemory(dev.handle, mem[0], ffi.NULL)
            raise
        blk.host_ptr = host
        blk.host_reads_fast = True
        return blk

    def _create_buffer(self, size: int, pnext: Any = None) -> tuple[Any, Any]:
        vk, cmd, dev = self.vk, self.cmd, self.dev
        ffi = vk.ffi
        ci = vk.new("VkBufferCreateInfo", size=size, usage=self._usage,
                    sharingMode=vk.lib.VK_SHARING_MODE_EXCLUSIVE)
        if pnext is not None:
            ci.pNext = pnext
        out = ffi.new("VkBuffer*")
        vk.check(cmd.vkCreateBuffer(dev.handle, ci, ffi.NULL, out), "vkCreateBuffer")
        req = ffi.new("VkMemoryRequirements*")
        cmd.vkGetBufferMemoryRequirements(dev.handle, out[0], req)
        return out[0], req

    def _bind(self, buffer: Any, memory: Any, size: int, kind: str, ti: int) -> Block:
        vk, cmd, dev = self.vk, self.cmd, self.dev
        try:
            vk.check(cmd.vkBindBufferMemory(dev.handle, buffer, memory, 0), "vkBindBufferMemory")
        except BaseException:
            cmd.vkDestroyBuffer(dev.handle, buffer, vk.ffi.NULL)
            raise
        info = vk.new("VkBufferDeviceAddressInfo", buffer=buffer)
        address = int(cmd.vkGetBufferDeviceAddress(dev.handle, info))
        self.lowest, self.highest = min(self.lowest, address), max(self.highest, address + size)
        return Block(memory=memory, buffer=buffer, size=size, address=address, kind=kind,
                     type_index=ti)

    def _destroy_block(self, blk: Block) -> None:
        ffi, cmd, dev = self.vk.ffi, self.cmd, self.dev
        span, release = blk.size, blk.reserved
        if blk.placed:  # unmapped keeping the range ours until hostmap.release below
            span, blk.placed = blk.bytes, False
            release = release and not cmd.down()  # (after the exit handler nothing unmaps)
            try:
                placed.unmap_reserving(self.vk, cmd, dev.handle, blk.memory)
            except VulkanError:  # (the driver's map may outlive this: never unmap it ourselves)
                release = False
        cmd.vkDestroyBuffer(dev.handle, blk.buffer, ffi.NULL)
        cmd.vkFreeMemory(dev.handle, blk.memory, ffi.NULL)  # unmaps too
        self.allocated -= blk.bytes
        if blk.pages is not None:
            blk.pages.free()
            blk.pages = None
        if release:
            hostmap.release(blk.address, span)
        blk.reserved = False

    # -- choices ------------------------------------------------------------------------------------
    def _type_candidates(self, kind: str, bits: int, need_host_visible: bool = True) -> list[int]:
        """Memory type indices allowed by `bits` that suit `kind`, best first."""
        heaps = self.dev.info.memory_heaps
        scored = []
        for i, t in enumerate(self._types):
            if not bits & (1 << i) or "protected" in t.flags:
                continue
            f = t.flags
            if kind == DEVICE:
                big = heaps[t.heap].size * 2 >= self._device_heap_size
                score = ("device_local" in f, "host_visible" in f and "host_coherent" in f and big,
                         not any(x.endswith("_amd") for x in f))
            else:
                if need_host_visible and not {"host_visible", "host_coherent"} <= f:
                    continue
                score = ("host_cached" in f, "device_local" not in f or self._uma,
                         not any(x.endswith("_amd") for x in f))
            scored.append((score, -i, i))
        scored.sort(reverse=True)
        return [i for _, _, i in scored]

    def _signal_memory_type(self) -> int | None:
        """The memory type of "signal" blocks, where the device opened with placed maps."""
        if not self.dev.placed_alignment or self._uma:
            return None
        buffer, req = self._create_buffer(hostmap.PAGE)  # (the same bits for every size)
        self.cmd.vkDestroyBuffer(self.dev.handle, buffer, self.vk.ffi.NULL)
        for i, t in enumerate(self._types):
            if (req.memoryTypeBits >> i & 1 and "protected" not in t.flags
                    and {"device_local", "host_visible", "host_coherent"} <= t.flags):
                return i
        return None

    def _probe(self) -> None:
        """Find how host and device can share an address on this device (small probe blocks),
        and whether device addresses can be kept free of host objects."""
        try:
            blk = self._reserved_block(hostmap.PAGE * 16, DEVICE)
            self._destroy_block(blk)
        except VulkanError:
            pass
        try:
            blk = self._plain_block(hostmap.PAGE * 16, HOST)
        except VulkanError:
            blk = None
        if blk is not None:
            same = blk.host_ptr is not None and blk.host_ptr == blk.address
            self._destroy_block(blk)
            if same:
                self.strategy = "identity"
                return
        if self._ext_host and hostmap.SUPPORTED:
            try:
                blk = self._alias_block(hostmap.PAGE * 16, HOST)
            except (VulkanError, OSError):
                return
            self._destroy_block(blk)
            self.strategy = "alias"


def BUFFER_USAGE(vk: Any) -> int:
    lib = vk.lib
    return (lib.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | lib.VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
            | lib.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | lib.VK_BUFFER_USAGE_TRANSFER_DST_BIT)


def _block_size(kind: str) -> int:
    return SIGNAL_BLOCK if kind == SIGNAL else BLOCK
