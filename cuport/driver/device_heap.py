"""The context's heap for device-side malloc and free (C++ new/delete in kernels).

CUDA sizes it by cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) (8 MiB by default); cuport refuses
to change that limit once a kernel that uses malloc or free has been launched in the context
(CUDA_ERROR_INVALID_VALUE, as cuCtxSetLimit's documentation says; not recorded on a GPU).
Memory malloc'ed in one kernel stays valid in later ones until freed: the heap is one device
allocation of the context, made when the first such kernel is launched, freed with the
context. (So cuport's cudaMemcpy accepts heap memory, which an H100 refuses, and it answers
the limit asked, where an H100 answered 4 MiB for 1 MiB.) Each backend runs the allocator in
its kernels (backends/device_heap.py), lays the heap out (`init_device_heap`) and is told its
address per module (`bind_device_heap`).
"""

from __future__ import annotations

from cuport.backends.base import BackendError
from cuport.driver import context, memory
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E


def launching(ctx: context.Context, image) -> None:
    """A kernel of `image` (a backend module) that calls malloc or free is being launched:
    fix the context's limit, make its heap if the backend needs one, and bind it."""
    with ctx.lock:
        ctx.heap_fixed = True
        bind = getattr(image, "bind_device_heap", None)
        if bind is None:
            return
        heap = getattr(ctx, "device_heap", None)
        if heap is None:
            limit = ctx.limits[K.CU_LIMIT_MALLOC_HEAP_SIZE]
            try:
                size = image.device_heap_bytes(limit)
            except BackendError as e:
                raise CudaError(e.code, e.message) from None
            heap = memory.allocate(size, "device", ctx)
            image.init_device_heap(heap.base, limit)
            ctx.device_heap = heap
        bind(heap.base)


def check_set_limit(ctx: context.Context, limit: int) -> None:
    """cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE) after such a launch: CUDA's refusal."""
    if limit == K.CU_LIMIT_MALLOC_HEAP_SIZE and getattr(ctx, "heap_fixed", False):
        raise CudaError(E.INVALID_VALUE, "CU_LIMIT_MALLOC_HEAP_SIZE cannot change once a kernel "
                                         "that uses malloc or free has been launched in the "
                                         "context (set it before the first such launch)")


def _release(ctx: context.Context) -> None:
    ctx.device_heap = None  # (memory.py frees the allocation with the context's others)
    ctx.heap_fixed = False


context.RESOURCE_HOOKS.append(_release)
