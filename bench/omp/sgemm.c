/* C/OpenMP reference for the sgemm kernel: C = A * B, row-major n x n, the usual
   i-k-j loop order so that the inner loop streams rows of B and C and vectorizes. */
#include <omp.h>
#include <string.h>
double sgemm(const float* restrict A, const float* restrict B, float* restrict C, int n, int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
      float* restrict c = C + (size_t)i * n;
      memset(c, 0, sizeof(float) * n);
      for (int k = 0; k < n; k++) {
        float a = A[(size_t)i * n + k];
        const float* restrict b = B + (size_t)k * n;
#pragma omp simd
        for (int j = 0; j < n; j++) c[j] += a * b[j];
      }
    }
  }
  return (omp_get_wtime() - t0) / reps;
}
