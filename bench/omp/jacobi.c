/* C/OpenMP reference for jacobi: the same 5-point sweep (border copied), rows in parallel. */
#include <omp.h>
double jacobi(const float* restrict in, float* restrict out, int n, int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
    for (int y = 0; y < n; y++) {
      if (y == 0 || y == n - 1) {
        for (int x = 0; x < n; x++) out[y * n + x] = in[y * n + x];
        continue;
      }
      out[y * n] = in[y * n];
#pragma omp simd
      for (int x = 1; x < n - 1; x++)
        out[y * n + x] = 0.25f * (in[(y - 1) * n + x] + in[(y + 1) * n + x] + in[y * n + x - 1] + in[y * n + x + 1]);
      out[y * n + n - 1] = in[y * n + n - 1];
    }
  }
  return (omp_get_wtime() - t0) / reps;
}
