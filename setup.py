"""Builds cuport's libcuda.so.1 (cffi embedding mode), its library stand-ins
(libcublas.so.13, ...) and its memory-fault guard (backends/cpu/guard.c) as part of
installing the package.

`pip install .` puts them in the installed package (libcuda.so.1 in cuport/_native/<interpreter>/,
the guard in cuport/_native/); `pip install -e .` builds them in the source tree's cuport/_native/
(gitignored). Either way cuport rebuilds them on first use if their inputs change
(cuport.capi.build.library_dir, cuport.backends.cpu.guard.library).
"""

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithLibcuda(build_py):
    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(HERE))
        from cuport.backends.cpu import guard
        from cuport.capi import build
        from cuport.libs import build as libs_build

        if getattr(self, "editable_mode", False):
            out = HERE / "cuport" / "_native"
        else:
            out = Path(self.build_lib) / "cuport" / "_native"
        build.build(build.native_dir(out))
        libs_build.build(build.native_dir(out))  # libcublas.so.13 & co. beside libcuda.so.1
        guard.build(out)


setup(cmdclass={"build_py": BuildPyWithLibcuda})
