/* C/OpenMP reference for texconv: the same 17-tap row convolution on the image in memory (what a
   texel-centred linear sample returns), the row's end texels repeated beyond it (clamp). */
#include <omp.h>
#define R 8
double texconv(const float* restrict src, const float* restrict taps, float* restrict dst, int w, int h,
               int reps) {
  double t0 = omp_get_wtime();
  for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
      const float* row = src + (long)y * w;
      for (int x = 0; x < w; x++) {
        float sum = 0.0f;
        for (int k = -R; k <= R; k++) {
          int i = x + k < 0 ? 0 : x + k >= w ? w - 1 : x + k;
          sum += row[i] * taps[R - k];
        }
        dst[(long)y * w + x] = sum;
      }
    }
  }
  return (omp_get_wtime() - t0) / reps;
}
