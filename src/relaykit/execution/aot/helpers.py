"""C helper functions shared by the kernels of one program (emitted once, when used).

``tvmgen_conv2d_nchw`` is a convolution written to vectorise with plain ``-O2``: for
each block of 16 output pixels it packs the receptive fields into a panel (an im2col
of 16 columns, zeros outside the image), then accumulates 6 output channels x 16
pixels over the panel's rows in registers (GCC's and Clang's vector types; other
compilers get the same loops on a local array, with constant trip counts). ``tvmgen_dense`` is
``x @ w.T`` with 4 x 16 partial sums per block of weight rows, for the same reason.
On x86-64 Linux with GCC or Clang they are also compiled for AVX2 and chosen at load
time (``target_clones``), and the GEMM panel has a fused multiply-add version (AVX2 and
FMA intrinsics, chosen when the processor has them: C99 does not let the compiler fuse
``a * b + c`` itself); elsewhere they are plain C99. ``-DTVMGEN_NO_VECTOR`` and
``-DTVMGEN_NO_CLONES`` turn the vector types and the x86 versions off.
"""

from __future__ import annotations

__all__ = ["HELPERS", "CONV_PANEL", "helper_source"]

#: Output pixels per panel of the convolution helper.
CONV_PANEL = 16

_CLONES = r"""
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(TVMGEN_NO_CLONES)
#define TVMGEN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TVMGEN_CLONES
#endif
#if defined(__GNUC__) && !defined(TVMGEN_NO_VECTOR)
typedef float tvmgen_v8 __attribute__((vector_size(32)));
#endif
"""

_GEMM_FMA = r"""
#if defined(__x86_64__) && defined(__GNUC__) && !defined(TVMGEN_NO_CLONES) && \
    !defined(TVMGEN_NO_VECTOR)
#define TVMGEN_FMA 1
#include <immintrin.h>
/* tvmgen_gemm_panel with fused multiply-adds, for x86-64 processors that have them
   (C99 does not let the compiler fuse a * b + c on its own). */
__attribute__((target("avx2,fma")))
static void tvmgen_gemm_panel_fma(const float *restrict a, int64_t lda, int64_t M,
                                  const float *restrict panel, int64_t K,
                                  float *restrict y, int64_t ldy, int64_t nb) {
  for (int64_t o0 = 0; o0 < M; o0 += 6) {
    const int64_t mr = M - o0 < 6 ? M - o0 : 6;
    const float *wr[6];
    for (int64_t r = 0; r < 6; ++r) wr[r] = a + (o0 + (r < mr ? r : 0)) * lda;
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t k = 0; k < K; ++k) {
      const __m256 b0 = _mm256_loadu_ps(panel + k * 16);
      const __m256 b1 = _mm256_loadu_ps(panel + k * 16 + 8);
      __m256 av = _mm256_broadcast_ss(wr[0] + k);
      c00 = _mm256_fmadd_ps(av, b0, c00); c01 = _mm256_fmadd_ps(av, b1, c01);
      av = _mm256_broadcast_ss(wr[1] + k);
      c10 = _mm256_fmadd_ps(av, b0, c10); c11 = _mm256_fmadd_ps(av, b1, c11);
      av = _mm256_broadcast_ss(wr[2] + k);
      c20 = _mm256_fmadd_ps(av, b0, c20); c21 = _mm256_fmadd_ps(av, b1, c21);
      av = _mm256_broadcast_ss(wr[3] + k);
      c30 = _mm256_fmadd_ps(av, b0, c30); c31 = _mm256_fmadd_ps(av, b1, c31);
      av = _mm256_broadcast_ss(wr[4] + k);
      c40 = _mm256_fmadd_ps(av, b0, c40); c41 = _mm256_fmadd_ps(av, b1, c41);
      av = _mm256_broadcast_ss(wr[5] + k);
      c50 = _mm256_fmadd_ps(av, b0, c50); c51 = _mm256_fmadd_ps(av, b1, c51);
    }
    float out[6][16];
    _mm256_storeu_ps(out[0], c00); _mm256_storeu_ps(out[0] + 8, c01);
    _mm256_storeu_ps(out[1], c10); _mm256_storeu_ps(out[1] + 8, c11);
    _mm256_storeu_ps(out[2], c20); _mm256_storeu_ps(out[2] + 8, c21);
    _mm256_storeu_ps(out[3], c30); _mm256_storeu_ps(out[3] + 8, c31);
    _mm256_storeu_ps(out[4], c40); _mm256_storeu_ps(out[4] + 8, c41);
    _mm256_storeu_ps(out[5], c50); _mm256_storeu_ps(out[5] + 8, c51);
    for (int64_t r = 0; r < mr; ++r) memcpy(y + (o0 + r) * ldy, out[r], nb * sizeof(float));
  }
}

static int tvmgen_has_fma(void) {
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  return known;
}
#endif
"""

_GEMM = r"""
/* y[r * ldy + q] = sum_k a[r * lda + k] * panel[k * 16 + q] for r < M, q < nb: blocks of
   6 rows x 16 columns accumulated over K in registers (GCC/Clang vector types), else in
   a local array. */
TVMGEN_CLONES
static void tvmgen_gemm_panel(const float *restrict a, int64_t lda, int64_t M,
                              const float *restrict panel, int64_t K, float *restrict y,
                              int64_t ldy, int64_t nb) {
#ifdef TVMGEN_FMA
  if (tvmgen_has_fma()) {
    tvmgen_gemm_panel_fma(a, lda, M, panel, K, y, ldy, nb);
    return;
  }
#endif
  for (int64_t o0 = 0; o0 < M; o0 += 6) {
    const int64_t mr = M - o0 < 6 ? M - o0 : 6;
    const float *wr[6];
    for (int64_t r = 0; r < 6; ++r) wr[r] = a + (o0 + (r < mr ? r : 0)) * lda;
    float out[6][16];
#if defined(__GNUC__) && !defined(TVMGEN_NO_VECTOR)
    tvmgen_v8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    tvmgen_v8 c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    for (int64_t k = 0; k < K; ++k) {
      tvmgen_v8 b0, b1;
      memcpy(&b0, panel + k * 16, sizeof b0);
      memcpy(&b1, panel + k * 16 + 8, sizeof b1);
      const float a0 = wr[0][k], a1 = wr[1][k], a2 = wr[2][k];
      const float a3 = wr[3][k], a4 = wr[4][k], a5 = wr[5][k];
      c00 += a0 * b0; c01 += a0 * b1; c10 += a1 * b0; c11 += a1 * b1;
      c20 += a2 * b0; c21 += a2 * b1; c30 += a3 * b0; c31 += a3 * b1;
      c40 += a4 * b0; c41 += a4 * b1; c50 += a5 * b0; c51 += a5 * b1;
    }
    memcpy(out[0], &c00, 32); memcpy(out[0] + 8, &c01, 32);
    memcpy(out[1], &c10, 32); memcpy(out[1] + 8, &c11, 32);
    memcpy(out[2], &c20, 32); memcpy(out[2] + 8, &c21, 32);
    memcpy(out[3], &c30, 32); memcpy(out[3] + 8, &c31, 32);
    memcpy(out[4], &c40, 32); memcpy(out[4] + 8, &c41, 32);
    memcpy(out[5], &c50, 32); memcpy(out[5] + 8, &c51, 32);
#else
    memset(out, 0, sizeof out);
    for (int64_t k = 0; k < K; ++k) {
      const float *restrict pr = panel + k * 16;
      for (int64_t r = 0; r < 6; ++r) {
        const float v = wr[r][k];
        for (int64_t q = 0; q < 16; ++q) out[r][q] += v * pr[q];
      }
    }
#endif
    for (int64_t r = 0; r < mr; ++r) memcpy(y + (o0 + r) * ldy, out[r], nb * sizeof(float));
  }
}
"""

_CONV = r"""
/* y[O, OH, OW] = conv(x[C, H, W], w[O, C/groups, KH, KW]) for one image, NCHW/OIHW.
   panel: K x 16 floats of scratch (K = C/groups * KH * KW): the receptive fields of 16
   output pixels, zeros outside the image, multiplied by the weights' rows. */
TVMGEN_CLONES
static void tvmgen_conv2d_nchw(const float *restrict x, const float *restrict w,
                               float *restrict y, float *restrict panel,
                               int64_t C, int64_t H, int64_t W, int64_t O, int64_t KH,
                               int64_t KW, int64_t OH, int64_t OW, int64_t sh, int64_t sw,
                               int64_t dh, int64_t dw, int64_t pt, int64_t pl,
                               int64_t groups) {
  const int64_t cg = C / groups, og = O / groups, K = cg * KH * KW, P = OH * OW;
  for (int64_t g = 0; g < groups; ++g) {
    const float *xg = x + g * cg * H * W;
    const float *wg = w + g * og * K;
    float *yg = y + g * og * P;
    for (int64_t j0 = 0; j0 < P; j0 += 16) {
      const int64_t nb = P - j0 < 16 ? P - j0 : 16;
      int64_t ih0[16], iw0[16];
      for (int64_t q = 0, oh = j0 / OW, ow = j0 % OW; q < 16; ++q) {
        /* top-left input pixel of output pixel j0 + q (far outside when past the end) */
        ih0[q] = q < nb ? oh * sh - pt : -(H + KH * dh + 1);
        iw0[q] = ow * sw - pl;
        if (++ow == OW) { ow = 0; ++oh; }
      }
      /* 16 pixels of one output row: each tap reads 16 evenly spaced inputs of one row */
      const int one_row = nb == 16 && j0 % OW + 16 <= OW;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j) {
            float *row = panel + ((c * KH + i) * KW + j) * 16;
            const float *xc = xg + c * H * W;
            const int64_t h1 = ih0[0] + i * dh, w1 = iw0[0] + j * dw;
            if (one_row && (h1 < 0 || h1 >= H)) {
              memset(row, 0, 16 * sizeof(float));
              continue;
            }
            if (one_row && w1 >= 0 && w1 + 15 * sw < W) {
              const float *src = xc + h1 * W + w1;
              if (sw == 1) {
                memcpy(row, src, 16 * sizeof(float));
              } else {
                for (int64_t q = 0; q < 16; ++q) row[q] = src[q * sw];
              }
              continue;
            }
            for (int64_t q = 0; q < 16; ++q) {
              const int64_t ih = ih0[q] + i * dh, iw = iw0[q] + j * dw;
              row[q] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[ih * W + iw] : 0.0f;
            }
          }
      tvmgen_gemm_panel(wg, K, og, panel, K, yg + j0, P, nb);
    }
  }
}
"""

_DENSE_PANELS = r"""
/* y[M, N] = x[M, K] @ w[N, K].T for M >= 4: 16 rows of w at a time transposed into the
   panel (K x 16 floats of scratch), multiplied by the rows of x. */
TVMGEN_CLONES
static void tvmgen_dense_panels(const float *restrict x, const float *restrict w,
                                float *restrict y, float *restrict panel, int64_t M,
                                int64_t N, int64_t K) {
  for (int64_t n0 = 0; n0 < N; n0 += 16) {
    const int64_t nb = N - n0 < 16 ? N - n0 : 16;
    for (int64_t q = 0; q < 16; ++q) {
      const float *wr = w + (n0 + (q < nb ? q : 0)) * K;
      for (int64_t k = 0; k < K; ++k) panel[k * 16 + q] = q < nb ? wr[k] : 0.0f;
    }
    tvmgen_gemm_panel(x, K, M, panel, K, y + n0, N, nb);
  }
}
"""

_DENSE = r"""
/* y[M, N] = x[M, K] @ w[N, K].T for few rows of x: 4 rows of w at a time, 16 partial
   sums each (in vector registers with GCC/Clang), added up at the end. */
TVMGEN_CLONES
static void tvmgen_dense(const float *restrict x, const float *restrict w, float *restrict y,
                         int64_t M, int64_t N, int64_t K) {
  const int64_t K16 = K - K % 16;
  for (int64_t m = 0; m < M; ++m) {
    const float *xr = x + m * K;
    for (int64_t n0 = 0; n0 < N; n0 += 4) {
      const int64_t nr = N - n0 < 4 ? N - n0 : 4;
      const float *wr[4];
      for (int64_t r = 0; r < 4; ++r) wr[r] = w + (n0 + (r < nr ? r : 0)) * K;
      float part[4][16];
#if defined(__GNUC__) && !defined(TVMGEN_NO_VECTOR)
      tvmgen_v8 s00 = {0}, s01 = {0}, s10 = {0}, s11 = {0};
      tvmgen_v8 s20 = {0}, s21 = {0}, s30 = {0}, s31 = {0};
      for (int64_t k0 = 0; k0 < K16; k0 += 16) {
        tvmgen_v8 x0, x1, a, b;
        memcpy(&x0, xr + k0, 32); memcpy(&x1, xr + k0 + 8, 32);
        memcpy(&a, wr[0] + k0, 32); memcpy(&b, wr[0] + k0 + 8, 32); s00 += a * x0; s01 += b * x1;
        memcpy(&a, wr[1] + k0, 32); memcpy(&b, wr[1] + k0 + 8, 32); s10 += a * x0; s11 += b * x1;
        memcpy(&a, wr[2] + k0, 32); memcpy(&b, wr[2] + k0 + 8, 32); s20 += a * x0; s21 += b * x1;
        memcpy(&a, wr[3] + k0, 32); memcpy(&b, wr[3] + k0 + 8, 32); s30 += a * x0; s31 += b * x1;
      }
      memcpy(part[0], &s00, 32); memcpy(part[0] + 8, &s01, 32);
      memcpy(part[1], &s10, 32); memcpy(part[1] + 8, &s11, 32);
      memcpy(part[2], &s20, 32); memcpy(part[2] + 8, &s21, 32);
      memcpy(part[3], &s30, 32); memcpy(part[3] + 8, &s31, 32);
#else
      memset(part, 0, sizeof part);
      for (int64_t k0 = 0; k0 < K16; k0 += 16)
        for (int64_t r = 0; r < 4; ++r)
          for (int64_t q = 0; q < 16; ++q) part[r][q] += xr[k0 + q] * wr[r][k0 + q];
#endif
      for (int64_t r = 0; r < nr; ++r) {
        float s = 0.0f;
        for (int64_t q = 0; q < 16; ++q) s += part[r][q];
        for (int64_t k = K16; k < K; ++k) s += xr[k] * wr[r][k];
        y[m * N + n0 + r] = s;
      }
    }
  }
}
"""

#: Helper name -> C text.
HELPERS: dict[str, str] = {
    "tvmgen_gemm_panel": _GEMM_FMA + _GEMM,
    "tvmgen_conv2d_nchw": _CONV,
    "tvmgen_dense": _DENSE,
    "tvmgen_dense_panels": _DENSE_PANELS,
}
_NEEDS = {
    "tvmgen_conv2d_nchw": "tvmgen_gemm_panel",
    "tvmgen_dense_panels": "tvmgen_gemm_panel",
}


def helper_source(names: set[str]) -> str:
    """The C of the helpers ``names`` (with the clone attribute's definition)."""
    if not names:
        return ""
    names = names | {_NEEDS[n] for n in names if n in _NEEDS}
    return _CLONES + "".join(text for n, text in HELPERS.items() if n in names)
