// Primitives that keep their input's layout (see region.h): eltwise and binary (with
// oneDNN's algorithm for each name), pooling, concatenation, channel shuffle.

#include "region.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace rk {

// ReLU keeps NaN (as NumPy's maximum and relaykit's host do): oneDNN's relu kernels
// compute max(x, 0), which turns NaN into 0, while elu with alpha -0.0 is x for x > 0,
// (-0) * (exp(x) - 1) = +0 otherwise (-inf included), NaN for NaN. Leaky ReLU
// (alpha != 0) keeps NaN as is. `alpha` is updated with the algorithm.
// The elu costs an exp per element: fused into a convolution, inner product or matmul
// it made SqueezeNet's first convolution 55% slower (0.36 ms against 0.23 ms on one
// thread) and its 3x3 convolutions 13%, so there (`keep_nan` false) relu is oneDNN's
// max(x, 0), as onnxruntime's fused Conv+Relu (MLAS) computes it too.
algorithm eltwise_alg(const std::string& name, float& alpha, bool keep_nan) {
  if (name == "relu" && alpha == 0.f && keep_nan) {
    alpha = -0.f;
    return algorithm::eltwise_elu;
  }
  return eltwise_alg(name);
}

algorithm eltwise_alg(const std::string& name) {
  static const std::unordered_map<std::string, algorithm> table = {
      {"relu", algorithm::eltwise_relu},
      {"leaky_relu", algorithm::eltwise_relu},
      {"clip", algorithm::eltwise_clip},
      {"clip_v2", algorithm::eltwise_clip_v2},
      {"sigmoid", algorithm::eltwise_logistic},
      {"tanh", algorithm::eltwise_tanh},
      {"exp", algorithm::eltwise_exp},
      {"log", algorithm::eltwise_log},
      {"sqrt", algorithm::eltwise_sqrt},
      {"abs", algorithm::eltwise_abs},
      {"square", algorithm::eltwise_square},
      {"linear", algorithm::eltwise_linear},
      {"elu", algorithm::eltwise_elu},
      {"gelu_erf", algorithm::eltwise_gelu_erf},
      {"gelu_tanh", algorithm::eltwise_gelu_tanh},
      {"swish", algorithm::eltwise_swish},
      {"hardsigmoid", algorithm::eltwise_hardsigmoid},
      {"round", algorithm::eltwise_round},
      {"pow", algorithm::eltwise_pow},
  };
  auto it = table.find(name);
  if (it == table.end()) throw Error("unknown eltwise algorithm '" + name + "'");
  return it->second;
}

algorithm binary_alg(const std::string& name) {
  static const std::unordered_map<std::string, algorithm> table = {
      {"add", algorithm::binary_add}, {"sub", algorithm::binary_sub},
      {"mul", algorithm::binary_mul}, {"div", algorithm::binary_div},
      {"max", algorithm::binary_max}, {"min", algorithm::binary_min},
  };
  auto it = table.find(name);
  if (it == table.end()) throw Error("unknown binary algorithm '" + name + "'");
  return it->second;
}

// Source layout for layout-preserving primitives: the input's own layout,
// except constants and inputs, which oneDNN reads in their plain layout anyway.
memory::desc Region::follow(int t) const { return md_of(t); }

// A `d`-shaped layout in the same format as `md` (nchw, nhwc or nChw{8,16}c), or any.
memory::desc Region::like(const memory::desc& md, const dims& d) {
  memory::desc anyd(d, md.get_data_type(), tag::any);
  if (md.get_format_kind() != memory::format_kind::blocked || md.get_ndims() != 4 || d.size() != 4)
    return anyd;
  auto strides = md.get_strides();
  int nb = md.get_inner_nblks();
  if (nb == 0) {
    if (strides[1] == 1 && strides[3] >= strides[1]) return memory::desc(d, md.get_data_type(), tag::acdb);
    if (strides[3] == 1 && strides[2] <= strides[1]) return memory::desc(d, md.get_data_type(), tag::abcd);
    return anyd;
  }
  auto blks = md.get_inner_blks();
  auto idxs = md.get_inner_idxs();
  if (nb == 1 && idxs[0] == 1 && blks[0] == 16) return memory::desc(d, md.get_data_type(), tag::aBcd16b);
  if (nb == 1 && idxs[0] == 1 && blks[0] == 8) return memory::desc(d, md.get_data_type(), tag::aBcd8b);
  return anyd;
}

void Region::lower_pool(const Json& node) {
  int src = in(node, 0), o = out(node);
  const std::string& alg_name = node.at("alg").s();
  algorithm alg = alg_name == "max"           ? algorithm::pooling_max
                  : alg_name == "avg_include" ? algorithm::pooling_avg_include_padding
                                              : algorithm::pooling_avg_exclude_padding;
  dims dil = dnnl_dilation(node);
  memory::desc smd = follow(src);
  auto make = [&](const memory::desc& dst) {
    return dnnl::pooling_forward::primitive_desc(
        eng_, prop_kind::forward_inference, alg, smd, dst, to_dims(node.at("strides").ints()),
        to_dims(node.at("kernel").ints()), dil, to_dims(node.at("pad_l").ints()),
        to_dims(node.at("pad_r").ints()), base_attr());
  };
  dnnl::pooling_forward::primitive_desc pd;
  bool done = false;
  if (concat_parent_[o] >= 0) {  // written into a concatenation: its layout, if supported
    try {
      pd = make(preferred_for(o));
      done = impl_name(pd) != "ref";
    } catch (const dnnl::error&) {
    }
  }
  if (!done) pd = make(memory::desc(dims_[o], dtypes_[o], tag::any));
  int ps = version(src, pd.src_desc());
  int pdst = define(o, pd.dst_desc());
  add_step(dnnl::pooling_forward(pd),
           {{DNNL_ARG_SRC, ps, pd.src_desc()}, {DNNL_ARG_DST, pdst, pd.dst_desc()}},
           "pool_" + alg_name + " t" + std::to_string(o) + " " + md_str(pd.src_desc()) +
               " -> " + md_str(pd.dst_desc()),
           &pd);
}

void Region::lower_eltwise(const Json& node) {
  int src = in(node, 0), o = out(node);
  const std::string& name = node.at("alg").s();
  float alpha = static_cast<float>(node.get_f("alpha", 0.0));
  algorithm alg = eltwise_alg(name, alpha);
  memory::desc md = follow(src);
  auto pd = dnnl::eltwise_forward::primitive_desc(
      eng_, prop_kind::forward_inference, alg, md, md, alpha,
      static_cast<float>(node.get_f("beta", 0.0)),
      base_attr());
  int ps = version(src, md);
  int pdst = define(o, md, dying(src));
  add_step(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, md}},
           name + " t" + std::to_string(o) + " " + md_str(md), &pd);
}

void Region::lower_binary(const Json& node) {
  int a = in(node, 0), b = in(node, 1), o = out(node);
  const std::string& name = node.at("alg").s();
  if (dims_[a] != dims_[o]) throw Error("program: binary's first input must have the output's shape");
  if (dims_[b].size() != dims_[o].size()) throw Error("program: binary operands differ in rank");
  memory::desc amd = follow(a);
  // A broadcast operand in a layout of oneDNN's choice (its jit kernels want it in the
  // first operand's format; a plain one would fall back to the reference kernel).
  memory::desc bmd = dims_[b] == dims_[a] ? amd : memory::desc(dims_[b], dt::f32, tag::any);
  Post post = post_ops_of(node, dims_[o]);
  primitive_attr attr = base_attr();
  attr.set_post_ops(post.ops);
  auto pd = dnnl::binary::primitive_desc(eng_, binary_alg(name), amd, bmd, amd, attr);
  bmd = pd.src1_desc();
  int pa = version(a, amd);
  int pb = version(b, bmd);
  int inplace = dying(a);
  int pdst = post.sum_tensor >= 0 ? define_with_sum(o, amd, post.sum_tensor) : define(o, amd, inplace);
  std::vector<Arg> args = {{DNNL_ARG_SRC_0, pa, amd}, {DNNL_ARG_SRC_1, pb, bmd}, {DNNL_ARG_DST, pdst, amd}};
  args.insert(args.end(), post.args.begin(), post.args.end());
  add_step(dnnl::binary(pd), args, "binary_" + name + " t" + std::to_string(o) + " " + md_str(amd) +
           " " + md_str(bmd) + post.info, &pd);
}

void Region::lower_concat(const Json& node) {
  int o = out(node);
  if (concat_in_place_[o]) {  // its inputs were written into its buffer
    versions_[o].push_back(view_of(o));
    return;
  }
  int axis = static_cast<int>(node.at("axis").i());
  auto ins = node.at("in").ints();
  std::vector<memory::desc> mds;
  for (long long t : ins) mds.push_back(follow(checked(t)));
  // Prefer the inputs' common layout for the output, so consumers need no reorder.
  dnnl::concat::primitive_desc pd;
  try {
    memory::desc want = memory::desc(dims_[o], dtypes_[o], tag::any);
    pd = dnnl::concat::primitive_desc(eng_, want, axis, mds, base_attr());
  } catch (const dnnl::error&) {
    for (auto& md : mds) md = memory::desc(md.get_dims(), md.get_data_type(), plain_tag(md.get_ndims()));
    pd = dnnl::concat::primitive_desc(eng_, plain(o), axis, mds, base_attr());
  }
  std::vector<Arg> args;
  for (size_t k = 0; k < ins.size(); ++k) {
    int t = checked(ins[k]);
    memory::desc md = pd.src_desc(static_cast<int>(k));
    args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k), version(t, md), md});
  }
  int pdst = define(o, pd.dst_desc());
  args.push_back({DNNL_ARG_DST, pdst, pd.dst_desc()});
  add_step(dnnl::concat(pd), args, "concat t" + std::to_string(o) + " -> " + md_str(pd.dst_desc()), &pd);
}

void Region::lower_shuffle(const Json& node) {
  int src = in(node, 0), o = out(node);
  memory::desc md = follow(src);
  int axis = static_cast<int>(node.at("axis").i());
  long long group = node.at("group").i();
  auto pd = dnnl::shuffle_forward::primitive_desc(eng_, prop_kind::forward_inference, md, md,
                                                  axis, static_cast<int>(group), base_attr());
  int ps = version(src, md);
  int pdst = define(o, md);
  if (impl_name(pd) == "ref" && md.get_inner_nblks() == 0 && md.get_ndims() == 4 && axis == 1) {
    // oneDNN shuffles plain layouts with its reference kernel: a strided reorder instead.
    // out[a * (C / G) + b] = in[b * G + a], seen as two 5-D views of the same layout.
    dims d = md.get_dims(), st = md.get_strides();
    long long c = d[1], g = group;
    dims vd = {d[0], g, c / g, d[2], d[3]};
    memory::desc from(vd, dt::f32, dims{st[0], st[1], st[1] * g, st[2], st[3]});
    memory::desc to(vd, dt::f32, dims{st[0], st[1] * (c / g), st[1], st[2], st[3]});
    auto rpd = dnnl::reorder::primitive_desc(eng_, from, eng_, to, base_attr());
    add_step(dnnl::reorder(rpd), {{DNNL_ARG_FROM, ps, from}, {DNNL_ARG_TO, pdst, to}},
             "shuffle t" + std::to_string(o) + " " + md_str(md) + " (strided reorder)", &rpd);
    return;
  }
  add_step(dnnl::shuffle_forward(pd), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, md}},
           "shuffle t" + std::to_string(o) + " " + md_str(md), &pd);
}

// "erf": oneDNN has no such algorithm; relaykit's own loop over the plain tensor
// (quantized encoders compute GELU as dequantize, erf, quantize around it). std::erf is
// a scalar call (0.5 ms on BERT's 128x3072 activations); this form vectorizes: a Taylor
// polynomial below 0.5, above it Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7)
// with a Cephes-style exp, saturating at |x| >= 4 (erf(4) rounds to 1 in float).
namespace {
inline float exp_nonpositive(float z) {  // e^z for z in [-16, 0]
  // round to nearest by the 1.5 * 2^23 trick (no libm call, so the loop vectorizes)
  float n = (z * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = z - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float fast_erf(float x) {
  float a = std::fabs(x);
  a = a > 4.0f ? 4.0f : a;  // NaN stays NaN
  float a2 = a * a;
  // 2/sqrt(pi) * (a - a^3/3 + a^5/10 - a^7/42 + a^9/216 - a^11/1320 + a^13/9360)
  float taylor = -1.0f / 9360.0f;
  taylor = taylor * a2 + 1.0f / 1320.0f;
  taylor = taylor * a2 - 1.0f / 216.0f;
  taylor = taylor * a2 + 1.0f / 42.0f;
  taylor = taylor * a2 - 1.0f / 10.0f;
  taylor = taylor * a2 + 1.0f / 3.0f;
  taylor = a * (1.0f - a2 * taylor) * 1.12837916709551257f;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  float tail = 1.0f - q * t * exp_nonpositive(-a2);
  float y = a < 0.5f ? taylor : tail;
  return std::copysign(y, x);
}

// one clone per ISA, chosen at load time as the fp32 kernels are
__attribute__((target_clones("avx512f", "avx2", "default"))) void erf_span(
    const float* x, float* y, long long n) {
  for (long long i = 0; i < n; ++i) y[i] = fast_erf(x[i]);
}
}  // namespace

// y = saturate(round(x / scale) + zp), halves to even (GELU's quantized erf).
namespace {
__attribute__((target_clones("avx512f", "avx2", "default"))) void erf_quantize_u8(
    const float* x, long long n, float scale, float zp, uint8_t* y) {
  for (long long i = 0; i < n; ++i)
    y[i] = static_cast<uint8_t>(std::min(std::max(std::nearbyint(x[i] / scale) + zp, 0.f), 255.f));
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void erf_quantize_s8(
    const float* x, long long n, float scale, float zp, int8_t* y) {
  for (long long i = 0; i < n; ++i)
    y[i] = static_cast<int8_t>(std::min(std::max(std::nearbyint(x[i] / scale) + zp, -128.f), 127.f));
}
}  // namespace

// "alpha" scales the input first (GELU's x / sqrt(2)); "dst_scale" / "dst_zp": the
// result quantized to the output's integer type (halves to even, dividing as
// QuantizeLinear does), the quantize after it folded.
void Region::lower_erf(const Json& node) {
  int src = in(node, 0), o = out(node);
  memory::desc md = plain(src);
  int ps = version(src, md);
  int po = define(o, plain(o));
  long long n = 1;
  for (auto d : dims_[o]) n *= d;
  float alpha = static_cast<float>(node.get_f("alpha", 1.0));
  float dscale = static_cast<float>(node.get_f("dst_scale", 0.0));
  float dzp = static_cast<float>(node.get_i("dst_zp", 0));
  dt odt = dtypes_[o];
  if ((odt == dt::f32) != (dscale == 0.f)) throw Error("program: erf's dst_scale and output type disagree");
  add_step(primitive(), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, po, plain(o)}},
           "erf t" + std::to_string(o) + " " + md_str(md) + (odt == dt::f32 ? "" : " -> int8"));
  steps_.back().kernel = [n, alpha, dscale, dzp, odt](const ExecArgs& a) {
    const float* x = static_cast<const float*>(arg_data(a, DNNL_ARG_SRC));
    void* y = arg_data(a, DNNL_ARG_DST);
    const long long chunk = 4096, chunks = (n + chunk - 1) / chunk;
    bool plain_erf = alpha == 1.f && odt == dt::f32;
#pragma omp parallel for if (n >= kSmallStepElems) schedule(static)
    for (long long c = 0; c < chunks; ++c) {
      long long m = std::min(chunk, n - c * chunk);
      const float* xc = x + c * chunk;
      if (plain_erf) {
        erf_span(xc, static_cast<float*>(y) + c * chunk, m);
        continue;
      }
      float buf[4096];
      for (long long i = 0; i < m; ++i) buf[i] = alpha * xc[i];
      float* out = odt == dt::f32 ? static_cast<float*>(y) + c * chunk : buf;
      erf_span(buf, out, m);
      if (odt == dt::u8) erf_quantize_u8(buf, m, dscale, dzp, static_cast<uint8_t*>(y) + c * chunk);
      if (odt == dt::s8) erf_quantize_s8(buf, m, dscale, dzp, static_cast<int8_t*>(y) + c * chunk);
    }
  };
}

}  // namespace rk
