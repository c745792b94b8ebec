"""libcuda.so.1 is built once per interpreter and environment, and kept.

Two virtual environments on one editable checkout used to rebuild the library at every
switch (it embeds the environment's site directories, and there was one folder for
all). Now each environment has its folder under cuport/_native/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from capi_support import REPO, clean_env, run

from cuport.capi import build

ASK = "from cuport.capi import build; print(build.library_dir())"


def test_two_environments_keep_their_own_library(tmp_path):
    other = tmp_path / "venv2"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True)
    python = other / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                        "['purelib'])"]).stdout.strip())
    # the second environment sees this checkout and this environment's packages
    (site / "cuport-test.pth").write_text(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n")
    ours = build.library_dir()
    theirs = None
    try:
        first = run([str(python), "-c", ASK], timeout=600)
        assert first.returncode == 0, first.stderr
        theirs = Path(first.stdout.strip())
        assert theirs != ours and theirs.parent == ours.parent == build.PACKAGE_NATIVE
        for python_of in (sys.executable, str(python), sys.executable):
            again = run([python_of, "-c", ASK], env=clean_env(), timeout=600)
            assert again.returncode == 0, again.stderr
            assert "building libcuda.so.1" not in again.stderr, python_of
        assert (ours / build.SONAME).exists() and (theirs / build.SONAME).exists()
        # the other environment's library runs there
        probe = run([str(python), "-c", "import ctypes, sys; print(ctypes.CDLL(sys.argv[1])"
                                        ".cuInit(0))", str(theirs / build.SONAME)])
        assert probe.stdout.strip() == "0", probe.stderr
    finally:
        if theirs is not None and theirs != ours:
            shutil.rmtree(theirs, ignore_errors=True)
