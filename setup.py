"""Builds cuport's libcuda.so.1 (cffi embedding mode) as part of installing the package.

`pip install .` puts it in the installed package (cuport/_native/<interpreter>/); `pip install
-e .` builds it in the source tree's cuport/_native/<interpreter>/ (gitignored). Either way cuport
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

        if getattr(self, "editable_mode", False):
            out = HERE / "cuport" / "_native"
        else:
            out = Path(self.build_lib) / "cuport" / "_native"
        build.build(build.native_dir(out))


setup(cmdclass={"build_py": BuildPyWithLibcuda})
