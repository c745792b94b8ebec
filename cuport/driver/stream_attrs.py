"""Stream attributes: cuStreamSetAttribute, cuStreamGetAttribute, cuStreamCopyAttributes.

A stream's attributes are the launch attributes its kernels inherit (CUstreamAttrValue
is CUlaunchAttributeValue). On a CPU they are hints: an L2 access-policy window has no
set-aside to steer, synchronisation policies and memory-sync domains order nothing that
cuport does not order already. They are checked and kept, so a program reads back what
it set; the priority is the stream's own.
"""

from __future__ import annotations

import ctypes

from cuport.capi import types
from cuport.driver import launch, stream
from cuport.driver.api import implements
from cuport.driver.consts import K
from cuport.driver.errors import CudaError, E

VALUE = "CUstreamAttrValue"

# CUstreamAttrID -> check of the value (None: any value)
STREAM_ATTRIBUTES = {
    K.CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW: launch.access_policy_window,
    K.CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY: None,
    K.CU_STREAM_ATTRIBUTE_PRIORITY: None,
    K.CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: None,
    K.CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN: None,
}
_SYNC_POLICIES = (K.CU_SYNC_POLICY_AUTO, K.CU_SYNC_POLICY_SPIN, K.CU_SYNC_POLICY_YIELD,
                  K.CU_SYNC_POLICY_BLOCKING_SYNC)


def _check_id(attr: int) -> None:
    if attr not in STREAM_ATTRIBUTES:
        raise CudaError(E.INVALID_VALUE, f"{attr} is not a CUstreamAttrID")


@implements("cuStreamSetAttribute", "cuStreamSetAttribute_ptsz")
def set_attribute(handle: int, attr: int, value: int) -> None:
    s = stream.resolve(handle)
    _check_id(attr)
    if not value:
        raise CudaError(E.INVALID_VALUE, "value is NULL")
    data = ctypes.string_at(value, types.sizeof(VALUE))
    v = types.ffi().from_buffer(VALUE + " *", bytearray(data))[0]
    check = STREAM_ATTRIBUTES[attr]
    if check is not None:
        check(v)
    if attr == K.CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY and v.syncPolicy not in _SYNC_POLICIES:
        raise CudaError(E.INVALID_VALUE, f"{v.syncPolicy} is not a CUsynchronizationPolicy")
    if attr == K.CU_STREAM_ATTRIBUTE_PRIORITY:
        s.priority = stream.clamp_priority(v.priority)
        return
    s.attributes[attr] = data


@implements("cuStreamGetAttribute", "cuStreamGetAttribute_ptsz")
def get_attribute(handle: int, attr: int, out: int) -> None:
    s = stream.resolve(handle)
    _check_id(attr)
    if not out:
        raise CudaError(E.INVALID_VALUE, "value_out is NULL")
    size = types.sizeof(VALUE)
    data = s.attributes.get(attr)
    if data is None:
        buf = bytearray(size)
        v = types.ffi().from_buffer(VALUE + " *", buf)[0]
        if attr == K.CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY:
            v.syncPolicy = K.CU_SYNC_POLICY_AUTO
        elif attr == K.CU_STREAM_ATTRIBUTE_PRIORITY:
            v.priority = s.priority
        data = bytes(buf)
    ctypes.memmove(out, data, size)


@implements("cuStreamCopyAttributes", "cuStreamCopyAttributes_ptsz")
def copy_attributes(dst: int, src: int) -> None:
    d, s = stream.resolve(dst), stream.resolve(src)
    d.attributes.clear()
    d.attributes.update(s.attributes)
    d.priority = s.priority
