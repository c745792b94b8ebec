// Host time of the Vulkan backend's launch path, one operation at a time (issue 7): after 50
// warm-up launches, MODE empty launches N empty kernels back to back, then synchronises once;
// MODE sync launches one and synchronises, N times; MODE idlesync synchronises an idle
// device N times. Prints, per operation: wall microseconds, the process's CPU microseconds
// (on lavapipe, the kernels' execution on its threads included) and the calling thread's
// (cuport's entry, driver and backend, and what the Vulkan calls it makes cost it).
//   launch_loops empty|sync|idlesync N
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "host_clock.h"

__global__ void empty() {}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s empty|sync|idlesync N\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  int reps = atoi(argv[2]);
  for (int i = 0; i < 50; i++) empty<<<1, 32>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  double t0 = now(), c0 = cpu(CLOCK_PROCESS_CPUTIME_ID), h0 = cpu(CLOCK_THREAD_CPUTIME_ID);
  if (!strcmp(mode, "empty")) {
    for (int i = 0; i < reps; i++) empty<<<1, 32>>>();
    cudaDeviceSynchronize();
  } else if (!strcmp(mode, "idlesync")) {
    for (int i = 0; i < reps; i++) cudaDeviceSynchronize();
  } else {
    for (int i = 0; i < reps; i++) {
      empty<<<1, 32>>>();
      cudaDeviceSynchronize();
    }
  }
  printf("%s %.2f us (cpu %.2f us, calling thread %.2f us)\n", mode, (now() - t0) / reps * 1e6,
         (cpu(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps * 1e6,
         (cpu(CLOCK_THREAD_CPUTIME_ID) - h0) / reps * 1e6);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
