"""CUPORT_SPIRV_VALIDATE=1: every SPIR-V module the backend builds goes through spirv-val.

A driver may accept an invalid module and compute nonsense, or crash; Khronos' validator
(Debian's spirv-tools) says precisely what is wrong. With the variable set, a module that
fails `spirv-val --target-env vulkan1.2` fails the compilation (the launch then reports
CUDA_ERROR_NOT_SUPPORTED with the validator's message), and so does a missing validator:
asking for validation and silently not getting it would hide exactly the bugs it is for.
The program and kernel tests on Vulkan run with it on.

The validator is an executable found on PATH: it runs only if it and its directory are
owned by root or this user and writable by nobody else (the project's rule for what it
executes).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile

TARGET_ENV = "vulkan1.2"


class InvalidSpirv(Exception):
    """The module fails validation, or validation was asked for and cannot run."""


def enabled() -> bool:
    return os.environ.get("CUPORT_SPIRV_VALIDATE", "") not in ("", "0")


def _trusted(path: str) -> bool:
    for p in (path, os.path.dirname(path)):
        st = os.stat(p)
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def validator() -> str:
    found = shutil.which("spirv-val")
    if found is None:
        raise InvalidSpirv("CUPORT_SPIRV_VALIDATE is set but spirv-val is not installed "
                           "(Debian: spirv-tools)")
    real = os.path.realpath(found)
    if not _trusted(real):
        raise InvalidSpirv(f"CUPORT_SPIRV_VALIDATE is set but {real} (spirv-val) or its "
                           "directory is writable by other users: not running it")
    return real


def check(spirv: bytes, what: str) -> None:
    """Raise InvalidSpirv with spirv-val's message unless `spirv` is valid for Vulkan 1.2."""
    tool = validator()
    with tempfile.TemporaryDirectory(prefix="cuport-spv-") as d:
        path = os.path.join(d, "module.spv")
        with open(path, "wb") as f:
            f.write(spirv)
        try:
            r = subprocess.run([tool, "--target-env", TARGET_ENV, path], capture_output=True,
                               text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InvalidSpirv(f"spirv-val could not check {what}: {e}") from None
    if r.returncode != 0:
        msg = " ".join((r.stderr + r.stdout).split())
        raise InvalidSpirv(f"the SPIR-V cuport emitted for {what} fails spirv-val "
                           f"--target-env {TARGET_ENV}: {msg[:2000]}")
