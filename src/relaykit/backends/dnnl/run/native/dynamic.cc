// Dynamic quantization (see region.h): a tensor's scale and zero point computed at run
// time from its range, as ONNX's DynamicQuantizeLinear defines them, then the uint8
// tensor. oneDNN has no primitive computing quantization parameters, so both are the
// runtime's own loops (vectorized, one clone per ISA, parallel over chunks):
//
// "dynparams": x (f32) -> P (s32[2]): lo = min(min(x), 0), hi = max(max(x), 0),
//   scale = (hi - lo) / 255 (1 when that is 0), zp = saturate(round(0 - lo / scale))
//   halves to even; P[0] holds the scale's float32 bits, P[1] the zero point. The int8
//   matmuls after it read both as their source scale and zero point
//   (DNNL_ARG_ATTR_SCALES / DNNL_ARG_ATTR_ZERO_POINTS), through views of P.
// "dynquant": x (f32), P -> q (u8): saturate(round(x / scale) + zp), halves to even
//   (a division, as onnxruntime's kernel divides: a multiply by the reciprocal can round
//   a value near a half the other way).

#include "region.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace rk {

namespace {

constexpr long long kChunk = 8192;

typedef float v16f __attribute__((vector_size(64)));

// min and max of x[0..n) folded into *lo and *hi: sixteen lanes at a time (a plain
// min/max reduction stays scalar: the compiler keeps its order for NaN's sake; a NaN
// is skipped here, as onnxruntime's kernel skips it).
__attribute__((target_clones("avx512f", "avx2", "default"))) void range_span(
    const float* x, long long n, float* lo, float* hi) {
  v16f a, b;
  for (int j = 0; j < 16; ++j) {
    a[j] = *lo;
    b[j] = *hi;
  }
  long long i = 0;
  for (; i + 16 <= n; i += 16) {
    v16f v;
    std::memcpy(&v, x + i, sizeof(v));
    a = v < a ? v : a;
    b = v > b ? v : b;
  }
  float l = *lo, h = *hi;
  for (int j = 0; j < 16; ++j) {
    l = std::min(l, a[j]);
    h = std::max(h, b[j]);
  }
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l;
  *hi = h;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void quantize_span(
    const float* x, long long n, float scale, float zp, uint8_t* q) {
  for (long long i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / scale) + zp;
    v = std::min(std::max(v, 0.f), 255.f);
    q[i] = static_cast<uint8_t>(v);
  }
}

long long elements(const dims& d) {
  long long n = 1;
  for (auto v : d) n *= v;
  return n;
}

}  // namespace

void Region::lower_dynparams(const Json& node) {
  int src = in(node, 0), o = out(node);
  if (dims_[o] != dims{2} || dtypes_[o] != dt::s32) throw Error("program: dynparams writes s32[2]");
  memory::desc md = plain(src);
  int ps = version(src, md);
  int po = define(o, plain(o));
  long long n = elements(dims_[src]);
  add_step(primitive(), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, po, plain(o)}},
           "dynparams t" + std::to_string(o) + " " + md_str(md));
  steps_.back().kernel = [n](const ExecArgs& a) {
    const float* x = static_cast<const float*>(arg_data(a, DNNL_ARG_SRC));
    int32_t* p = static_cast<int32_t*>(arg_data(a, DNNL_ARG_DST));
    const long long chunks = (n + kChunk - 1) / kChunk;
    float lo = 0.f, hi = 0.f;  // the range always holds 0
#pragma omp parallel if (n >= kSmallStepElems)
    {
      float l = 0.f, h = 0.f;
#pragma omp for schedule(static) nowait
      for (long long c = 0; c < chunks; ++c) range_span(x + c * kChunk, std::min(kChunk, n - c * kChunk), &l, &h);
#pragma omp critical
      {
        lo = std::min(lo, l);
        hi = std::max(hi, h);
      }
    }
    float scale = (hi - lo) / 255.f;
    if (scale == 0.f) scale = 1.f;
    float zp = std::nearbyint(0.f - lo / scale);
    zp = std::min(std::max(zp, 0.f), 255.f);
    std::memcpy(&p[0], &scale, sizeof(float));
    p[1] = static_cast<int32_t>(zp);
  };
}

void Region::lower_dynquant(const Json& node) {
  int src = in(node, 0), params = in(node, 1), o = out(node);
  if (dtypes_[o] != dt::u8 || dims_[o] != dims_[src]) throw Error("program: dynquant writes u8 of its input's shape");
  memory::desc md = plain(src);
  int ps = version(src, md);
  int pp = version(params, plain(params));
  int po = define(o, plain(o));
  long long n = elements(dims_[src]);
  add_step(primitive(),
           {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_SRC_1, pp, plain(params)}, {DNNL_ARG_DST, po, plain(o)}},
           "dynquant t" + std::to_string(o) + " " + md_str(md));
  steps_.back().kernel = [n](const ExecArgs& a) {
    const float* x = static_cast<const float*>(arg_data(a, DNNL_ARG_SRC));
    const int32_t* p = static_cast<const int32_t*>(arg_data(a, DNNL_ARG_SRC_1));
    uint8_t* q = static_cast<uint8_t*>(arg_data(a, DNNL_ARG_DST));
    float scale;
    std::memcpy(&scale, &p[0], sizeof(float));
    float zp = static_cast<float>(p[1]);
    const long long chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n >= kSmallStepElems) schedule(static)
    for (long long c = 0; c < chunks; ++c)
      quantize_span(x + c * kChunk, std::min(kChunk, n - c * kChunk), scale, zp, q + c * kChunk);
  };
}

// The source scale and zero point of an int8 matmul read from a dynparams tensor `t`:
// views of its two elements (reading them keeps P's buffer alive), appended to `extra`.
void Region::runtime_qparams(int t, primitive_attr& attr, std::vector<Arg>& extra) {
  if (dims_[t] != dims{2} || dtypes_[t] != dt::s32) throw Error("program: qdense parameters must be s32[2]");
  int pt = version(t, plain(t));
  memory::desc smd({1}, dt::f32, tag::a), zmd({1}, dt::s32, tag::a);
  int ps = new_phys(smd, Kind::Internal);
  phys_[ps].alias = pt;
  phys_[ps].offset = 0;
  int pz = new_phys(zmd, Kind::Internal);
  phys_[pz].alias = pt;
  phys_[pz].offset = sizeof(int32_t);
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, ps, smd});
  extra.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, pz, zmd});
}

}  // namespace rk
