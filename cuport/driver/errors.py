"""CUresult: NVIDIA's codes, their names, the texts cuGetErrorString answers, and CudaError.

The codes and names come from the driver API table (the headers' CUresult enum);
the texts are ours, worded like the NVIDIA driver's where we know them. A driver
function reports a failure by raising CudaError with the code a program would get
from NVIDIA's driver and a message that says what went wrong and, where it can,
what to do; the dispatcher prints it as one line naming the call.
"""

from __future__ import annotations

import ctypes
import enum
import os
import re
import sys
import threading
import traceback

from cuport.capi import table
from cuport.driver.api import implements

CODES: dict[str, int] = table.enums()["CUresult"]
NAMES: dict[int, str] = {v: k for k, v in CODES.items()}

# E.INVALID_VALUE == CUDA_ERROR_INVALID_VALUE == 1; E.SUCCESS == 0.
E = enum.IntEnum("E", {k.removeprefix("CUDA_ERROR_").removeprefix("CUDA_"): v
                       for k, v in CODES.items()})

TEXTS: dict[str, str] = {
    "CUDA_SUCCESS": "no error",
    "CUDA_ERROR_INVALID_VALUE": "invalid argument",
    "CUDA_ERROR_OUT_OF_MEMORY": "out of memory",
    "CUDA_ERROR_NOT_INITIALIZED": "initialization error",
    "CUDA_ERROR_DEINITIALIZED": "driver shutting down",
    "CUDA_ERROR_PROFILER_DISABLED": "profiler disabled while using external profiling tool",
    "CUDA_ERROR_PROFILER_NOT_INITIALIZED": "profiler not initialized: call cudaProfilerInitialize()",
    "CUDA_ERROR_PROFILER_ALREADY_STARTED": "profiler already started",
    "CUDA_ERROR_PROFILER_ALREADY_STOPPED": "profiler already stopped",
    "CUDA_ERROR_STUB_LIBRARY": "CUDA driver is a stub library",
    "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER": "the call requires a newer CUDA driver",
    "CUDA_ERROR_DEVICE_UNAVAILABLE": "CUDA-capable device(s) is/are busy or unavailable",
    "CUDA_ERROR_NO_DEVICE": "no CUDA-capable device is detected",
    "CUDA_ERROR_INVALID_DEVICE": "invalid device ordinal",
    "CUDA_ERROR_DEVICE_NOT_LICENSED": "device doesn't have valid Grid license",
    "CUDA_ERROR_INVALID_IMAGE": "device kernel image is invalid",
    "CUDA_ERROR_INVALID_CONTEXT": "invalid device context",
    "CUDA_ERROR_CONTEXT_ALREADY_CURRENT": "context already current",
    "CUDA_ERROR_MAP_FAILED": "mapping of buffer object failed",
    "CUDA_ERROR_UNMAP_FAILED": "unmapping of buffer object failed",
    "CUDA_ERROR_ARRAY_IS_MAPPED": "array is mapped",
    "CUDA_ERROR_ALREADY_MAPPED": "resource already mapped",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "no kernel image is available for execution on the device",
    "CUDA_ERROR_ALREADY_ACQUIRED": "resource already acquired",
    "CUDA_ERROR_NOT_MAPPED": "resource not mapped",
    "CUDA_ERROR_NOT_MAPPED_AS_ARRAY": "resource not mapped as array",
    "CUDA_ERROR_NOT_MAPPED_AS_POINTER": "resource not mapped as pointer",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "uncorrectable ECC error encountered",
    "CUDA_ERROR_UNSUPPORTED_LIMIT": "limit is not supported on this architecture",
    "CUDA_ERROR_CONTEXT_ALREADY_IN_USE": "exclusive-thread device already in use by a different thread",
    "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED": "peer access is not supported between these two devices",
    "CUDA_ERROR_INVALID_PTX": "a PTX JIT compilation failed",
    "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT": "invalid OpenGL or DirectX context",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE": "uncorrectable NVLink error detected during the execution",
    "CUDA_ERROR_JIT_COMPILER_NOT_FOUND": "PTX JIT compiler library not found",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the provided PTX was compiled with an unsupported toolchain",
    "CUDA_ERROR_JIT_COMPILATION_DISABLED": "PTX JIT compilation was disabled",
    "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY": "the provided execution affinity is not supported",
    "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC": "device-side synchronization is not supported by this code",
    "CUDA_ERROR_CONTAINED": "an exception occurred on the device that is now contained",
    "CUDA_ERROR_INVALID_SOURCE": "device kernel image is invalid",
    "CUDA_ERROR_FILE_NOT_FOUND": "file not found",
    "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND": "shared object symbol not found",
    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED": "shared object initialization failed",
    "CUDA_ERROR_OPERATING_SYSTEM": "OS call failed or operation not supported on this OS",
    "CUDA_ERROR_INVALID_HANDLE": "invalid resource handle",
    "CUDA_ERROR_ILLEGAL_STATE": "the operation cannot be performed in the present state",
    "CUDA_ERROR_LOSSY_QUERY": "the attribute query would lose information",
    "CUDA_ERROR_NOT_FOUND": "named symbol not found",
    "CUDA_ERROR_NOT_READY": "device not ready",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "an illegal memory access was encountered",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too many resources requested for launch",
    "CUDA_ERROR_LAUNCH_TIMEOUT": "the launch timed out and was terminated",
    "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING": "launch uses incompatible texturing mode",
    "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED": "peer access is already enabled",
    "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED": "peer access has not been enabled",
    "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE": "cannot set while device is active in this process",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED": "context is destroyed",
    "CUDA_ERROR_ASSERT": "device-side assert triggered",
    "CUDA_ERROR_TOO_MANY_PEERS": "peer mapping resources exhausted",
    "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED":
        "part or all of the requested memory range is already mapped",
    "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED":
        "pointer does not correspond to a registered memory region",
    "CUDA_ERROR_HARDWARE_STACK_ERROR": "hardware stack error",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "an illegal instruction was encountered",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "misaligned address",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE": "operation not supported on global/shared address space",
    "CUDA_ERROR_INVALID_PC": "invalid program counter",
    "CUDA_ERROR_LAUNCH_FAILED": "unspecified launch failure",
    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE": "too many blocks in cooperative launch",
    "CUDA_ERROR_TENSOR_MEMORY_LEAK": "tensor memory was not freed before the kernel exited",
    "CUDA_ERROR_NOT_PERMITTED": "operation not permitted",
    "CUDA_ERROR_NOT_SUPPORTED": "operation not supported",
    "CUDA_ERROR_SYSTEM_NOT_READY": "system not yet initialized",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH":
        "system has unsupported display driver / cuda driver combination",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE":
        "forward compatibility was attempted on non supported HW",
    "CUDA_ERROR_MPS_CONNECTION_FAILED": "MPS client failed to connect to the MPS control daemon",
    "CUDA_ERROR_MPS_RPC_FAILURE": "the remote procedure call between the MPS server and client failed",
    "CUDA_ERROR_MPS_SERVER_NOT_READY": "MPS server is not ready to accept new MPS client requests",
    "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED": "the hardware resources to connect new MPS clients are exhausted",
    "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED":
        "the hardware resources to support device connections are exhausted",
    "CUDA_ERROR_MPS_CLIENT_TERMINATED": "the MPS client has been terminated by the server",
    "CUDA_ERROR_CDP_NOT_SUPPORTED": "the module uses CUDA Dynamic Parallelism, which is not supported",
    "CUDA_ERROR_CDP_VERSION_MISMATCH": "CUDA Dynamic Parallelism is used by modules of different versions",
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": "operation not permitted when stream is capturing",
    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED": "operation failed due to a previous error during capture",
    "CUDA_ERROR_STREAM_CAPTURE_MERGE": "operation would result in a merge of separate capture sequences",
    "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED": "capture was not ended in the same stream as it began",
    "CUDA_ERROR_STREAM_CAPTURE_UNJOINED": "capturing stream has unjoined work",
    "CUDA_ERROR_STREAM_CAPTURE_ISOLATION": "dependency created on uncaptured work in another stream",
    "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT":
        "operation would make the legacy stream depend on a capturing blocking stream",
    "CUDA_ERROR_CAPTURED_EVENT":
        "operation not permitted on an event last recorded in a capturing stream",
    "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD":
        "attempt to terminate a thread-local capture sequence from another thread",
    "CUDA_ERROR_TIMEOUT": "wait operation timed out",
    "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE":
        "the graph update was not performed because it violated update constraints",
    "CUDA_ERROR_EXTERNAL_DEVICE": "an async error occurred in an external entity outside of CUDA",
    "CUDA_ERROR_INVALID_CLUSTER_SIZE": "invalid cluster size",
    "CUDA_ERROR_FUNCTION_NOT_LOADED": "function not loaded",
    "CUDA_ERROR_INVALID_RESOURCE_TYPE": "invalid resource type",
    "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION": "invalid resource configuration",
    "CUDA_ERROR_KEY_ROTATION": "an error occurred during key rotation",
    "CUDA_ERROR_UNKNOWN": "unknown error",
}


def name_of(code: int) -> str:
    return NAMES.get(code, f"CUresult({code})")


class CudaError(Exception):
    """A failure with the CUresult a program gets.

    `subject` names what the call was about (a kernel, a pointer) and is printed in
    parentheses after the call's name. `quiet` marks answers that are part of the
    protocol rather than a mistake (a cuStreamQuery that says NOT_READY, an export
    table nobody serves): they are traced but not reported. `outs`, when given, are
    written through the out-parameters although the call fails.
    """

    def __init__(self, code: int, message: str, *, subject: str | None = None,
                 quiet: bool = False, outs: tuple | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.subject = subject
        self.quiet = quiet
        self.outs = outs  # out-parameter values NVIDIA writes even on failure (e.g. NULL)


_tracebacks_shown: set[str] = set()


def from_exception(e: Exception, where: str) -> CudaError:
    """The CudaError a failure inside cuport becomes.

    The loader's and the backends' errors carry their CUresult (`code`, `message`);
    anything else is a bug in cuport: CUDA_ERROR_UNKNOWN, with its traceback printed
    the first time it happens in `where` (a call name).
    """
    code, message = getattr(e, "code", None), getattr(e, "message", None)
    if isinstance(code, int) and isinstance(message, str):
        return CudaError(code, message)
    if isinstance(e, MemoryError):  # the machine's limit, not a bug
        return CudaError(E.OUT_OF_MEMORY, "out of host memory")
    if where not in _tracebacks_shown:
        _tracebacks_shown.add(where)
        print(f"cuport: {where}: internal error, answering CUDA_ERROR_UNKNOWN (a bug in "
              f"cuport {_version()}: please report it with this traceback and the program or "
              "PTX that shows it):", file=sys.stderr)
        traceback.print_exception(type(e), e, e.__traceback__)
    return CudaError(E.UNKNOWN, f"internal error (a bug in cuport, please report it): "
                                f"{type(e).__name__}: {e}")


def _version() -> str:
    from cuport import __version__

    return __version__


def quiet_mode() -> bool:
    return os.environ.get("CUPORT_QUIET", "") not in ("", "0")


def report_line(call: str, code: int, message: str, subject: str | None = None) -> str:
    where = f"{call}({subject})" if subject else call
    return f"cuport: {where}: {name_of(code)}: {message}"


def report(call: str, code: int, message: str, subject: str | None = None) -> None:
    """Print the one line that names the failing call, unless CUPORT_QUIET=1."""
    if not quiet_mode():
        print(report_line(call, code, message, subject), file=sys.stderr, flush=True)


# -- cuGetErrorName / cuGetErrorString: C strings that live as long as the process --------

_C_STRINGS: dict[str, object] = {}


def _c_string(text: str) -> int:
    buffer = _C_STRINGS.get(text)
    if buffer is None:
        buffer = _C_STRINGS[text] = ctypes.create_string_buffer(text.encode())
    return ctypes.addressof(buffer)


def _known(code: int) -> str:
    name = NAMES.get(code)
    if name is None:
        raise CudaError(E.INVALID_VALUE, f"{code} is not a CUresult", outs=(0,))
    return name


@implements("cuGetErrorName", before_init=True)
def get_error_name(code: int) -> int:
    return _c_string(_known(code))


@implements("cuGetErrorString", before_init=True)
def get_error_string(code: int) -> int:
    name = _known(code)
    return _c_string(TEXTS.get(name, name))


# -- failures that leave the device unusable ----------------------------------------------

# A kernel that faults or traps ends the device's usefulness to the process: NVIDIA's
# driver then answers every call that touches the device with the same code, in every
# context, new ones and a reset primary context included (measured on an H200).
FATAL_CODES = frozenset({
    E.ILLEGAL_ADDRESS, E.MISALIGNED_ADDRESS, E.LAUNCH_FAILED, E.ASSERT,
    E.HARDWARE_STACK_ERROR, E.ILLEGAL_INSTRUCTION, E.INVALID_ADDRESS_SPACE, E.INVALID_PC,
})
# The calls that still answer normally then: queries that do not touch the device, the
# context stack, and destroying contexts (measured: cuCtxGetCurrent/GetDevice/
# GetApiVersion/PopCurrent/PushCurrent/Destroy/SetCurrent, cuDeviceGetAttribute,
# cuDevicePrimaryCtxReset and cuDevicePrimaryCtxRelease answer; allocation, copies,
# streams, events, modules, launches and cuDevicePrimaryCtxRetain return the failure).
UNAFFECTED = re.compile(
    r"cu(Init|DriverGetVersion|GetErrorName|GetErrorString|GetProcAddress\w*|GetExportTable"
    r"|Device(Get\w*|ComputeCapability|TotalMem\w*|PrimaryCtx(Reset|Release|GetState)\w*)"
    r"|Ctx(GetCurrent|SetCurrent|PushCurrent|PopCurrent|GetDevice|GetApiVersion|GetFlags"
    r"|GetId|Destroy|Detach)\w*)"
)
_fatal: CudaError | None = None
_fatal_pending = None  # returns (and forgets) the failure's sticky error not yet returned
_fatal_told = False  # the "unusable" answer was printed once (later ones are quiet)
_fatal_lock = threading.Lock()


def note_failure(error: CudaError, take_pending=None) -> None:
    """Remember the first kernel failure that makes the device unusable. `take_pending`
    hands over the context's error of that failure if no call has returned it yet."""
    global _fatal, _fatal_pending
    if error.code in FATAL_CODES:
        with _fatal_lock:
            if _fatal is None:
                _fatal, _fatal_pending = error, take_pending


def check_usable(symbol: str) -> None:
    """Raise the earlier fatal failure for a call that touches the device. The first such
    call returns it as a synchronising call would have had it waited ("an earlier
    asynchronous operation failed: ..."), whether or not the failure came first; the
    answers after that one are printed once, not at every call."""
    if _fatal is not None and not UNAFFECTED.fullmatch(symbol):
        pending = _fatal_pending() if _fatal_pending is not None else None
        if pending is not None:
            raise pending
        global _fatal_told
        told, _fatal_told = _fatal_told, True  # (a polling loop would print it every call)
        raise CudaError(_fatal.code, f"the device is unusable after an earlier kernel failure "
                                     f"({_fatal.message}); as on a GPU, the process must be "
                                     f"restarted to use it again", quiet=told)
