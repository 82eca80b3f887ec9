// Quantized primitives (see region.h): int8 convolutions and inner products with their
// scales and zero points as oneDNN attributes, and the reorders that quantize,
// dequantize and requantize between data types.
//
// A "qconv" / "qdense" node reads u8 or s8 activations and s8 weights (constants of
// integer values, reordered once into oneDNN's int8 layout, with the compensation its
// kernels need) and computes, in oneDNN's order,
//   dst = post_ops(wscale[c] * sum((src - src_zp) * w) + bias[c]) / dst_scale + dst_zp
// rounded and saturated to the output's data type (u8, s8, s32 or f32): `wscale` is the
// input's scale times the weight's (per output channel or one), `bias` already in real
// units. Requantization is thus the output scale, ReLU / clip are eltwise post-ops in
// real units, and a residual quantized add is a sum post-op (scale and zero point of
// the residual) accumulating into the residual's buffer.
// A "qreorder" node converts `src` to the output's data type:
//   dst = src_scale[c] * (src - src_zp) / dst_scale + dst_zp
// (src_scale one value, or per channel along `axis`), rounded half to even.
// A "qadd" node adds two quantized tensors of one shape as ONNX's QLinearAdd and torch's
// quantized add do: in float, rounded once (half to even) into the output's data type:
//   dst = post(s0 * (a - z0) + s1 * (b - z1)) / dst_scale + dst_zp
// (a oneDNN binary with source scales; the zero points and the output scale are linear
// post-ops around the node's own post-ops, a clip in real units).

#include "region.h"


#include <cstdint>
#include <cstring>

namespace rk {

namespace {

#if defined(__x86_64__)
#define RK_QUANT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RK_QUANT_CLONES
#endif

// What a oneDNN reorder makes of a float `x` quantized with one source scale `ss`
// (1 when there is none) and the inverse `inv` of one destination scale, zero point
// `zp`, saturated to [lo, hi]: x * ss, then * inv, then + zp (three roundings, no
// fused multiply-add), saturated (NaN to `lo`, as oneDNN's max(x, lo) does), rounded
// half to even.
struct Quant {
  float ss, inv, zp, lo, hi;
};

// The quantizing reorder of a plain NCHW float tensor with few channels (an image
// entering the network) into NHWC uint8 / int8 in one pass (oneDNN's reorder strides
// through the channel planes: 0.063 against 0.029 ms for a 3x224x224 image, 2 threads).
// Each thread takes blocks of pixels; each channel plane of a block is quantized into
// bytes (vectorized), then the block interleaved into the channels-last output (three
// channels: one 4-byte store per pixel, its fourth byte the next pixel's first).
template <class T>
RK_QUANT_CLONES __attribute__((optimize("fp-contract=off"))) void quantize_nchw_to_nhwc(
    const float* src, T* dst, long n, long c, long hw, Quant q) {
  constexpr long kBlock = 512;
  const long blocks = (hw + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (long job = 0; job < n * blocks; ++job) {
    const long b = job / blocks, p0 = (job % blocks) * kBlock;
    const long len = std::min(kBlock, hw - p0);
    alignas(64) uint8_t tmp[8][kBlock];
    for (long ch = 0; ch < c; ++ch) {
      const float* x = src + (b * c + ch) * hw + p0;
      uint8_t* t = tmp[ch];
      for (long i = 0; i < len; ++i) {
        float v = x[i] * q.ss;
        v = v * q.inv;
        v = v + q.zp;
        v = v > q.lo ? v : q.lo;
        v = v < q.hi ? v : q.hi;
        v = (v + 12582912.f) - 12582912.f;  // 1.5 * 2^23: rounded half to even (|v| < 2^22)
        t[i] = static_cast<uint8_t>(static_cast<T>(static_cast<int32_t>(v)));
      }
    }
    uint8_t* y = reinterpret_cast<uint8_t*>(dst + (b * hw + p0) * c);
    if (c == 3) {
      for (long i = 0; i + 1 < len; ++i) {
        uint32_t w = tmp[0][i] | (uint32_t(tmp[1][i]) << 8) | (uint32_t(tmp[2][i]) << 16);
        std::memcpy(y + 3 * i, &w, 4);
      }
      for (long ch = 0; ch < 3; ++ch) y[3 * (len - 1) + ch] = tmp[ch][len - 1];
    } else {
      for (long i = 0; i < len; ++i)
        for (long ch = 0; ch < c; ++ch) y[i * c + ch] = tmp[ch][i];
    }
  }
}

memory::desc scale_md(size_t n) { return memory::desc({static_cast<long long>(n)}, dt::f32, tag::a); }
memory::desc zp_md() { return memory::desc({1}, dt::s32, tag::a); }

std::vector<float> floats(const Json& node, const char* key) {
  std::vector<float> out;
  if (const Json* v = node.find(key)) {
    if (v->kind == Json::Num) {
      out.push_back(static_cast<float>(v->f()));
    } else {
      for (const auto& x : v->items) out.push_back(static_cast<float>(x.f()));
    }
  }
  return out;
}

// `md`'s layout for data type `t` (strided, or nChw{8,16}c; else plain).
memory::desc retyped(const memory::desc& md, dt t) {
  dims d = md.get_dims();
  if (md.get_format_kind() == memory::format_kind::blocked) {
    int nb = md.get_inner_nblks();
    if (nb == 0) return memory::desc(d, t, md.get_strides());
    auto blks = md.get_inner_blks();
    auto idxs = md.get_inner_idxs();
    if (d.size() == 4 && nb == 1 && idxs[0] == 1 && (blks[0] == 16 || blks[0] == 8))
      return memory::desc(d, t, blks[0] == 16 ? tag::aBcd16b : tag::aBcd8b);
  }
  return memory::desc(d, t, plain_tag(d.size()));
}

}  // namespace

// "qadd": a quantized add, rounded once.
void Region::lower_qadd(const Json& node) {
  int a = in(node, 0), b = in(node, 1), o = out(node);
  // the second operand has the output's shape or broadcasts to it (a quantized bias)
  bool broadcast = dims_[b] != dims_[o];
  if (dims_[a] != dims_[o] || dims_[b].size() != dims_[o].size())
    throw Error("program: qadd operands differ in shape");
  for (size_t i = 0; broadcast && i < dims_[o].size(); ++i)
    if (dims_[b][i] != dims_[o][i] && dims_[b][i] != 1) throw Error("program: qadd operand does not broadcast");
  float s0 = static_cast<float>(node.at("s0").f()), s1 = static_cast<float>(node.at("s1").f());
  float so = static_cast<float>(node.at("dst_scale").f());
  float shift = -(s0 * static_cast<float>(node.get_i("z0", 0)) + s1 * static_cast<float>(node.get_i("z1", 0)));
  memory::desc amd = md_of(a);
  if (broadcast || amd.get_format_kind() != memory::format_kind::blocked) amd = plain(a);
  memory::desc bmd = broadcast ? plain(b) : retyped(amd, dtypes_[b]);
  memory::desc dmd = retyped(amd, dtypes_[o]);
  primitive_attr attr = base_attr();
  std::vector<Arg> extra;
  for (auto [scale, arg] : {std::pair<float, int>{s0, DNNL_ARG_SRC_0}, std::pair<float, int>{s1, DNNL_ARG_SRC_1}}) {
    attr.set_scales_mask(arg, 0);
    memory::desc md = scale_md(1);
    extra.push_back({DNNL_ARG_ATTR_SCALES | arg, owned_const(md, &scale), md});
  }
  dnnl::post_ops ops;
  std::string info;
  if (shift != 0.f) ops.append_eltwise(algorithm::eltwise_linear, 1.f, shift);
  if (const Json* list = node.find("post"))
    for (const auto& p : list->items) {
      float alpha = static_cast<float>(p.get_f("alpha", 0.0)), beta = static_cast<float>(p.get_f("beta", 0.0));
      algorithm alg = eltwise_alg(p.at("op").s(), alpha, false);
      ops.append_eltwise(alg, alpha, beta);
      info += "+" + p.at("op").s();
    }
  ops.append_eltwise(algorithm::eltwise_linear, 1.f / so, static_cast<float>(node.get_i("dst_zp", 0)));
  attr.set_post_ops(ops);
  auto pd = dnnl::binary::primitive_desc(eng_, algorithm::binary_add, amd, bmd, dmd, attr);
  int pa = version(a, amd);
  int pb = version(b, bmd);
  int inplace = dmd == amd ? dying(a) : -1;
  int pdst = define(o, dmd, inplace);
  std::vector<Arg> args = {{DNNL_ARG_SRC_0, pa, amd}, {DNNL_ARG_SRC_1, pb, bmd}, {DNNL_ARG_DST, pdst, dmd}};
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::binary(pd), args, "qadd t" + std::to_string(o) + " " + md_str(amd) + " " + md_str(bmd) + info, &pd);
}

// The destination scale ("dst_scale") and the source and destination zero points
// ("src_zp", "dst_zp"; 0 is none) of a quantized node as attributes, their memories
// appended to `extra`.
void Region::dst_scale_and_zero_points(const Json& node, primitive_attr& attr,
                                       std::vector<Arg>& extra) {
  std::vector<float> dscale = floats(node, "dst_scale");
  if (!dscale.empty()) {
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    memory::desc md = scale_md(1);
    extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, owned_const(md, dscale.data()), md});
  }
  for (auto [key, arg] : {std::pair<const char*, int>{"src_zp", DNNL_ARG_SRC},
                          std::pair<const char*, int>{"dst_zp", DNNL_ARG_DST}}) {
    int32_t zp = static_cast<int32_t>(node.get_i(key, 0));
    if (zp == 0) continue;
    attr.set_zero_points_mask(arg, 0);
    extra.push_back({DNNL_ARG_ATTR_ZERO_POINTS | arg, owned_const(zp_md(), &zp), zp_md()});
  }
}

// The attributes of a quantized node: scales and zero points (their memories appended
// to `extra`), and its post-ops (in `post`).
primitive_attr Region::quant_attr(const Json& node, int wmask, Post& post, std::vector<Arg>& extra) {
  primitive_attr attr = base_attr();
  std::vector<float> wscale = floats(node, "wscale");
  if (!wscale.empty()) {
    attr.set_scales_mask(DNNL_ARG_WEIGHTS, wscale.size() > 1 ? wmask : 0);
    memory::desc md = scale_md(wscale.size());
    extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, owned_const(md, wscale.data()), md});
  }
  dst_scale_and_zero_points(node, attr, extra);
  int o = out(node);
  post = post_ops_of(node, dims_[o], 0, false);
  attr.set_post_ops(post.ops);
  return attr;
}

// "qconv" and "qdense": an int8 convolution or inner product.
void Region::lower_qweighted(const Json& node) {
  bool conv = node.at("op").s() == "qconv";
  int src = in(node, 0), w = checked(node.at("weight").i()), o = out(node);
  long long b = node.get_i("bias", -1);
  long long groups = conv ? node.get_i("groups", 1) : 1;
  dims wd = conv ? grouped_weight_dims(w, groups) : dims_[w];
  Post post;
  std::vector<Arg> extra;
  int wmask = conv ? (groups > 1 ? 3 : 1) : 2;  // qdense: weights (K, N), per N
  primitive_attr attr = quant_attr(node, wmask, post, extra);
  // a second input: the source scale and zero point computed at run time (dynamic.cc)
  if (!conv && node.at("in").ints().size() > 1) runtime_qparams(in(node, 1), attr, extra);
  memory::desc bias_md = b >= 0 ? plain(checked(b)) : memory::desc();
  memory::desc wany(wd, dt::s8, tag::any);
  std::string what;
  primitive prim;
  std::vector<Arg> args;
  if (conv) {
    dims strides = to_dims(node.at("strides").ints());
    dims dil = dnnl_dilation(node);
    auto pad = node.at("pad").ints();
    dims pad_l = {pad[0], pad[1]}, pad_r = {pad[2], pad[3]};
    auto make = [&](const memory::desc& s, const memory::desc& d) {
      return dnnl::convolution_forward::primitive_desc(
          eng_, prop_kind::forward_inference, algorithm::convolution_direct, s, wany, bias_md, d,
          strides, dil, pad_l, pad_r, attr);
    };
    // The program's layout (nhwc unless "blocked": oneDNN's int8 kernels are fastest
    // channels-last on most layers), kept from one layer to the next; else oneDNN's choice.
    tag t = layout_ == "blocked" ? tag::aBcd16b : tag::acdb;
    dnnl::convolution_forward::primitive_desc pd;
    bool done = false;
    // the input's own layout first (no reorder), unless it is a region input
    std::vector<memory::desc> tries;
    memory::desc have = md_of(src);
    if (phys_[primary(src)].kind == Kind::Internal && is_strided(have) == (t == tag::acdb))
      tries.push_back(have);
    tries.push_back(memory::desc(dims_[src], dtypes_[src], t));
    for (const memory::desc& s : tries) {
      if (done) break;
      try {
        pd = make(s, memory::desc(dims_[o], dtypes_[o], t));
        done = fast(pd);
      } catch (const dnnl::error&) {
      }
    }
    if (!done)
      pd = make(memory::desc(dims_[src], dtypes_[src], tag::any), memory::desc(dims_[o], dtypes_[o], tag::any));
    // "impl": the kernel the tuner measured faster for this layer (a prefix of oneDNN's
    // implementation name), when oneDNN has it for these layouts; else its first choice.
    if (const Json* want = node.find("impl")) {
      auto alt = make(pd.src_desc(), pd.dst_desc());  // a fresh one: next_impl changes it
      while (std::string(alt.impl_info_str()).rfind(want->s(), 0) != 0 && alt.next_impl()) {
      }
      if (std::string(alt.impl_info_str()).rfind(want->s(), 0) == 0) pd = alt;
    }
    args = weighted_args(pd, src, w, wd, o, post, b, bias_md);
    prim = dnnl::convolution_forward(pd);
    what = "qconv t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" + md_str(pd.weights_desc()) +
           " -> " + md_str(pd.dst_desc()) + post.info;
    args.insert(args.end(), extra.begin(), extra.end());
    add_step(prim, args, what, &pd);
    return;
  }
  // dense: the input read as a plain (N, K) matrix (a reorder first if it is not one)
  dims sd = dims_[src];
  long long k = 1;
  for (size_t i = 1; i < sd.size(); ++i) k *= sd[i];
  if (dims_[w].size() != 2 || dims_[w][0] != k || dims_[o].size() != 2)
    throw Error("program: qdense weight does not match its input");
  // a matmul (the inner product takes no zero points): (M, K) x (K, N) + bias (1, N)
  memory::desc s2({sd[0], k}, dtypes_[src], tag::ab);
  auto pd = dnnl::matmul::primitive_desc(eng_, s2, wany, bias_md, plain(o), attr);
  int ps = version(src, plain(src));
  int pw = weight_version(w, dims_[w], pd.weights_desc());
  int pdst = post.sum_tensor >= 0 ? define_with_sum(o, pd.dst_desc(), post.sum_tensor) : define(o, pd.dst_desc());
  args = {{DNNL_ARG_SRC, ps, s2}, {DNNL_ARG_WEIGHTS, pw, pd.weights_desc()}, {DNNL_ARG_DST, pdst, pd.dst_desc()}};
  if (b >= 0) args.push_back({DNNL_ARG_BIAS, version(checked(b), bias_md), bias_md});
  args.insert(args.end(), post.args.begin(), post.args.end());
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::matmul(pd), args,
           "qdense t" + std::to_string(o) + " " + md_str(s2) + " w=" + md_str(pd.weights_desc()) + post.info, &pd);
}

// "qmatmul": a batched int8 matmul of two computed tensors (attention's Q K^T and P V):
// in [..., M, K] (u8 / s8, any strides: transposes are views) and [..., K, N] (s8: the
// lowering shifts a u8 operand by 128 into s8 and its zero point with it), zero points
// `src_zp` and `wei_zp`, scales and post-ops as a qdense's; int32 accumulation.
void Region::lower_qmatmul(const Json& node) {
  int a = in(node, 0), b = in(node, 1), o = out(node);
  size_t rank = dims_[o].size();
  if (dims_[a].size() != rank || dims_[b].size() != rank || rank < 2)
    throw Error("program: qmatmul operands must have the output's rank (>= 2)");
  if (dtypes_[b] != dt::s8) throw Error("program: qmatmul's second operand must be s8");
  Post post;
  std::vector<Arg> extra;
  primitive_attr attr = quant_attr(node, 0, post, extra);
  int32_t wzp = static_cast<int32_t>(node.get_i("wei_zp", 0));
  if (wzp != 0) {
    attr.set_zero_points_mask(DNNL_ARG_WEIGHTS, 0);
    extra.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, owned_const(zp_md(), &wzp), zp_md()});
  }
  auto operand = [&](int t, bool plain_only) {
    memory::desc md = md_of(t);
    return !plain_only && is_strided(md) ? md : plain(t);
  };
  // "dst_strides": the layout in which the transpose after it is a plain view
  std::vector<memory::desc> dsts;
  if (const Json* st = node.find("dst_strides")) dsts.push_back(memory::desc(dims_[o], dtypes_[o], to_dims(st->ints())));
  dsts.push_back(plain(o));
  dnnl::matmul::primitive_desc pd;
  bool done = false;
  for (const memory::desc& dst : dsts)
    for (bool plain_only : {false, true}) {
      if (done) break;
      try {
        pd = dnnl::matmul::primitive_desc(eng_, operand(a, plain_only), operand(b, plain_only), dst, attr);
        done = (plain_only && dst == plain(o)) || impl_name(pd) != "ref";
      } catch (const dnnl::error&) {
      }
    }
  if (!done) throw Error("program: oneDNN has no int8 matmul for node t" + std::to_string(o));
  int pa = version(a, pd.src_desc());
  int pb = version(b, pd.weights_desc());
  int pdst = define(o, pd.dst_desc());
  std::vector<Arg> args = {{DNNL_ARG_SRC, pa, pd.src_desc()}, {DNNL_ARG_WEIGHTS, pb, pd.weights_desc()},
                           {DNNL_ARG_DST, pdst, pd.dst_desc()}};
  args.insert(args.end(), post.args.begin(), post.args.end());
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::matmul(pd), args,
           "qmatmul t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" + md_str(pd.weights_desc()) +
               " -> " + md_str(pd.dst_desc()) + post.info,
           &pd);
}

// "qreorder": quantize, dequantize or requantize; the output keeps the input's layout
// (a plain 4-D input entering the region becomes nhwc, as the int8 convolutions read it).
void Region::lower_qreorder(const Json& node) {
  int src = in(node, 0), o = out(node);
  memory::desc have = md_of(src);  // a copy: owned_const below grows phys_
  memory::desc dst;
  if (is_strided(have)) {
    bool entering = phys_[primary(src)].kind != Kind::Internal;
    if (dims_[o].size() == 4 && entering && dtypes_[o] != dt::f32)
      dst = memory::desc(dims_[o], dtypes_[o], tag::acdb);
    else
      dst = memory::desc(dims_[o], dtypes_[o], have.get_strides());
  } else {
    memory::desc l = like(have, dims_[o]);
    dst = l.get_format_kind() == memory::format_kind::blocked && l.get_inner_nblks() > 0
              ? memory::desc(dims_[o], dtypes_[o], l.get_inner_blks()[0] == 16 ? tag::aBcd16b : tag::aBcd8b)
              : plain(o);
  }
  primitive_attr attr = base_attr();
  std::vector<Arg> extra;
  std::vector<float> sscale = floats(node, "src_scale");
  if (!sscale.empty()) {
    int axis = static_cast<int>(node.get_i("axis", 1));
    attr.set_scales_mask(DNNL_ARG_SRC, sscale.size() > 1 ? (1 << axis) : 0);
    memory::desc md = scale_md(sscale.size());
    extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, owned_const(md, sscale.data()), md});
  }
  dst_scale_and_zero_points(node, attr, extra);
  int ps = primary(src);
  auto pd = dnnl::reorder::primitive_desc(eng_, have, eng_, dst, attr);
  int p = define(o, dst);
  if (quantize_to_nhwc(node, have, dst, ps, p, sscale)) return;
  std::vector<Arg> args = {{DNNL_ARG_FROM, ps, have}, {DNNL_ARG_TO, p, dst}};
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::reorder(pd), args, "qreorder t" + std::to_string(o) + " " + md_str(have) + " -> " + md_str(dst), &pd);
}

// A quantizing reorder of a plain NCHW float tensor with at most 8 channels into NHWC
// uint8 / int8 (one scale each side, no source zero point) as relaykit's own step
// (quantize_nchw_to_nhwc, same arithmetic as oneDNN's reorder); false when it is not one.
bool Region::quantize_to_nhwc(const Json& node, const memory::desc& have, const memory::desc& dst,
                              int ps, int p, const std::vector<float>& sscale) {
  int src = in(node, 0), o = out(node);
  const dims& d = dims_[o];
  dt t = dtypes_[o];
  if (d.size() != 4 || dtypes_[src] != dt::f32 || (t != dt::u8 && t != dt::s8) || d[1] > 8 ||
      !(have == plain(src)) || !(dst == memory::desc(d, t, tag::acdb)) || sscale.size() > 1 ||
      node.get_i("src_zp", 0) != 0)
    return false;
  std::vector<float> dscale = floats(node, "dst_scale");
  if (dscale.size() > 1) return false;
  Quant q;
  q.ss = sscale.empty() ? 1.f : sscale[0];
  q.inv = dscale.empty() ? 1.f : 1.f / dscale[0];
  q.zp = static_cast<float>(static_cast<int32_t>(node.get_i("dst_zp", 0)));
  q.lo = t == dt::u8 ? 0.f : -128.f;
  q.hi = t == dt::u8 ? 255.f : 127.f;
  long n = d[0], c = d[1], hw = d[2] * d[3];
  add_step(primitive(), {{DNNL_ARG_FROM, ps, have}, {DNNL_ARG_TO, p, dst}},
           "qreorder t" + std::to_string(o) + " " + md_str(have) + " -> " + md_str(dst) +
               " impl=relaykit:quantize_nchw_to_nhwc");
  bool u8 = t == dt::u8;
  steps_.back().kernel = [n, c, hw, q, u8](const ExecArgs& a) {
    const float* x = static_cast<const float*>(arg_data(a, DNNL_ARG_FROM));
    void* y = arg_data(a, DNNL_ARG_TO);
    if (u8)
      quantize_nchw_to_nhwc(x, static_cast<uint8_t*>(y), n, c, hw, q);
    else
      quantize_nchw_to_nhwc(x, static_cast<int8_t*>(y), n, c, hw, q);
  };
  return true;
}

}  // namespace rk
