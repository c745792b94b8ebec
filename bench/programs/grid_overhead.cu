// What a small grid costs beyond its blocks' work (issue 9: a Thrust program launches grids of
// 1 to a few hundred tiny blocks between its large ones): N launches of an empty kernel of
// 1, 2, 4, 16, 64 and 256 blocks of 256 threads in a row, then one synchronise, the whole
// timed; per launch, wall clock, the process's CPU time (all its threads: on the CPU backend
// the workers' too) and the calling thread's. Lines as queued_overhead.cu's, for
// bench/launch_ab.py (--program grid_overhead).
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>

#include "host_clock.h"

__global__ void empty() {}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000;
  for (int i = 0; i < 20; i++) empty<<<256, 256>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) { printf("warm-up failed\n"); return 1; }
  const int grids[] = {1, 2, 4, 16, 64, 256};
  for (int g : grids) {
    double t0 = now(), c0 = cpu(CLOCK_PROCESS_CPUTIME_ID), h0 = cpu(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < reps; i++) empty<<<g, 256>>>();
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("%d blocks: %s\n", g, cudaGetErrorString(e)); return 1; }
    printf("empty launch, %d blocks %.2f us (cpu %.2f us, calling thread %.2f us)\n", g,
           (now() - t0) / reps * 1e6, (cpu(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps * 1e6,
           (cpu(CLOCK_THREAD_CPUTIME_ID) - h0) / reps * 1e6);
  }
  return 0;
}
