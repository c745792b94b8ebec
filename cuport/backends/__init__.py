"""Compiler backends behind one interface (cuport.backends.base): the CPU backend today."""

from __future__ import annotations


def get_backend():
    """The backend the driver uses: the CPU backend (OpenCL and Metal are future work)."""
    from .cpu.backend import get_cpu_backend

    return get_cpu_backend()
