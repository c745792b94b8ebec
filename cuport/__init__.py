"""cuport: run CUDA programs on the CPU by standing in for NVIDIA's libcuda.so.1."""

__version__ = "0.1.0"
