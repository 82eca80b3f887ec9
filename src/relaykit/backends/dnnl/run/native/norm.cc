// Normalisations (see region.h): softmax, LRN, layer normalisation.

#include "region.h"

namespace rk {

// A softmax writing integers (`dst_scale`: the quantize after it, folded) reads float32
// and rounds its result once into the output's data type.
void Region::lower_softmax(const Json& node) {
  int src = in(node, 0), o = out(node);
  int axis = static_cast<int>(node.at("axis").i());
  bool log = node.get_i("log", 0) != 0;
  algorithm alg = log ? algorithm::softmax_log : algorithm::softmax_accurate;
  memory::desc md = follow(src);
  primitive_attr attr = base_attr();
  std::vector<Arg> extra;
  if (const Json* s = node.find("dst_scale")) {
    float scale = static_cast<float>(s->f());
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    memory::desc smd({1}, dt::f32, tag::a);
    extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, owned_const(smd, &scale), smd});
  }
  dnnl::softmax_forward::primitive_desc pd;
  if (dtypes_[o] != dt::f32) {  // integers out: plain layouts
    md = plain_md(dims_[src]);
    pd = dnnl::softmax_forward::primitive_desc(eng_, prop_kind::forward_inference, alg, md, plain(o), axis, attr);
  } else {
    try {
      pd = dnnl::softmax_forward::primitive_desc(eng_, prop_kind::forward_inference, alg, md, md, axis, attr);
      if (impl_name(pd) == "ref" && !(md == plain_md(dims_[src]))) throw dnnl::error(dnnl_unimplemented, "ref");
    } catch (const dnnl::error&) {
      md = plain_md(dims_[src]);
      pd = dnnl::softmax_forward::primitive_desc(eng_, prop_kind::forward_inference, alg, md, md, axis, attr);
    }
  }
  memory::desc dmd = pd.dst_desc();
  int ps = version(src, md);
  int pdst = define(o, dmd, dmd == md ? dying(src) : -1);
  std::vector<Arg> args = {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, dmd}};
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::softmax_forward(pd), args,
           std::string(log ? "log_softmax" : "softmax") + " t" + std::to_string(o) + " " + md_str(md) +
               (dtypes_[o] == dt::f32 ? "" : " -> int8"),
           &pd);
}

void Region::lower_lrn(const Json& node) {
  int src = in(node, 0), o = out(node);
  memory::desc md = follow(src);
  auto pd = dnnl::lrn_forward::primitive_desc(
      eng_, prop_kind::forward_inference, algorithm::lrn_across_channels, md, md,
      node.at("size").i(), static_cast<float>(node.at("alpha").f()),
      static_cast<float>(node.at("beta").f()), static_cast<float>(node.at("k").f()), base_attr());
  int ps = version(src, md);
  int pdst = define(o, md);
  add_step(dnnl::lrn_forward(pd), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, md}},
           "lrn t" + std::to_string(o) + " " + md_str(md), &pd);
}

// `t` in a layout whose innermost dimension is contiguous (what normalisations and the
// jit softmax want): its own when it is, else a plain copy.
memory::desc Region::last_dense(int t) {
  const memory::desc& md = md_of(t);
  if (is_strided(md)) {
    auto st = md.get_strides();
    if (!st.empty() && st.back() == 1) return md;
  }
  return plain(t);
}

// Layer normalisation over the innermost dimension, with optional scale and shift
// ("weight" and "bias": constants of that dimension's size). The source and destination
// may be integers (a dequantize before it and a quantize after it folded: "eps" already
// scaled, "dst_scale" the quantize's scale, its zero point in the shift).
void Region::lower_layer_norm(const Json& node) {
  int src = in(node, 0), o = out(node);
  long long scale = node.get_i("weight", -1), shift = node.get_i("bias", -1);
  float eps = static_cast<float>(node.at("eps").f());
  memory::desc md = last_dense(src);
  memory::desc dmd = dtypes_[o] == dtypes_[src] ? md : memory::desc(md.get_dims(), dtypes_[o], md.get_strides());
  auto flags = dnnl::normalization_flags::none;
  if (scale >= 0) flags |= dnnl::normalization_flags::use_scale;
  if (shift >= 0) flags |= dnnl::normalization_flags::use_shift;
  primitive_attr attr = base_attr();
  std::vector<Arg> extra;
  if (const Json* s = node.find("dst_scale")) {
    float ds = static_cast<float>(s->f());
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    memory::desc smd({1}, dt::f32, tag::a);
    extra.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, owned_const(smd, &ds), smd});
  }
  auto pd = dnnl::layer_normalization_forward::primitive_desc(
      eng_, prop_kind::forward_inference, md, dmd, eps, flags, attr);
  int ps = version(src, md);
  int pdst = define(o, dmd, dmd == md ? dying(src) : -1);
  std::vector<Arg> args = {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, dmd}};
  memory::desc cmd = plain_md({dims_[src].back()});
  for (auto [t, arg] : {std::pair<long long, int>{scale, DNNL_ARG_SCALE}, {shift, DNNL_ARG_SHIFT}}) {
    if (t < 0) continue;
    int c = checked(t);
    if (!is_const(c) || dims_[c] != cmd.get_dims())
      throw Error("program: layer_norm scale and shift must be constants of the last dim's size");
    args.push_back({arg, version(c, cmd), cmd});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  add_step(dnnl::layer_normalization_forward(pd), args,
           "layer_norm t" + std::to_string(o) + " " + md_str(md) + (dmd == md ? "" : " -> " + md_str(dmd)), &pd);
}

}  // namespace rk
