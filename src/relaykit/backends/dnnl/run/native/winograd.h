// Winograd F(2x2, 3x3) convolution transforms for relaykit's oneDNN region runtime.
//
// A 3x3, stride-1 convolution y = w * x becomes, per 2x2 output tile,
//   Y = A^T [ U (.) V ] A,   U = G g G^T (weights, 4x4, transformed once in Python),
//                            V = B^T d B (the tile's 4x4 input patch d),
// where the sum over input channels of U (.) V is 16 matrix products
//   M[xi] = V[xi] (tiles x C) @ U[xi] (C x K),   xi = 0..15,
// run by oneDNN's matmul: 2.25x fewer multiply-adds than the direct convolution.
// This file holds the two transforms around that product, on nChw16c activations
// (one 16-float vector per pixel and channel block, so every arithmetic line below is
// one vector operation):
//   input_transform:  x (nChw16c) -> V [16][T][C]   (T = N * tiles_h * tiles_w)
//   output_transform: M [16][T][K] -> y (nChw16c), + bias, then the post-ops in order.
// The matrices (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1].
// Their entries are 0 and +-1, so both transforms are exact additions; only G (in the
// weight transform) has halves, and those are exact in binary too.
//
// On x86-64 compiled for AVX-512, AVX2 and the baseline (target_clones: the loader picks
// the one the CPU runs). Included once, by conv.cc (native.py inlines it into the one
// source text the runtime is built, cached and shipped from).
//
// Non-finite values: the transforms add and subtract input pixels, so an infinite input
// (or one within a factor 4 of float32's largest) can make NaN where a direct convolution
// makes +-inf. Fused relu and clip map NaN as oneDNN's fused kernels do (to 0 and to the
// lower bound).

#include <omp.h>

#include <cstring>

// GCC notes that passing a 64-byte vector differs in ABI without AVX-512: load/store
// are inlined into each clone, never called across that boundary.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace rk {
namespace wino {

struct Shape {
  long n, c, h, w;  // input
  long k, oh, ow;   // output channels and size
  long pad_t, pad_l;
  long th, tw;      // tiles per column and row: ceil(oh / 2), ceil(ow / 2)
};

enum class PostKind { Relu, Clip, Linear, Sum };

struct PostOp {
  PostKind kind;
  float alpha, beta;  // relu: negative slope; clip: bounds; linear: alpha * x + beta
};

constexpr int L = 16;  // channels per block (nChw16c)

// 16 floats, one pixel's channel block: GCC lowers its arithmetic to one AVX-512
// instruction, two AVX2 ones or four SSE ones, per clone.
typedef float v16 __attribute__((vector_size(64)));

#if defined(__x86_64__)
#define RK_WINO_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RK_WINO_CLONES
#endif

// Always inlined: a 64-byte vector passed to or from a baseline-compiled function would
// take another calling convention than the AVX-512 clone's.
__attribute__((always_inline)) inline v16 load(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

__attribute__((always_inline)) inline void store(float* p, const v16& v) { std::memcpy(p, &v, sizeof(v)); }

RK_WINO_CLONES
static void input_transform(const float* src, float* v, const Shape& s) {
  const long tiles = s.th * s.tw, T = s.n * tiles, CB = s.c / L;
  const long plane = T * s.c;  // floats per tile position xi
#pragma omp parallel for schedule(static)
  for (long job = 0; job < T * CB; ++job) {
    const long t = job / CB, cb = job % CB;
    const long n = t / tiles, ty = (t % tiles) / s.tw, tx = t % s.tw;
    const float* base = src + (n * CB + cb) * s.h * s.w * L;
    v16 d[4][4];
    for (int i = 0; i < 4; ++i) {
      const long y = 2 * ty - s.pad_t + i;
      for (int j = 0; j < 4; ++j) {
        const long x = 2 * tx - s.pad_l + j;
        d[i][j] = (y >= 0 && y < s.h && x >= 0 && x < s.w) ? load(base + (y * s.w + x) * L)
                                                           : v16{};
      }
    }
    float* out = v + t * s.c + cb * L;
    for (int i = 0; i < 4; ++i) {
      v16 b0, b1, b2, b3;  // row i of B^T d
      switch (i) {
        case 0: b0 = d[0][0] - d[2][0]; b1 = d[0][1] - d[2][1]; b2 = d[0][2] - d[2][2]; b3 = d[0][3] - d[2][3]; break;
        case 1: b0 = d[1][0] + d[2][0]; b1 = d[1][1] + d[2][1]; b2 = d[1][2] + d[2][2]; b3 = d[1][3] + d[2][3]; break;
        case 2: b0 = d[2][0] - d[1][0]; b1 = d[2][1] - d[1][1]; b2 = d[2][2] - d[1][2]; b3 = d[2][3] - d[1][3]; break;
        default: b0 = d[1][0] - d[3][0]; b1 = d[1][1] - d[3][1]; b2 = d[1][2] - d[3][2]; b3 = d[1][3] - d[3][3]; break;
      }
      // (B^T d) B, row i: tile positions 4i .. 4i + 3
      store(out + (4 * i + 0) * plane, b0 - b2);
      store(out + (4 * i + 1) * plane, b1 + b2);
      store(out + (4 * i + 2) * plane, b2 - b1);
      store(out + (4 * i + 3) * plane, b1 - b3);
    }
  }
}

RK_WINO_CLONES
static void output_transform(const float* m, const float* bias, float* dst, const Shape& s,
                             const PostOp* ops, int nops) {
  const long tiles = s.th * s.tw, T = s.n * tiles, KB = s.k / L;
  const long plane = T * s.k;
#pragma omp parallel for schedule(static)
  for (long job = 0; job < T * KB; ++job) {
    const long t = job / KB, kb = job % KB;
    const long n = t / tiles, ty = (t % tiles) / s.tw, tx = t % s.tw;
    const float* in = m + t * s.k + kb * L;
    v16 a0[4], a1[4];  // A^T M
    for (int j = 0; j < 4; ++j) {
      v16 m0 = load(in + (0 + j) * plane), m1 = load(in + (4 + j) * plane);
      v16 m2 = load(in + (8 + j) * plane), m3 = load(in + (12 + j) * plane);
      a0[j] = m0 + m1 + m2;
      a1[j] = m1 - m2 - m3;
    }
    const v16 b = bias ? load(bias + kb * L) : v16{};
    v16 y[2][2] = {{a0[0] + a0[1] + a0[2] + b, a0[1] - a0[2] - a0[3] + b},
                   {a1[0] + a1[1] + a1[2] + b, a1[1] - a1[2] - a1[3] + b}};
    float* base = dst + (n * KB + kb) * s.oh * s.ow * L;
    for (int i = 0; i < 2 && 2 * ty + i < s.oh; ++i)
      for (int j = 0; j < 2 && 2 * tx + j < s.ow; ++j) {
        float* out = base + ((2 * ty + i) * s.ow + 2 * tx + j) * L;
        v16 val = y[i][j];
        for (int q = 0; q < nops; ++q) {
          const float al = ops[q].alpha, be = ops[q].beta;
          switch (ops[q].kind) {
            case PostKind::Relu:  // as oneDNN's fused relu: max(x, 0), NaN -> 0, no -0
              val = al == 0.f ? (val > 0.f ? val : v16{}) : (val > 0.f ? val : val * al);
              break;
            case PostKind::Clip:  // min(max(x, lo), hi), NaN -> lo
              val = val > al ? val : v16{} + al;
              val = val < be ? val : v16{} + be;
              break;
            case PostKind::Linear:
              val = val * al + be;
              break;
            case PostKind::Sum:
              val += load(out);
              break;
          }
        }
        store(out, val);
      }
  }
}

}  // namespace wino
}  // namespace rk

#pragma GCC diagnostic pop
