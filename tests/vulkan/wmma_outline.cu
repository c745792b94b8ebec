// wmma sites the Vulkan backend outlines (tests/vulkan/test_wmma_outline.py)
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
// a (16 x 16*8, row-major) times b (16*8 x 16, column-major), d row-major
extern "C" __global__ void gemm_steps(const half* A, const half* B, float* D) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  #pragma unroll
  for (int k = 0; k < 8; k++) {
    wmma::load_matrix_sync(a, A + k * 16, 16 * 8);
    wmma::load_matrix_sync(b, B + k * 16, 16 * 8);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}
// two sites of one load function: the test makes the second one's address wild
extern "C" __global__ void two_loads(const half* A, const half* A2, const half* B, float* D) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  wmma::load_matrix_sync(b, B, 16);
  wmma::load_matrix_sync(a, A, 16);
  wmma::mma_sync(c, a, b, c);
  wmma::load_matrix_sync(a, A2, 16);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D, c, 16, wmma::mem_row_major);
}
