/* C/OpenMP reference for the triad kernel: the same work, written for the CPU. */
#include <omp.h>
double triad(float* restrict a, const float* restrict b, const float* restrict c, float s, int n, int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
#pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; i++) a[i] = b[i] + s * c[i];
  }
  return (omp_get_wtime() - t0) / reps;
}
