"""Builds cuport's libcuda.so.1 and its library stand-ins (libcublas.so.13, ...) on install.

`pip install .` puts it in the installed package (cuport/_native/); `pip install -e .`
builds it in the source tree's cuport/_native/ (gitignored). Either way cuport
rebuilds it on first use if its inputs change (cuport.capi.build.library_dir).
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
        from cuport.capi import build
        from cuport.libs import build as libs_build

        if getattr(self, "editable_mode", False):
            out = HERE / "cuport" / "_native"
        else:
            out = Path(self.build_lib) / "cuport" / "_native"
        build.build(out)
        libs_build.build(out)  # libcublas.so.13 & co. beside libcuda.so.1


setup(cmdclass={"build_py": BuildPyWithLibcuda})
