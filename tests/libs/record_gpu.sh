#!/usr/bin/env bash
# Run on the H200 (from the repository root, nvcc and PyPI's nvidia-cublas/-cufft/-curand/
# -cusparse wheels installed, as the 'cuda' image has them): builds the library test
# programs against NVIDIA's libraries, runs them, and records cuRAND on the GPU.
# Writes $OUT/libs_programs.txt (each program's output; all must end in PASS),
# $OUT/curand_device.txt (tests/programs/libs/curand_device.cu: the device API's streams)
# and $OUT/curand_host.txt (tests/libs/curand_record.cu: the host API, every generator,
# ordering and generation function). Commit the last two as tests/libs/recorded/*.txt:
# tests/libs/test_curand.py reads them. Takes two to four minutes (mostly nvcc).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
INC=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "include"))')
LIB=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "lib"))')
: > "$OUT/libs_programs.txt"
for p in cublas_gemm:cublas cublaslt_matmul:cublasLt cufft_conv:cufft curand_host:curand cusparse_spmv:cusparse; do
  name=${p%%:*}; lib=${p##*:}
  nvcc -O2 -arch=sm_90 -I"$INC" -L"$LIB" -Xlinker -rpath="$LIB" -o "/tmp/$name" "tests/programs/libs/$name.cu" -l"$lib" \
    >> "$OUT/libs_programs.txt" 2>&1 || { echo "$name: build failed" >> "$OUT/libs_programs.txt"; continue; }
  echo "== $name" >> "$OUT/libs_programs.txt"
  "/tmp/$name" >> "$OUT/libs_programs.txt" 2>&1; echo "exit $?" >> "$OUT/libs_programs.txt"
done
for p in tests/programs/libs/curand_device.cu:curand_device tests/libs/curand_record.cu:curand_host; do
  src=${p%%:*}; name=${p##*:}
  nvcc -O2 -arch=sm_90 -I"$INC" -L"$LIB" -Xlinker -rpath="$LIB" -o "/tmp/rec_$name" "$src" -lcurand \
    > "$OUT/$name.build.txt" 2>&1 && "/tmp/rec_$name" > "$OUT/$name.txt" 2>&1
done
