"""The driver: devices, contexts, memory, streams, events, modules and launches.

Importing the package registers every implemented driver API symbol
(cuport.driver.api.IMPLEMENTATIONS); capi/dispatch.py binds them to libcuda's
exported entry points.
"""

from cuport.driver import (  # noqa: F401 - imported for their registrations
    array,
    capture,
    context,
    copy,
    device,
    errors,
    event,
    graph,
    graph_conditional,
    graph_exec,
    graph_params,
    ipc,
    launch,
    legacy_launch,
    linker,
    memory,
    mempool,
    module,
    profiler,
    stream,
    stream_attrs,
    texture,
    user_objects,
    vmm,
)
