/* C/OpenMP reference for block_scan: the same segmented inclusive scan (1024-int
 * segments), written for the CPU: segments in parallel, each a running sum. */
#include <omp.h>
double block_scan(const int* restrict in, int* restrict out, int n, int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
    for (int s = 0; s < n; s += 1024) {
      int acc = 0, end = s + 1024 < n ? s + 1024 : n;
      for (int i = s; i < end; i++) out[i] = acc += in[i];
    }
  }
  return (omp_get_wtime() - t0) / reps;
}
