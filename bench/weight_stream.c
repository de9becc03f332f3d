// What a weight matrix's layout costs a one-row step that streams it from
// memory (docs/performance.md, "Against llama.cpp"): x @ W for 36 f32
// matrices of 1024 x 2816 (414 MiB, far beyond the caches), 64 output
// columns at a time with AVX2 multiply-adds, W read as Specula's column
// tiles read it (row-major [K][N], k inner: 256 bytes from each of K rows
// N x 4 bytes apart) or from column panels ([N/64][K][64]: each tile's
// weights contiguous). Single thread; prints the time per pass over all
// matrices and the bytes read per second, five rounds alternating.
//
//   gcc -O2 -mavx2 -mfma bench/weight_stream.c -o build/weight_stream
//   build/weight_stream
//
// Not a test: nothing here asserts on time. x86-64 with AVX2 and FMA.
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static void tiles(const float *x, const float *w, float *y, int K, int N,
                  int panels) {
  for (int n0 = 0; n0 < N; n0 += 64) {
    __m256 acc[8];
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_setzero_ps();
    const float *base = panels ? w + (size_t)n0 * K : w + n0;
    size_t stride = panels ? 64 : N;
    for (int k = 0; k < K; ++k) {
      __m256 xv = _mm256_broadcast_ss(x + k);
      const float *row = base + (size_t)k * stride;
      for (int j = 0; j < 8; ++j)
        acc[j] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(row + 8 * j), acc[j]);
    }
    for (int j = 0; j < 8; ++j)
      _mm256_storeu_ps(y + n0 + 8 * j, acc[j]);
  }
}
int main(void) {
  int K = 1024, N = 2816, L = 36; // 36 matrices of 11.5 MiB: 414 MiB
  float *x = aligned_alloc(64, K * 4), *y = aligned_alloc(64, N * 4);
  float **w = malloc(L * sizeof(float *));
  for (int i = 0; i < K; ++i)
    x[i] = 0.001f * i;
  for (int l = 0; l < L; ++l) {
    w[l] = aligned_alloc(64, (size_t)K * N * 4);
    for (size_t i = 0; i < (size_t)K * N; ++i)
      w[l][i] = 0.01f * (i % 97);
  }
  for (int rep = 0; rep < 5; ++rep)
    for (int panels = 0; panels < 2; ++panels) {
      double t = now();
      for (int l = 0; l < L; ++l)
        tiles(x, w[l], y, K, N, panels);
      t = now() - t;
      printf("%s: %.2f ms per pass, %.1f GB/s\n",
             panels ? "panels" : "strided tiles", 1e3 * t,
             (double)L * K * N * 4 / t / 1e9);
    }
  return 0;
}
