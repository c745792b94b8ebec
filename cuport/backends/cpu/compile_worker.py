"""A compile worker process: PTX kernels in, object files out (compile_pool.py starts them).

    python -m cuport.backends.cpu.compile_worker [LAUNCHER-PID]

llvmlite serialises every call into LLVM behind one lock, so the kernels of a module are
compiled in parallel by processes, not threads. Requests and replies are pickles, each
after its length (4 bytes, little-endian), on stdin and stdout; the worker keeps the
modules it has parsed (by their text key) and exits when stdin closes. It compiles exactly
what the launching process would (backends/cpu/compiler.py), with the environment
variables that change code that the request carries.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading
import time
import traceback


def read_message(f):
    head = f.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack("<I", head)
    data = f.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def write_message(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<I", len(data)) + data)
    f.flush()


def _exit_with(parent: int) -> None:
    """End this worker as soon as the launching process is gone: stdin's EOF is only read
    between jobs, and one kernel can take minutes, while this worker holds the launching
    process's stderr open (a caller reading it to its end would wait) and a core."""
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(0)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the launching process decides
    try:
        os.nice(10)  # ahead compiles take idle cores, not the launching process's
    except OSError:
        pass
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    from ..facts import load_ptx
    from .compiler import compile_object

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the reply pipe
    modules: dict[str, object] = {}
    while True:
        msg = read_message(stdin)
        if msg is None:
            return 0
        job, key, texts, kernel, block, resident, nsm, env = msg
        try:
            for k, v in env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            module = modules.get(key)
            if module is None:
                module = load_ptx(texts)  # as the launching process loaded it (from the cache if big)
                if len(modules) > 8:
                    modules.clear()
                modules[key] = module
            t0 = time.perf_counter()
            obj, info = compile_object(module, kernel, block, nsm=nsm, resident=resident)
            write_message(stdout, ("done", job, obj, info.__dict__, time.perf_counter() - t0))
        except Exception as e:  # noqa: BLE001 - every failure goes back to the launcher
            from ...ptx.errors import UnsupportedError

            kind = "unsupported" if isinstance(e, UnsupportedError) else "internal"
            write_message(stdout, ("error", job, kind, str(e) if kind == "unsupported"
                                   else traceback.format_exc()))


if __name__ == "__main__":
    sys.exit(main())
