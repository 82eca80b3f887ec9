// Matrix products (see region.h): the inner product (dense) and the batched matmul.

#include "region.h"

namespace rk {

void Region::lower_dense(const Json& node) {
  int src = in(node, 0), w = checked(node.at("weight").i()), o = out(node);
  long long b = node.get_i("bias", -1);
  dims sd = dims_[src];
  dims wd = sd;
  wd[0] = dims_[w][0];
  long long k = 1;
  for (size_t i = 1; i < sd.size(); ++i) k *= sd[i];
  if (dims_[w].size() != 2 || dims_[w][1] != k)
    throw Error("program: dense weight does not match its input");
  auto any = [](const dims& d) { return memory::desc(d, dt::f32, tag::any); };
  Post post = post_ops_of(node, dims_[o], 0, false);
  primitive_attr attr = base_attr();
  attr.set_post_ops(post.ops);
  memory::desc bias_md = b >= 0 ? plain_md(dims_[b]) : memory::desc();
  // An input whose bytes are a plain (N, K) matrix (spatial dims all 1: after global
  // pooling) is read as that matrix: oneDNN's brgemm inner product then takes it, where
  // the 4-D blocked view got its gemm fallback (MobileNetV2's classifier, 1280 -> 1000:
  // 0.09 against 0.04 ms with hot weights).
  if (flat_matrix(src)) {
    memory::desc s2 = plain_md({sd[0], k});
    auto pd = dnnl::inner_product_forward::primitive_desc(
        eng_, prop_kind::forward_inference, s2, any(dims_[w]), bias_md, any(dims_[o]), attr);
    int pw = weight_version(w, dims_[w], pd.weights_desc());
    int pdst = post.sum_tensor >= 0 ? define_with_sum(o, pd.dst_desc(), post.sum_tensor)
                                    : define(o, pd.dst_desc());
    std::vector<Arg> args = {{DNNL_ARG_SRC, primary(src), s2},
                             {DNNL_ARG_WEIGHTS, pw, pd.weights_desc()},
                             {DNNL_ARG_DST, pdst, pd.dst_desc()}};
    if (b >= 0) args.push_back({DNNL_ARG_BIAS, version(checked(b), bias_md), bias_md});
    args.insert(args.end(), post.args.begin(), post.args.end());
    add_step(dnnl::inner_product_forward(pd), args,
             "dense t" + std::to_string(o) + " " + md_str(s2) + " (of " + md_str(md_of(src)) +
                 ") w=" + md_str(pd.weights_desc()) + post.info,
             &pd);
    return;
  }
  // Keep the input's layout when the primitive accepts it (no reorder), else let it choose.
  // A strided view (a transposed tensor folded into the dense) that only oneDNN's
  // reference kernel takes is reordered instead: the reference inner product of a BERT
  // block's output projection over (64, 4, 64) took 44 ms, the reorder and brgemm 0.03.
  dnnl::inner_product_forward::primitive_desc pd;
  bool have = false;
  try {
    pd = dnnl::inner_product_forward::primitive_desc(eng_, prop_kind::forward_inference,
                                                     md_of(src), any(wd), bias_md,
                                                     any(dims_[o]), attr);
    have = true;
  } catch (const dnnl::error&) {
  }
  if (!have || impl_name(pd) == "ref") {
    try {
      auto chosen = dnnl::inner_product_forward::primitive_desc(
          eng_, prop_kind::forward_inference, any(sd), any(wd), bias_md, any(dims_[o]), attr);
      if (!have || impl_name(chosen) != "ref") pd = chosen;
      have = true;
    } catch (const dnnl::error&) {
      if (!have) throw;
    }
  }
  std::vector<Arg> args = weighted_args(pd, src, w, wd, o, post, b, bias_md);
  add_step(dnnl::inner_product_forward(pd), args,
           "dense t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" +
               md_str(pd.weights_desc()) + post.info,
           &pd);
}

// Tensor `t` (4-D, spatial dims 1) is laid out as the plain (N, C) matrix: plain
// nchw / nhwc, or nChw{8,16}c with C a multiple of the block (no padding).
bool Region::flat_matrix(int t) const {
  const dims& d = dims_[t];
  if (d.size() != 4 || d[2] != 1 || d[3] != 1) return false;
  const memory::desc& have = md_of(t);
  if (have == plain_md(d) || have == memory::desc(d, dt::f32, tag::acdb)) return true;
  return (d[1] % 16 == 0 && have == memory::desc(d, dt::f32, tag::aBcd16b)) ||
         (d[1] % 8 == 0 && have == memory::desc(d, dt::f32, tag::aBcd8b));
}

// Batched matrix product: in [..., M, K] and [..., K, N] (any strides: transposed
// operands are views), optional bias [..., N] (broadcast), post-ops.
// oneDNN 3.2's brgemm matmul takes a binary post-op broadcast over the batch only from
// rank 4 on ([B, M, N] + [1, M, N] falls to the reference kernel, ~600x slower; as
// [1, B, M, N] + [1, 1, M, N] it is a jit kernel), so the shapes are also tried with a
// leading unit dimension ("lifted": same bytes, no copies).
void Region::lower_matmul(const Json& node) {
  int a = in(node, 0), b = in(node, 1), o = out(node);
  long long bias = node.get_i("bias", -1);
  size_t rank = dims_[o].size();
  if (dims_[a].size() != rank || dims_[b].size() != rank || rank < 2)
    throw Error("program: matmul operands must have the output's rank (>= 2)");
  auto operand = [&](int t, bool plain) {
    const memory::desc& md = md_of(t);
    if (is_const(t)) return memory::desc(dims_[t], dt::f32, tag::any);
    return !plain && is_strided(md) ? md : plain_md(dims_[t]);
  };
  memory::desc bias_md = bias >= 0 ? plain_md(dims_[checked(bias)]) : memory::desc();
  memory::desc dst_md = plain_md(dims_[o]);
  // "dst_strides": the layout in which the transpose after it is a plain view (tried
  // first; a plain result if oneDNN has no fast kernel for it)
  memory::desc strided_dst;
  if (const Json* st = node.find("dst_strides")) strided_dst = memory::desc(dims_[o], dt::f32, to_dims(st->ints()));
  struct Choice {
    dnnl::matmul::primitive_desc pd;
    Post post;
    int lift = 0;
  };
  // Whether a primitive exists (`c` is then set) and is not the reference kernel.
  auto make = [&](bool plain, int lift, Choice& c, bool any_impl) {
    try {
      Choice t;
      t.post = post_ops_of(node, dims_[o], lift, false);
      primitive_attr attr = base_attr();
      attr.set_post_ops(t.post.ops);
      t.pd = dnnl::matmul::primitive_desc(eng_, lifted(operand(a, plain), lift),
                                          lifted(operand(b, plain), lift), lifted(bias_md, lift),
                                          lifted(dst_md, lift), attr);
      t.lift = lift;
      if (!any_impl && impl_name(t.pd) == "ref") return false;
      c = std::move(t);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  };
  // The operands as they are, then lifted; strided operands only the reference kernel
  // takes as plain copies, as they are then lifted; the reference kernel as the last resort.
  Choice c;
  bool done = false;
  if (!strided_dst.is_zero()) {
    memory::desc keep = dst_md;
    dst_md = strided_dst;
    for (bool plain : {false, true})
      for (int lift : {0, 1})
        if (!done) done = make(plain, lift, c, false);
    if (!done) dst_md = keep;
  }
  for (bool plain : {false, true})
    for (int lift : {0, 1})
      if (!done) done = make(plain, lift, c, false);
  if (!done && !make(true, 0, c, true))
    throw Error("program: oneDNN has no matmul for node t" + std::to_string(o));
  const auto& pd = c.pd;
  int lift = c.lift;
  memory::desc src_md = pd.src_desc(), wei_md = pd.weights_desc(), out_md = pd.dst_desc();
  int pa = version(a, unlifted(src_md, lift));
  int pb = is_const(b) ? weight_version(b, wei_md.get_dims(), wei_md) : version(b, unlifted(wei_md, lift));
  int pdst = c.post.sum_tensor >= 0 ? define_with_sum(o, unlifted(out_md, lift), c.post.sum_tensor)
                                    : define(o, unlifted(out_md, lift));
  std::vector<Arg> args = {{DNNL_ARG_SRC, pa, src_md}, {DNNL_ARG_WEIGHTS, pb, wei_md}, {DNNL_ARG_DST, pdst, out_md}};
  if (bias >= 0) args.push_back({DNNL_ARG_BIAS, version(checked(bias), bias_md), lifted(bias_md, lift)});
  args.insert(args.end(), c.post.args.begin(), c.post.args.end());
  add_step(dnnl::matmul(pd), args,
           "matmul t" + std::to_string(o) + " " + md_str(src_md) + " w=" + md_str(wei_md) +
               " -> " + md_str(out_md) + c.post.info,
           &pd);
}

}  // namespace rk
