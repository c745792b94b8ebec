"""Thread-block clusters as cuport runs them: every cluster is one block.

A launch without cluster dimensions runs on sm_90 as clusters of one block, and cuport
refuses launches with larger clusters (driver/launch.py), so in every kernel it runs the
cluster special registers (PTX ISA §10.21-10.26) are those of a one-block cluster, and
barrier.cluster.wait waits for exactly the block's threads: the block barrier
(isa/control.py, passes/cfg.py `barrier_number`).
"""

from __future__ import annotations

# special register -> the special register it equals, or its constant value
ONE_BLOCK_CLUSTER: dict[str, str | int] = {
    **{f"%clusterid.{k}": f"%ctaid.{k}" for k in "xyz"},
    **{f"%nclusterid.{k}": f"%nctaid.{k}" for k in "xyz"},
    **{f"%cluster_ctaid.{k}": 0 for k in "xyz"},
    **{f"%cluster_nctaid.{k}": 1 for k in "xyz"},
    "%cluster_ctarank": 0,
    "%cluster_nctarank": 1,
    "%is_explicit_cluster": 0,
}
