"""`__managed__` variables on a device whose memory the host cannot touch (a discrete GPU's;
CUPORT_VK_COPIES=1 makes lavapipe's device memory so): the host reads and writes them at their
address (NVIDIA's H100 under cuport: the runtime's start-up write to one crashed the process,
as it was device memory), so they are managed memory, and kernels see the host's values and
the host the kernels'. In a subprocess: the setting is read when the backend opens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nvcc_ptx import ptx_of

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SCRIPT = r"""
import sys
import numpy as np
import cuport
m = cuport.Module(open(sys.argv[1]).read(), device="vulkan")
mg = m.global_array("MG", np.uint32)  # refused for device memory the host cannot map
mg[:] = np.arange(64, dtype=np.uint32) * 3
out = np.zeros(64, np.uint32)
m.kernel("scale")((1,), (64,), (out, np.uint32(5)))
assert out.tolist() == [3 * i * 5 for i in range(64)], out.tolist()
assert mg.tolist() == [3 * i + 1 for i in range(64)], mg.tolist()
print("PASS")
"""


@pytest.fixture(scope="module")
def ptx_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("managed") / "k.ptx"
    p.write_text(ptx_of(tmp_path_factory, HERE / "managed_globals.cu", "sm_90"))
    return p


def test_managed_variables_are_host_memory_on_a_discrete_gpu(ptx_file):
    from cuport.backends.vulkan import runtime

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    env = dict(os.environ, CUPORT_VK_COPIES="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(ptx_file)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("PASS"), r.stdout[-2000:] + r.stderr[-3000:]
