"""cuport: run CUDA programs on the CPU by standing in for NVIDIA's libcuda.so.1."""

__version__ = "0.1.0"

from .bytecode import install as _install_bytecode_cache  # noqa: E402

_install_bytecode_cache()  # (where Python keeps no .pyc: cuport's modules compiled once)


def __getattr__(name: str):
    # the Python API, imported lazily so that `import cuport` stays cheap for the driver
    if name in ("Module", "Kernel", "Pointer", "BackendError"):
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
