"""The C helper functions every ``ccompiler`` translation unit starts with.

Plain C99 loops: broadcasting elementwise arithmetic (strides in elements, 0
on broadcast axes), dense, and direct NCHW/OIHW convolution with an optional
bias and fused ReLU. Shapes arrive as arguments, so the helpers are shared by
every generated function; the generated code calls them with literal sizes.

Special values follow NumPy, as on every backend: ReLU is ``np.maximum(x, 0)``
(NaN stays NaN, -0.0 becomes +0.0), and nothing is compiled with fast-math,
so NaN, infinities and denormals propagate as IEEE arithmetic says.
"""

from __future__ import annotations

__all__ = ["PREAMBLE", "MAX_DIMS"]

MAX_DIMS = 8

PREAMBLE = r"""
#define RK_MAX_DIMS 8
enum { RK_ADD = 0, RK_SUB = 1, RK_MUL = 2 };

/* np.maximum(v, 0): NaN propagates, -0.0 and negatives give +0.0. */
static inline float rk_relu1(float v) { return (v > 0.0f || v != v) ? v : 0.0f; }

/* out = a (op) b with NumPy broadcasting; sa/sb: element strides, 0 on broadcast axes. */
static void rk_binary_f32(int op, int relu, const float *a, const float *b, float *out,
                          int ndim, const int64_t *shape, const int64_t *sa,
                          const int64_t *sb) {
  int64_t idx[RK_MAX_DIMS] = {0};
  int64_t inner = shape[ndim - 1], ia = sa[ndim - 1], ib = sb[ndim - 1];
  int64_t outer = 1, oa = 0, ob = 0;
  for (int d = 0; d < ndim - 1; ++d) outer *= shape[d];
  if (inner == 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    float *po = out + o * inner;
    const float *pa = a + oa, *pb = b + ob;
    if (op == RK_ADD) {
      for (int64_t i = 0; i < inner; ++i) po[i] = pa[i * ia] + pb[i * ib];
    } else if (op == RK_SUB) {
      for (int64_t i = 0; i < inner; ++i) po[i] = pa[i * ia] - pb[i * ib];
    } else {
      for (int64_t i = 0; i < inner; ++i) po[i] = pa[i * ia] * pb[i * ib];
    }
    if (relu) {
      for (int64_t i = 0; i < inner; ++i) po[i] = rk_relu1(po[i]);
    }
    for (int d = ndim - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < shape[d]) break;
      oa -= sa[d] * shape[d];
      ob -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
}

static void rk_relu_f32(const float *x, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = rk_relu1(x[i]);
}

/* out[m, n] = sum_k x[m, k] * w[n, k] (+ bias[n]) (then relu). */
static void rk_dense_f32(const float *x, const float *w, const float *bias, int relu,
                         float *out, int64_t M, int64_t K, int64_t N) {
  for (int64_t m = 0; m < M; ++m) {
    const float *px = x + m * K;
    for (int64_t n = 0; n < N; ++n) {
      const float *pw = w + n * K;
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += px[k] * pw[k];
      if (bias) acc += bias[n];
      out[m * N + n] = relu ? rk_relu1(acc) : acc;
    }
  }
}

/* Direct convolution, NCHW data, OIHW weights, grouped, strided, dilated, padded. */
static void rk_conv2d_f32(const float *x, const float *w, const float *bias, int relu,
                          float *out, int64_t N, int64_t C, int64_t H, int64_t W,
                          int64_t O, int64_t KH, int64_t KW, int64_t OH, int64_t OW,
                          int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                          int64_t pt, int64_t pl, int64_t groups) {
  int64_t cg = C / groups, og = O / groups;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      int64_t g = o / og;
      float *po = out + (n * O + o) * OH * OW;
      float b0 = bias ? bias[o] : 0.0f;
      for (int64_t i = 0; i < OH * OW; ++i) po[i] = b0;
      for (int64_t ic = 0; ic < cg; ++ic) {
        const float *px = x + (n * C + g * cg + ic) * H * W;
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t kw = 0; kw < KW; ++kw) {
            float wv = w[((o * cg + ic) * KH + kh) * KW + kw];
            int64_t off_w = kw * dw - pl;
            /* output columns whose input column lies inside the image */
            int64_t lo = off_w >= 0 ? 0 : (-off_w + sw - 1) / sw;
            int64_t hi = W - 1 - off_w < 0 ? 0 : (W - 1 - off_w) / sw + 1;
            if (hi > OW) hi = OW;
            for (int64_t oh = 0; oh < OH; ++oh) {
              int64_t ih = oh * sh - pt + kh * dh;
              if (ih < 0 || ih >= H) continue;
              const float *row = px + ih * W;
              float *orow = po + oh * OW;
              if (sw == 1) {
                for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * row[ow + off_w];
              } else {
                for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * row[ow * sw + off_w];
              }
            }
          }
        }
      }
      if (relu) {
        for (int64_t i = 0; i < OH * OW; ++i) po[i] = rk_relu1(po[i]);
      }
    }
  }
}
"""
