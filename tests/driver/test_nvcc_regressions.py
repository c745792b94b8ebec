"""Regressions found by public CUDA programs (issue 8), each reduced to a small program
that nvcc builds and `cuport run` runs, checked against what an H200 prints.

- rdc_shared: in an `-rdc` build nvcc puts the static `__shared__` arrays of template
  kernels at module scope (`.weak .shared`), and the linked module holds every
  kernel's; each kernel must count only those its call graph names (radixSortThrust,
  segmentationTreeThrust: CUB sized a grid of 0 blocks from 564064 bytes).
- l2_attributes: an L2 and a persisting-L2 size, access-policy windows as stream,
  launch and kernel-node attributes (simpleAttributes waived).
- near_bounds: a stencil's reads one row outside its buffer fault on cuport, not on a
  GPU (Rodinia srad_v2).
- device_assert: each failing thread's assert line, on stdout (cuda-samples simpleAssert
  showed none of them between its markers).
- graph_memory_reuse: a mem alloc node after the free of another takes its address, as
  CUDA's graph allocator does (cuda-samples graphMemoryFootprint).
- const_size: CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES read 0 (numba-cuda).
- vector_load_dests: `ld.shared.v2 {%a, %b}` with %b varying and %a not was refused
  (cuda-samples segmentationTreeThrust, behind its shared-memory failure).
- cluster_barrier: cooperative_groups' generic `thread_group::sync()` on sm_90 holds
  `barrier.cluster.arrive/wait` and reads %cluster_ctarank (its cluster case), which the
  validator refused at load (cuda-samples simpleCooperativeGroups); `this_cluster().sync()`
  runs them (a block is a cluster of one without a cluster launch).
- ptx_version_rdc: cudaFuncAttributes.ptxVersion of a -rdc compute_90 program was 121,
  libcudadevrt's PTX target (cuda-samples radixSortThrust: CUB failed with
  cudaErrorInvalidDeviceFunction).
- vmm: virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap,
  cuMemSetAccess) was not implemented: cuda-samples vectorAddMMAP waived.
- labeled_reduce: redux.sync with a register member mask, a different one per group
  (cg::reduce over a labeled_partition), combined the whole warp (cuda-samples
  warpAggregatedAtomicsCG FAILED).
- ballot_lane_masks: vote.sync with a register member mask that differs between groups of
  lanes (a labeled partition's) voted over the first lane's mask (HeCBench bscan FAILED).
- virtual_call_rdc: a virtual call in a -rdc program (compute_90 PTX only) took every
  function with its parameter count as a target, libcudadevrt's too, and one of them calls
  a syscall cuport lacks: the kernel failed (cuda-samples newdelete).
- programmatic_launch: griddepcontrol.launch_dependents / .wait (programmatic dependent
  launch, sm_90, cudaTriggerProgrammaticLaunchCompletion and cudaGridDependencySynchronize)
  were refused: CUB's merge sort kernels use them (cuda-samples segmentationTreeThrust
  failed with cudaErrorNotSupported).
- cg_devrt: cooperative groups through libcudadevrt (numba-cuda's `cuda.cg.this_grid()` and
  `g.sync()`): its cudaCG* functions call the driver's `__cuda_syscall_CGS_*`, which
  cuLinkComplete called undefined references and a launch refused (9 numba-cuda tests);
  with enough rows its grid sync loop went wrong silently on lavapipe (grid_sync_rows).
- spin_noinline: a block waiting for a block started after it, the spin loop inside a
  __noinline__ device function (or the loop's flag read through one) got no yield point on
  the CPU backend: a worker whose blocks all waited never started the one they waited for.
- lookback_scan: a one-pass prefix sum by decoupled look-back (CUB's DeviceScan, tiles by
  blockIdx.x; its onesweep sort, tiles by ticket) with 3073 blocks. With more CPU workers
  than cores (16 on the 2-core dev VM, as on a 16-core host that other work shares) a block
  spun through its yield points while the worker running the block it waited for had no
  CPU: 2.3-3.3 s of the program's CPU where 2 workers took 0.3 (now a worker whose block
  waits, with no other to start, gives its CPU away: 0.25-0.3 s), and with several blocks
  per grab a grab's first blocks waited for the other workers' whole grabs (now blocks of
  such kernels are handed out one at a time).
- all_blocks_wait: every block of a small grid spins until all the others have started
  (HeCBench's mis, 24 blocks waiting for each other's decisions): on 2 CPU workers holding 4
  blocks each the grid never ended (now such a kernel's blocks are all held at once where
  the grid fits in 32 a worker, as a GPU holds them). A larger such grid still hangs, but
  says why after a minute (CUPORT_STALL_S seconds) instead of nothing.
- ballot_illegal_mask: __ballot_sync with member masks that differ between lanes and lack
  the calling lane answered a ballot; an H100 fails the launch with
  cudaErrorIllegalInstruction, sticky (a mask all lanes share runs, however it is made).
- exit_in_spin_loop: lanes that left a spin loop for the kernel's end ran it again after
  the warp stepped aside at the loop's yield point (HeCBench atomicCAS: a compare-and-swap
  add counted twice under contention).
- event_order: the time between two events recorded on one stream was negative on the
  Vulkan backend's lanes: the first, behind a kernel, was timed by the lane's watcher
  thread after the host had timed the second (cuda-samples simpleMultiCopy printed
  "Memcpy host to device: -0.44 ms").
- divergent_loop_counter: a loop counter equal in every running lane, its loop left by a
  per-thread break, widened inside the loop: an internal error of the CPU lane forms
  (differential kernel d07_k030).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "capi"))

from capi_support import clean_env, cuport_command, library, need_nvcc, run  # noqa: E402

C = HERE / "c"


def build(tmp_path: Path, name: str, sources: list[str], *flags: str) -> Path:
    exe = tmp_path / name
    r = run([need_nvcc(), "-o", str(exe), *(str(C / s) for s in sources), *flags], timeout=600)
    if r.returncode != 0:
        pytest.fail(f"nvcc failed for {name}:\n{r.stderr}")
    return exe


def cuport_run(exe: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return run([*cuport_command(), "run", str(exe), *args], env=env or clean_env(),
               timeout=timeout)


def test_rdc_kernels_count_only_their_own_static_shared_memory(tmp_path):
    exe = build(tmp_path, "rdc_shared", ["rdc_shared_a.cu", "rdc_shared_b.cu"], "-rdc=true")
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    # what cudaFuncGetAttributes answers on the H200 (ptxas' counts)
    assert r.stdout.splitlines() == ["kernel_a shared 40960", "kernel_ab shared 40960",
                                     "kernel_b shared 45056", "PASS"], r.stdout


def test_l2_persistence_and_access_policy_windows(tmp_path):
    """simpleAttributes waived on `persistingL2CacheMaxSize == 0`; stream attributes were
    not implemented."""
    exe = build(tmp_path, "l2_attributes", ["l2_attributes.cu"])
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["hitRatio 1.5: cudaErrorInvalidValue", "PASS"], r.stdout


@pytest.mark.parametrize("layout", ["alone", "neighbours"])
def test_reads_just_outside_an_allocation_do_not_fault(tmp_path, layout):
    """srad_v2 reads one row before and after its image: no fault by default, a fault
    (cudaErrorIllegalAddress, the program goes on) with CUPORT_CHECK_BOUNDS=1."""
    exe = build(tmp_path, "near_bounds", ["near_bounds.cu"])
    args = [] if layout == "alone" else ["neighbours"]
    r = cuport_run(exe, *args)
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr
    r = cuport_run(exe, *args, env=clean_env(CUPORT_CHECK_BOUNDS="1"))
    assert r.returncode == 1 and r.stdout.splitlines() == ["launch: cudaErrorIllegalAddress"], \
        r.stdout + r.stderr
    assert "illegal address: a load or store at" in r.stderr


def test_allocations_are_padded_to_the_granule_or_guarded(monkeypatch):
    """The mapping around a fresh allocation: 2 MiB readable on either side by default,
    an inaccessible page on either side in the checking mode."""
    from cuport.backends import host_pages
    from cuport.loader.memory import ProcessMemory

    size = 3 * host_pages.PAGE + 100
    base = host_pages.allocate(size)
    try:
        maps = ProcessMemory()
        assert maps.readable_until(base - host_pages.GRANULE) >= base + size + host_pages.GRANULE - 1
    finally:
        host_pages.free(base, size)
    monkeypatch.setenv("CUPORT_CHECK_BOUNDS", "1")
    base = host_pages.allocate(size)
    try:
        maps = ProcessMemory()
        assert maps.readable_until(base) == base + 4 * host_pages.PAGE
        assert maps.mapping_at(base - 1) is not None and not maps.mapping_at(base - 1).readable
    finally:
        host_pages.free(base, size)


def test_every_failing_thread_prints_its_assert_line_on_stdout(tmp_path):
    exe = build(tmp_path, "device_assert", ["device_assert.cu"])
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    where = f"{C / 'device_assert.cu'}:10: void check_limit(const int *, int): block: [1,0,0]"
    assert r.stdout.splitlines() == [
        "-- begin",
        *(f"{where}, thread: [{x},{y},0] Assertion `v[i] < limit` failed."
          for x, y in ((6, 0), (11, 0), (13, 0))),
        "-- end", "cudaErrorAssert"], r.stdout


def test_graph_memory_reuses_a_freed_address_within_a_graph(tmp_path):
    exe = build(tmp_path, "graph_memory_reuse", ["graph_memory_reuse.cu"])
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["b reuses a's address: yes", "c has its own: yes",
                                     "PASS"], r.stdout


def test_const_size_bytes_counts_the_kernels_constant_memory(tmp_path):
    """CONST_SIZE_BYTES read 0. The H200 reports the module's whole user constant bank for
    every kernel, whether it reads it or not (tests/differential's recording: each of its
    560 kernels reports 256, the module's one __constant__ array, most of them not reading
    it); tests/driver/record_gpu_issue8.sh records this program's own answer."""
    exe = build(tmp_path, "const_size", ["const_size.cu"])
    r = cuport_run(exe)
    assert r.returncode == 0, r.stdout + r.stderr
    sizes = dict(line.rsplit(" const ", 1) for line in r.stdout.splitlines())
    assert sizes == {"lookup": "1028", "scaled": "1028"}, r.stdout  # table[256] and scale


def test_destinations_of_a_vector_load_share_their_kind(tmp_path):
    exe = build(tmp_path, "vector_load_dests", ["vector_load_dests.cu"], "-O3")
    r = cuport_run(exe)
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


def test_a_loop_counter_widened_in_a_loop_with_a_divergent_exit(tmp_path):
    exe = build(tmp_path, "divergent_loop_counter", ["divergent_loop_counter.cu"], "-O3")
    r = cuport_run(exe)
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_cluster_barriers_in_one_block_clusters(tmp_path, device):
    """On Vulkan only the kernel that runs cluster.sync(): the other's generic sync() also
    holds the grid group's spin loop, which lavapipe (lock step) refuses."""
    exe = build(tmp_path, "cluster_barrier", ["cluster_barrier.cu"], "-arch=sm_90")
    args = [] if device == "cpu" else ["cluster"]
    r = cuport_run(exe, *args, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


def test_a_kernel_for_clusters_of_two_blocks_is_refused(tmp_path):
    """cuport runs every cluster as one block, so `__cluster_dims__(2, 1, 1)` (PTX
    .reqnctapercluster) must fail the launch, not run with wrong cluster ranks (an H200 runs
    it: "20 21 20 21", ranks 0 and 1 in clusters of 2)."""
    exe = build(tmp_path, "cluster_barrier", ["cluster_barrier.cu"], "-arch=sm_90")
    r = cuport_run(exe, "dims")
    assert r.returncode == 2 and r.stdout.splitlines() == ["cudaErrorNotSupported"], r.stdout + r.stderr


def test_ptx_version_is_that_of_the_kernels_own_ptx_in_an_rdc_program(tmp_path):
    exe = build(tmp_path, "ptx_version_rdc", ["ptx_version_rdc.cu"], "-rdc=true",
                "-gencode", "arch=compute_90,code=compute_90")
    r = cuport_run(exe)
    assert r.returncode == 0 and r.stdout.splitlines() == ["ptxVersion 90", "PASS"], r.stdout + r.stderr


VMM_LINES = [
    "vmm 1", "granularity 2097152", "access 3", "retained the handle of c: 1",
    # cuport's refusals (an H200 recording, tests/driver/record_gpu_issue8.sh, confirms them)
    "cudaFree of mapped memory: cudaErrorInvalidValue",
    "cuMemMap over a mapping: CUDA_ERROR_INVALID_VALUE",
    "cuMemCreate of granularity + 1 bytes: CUDA_ERROR_INVALID_VALUE",
    "cuMemUnmap of half a mapping: CUDA_ERROR_INVALID_VALUE",
    "PASS",
]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_virtual_memory_management(tmp_path, device):
    """Reserved ranges, physical allocations mapped into them (one twice, aliased), a kernel
    over them; on Vulkan (device memory that is not host pages) the attribute is 0 and the
    first call is refused."""
    exe = build(tmp_path, "vmm", ["vmm.cu"], f"-L{library().parent}", "-lcuda")
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device))
    if device == "cpu":
        assert r.returncode == 0 and r.stdout.splitlines() == VMM_LINES, r.stdout + r.stderr
    else:
        assert r.returncode == 2 and r.stdout.splitlines() == [
            "vmm 0", "cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM): "
            "CUDA_ERROR_NOT_SUPPORTED"], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_redux_with_a_member_mask_per_group(tmp_path, device):
    exe = build(tmp_path, "labeled_reduce", ["labeled_reduce.cu"], "-arch=sm_90")
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_votes_with_a_member_mask_per_lane(tmp_path, device):
    exe = build(tmp_path, "ballot_lane_masks", ["ballot_lane_masks.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


def test_a_virtual_call_reaches_only_functions_whose_address_is_taken(tmp_path):
    exe = build(tmp_path, "virtual_call_rdc", ["virtual_call_rdc.cu"], "-rdc=true",
                "-gencode", "arch=compute_90,code=compute_90")
    r = cuport_run(exe)
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_programmatic_dependent_launch(tmp_path, device):
    exe = build(tmp_path, "programmatic_launch", ["programmatic_launch.cu"], "-arch=sm_90")
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0 and r.stdout.splitlines() == ["PASS"], r.stdout + r.stderr


CG_PLAIN = "plain launch: cudaSuccess, handle 0: 1, sync 999, size 999 (0), rank 999 (0)"


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_cooperative_groups_through_libcudadevrt(tmp_path, device):
    """Grid sync, size and rank through libcudadevrt's cudaCG* functions, as numba-cuda calls
    them, in cooperative launches; outside one the grid handle is 0 and the calls fail. On
    lavapipe: fewer rows (each grid sync spends its loop budget, quirks.py) and no
    cudaCGSynchronizeGrid, whose barriers are in code only thread 0 runs."""
    exe = build(tmp_path, "cg_devrt", ["cg_devrt.cu"], "-rdc=true", "-lcudadevrt")
    args = [] if device == "cpu" else ["24", "rows-only"]
    r = cuport_run(exe, *args, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-2:] == [CG_PLAIN, "PASS"], r.stdout + r.stderr
    assert lines[0].startswith(f"rows: {args[0] if args else 200} rows of "), r.stdout


SPIN_NOINLINE = ["in_callee: block 0 waited for block 63", "through_call: block 0 waited for block 63",
                 "grid_sync: every block read the others' slots", "PASS"]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_spin_loops_in_functions_that_are_not_inlined(tmp_path, device):
    """Block 0 waits for the last of 64 blocks, in a __noinline__ function's loop and in a
    loop calling a __noinline__ flag read; a grid.sync() in a __noinline__ function. On one
    CPU worker (CUPORT_THREADS=1) the waiting block must step aside for the others (main
    hung: the spin loop in a called function had no yield point, and a loop whose flag read
    was a call was not seen as a spin loop). lavapipe runs the grid on two threads."""
    exe = build(tmp_path, "spin_noinline", ["spin_noinline.cu"], "-O3")
    env = clean_env(CUPORT_DEVICE=device, CUPORT_THREADS="1", LP_NUM_THREADS="2")
    r = cuport_run(exe, env=env, timeout=200)
    assert r.returncode == 0 and r.stdout.splitlines() == SPIN_NOINLINE, r.stdout + r.stderr


LOOKBACK = ["static: 3073 tiles scanned", "tickets: 3073 tiles scanned", "PASS"]


def test_look_back_scans_with_more_workers_than_cores(tmp_path):
    """Blocks spinning on a flag an earlier block publishes, on 16 CPU workers (more than the
    cores of most test machines: a worker's block may wait for one whose worker has no CPU)
    and on one (blocks in order: nothing ever waits long). The program checks every element
    against the host's sum and ends itself (SIGALRM) if a wait never ends."""
    exe = build(tmp_path, "lookback_scan", ["lookback_scan.cu"], "-O3")
    for workers in ("16", "1"):
        r = cuport_run(exe, env=clean_env(CUPORT_THREADS=workers), timeout=200)
        assert r.returncode == 0 and r.stdout.splitlines() == LOOKBACK, (workers, r.stdout + r.stderr)


def test_blocks_that_wait_for_every_other_block(tmp_path):
    """24 blocks of 256 threads, each spinning until all have started, on 2 workers and on
    1 (4 slots a worker held 8 and 4 of them: a hang, ended by the program's SIGALRM)."""
    exe = build(tmp_path, "all_blocks_wait", ["all_blocks_wait.cu"], "-O3")
    for workers in ("2", "1"):
        r = cuport_run(exe, env=clean_env(CUPORT_THREADS=workers), timeout=120)
        assert r.returncode == 0 and r.stdout.splitlines() == [
            "24 blocks each saw all 24 start", "PASS"], (workers, r.stdout + r.stderr)


def test_a_grid_too_large_to_hold_whose_blocks_wait_is_named(tmp_path):
    """40 such blocks on one worker: more than the 32 a worker can hold, so it keeps 4 and
    the first blocks spin forever waiting for the last (a GPU would hold all 40). It still
    hangs, but it says why after CUPORT_STALL_S seconds instead of saying nothing."""
    exe = build(tmp_path, "all_blocks_wait", ["all_blocks_wait.cu"], "-O3")
    env = clean_env(CUPORT_THREADS="1", CUPORT_STALL_S="1")
    p = subprocess.Popen([*cuport_command(), "run", str(exe), "40"], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stderr.readline()  # (blocks until the note, or EOF if the program ends)
    finally:
        p.kill()
        p.communicate()
    assert line.startswith("cuport: kernel _Z8all_waitPViPii (grid (40, 1, 1), 40 blocks) has "
                           "not ended after 1 s."), line
    assert "holds 4 of them at once (4 per worker, 1 worker)" in line, line


def test_blocks_that_wait_for_every_other_block_on_vulkan(tmp_path):
    """The same grid on the Vulkan device: a GPU holds all 24 blocks at once and the program
    passes; lavapipe runs them a few at a time, so the first blocks spin until its loop
    budget ends them, and the launch fails naming the loop: never a wrong answer."""
    budget = _vulkan_loop_budget()
    exe = build(tmp_path, "all_blocks_wait", ["all_blocks_wait.cu"], "-O3")
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE="vulkan"), timeout=120)
    if budget:
        assert r.returncode != 0 and "ran longer than this Vulkan driver lets a shader loop" in r.stderr, \
            r.stdout + r.stderr
    else:
        assert r.returncode == 0 and r.stdout.splitlines() == [
            "24 blocks each saw all 24 start", "PASS"], r.stdout + r.stderr


def _vulkan_loop_budget() -> int:
    """The loop budget of the Vulkan device `CUPORT_DEVICE=vulkan` runs on (quirks.py: 0 for none)."""
    from cuport.backends.vulkan import runtime
    from cuport.backends.vulkan.backend import get_vulkan_backend

    if not runtime.devices():
        pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    return get_vulkan_backend().caps.loop_iteration_limit


@pytest.mark.parametrize("nrows", [40000, 70000])
def test_grid_sync_rows_past_lavapipes_loop_budget(tmp_path, nrows):
    """cg_devrt's rows kernel on one block (LP_NUM_THREADS=1): libcudadevrt's grid sync
    after each row, in a loop nvcc unrolls four times. The sync's spin loop ends at once, but
    lavapipe spends a loop pass on it each time (5 passes per 4 rows), which cuport's count
    of back edges missed: from 52429 rows the driver ended the loop early and the program
    read wrong rows, without an error. Under the budget the rows are right; past it (at
    least one pass a row) the launch fails naming the loop where the driver has a budget
    (lavapipe), and is right elsewhere: never wrong rows."""
    exe = build(tmp_path, "cg_devrt", ["cg_devrt.cu"], "-rdc=true", "-lcudadevrt")
    r = cuport_run(exe, str(nrows), "rows-only",
                   env=clean_env(CUPORT_DEVICE="vulkan", LP_NUM_THREADS="1"))
    lines = r.stdout.splitlines()
    over = nrows > 65535 and _vulkan_loop_budget()
    if r.returncode == 0:
        # columns: 32 per block the device runs at once, up to 8 (lavapipe 1, an H100 8)
        assert re.fullmatch(rf"rows: {nrows} rows of \d+ columns", lines[0]) and lines[-1] == "PASS", r.stdout
        assert not over, "the launch passed the driver's loop budget without failing"
        return
    assert over, r.stdout + r.stderr
    assert lines[0] == "rows: launch cudaSuccess, synchronize cudaErrorLaunchFailure", r.stdout
    assert re.search(r"cuLaunchKernel\(_Z4rowsPiii\): CUDA_ERROR_LAUNCH_FAILED: kernel _Z4rowsPiii: "
                     r"a thread's loops ran longer than this Vulkan driver lets a shader loop .* "
                     r"\(PTX line \d+, block \(0,0,0\)", r.stderr), r.stderr


BALLOT_ILLEGAL = ["legal mask: cudaSuccess", "launch: cudaSuccess",
                  "synchronize: cudaErrorIllegalInstruction",
                  "then cudaMalloc: cudaErrorIllegalInstruction"]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
@pytest.mark.parametrize("mask", ["register", "next", "zero", "immediate", "uniform"])
def test_a_vote_whose_mask_lacks_the_calling_lane_is_an_illegal_instruction(tmp_path, device, mask):
    """As on an H100 (recorded 2026-12-06): masks that differ between lanes and lack the
    caller fail the launch; a mask every lane shares runs, whatever lanes it lacks."""
    exe = build(tmp_path, "ballot_illegal_mask", ["ballot_illegal_mask.cu"])
    r = cuport_run(exe, mask, env=clean_env(CUPORT_DEVICE=device))
    if mask in ("register", "next"):
        assert r.returncode == 0 and r.stdout.splitlines() == BALLOT_ILLEGAL, r.stdout + r.stderr
        assert "CUDA_ERROR_ILLEGAL_INSTRUCTION: kernel " in r.stderr, r.stderr
    else:
        assert r.returncode == 0 and r.stdout.splitlines() == [
            "legal mask: cudaSuccess", "launch: cudaSuccess", "synchronize: cudaSuccess",
            "then cudaMalloc: cudaSuccess"], r.stdout + r.stderr


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_events_on_one_stream_are_timed_in_their_order(tmp_path, device):
    """Start behind a kernel, then an asynchronous copy, a stream synchronisation or a kernel,
    then stop: cudaEventElapsedTime is never negative (20 rounds each; before the fix lavapipe
    gave 1 to 9 negative ones of 20)."""
    exe = build(tmp_path, "event_order", ["event_order.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["copy between events: 0 of 20 negative",
                                     "stream synchronised between events: 0 of 20 negative",
                                     "kernel between events: 0 of 20 negative", "PASS"], r.stdout


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_a_polled_failure_is_printed_once_not_at_every_call(tmp_path, device):
    """After a kernel fault every cuStreamQuery answers the error (a polling loop asks
    dozens of times); cuport names it on stderr once, then answers quietly."""
    exe = build(tmp_path, "poll_after_fault", ["poll_after_fault.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ("first cudaErrorIllegalAddress, then 50 of 50 queries answered "
                        "cudaErrorIllegalAddress, then cudaErrorIllegalAddress\n"), r.stdout + r.stderr
    assert r.stderr.count("unusable after an earlier kernel failure") == 1, r.stderr


@pytest.mark.parametrize("device, workers", [("cpu", "1"), ("cpu", "8"), ("vulkan", "1")])
def test_lanes_that_left_a_spin_loop_stay_finished_after_a_yield(tmp_path, device, workers):
    """exit_in_spin_loop.cu: a warp that steps aside at a spin loop's yield point after some
    of its lanes left the loop for the kernel's end resumes with the others only (one
    worker: lane l takes 5*l+1 trips, the warp passes 64 yield points; 8 workers on any
    machine: the compare-and-swap add under contention, wrong in most runs before). The
    same program on the Vulkan backend (no yield points there: it must simply agree)."""
    if device == "vulkan":
        from cuport.backends.vulkan import runtime

        if not runtime.devices():
            pytest.skip(f"no Vulkan device: {runtime.unavailable_reason()}")
    exe = build(tmp_path, "exit_in_spin_loop", ["exit_in_spin_loop.cu"])
    r = cuport_run(exe, env=clean_env(CUPORT_DEVICE=device, CUPORT_THREADS=workers), timeout=300)
    assert r.stdout.splitlines() == ["trips: 20096 of 20096", "compare-and-swap sum: exact", "PASS"], \
        r.stdout + r.stderr
