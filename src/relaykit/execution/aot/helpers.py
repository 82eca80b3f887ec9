"""C helper functions shared by the kernels of one program (emitted once, when used).

``tvmgen_conv2d_nchw`` is a convolution written to vectorise with plain ``-O2``: for
each block of 64 output pixels it packs the receptive fields into a panel (an im2col
of 64 columns, zeros outside the image), then accumulates 8 output channels x 64
pixels in a local block over the panel's rows; every inner loop has a constant trip
count, so the compiler vectorises it without run-time checks. ``tvmgen_dense`` is
``x @ w.T`` with 8 x 16 partial sums per block of weight rows, for the same reason.
On x86-64 with GCC or Clang they are also compiled for AVX2 and chosen at load time
(``target_clones``); elsewhere they are plain C99.
"""

from __future__ import annotations

__all__ = ["HELPERS", "CONV_PANEL", "helper_source"]

#: Output pixels per panel of the convolution helper.
CONV_PANEL = 64

_CLONES = r"""
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(TVMGEN_NO_CLONES)
#define TVMGEN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TVMGEN_CLONES
#endif
"""

_CONV = r"""
/* y[O, OH, OW] = conv(x[C, H, W], w[O, C/groups, KH, KW]) for one image, NCHW/OIHW.
   panel: K x 64 floats of scratch (K = C/groups * KH * KW). */
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
    for (int64_t j0 = 0; j0 < P; j0 += 64) {
      const int64_t nb = P - j0 < 64 ? P - j0 : 64;
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t i = 0; i < KH; ++i)
          for (int64_t j = 0; j < KW; ++j) {
            float *row = panel + ((c * KH + i) * KW + j) * 64;
            for (int64_t q = 0; q < 64; ++q) {
              float v = 0.0f;
              if (q < nb) {
                const int64_t p = j0 + q, oh = p / OW, ow = p % OW;
                const int64_t ih = oh * sh - pt + i * dh, iw = ow * sw - pl + j * dw;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = xg[(c * H + ih) * W + iw];
              }
              row[q] = v;
            }
          }
      for (int64_t o0 = 0; o0 < og; o0 += 8) {
        float acc[8][64];
        memset(acc, 0, sizeof acc);
        const int64_t mr = og - o0 < 8 ? og - o0 : 8;
        for (int64_t k = 0; k < K; ++k) {
          const float *restrict pr = panel + k * 64;
          for (int64_t r = 0; r < 8; ++r) {
            const float a = r < mr ? wg[(o0 + r) * K + k] : 0.0f;
            for (int64_t q = 0; q < 64; ++q) acc[r][q] += a * pr[q];
          }
        }
        for (int64_t r = 0; r < mr; ++r) memcpy(yg + (o0 + r) * P + j0, acc[r], nb * sizeof(float));
      }
    }
  }
}
"""

_DENSE = r"""
/* y[M, N] = x[M, K] @ w[N, K].T, with 8 x 16 partial sums per block of 8 rows of w. */
TVMGEN_CLONES
static void tvmgen_dense(const float *restrict x, const float *restrict w, float *restrict y,
                         int64_t M, int64_t N, int64_t K) {
  const int64_t K16 = K - K % 16;
  for (int64_t m = 0; m < M; ++m) {
    const float *xr = x + m * K;
    for (int64_t n0 = 0; n0 < N; n0 += 8) {
      const int64_t nr = N - n0 < 8 ? N - n0 : 8;
      float acc[8][16];
      memset(acc, 0, sizeof acc);
      for (int64_t k0 = 0; k0 < K16; k0 += 16)
        for (int64_t r = 0; r < 8; ++r) {
          const float *restrict wr = w + (n0 + (r < nr ? r : 0)) * K + k0;
          for (int64_t q = 0; q < 16; ++q) acc[r][q] += xr[k0 + q] * wr[q];
        }
      for (int64_t r = 0; r < nr; ++r) {
        float s = 0.0f;
        for (int64_t q = 0; q < 16; ++q) s += acc[r][q];
        for (int64_t k = K16; k < K; ++k) s += xr[k] * w[(n0 + r) * K + k];
        y[m * N + n0 + r] = s;
      }
    }
  }
}
"""

#: Helper name -> C text.
HELPERS: dict[str, str] = {"tvmgen_conv2d_nchw": _CONV, "tvmgen_dense": _DENSE}


def helper_source(names: set[str]) -> str:
    """The C of the helpers ``names`` (with the clone attribute's definition)."""
    if not names:
        return ""
    return _CLONES + "".join(HELPERS[n] for n in sorted(names))
