/* C/OpenMP reference for reduce: the sum of n floats, one partial sum per thread, vectorised. */
#include <omp.h>
double reduce(const float* restrict in, int n, int reps, float* result) {
  double t0 = omp_get_wtime();
  float total = 0.0f;
  for (int r = 0; r < reps; r++) {
    total = 0.0f;
#pragma omp parallel for simd reduction(+ : total) schedule(static)
    for (int i = 0; i < n; i++) total += in[i];
  }
  *result = total;
  return (omp_get_wtime() - t0) / reps;
}
