#!/bin/bash
# Run the issue-8 regression programs and new self-checking programs natively on a GPU
# (an H200) and record what it prints, to compare with what the tests expect of cuport.
# Usage, from the repository root on a machine with nvcc and the GPU:
#   OUT=/some/dir bash tests/driver/record_gpu_issue8.sh
# Writes $OUT/<program>.txt (the command, exit status, stdout, then stderr) and
# $OUT/summary.txt. Takes about two minutes (mostly nvcc).
set -u
OUT=${OUT:?set OUT to a directory}
mkdir -p "$OUT/bin"
C=tests/driver/c
P=tests/programs
record() {  # name, then the command
    local name=$1; shift
    { echo "\$ $*"; "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"; echo "exit $?";
      echo "--- stdout"; cat "$OUT/$name.stdout"; echo "--- stderr"; cat "$OUT/$name.stderr"; } \
        >"$OUT/$name.txt"
    rm -f "$OUT/$name.stdout" "$OUT/$name.stderr"
    echo "$name: $(sed -n 2p "$OUT/$name.txt")" >>"$OUT/summary.txt"
}
build() {  # output, then nvcc arguments
    local exe=$OUT/bin/$1; shift
    nvcc -o "$exe" "$@" >>"$OUT/build.log" 2>&1 || echo "nvcc failed: $exe" >>"$OUT/summary.txt"
}
: >"$OUT/summary.txt"
build rdc_shared -rdc=true $C/rdc_shared_a.cu $C/rdc_shared_b.cu
build l2_attributes $C/l2_attributes.cu
build near_bounds $C/near_bounds.cu
build device_assert $C/device_assert.cu
build graph_memory_reuse $C/graph_memory_reuse.cu
build const_size $C/const_size.cu
build vector_load_dests -O3 $C/vector_load_dests.cu
build cluster_barrier -arch=sm_90 $C/cluster_barrier.cu
build vmm $C/vmm.cu -lcuda
build labeled_reduce -arch=sm_90 $C/labeled_reduce.cu
build ballot_lane_masks $C/ballot_lane_masks.cu
build ballot_illegal_mask $C/ballot_illegal_mask.cu
build cg_devrt -rdc=true $C/cg_devrt.cu -lcudadevrt
build virtual_call_rdc -rdc=true -gencode arch=compute_90,code=compute_90 $C/virtual_call_rdc.cu
build programmatic_launch -arch=sm_90 $C/programmatic_launch.cu
build spin_noinline -O3 $C/spin_noinline.cu
build ptx_version_rdc -rdc=true -gencode arch=compute_90,code=compute_90 $C/ptx_version_rdc.cu
build ipc -O3 $P/ipc.cu
build graph_conditional -O3 $P/graph_conditional.cu
build async_copy -O3 -arch=sm_90 $P/async_copy.cu
build dynamic_parallelism -O3 -rdc=true $P/dynamic_parallelism.cu
for name in rdc_shared l2_attributes device_assert graph_memory_reuse const_size vector_load_dests ipc \
            graph_conditional async_copy dynamic_parallelism cluster_barrier ptx_version_rdc vmm \
            labeled_reduce ballot_lane_masks virtual_call_rdc programmatic_launch cg_devrt \
            spin_noinline; do
    record $name "$OUT/bin/$name"
done
record near_bounds_alone "$OUT/bin/near_bounds"
record near_bounds_neighbours "$OUT/bin/near_bounds" neighbours
record cluster_barrier_dims "$OUT/bin/cluster_barrier" dims
record ballot_illegal_mask_register "$OUT/bin/ballot_illegal_mask" register
record ballot_illegal_mask_immediate "$OUT/bin/ballot_illegal_mask" immediate
record ballot_illegal_mask_uniform "$OUT/bin/ballot_illegal_mask" uniform
record ballot_illegal_mask_next "$OUT/bin/ballot_illegal_mask" next
record ballot_illegal_mask_zero "$OUT/bin/ballot_illegal_mask" zero
cat "$OUT/summary.txt"
