// Convolutions (see region.h): direct ones with oneDNN's choice of layouts, Winograd's
// F(2x2, 3x3) (winograd.h), a 1x1 with a fused depthwise one, N-d and transposed ones.

#include "region.h"

#include "winograd.h"

namespace rk {

// The dims weight `w` is read with by a primitive of `groups` groups:
// (groups, O / groups, I / groups, spatial...) when grouped, else its own.
dims Region::grouped_weight_dims(int w, long long groups) const {
  dims wd = dims_[w];
  if (groups > 1) {
    wd.insert(wd.begin(), groups);
    wd[1] /= groups;
  }
  return wd;
}

// A node's "dilation" as oneDNN counts it (0 for none; Relay counts 1).
dims Region::dnnl_dilation(const Json& node) {
  dims dil = to_dims(node.at("dilation").ints());
  for (auto& d : dil) d -= 1;
  return dil;
}

// A 1x1 convolution with a fused depthwise one ("dw" post-op): blocked (nChw16c) layout,
// the only one oneDNN's fused kernels take; the primitive is described with the 1x1's
// output dims and writes the depthwise output (its dst_desc).
template <class Make>
void Region::lower_conv_dw(const Json& node, int src, int w, const dims& wd, int o, long long b,
                           const memory::desc& bias_md, const Post& post, Make&& make) {
  const dims& sd = dims_[src];
  dims mid = {sd[0], wd[0], sd[2], sd[3]};
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = make(memory::desc(sd, dt::f32, tag::aBcd16b), memory::desc(mid, dt::f32, tag::aBcd16b));
  } catch (const dnnl::error& e) {
    throw Error(std::string("program: no oneDNN kernel fuses this 1x1 and depthwise "
                            "convolution: ") + e.what());
  }
  if (pd.dst_desc().get_dims() != dims_[o])
    throw Error("program: fused depthwise convolution writes another shape");
  std::vector<Arg> args = weighted_args(pd, src, w, wd, o, post, b, bias_md);
  const int dw_w = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
  memory::desc dw_md = pd.query_md(dnnl::query::exec_arg_md, dw_w);
  args.push_back({dw_w, weight_version(post.dw_weight, grouped_weight_dims(post.dw_weight,
                                                                       dims_[post.dw_weight][0]),
                                       dw_md), dw_md});
  if (post.dw_bias >= 0) {
    const int dw_b = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
    memory::desc db = pd.query_md(dnnl::query::exec_arg_md, dw_b);
    args.push_back({dw_b, version(post.dw_bias, db), db});
  }
  add_step(dnnl::convolution_forward(pd), args,
           "conv t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" +
               md_str(pd.weights_desc()) + " -> " + md_str(pd.dst_desc()) + post.info +
               " dw_w=" + md_str(dw_md),
           &pd);
}

void Region::lower_conv(const Json& node) {
  if (node.get_i("winograd", -1) >= 0) {
    lower_conv_winograd(node);
    return;
  }
  int src = in(node, 0), w = checked(node.at("weight").i()), o = out(node);
  long long b = node.get_i("bias", -1);
  long long groups = node.get_i("groups", 1);
  dims wd = grouped_weight_dims(w, groups);
  auto any = [](const dims& d) { return memory::desc(d, dt::f32, tag::any); };
  dims strides = to_dims(node.at("strides").ints());
  dims dil = dnnl_dilation(node);
  auto pad = node.at("pad").ints();  // top, left, bottom, right
  dims pad_l = {pad[0], pad[1]}, pad_r = {pad[2], pad[3]};
  Post post = post_ops_of(node, dims_[o], 0, false);
  primitive_attr attr = base_attr();
  attr.set_post_ops(post.ops);
  memory::desc bias_md = b >= 0 ? plain_md(dims_[b]) : memory::desc();
  auto make = [&](const memory::desc& s, const memory::desc& d) {
    return dnnl::convolution_forward::primitive_desc(
        eng_, prop_kind::forward_inference, algorithm::convolution_direct, s, any(wd), bias_md, d,
        strides, dil, pad_l, pad_r, attr);
  };
  if (post.dw_weight >= 0) {
    lower_conv_dw(node, src, w, wd, o, b, bias_md, post, make);
    return;
  }
  // Layouts: the preferred activation layout when set, else oneDNN's choice; then, if
  // oneDNN wants the input in another layout than it has, the input's own layout when
  // an equally fast kernel takes it (one reorder less).
  dnnl::convolution_forward::primitive_desc pd;
  bool done = false;
  auto attempt = [&](const memory::desc& s, const memory::desc& d) {
    if (done || (s == any(dims_[src]) && d == any(dims_[o]))) return;
    try {
      pd = make(s, d);
      done = fast(pd);
    } catch (const dnnl::error&) {
    }
  };
  // 1. Keep the layout the data is already in (no reorders), when a fast kernel takes it;
  //    the plain layout of a region input does not count (it is only where data enters).
  const memory::desc& have = md_of(src);
  // 0. The layout tuning chose for this convolution ("nhwc" or "blocked").
  if (const Json* hint = node.find("layout")) {
    tag t = hint->s() == "nhwc" ? tag::acdb : tag::aBcd16b;
    memory::desc d = concat_parent_[o] >= 0 ? preferred_for(o) : memory::desc(dims_[o], dt::f32, t);
    attempt(memory::desc(dims_[src], dt::f32, t), d);
  }
  bool entering = phys_[primary(src)].kind != Kind::Internal && have == plain_md(dims_[src]);
  memory::desc flow_dst = concat_parent_[o] >= 0 ? preferred_for(o) : like(have, dims_[o]);
  if (!entering) attempt(have, flow_dst);
  // 2. The preferred layout; 3. oneDNN's choice.
  attempt(preferred(dims_[src]), preferred_for(o));
  if (!done) pd = make(any(dims_[src]), any(dims_[o]));
  if (!(pd.src_desc() == have) && have.get_format_kind() == memory::format_kind::blocked) {
    try {
      auto alt = make(have, pd.dst_desc());
      if (fast(alt) && impl_name(alt) == impl_name(pd)) pd = alt;
    } catch (const dnnl::error&) {
    }
  }
  std::vector<Arg> args = weighted_args(pd, src, w, wd, o, post, b, bias_md);
  add_step(dnnl::convolution_forward(pd), args,
           "conv t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" +
               md_str(pd.weights_desc()) + " -> " + md_str(pd.dst_desc()) + post.info,
           &pd);
}

// A 3x3, stride-1 convolution by Winograd's F(2x2, 3x3) (see winograd.h): three steps,
// the input transform, oneDNN's batched matmul with the transformed weight ("winograd":
// a constant [16, C, K], made in Python) and the output transform with the bias and the
// post-ops (relu, clip, linear, sum), all in the blocked layout (nChw16c).
void Region::lower_conv_winograd(const Json& node) {
  int src = in(node, 0), o = out(node), u = checked(node.at("winograd").i());
  long long b = node.get_i("bias", -1);
  const dims sd = dims_[src], od = dims_[o];
  auto pad = node.at("pad").ints();
  if (sd.size() != 4 || od.size() != 4 || sd[1] % 16 != 0 || od[1] % 16 != 0 || sd[0] != od[0] ||
      od[2] != sd[2] + pad[0] + pad[2] - 2 || od[3] != sd[3] + pad[1] + pad[3] - 2 ||
      dims_[u] != dims{16, sd[1], od[1]} || !is_const(u))
    throw Error("program: a winograd convolution is 3x3 with stride 1 on 4-D tensors with "
                "channels a multiple of 16, and its transformed weight a constant [16, C, K]");
  wino::Shape s{sd[0], sd[1], sd[2], sd[3], od[1], od[2], od[3], pad[0], pad[1],
                (od[2] + 1) / 2, (od[3] + 1) / 2};
  std::vector<wino::PostOp> ops;
  int residual = -1;
  if (const Json* list = node.find("post"))
    for (const auto& p : list->items) {
      const std::string& op = p.at("op").s();
      float alpha = static_cast<float>(p.get_f("alpha", 0.0));
      float beta = static_cast<float>(p.get_f("beta", 0.0));
      if (op == "relu" || op == "leaky_relu") ops.push_back({wino::PostKind::Relu, alpha, beta});
      else if (op == "clip" || op == "clip_v2") ops.push_back({wino::PostKind::Clip, alpha, beta});
      else if (op == "linear") ops.push_back({wino::PostKind::Linear, alpha, beta});
      else if (op == "sum" && residual < 0) {
        residual = checked(p.at("in").i());
        ops.push_back({wino::PostKind::Sum, 1.f, 0.f});
      } else {
        throw Error("program: a winograd convolution takes no '" + op + "' post-op");
      }
    }
  const long long tiles = s.n * s.th * s.tw;
  memory::desc x_md(sd, dt::f32, tag::aBcd16b), y_md(od, dt::f32, tag::aBcd16b);
  memory::desc v_md({16, tiles, sd[1]}, dt::f32, tag::abc), m_md({16, tiles, od[1]}, dt::f32, tag::abc);
  const std::string name = "conv t" + std::to_string(o) + " winograd ";
  int px = version(src, x_md);
  int pv = new_phys(v_md, Kind::Internal), pm = new_phys(m_md, Kind::Internal);
  add_step(primitive(), {{DNNL_ARG_SRC, px, x_md}, {DNNL_ARG_DST, pv, v_md}},
           name + "in " + md_str(x_md) + " -> " + md_str(v_md));
  steps_.back().kernel = [s](const ExecArgs& a) {
    wino::input_transform(static_cast<const float*>(arg_data(a, DNNL_ARG_SRC)),
                          static_cast<float*>(arg_data(a, DNNL_ARG_DST)), s);
  };
  auto pd = dnnl::matmul::primitive_desc(
      eng_, v_md, memory::desc({16, sd[1], od[1]}, dt::f32, tag::any), m_md, base_attr());
  add_step(dnnl::matmul(pd), {{DNNL_ARG_SRC, pv, v_md}, {DNNL_ARG_WEIGHTS, version(u, pd.weights_desc()),
           pd.weights_desc()}, {DNNL_ARG_DST, pm, m_md}},
           name + "gemm " + md_str(v_md) + " w=" + md_str(pd.weights_desc()), &pd);
  int py = residual >= 0 ? define_with_sum(o, y_md, residual) : define(o, y_md);
  std::vector<Arg> args = {{DNNL_ARG_SRC, pm, m_md}, {DNNL_ARG_DST, py, y_md}};
  if (b >= 0) {
    memory::desc bias_md = plain_md(dims_[b]);
    args.push_back({DNNL_ARG_BIAS, version(checked(b), bias_md), bias_md});
  }
  std::string post_info;
  if (const Json* list = node.find("post"))
    for (const auto& p : list->items) post_info += "+" + p.at("op").s();
  add_step(primitive(), args, name + "out -> " + md_str(y_md) + post_info);
  steps_.back().kernel = [s, ops](const ExecArgs& a) {
    wino::output_transform(static_cast<const float*>(arg_data(a, DNNL_ARG_SRC)),
                           static_cast<const float*>(arg_data(a, DNNL_ARG_BIAS)),
                           static_cast<float*>(arg_data(a, DNNL_ARG_DST)), s, ops.data(),
                           static_cast<int>(ops.size()));
  };
}

// A weight constant seen with other dims (grouped conv, dense on a 4-D input).
int Region::weight_version(int w, const dims& wd, const memory::desc& want) {
  if (wd == dims_[w]) return version(w, want);
  if (!is_const(w)) {
    // A weight given at run time (a region input), seen with other dims (groups):
    // reordered from its plain layout, read with those dims, before each use.
    int src = primary(w);
    if (!(phys_[src].md == plain_md(dims_[w])))
      throw Error("program: a run-time weight seen with other dims must be plain");
    int p = new_phys(want, Kind::Internal);
    versions_[w].push_back(p);
    memory::desc from = plain_md(wd);
    auto pd = dnnl::reorder::primitive_desc(eng_, from, eng_, want, base_attr());
    add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src, from}, {DNNL_ARG_TO, p, want}},
             "reorder weight t" + std::to_string(w) + " -> " + md_str(want), &pd);
    return p;
  }
  for (int p : versions_[w])
    if (phys_[p].md == want) return p;
  int src = primary(w);
  int p = new_phys(want, Kind::Const);
  const_reorders_.push_back({plain_md(wd), phys_[src].ptr, p});
  versions_[w].push_back(p);
  return p;
}

// A convolution ("conv_nd", any spatial rank) or transposed convolution ("deconv") with
// oneDNN's choice of layouts: weights (O, I/groups, spatial...), explicit pads before and
// after each spatial axis (a negative pad after is the output padding of a deconv).
template <class PD, class Prim>
void Region::lower_conv_generic(const Json& node, algorithm alg, const char* what) {
  int src = in(node, 0), w = checked(node.at("weight").i()), o = out(node);
  long long groups = node.get_i("groups", 1);
  dims wd = grouped_weight_dims(w, groups);
  auto any = [](const dims& d) { return memory::desc(d, dt::f32, tag::any); };
  dims dil = dnnl_dilation(node);
  Post post = post_ops_of(node, dims_[o], 0, false);
  primitive_attr attr = base_attr();
  attr.set_post_ops(post.ops);
  PD pd(eng_, prop_kind::forward_inference, alg, any(dims_[src]), any(wd), memory::desc(),
        any(dims_[o]), to_dims(node.at("strides").ints()), dil,
        to_dims(node.at("pad_l").ints()), to_dims(node.at("pad_r").ints()), attr);
  std::vector<Arg> args = weighted_args(pd, src, w, wd, o, post);
  add_step(Prim(pd), args,
           std::string(what) + " t" + std::to_string(o) + " " + md_str(pd.src_desc()) +
               " w=" + md_str(pd.weights_desc()) + post.info,
           &pd);
}

void Region::lower_conv_nd(const Json& node) {
  lower_conv_generic<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
      node, algorithm::convolution_direct, "conv_nd");
}

void Region::lower_deconv(const Json& node) {
  lower_conv_generic<dnnl::deconvolution_forward::primitive_desc,
                     dnnl::deconvolution_forward>(node, algorithm::deconvolution_direct,
                                                  "deconv");
}

}  // namespace rk
