// Building a region (see region.h): the program's tensors and their physical versions
// (one per layout), post-ops, steps, and each node handed to the lowering of its
// primitive family.

#include "region.h"

#include <omp.h>

namespace rk {

// ------------------------------------------------------------- layouts ----

tag plain_tag(size_t ndims) {
  switch (ndims) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: throw Error("tensors of rank " + std::to_string(ndims) + " are not supported");
  }
}

memory::desc plain_md(const dims& d) { return memory::desc(d, dt::f32, plain_tag(d.size())); }

dims to_dims(const std::vector<long long>& v) { return dims(v.begin(), v.end()); }

dt dtype_of(const std::string& name) {
  if (name == "float32") return dt::f32;
  if (name == "uint8") return dt::u8;
  if (name == "int8") return dt::s8;
  if (name == "int32") return dt::s32;
  throw Error("program: unknown dtype '" + name + "'");
}

int Region::owned_const(const memory::desc& md, const void* data) {
  const char* bytes = static_cast<const char*>(data);
  owned_.emplace_back(bytes, bytes + md.get_size());
  return new_phys(md, Kind::Const, -1, owned_.back().data());
}

std::string md_str(const memory::desc& md) {
  // A short description of a memory layout: dims, strides and inner blocks.
  std::string s;
  auto d = md.get_dims();
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  if (md.get_format_kind() != memory::format_kind::blocked) return s + ":any";
  auto strides = md.get_strides();
  s += ":";
  for (size_t i = 0; i < strides.size(); ++i) s += (i ? "," : "") + std::to_string(strides[i]);
  int nb = md.get_inner_nblks();
  if (nb > 0) {
    auto bs = md.get_inner_blks();
    auto bi = md.get_inner_idxs();
    for (int i = 0; i < nb; ++i)
      s += std::string(i ? "" : "/") + std::to_string(bs[i]) + static_cast<char>('a' + bi[i]);
  }
  return s;
}

// -------------------------------------------------------------- region ----

Region::Region(const char* program, void* const* consts, int nconsts, int nthreads)
    : eng_(engine::kind::cpu, 0), strm_(eng_), nthreads_(nthreads) {
  if (nthreads_ > 0) omp_set_num_threads(nthreads_);
  Json prog = parse_json(program);
  load(prog, consts, nconsts);
  for (const auto& node : prog.at("nodes").items) lower(node);
  finish_outputs();
  plan();
}

int Region::new_phys(const memory::desc& md, Kind kind, int ext, void* ptr) {
  Phys p;
  p.md = md;
  p.kind = kind;
  p.ext = ext;
  p.ptr = ptr;
  phys_.push_back(p);
  return static_cast<int>(phys_.size()) - 1;
}

void Region::load(const Json& prog, void* const* consts, int nconsts) {
  if (prog.at("format").s() != "relaykit.dnnl")
    throw Error("not a relaykit dnnl program");
  if (const Json* layout = prog.find("layout")) layout_ = layout->s();
  if (layout_ != "any" && layout_ != "nhwc" && layout_ != "blocked")
    throw Error("program: unknown layout '" + layout_ + "'");
  for (const auto& t : prog.at("tensors").items) dims_.push_back(to_dims(t.ints()));
  dtypes_.assign(dims_.size(), dt::f32);
  if (const Json* types = prog.find("dtypes")) {
    if (types->items.size() != dims_.size()) throw Error("program: dtypes and tensors differ in length");
    for (size_t t = 0; t < dims_.size(); ++t) dtypes_[t] = dtype_of(types->items[t].s());
  }
  size_t n = dims_.size();
  versions_.assign(n, {});
  last_use_.assign(n, -1);
  group_.resize(n);
  for (size_t t = 0; t < n; ++t) group_[t] = static_cast<int>(t);
  is_output_.assign(n, false);
  auto inputs = prog.at("inputs").ints();
  for (size_t k = 0; k < inputs.size(); ++k) {
    int t = checked(inputs[k]);
    versions_[t].push_back(new_phys(plain(t), Kind::Input, static_cast<int>(k)));
  }
  auto cids = prog.at("constants").ints();
  if (static_cast<int>(cids.size()) != nconsts)
    throw Error("program needs " + std::to_string(cids.size()) + " constants, got " +
                std::to_string(nconsts));
  for (size_t k = 0; k < cids.size(); ++k) {
    int t = checked(cids[k]);
    versions_[t].push_back(new_phys(plain(t), Kind::Const, -1, consts[k]));
  }
  for (long long o : prog.at("outputs").ints()) {
    outputs_.push_back(checked(o));
    is_output_[outputs_.back()] = true;
  }
  is_output_group_ = is_output_;
  // Liveness by node: the last node that reads each logical tensor.
  const auto& nodes = prog.at("nodes").items;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int t : node_reads(nodes[i])) last_use_[t] = static_cast<int>(i);
  }
  plan_concats(nodes);
}

// Which concatenations run in place (in the blocked layout only): batch 1, channels,
// every input a tensor written by one node here, read by no other concatenation, with a
// multiple of 16 channels (so that in nChw16c each input is one contiguous block of the
// output). oneDNN's kernels take no strided nhwc views, so nhwc concats stay copies.
void Region::plan_concats(const std::vector<Json>& nodes) {
  size_t n = dims_.size();
  concat_parent_.assign(n, -1);
  concat_offset_.assign(n, 0);
  group_phys_.assign(n, -1);
  concat_in_place_.assign(n, false);
  if (layout_ != "blocked") return;
  std::vector<bool> produced(n, false);
  std::vector<int> concat_reads(n, 0);
  for (const auto& node : nodes) {
    produced[checked(node.at("out").i())] = true;
    if (node.at("op").s() == "concat")
      for (long long t : node.at("in").ints()) concat_reads[checked(t)] += 1;
  }
  for (const auto& node : nodes) {
    if (node.at("op").s() != "concat" || node.at("axis").i() != 1) continue;
    int o = checked(node.at("out").i());
    const dims& od = dims_[o];
    if (od.size() != 4 || od[0] != 1 || is_output_[o] || dtypes_[o] != dt::f32) continue;
    auto ins = node.at("in").ints();
    bool ok = true;
    for (long long t : ins) {
      const dims& d = dims_[t];
      ok = ok && produced[t] && !is_output_[t] && concat_reads[t] == 1 && d.size() == 4 &&
           d[1] % 16 == 0 && versions_[t].empty();
    }
    if (!ok) continue;
    concat_in_place_[o] = true;
    size_t offset = 0;
    for (long long t : ins) {
      concat_parent_[t] = o;
      concat_offset_[t] = offset;
      offset += static_cast<size_t>(dims_[t][1] * dims_[t][2] * dims_[t][3]) * sizeof(float);
    }
  }
}

// The physical view of `t` inside its concatenation's buffer (nChw16c).
int Region::view_of(int t) {
  if (group_phys_[t] >= 0) return group_phys_[t];
  int p = new_phys(memory::desc(dims_[t], dt::f32, tag::aBcd16b), Kind::Internal);
  if (concat_parent_[t] >= 0) {
    int parent = view_of(concat_parent_[t]);
    phys_[p].alias = parent;
    phys_[p].offset = concat_offset_[t];
  }
  group_phys_[t] = p;
  return p;
}

std::vector<int> Region::node_reads(const Json& node) const {
  std::vector<int> reads;
  for (long long t : node.at("in").ints()) reads.push_back(checked(t));
  for (const char* key : {"weight", "bias", "winograd"}) {
    long long t = node.get_i(key, -1);
    if (t >= 0) reads.push_back(checked(t));
  }
  if (const Json* post = node.find("post"))
    for (const auto& p : post->items)
      for (const char* key : {"in", "weight", "bias"}) {  // weight, bias: a "dw" post-op's
        long long t = p.get_i(key, -1);
        if (t >= 0) reads.push_back(checked(t));
      }
  return reads;
}

int Region::add_step(primitive prim, std::vector<Arg> args, std::string info,
                     const dnnl::primitive_desc_base* pd) {
  int idx = static_cast<int>(steps_.size());
  for (const auto& a : args) {
    Phys& p = phys_[a.phys];
    if (a.arg == DNNL_ARG_DST) {
      if (p.first < 0) p.first = idx;
    } else {
      p.last = idx;
    }
  }
  if (pd) {
    scratch_bytes_ = std::max(scratch_bytes_, pd->scratchpad_desc().get_size());
    info += std::string(" impl=") + pd->impl_info_str();
  }
  Step s;
  s.prim = std::move(prim);
  s.args = std::move(args);
  s.info = std::move(info);
  steps_.push_back(std::move(s));
  return idx;
}

// The layout activation tensor `t` should use, or format_tag::any when oneDNN chooses.
memory::desc Region::preferred_for(int t) const {
  if (concat_parent_[t] >= 0) return memory::desc(dims_[t], dt::f32, tag::aBcd16b);
  return preferred(dims_[t]);
}

memory::desc Region::preferred(const dims& d) const {
  if (d.size() == 4 && layout_ == "nhwc") return memory::desc(d, dt::f32, tag::acdb);
  if (d.size() == 4 && layout_ == "blocked" && d[1] % 16 == 0)
    return memory::desc(d, dt::f32, tag::aBcd16b);
  return memory::desc(d, dt::f32, tag::any);
}

// Logical tensor `t` in layout `md`: an existing version, or a new one made by a
// reorder (executed once, now, for constants; a step otherwise).
int Region::version(int t, const memory::desc& md) {
  for (int p : versions_[t])
    if (phys_[p].md == md) return p;
  int src = primary(t);
  if (phys_[src].kind == Kind::Const) {
    int p = new_phys(md, Kind::Const);
    const_reorders_.push_back({phys_[src].md, phys_[src].ptr, p});
    versions_[t].push_back(p);
    return p;
  }
  int p = new_phys(md, Kind::Internal);
  versions_[t].push_back(p);
  auto pd = dnnl::reorder::primitive_desc(eng_, phys_[src].md, eng_, md, base_attr());
  add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src, phys_[src].md}, {DNNL_ARG_TO, p, md}},
           "reorder t" + std::to_string(t) + " " + md_str(phys_[src].md) + " -> " + md_str(md),
           &pd);
  return p;
}

// The physical tensor a node writes logical tensor `t` into, in layout `md`.
// `inplace` names a physical tensor whose buffer may be reused when it dies here.
int Region::define(int t, const memory::desc& md, int inplace) {
  if (!versions_[t].empty()) throw Error("program: tensor " + std::to_string(t) + " written twice");
  int p;
  if (concat_parent_[t] >= 0) {
    int view = view_of(t);
    if (phys_[view].md == md) {
      versions_[t].push_back(view);
      return view;
    }
    // The producer writes another layout: a copy into the view follows the node.
    p = new_phys(md, Kind::Internal);
    versions_[t].push_back(p);
    versions_[t].push_back(view);
    pending_copies_.emplace_back(p, view);
    return p;
  }
  if (is_output_[t] && md == plain(t) && output_count(t) == 1) {
    p = new_phys(md, Kind::Output, output_index(t));
  } else {
    p = new_phys(md, Kind::Internal);
    if (inplace >= 0 && phys_[inplace].kind == Kind::Internal &&
        phys_[inplace].md.get_size() >= md.get_size())
      phys_[p].alias = inplace;
  }
  versions_[t].push_back(p);
  return p;
}

// `view` now shares the buffer of `t`: one group, dying with the last of its tensors.
void Region::join_group(int t, int view) {
  int a = group_root(t), b = group_root(view);
  if (a == b) return;
  group_[b] = a;
  last_use_[a] = std::max(last_use_[a], last_use_[b]);
  is_output_group_[a] = is_output_group_[a] || is_output_group_[b];
}

// The primary physical tensor of `t` if `t` dies at the current node (so its buffer can be reused).
int Region::dying(int t) const {
  int g = group_root(t);
  if (last_use_[g] != node_index_ || is_output_group_[g] || in_concat_group(t)) return -1;
  int p = primary(t);
  return phys_[p].kind == Kind::Internal ? p : -1;
}

// `md` seen with `lift` leading unit dimensions (same bytes).
memory::desc Region::lifted(const memory::desc& md, int lift) {
  if (lift == 0 || md.get_ndims() == 0) return md;
  dims d = md.get_dims();
  if (md.get_format_kind() == memory::format_kind::any) {
    d.insert(d.begin(), lift, 1);
    return memory::desc(d, md.get_data_type(), tag::any);
  }
  if (!is_strided(md)) throw Error("program: cannot lift a blocked layout");
  dims st = md.get_strides();
  long long outer = d.empty() ? 1 : d[0] * st[0];
  d.insert(d.begin(), lift, 1);
  st.insert(st.begin(), lift, outer);
  return memory::desc(d, md.get_data_type(), st);
}

// `md` without its `lift` leading unit dimensions.
memory::desc Region::unlifted(const memory::desc& md, int lift) {
  if (lift == 0 || md.get_ndims() == 0) return md;
  if (!is_strided(md)) throw Error("program: cannot unlift a blocked layout");
  dims d = md.get_dims(), st = md.get_strides();
  d.erase(d.begin(), d.begin() + lift);
  st.erase(st.begin(), st.begin() + lift);
  return memory::desc(d, md.get_data_type(), st);
}

// The node's post-ops; with `lift`, their operands are seen with that many leading
// unit dimensions (for a primitive run on lifted shapes).
// `keep_nan` false: a fused relu may turn NaN into 0 (weighted primitives; see eltwise_alg).
Region::Post Region::post_ops_of(const Json& node, const dims& dst_dims, int lift, bool keep_nan) {
  Post post;
  const Json* list = node.find("post");
  if (!list) return post;
  int idx = 0;
  for (const auto& p : list->items) {
    const std::string& op = p.at("op").s();
    if (op == "sum") {
      if (post.sum_tensor >= 0) throw Error("program: two sum post-ops");
      post.sum_tensor = checked(p.at("in").i());
      // int8 nodes: the residual's scale and zero point (its values are read as integers)
      post.ops.append_sum(static_cast<float>(p.get_f("scale", 1.0)),
                          static_cast<int32_t>(p.get_i("zp", 0)));
    } else if (op == "dw") {
      // oneDNN's 1x1 + depthwise fusion: the depthwise 3x3 (padding 1) convolution reads
      // the 1x1's output rows as they are made, never the whole tensor.
      if (post.dw_weight >= 0) throw Error("program: two dw post-ops");
      post.dw_weight = checked(p.at("weight").i());
      long long b = p.get_i("bias", -1);
      post.dw_bias = b >= 0 ? checked(b) : -1;
      post.ops.append_dw(dt::f32, b >= 0 ? dt::f32 : dt::undef, dt::f32, 3,
                         p.at("stride").i(), 1);
    } else if (op.rfind("binary_", 0) == 0) {
      int t = checked(p.at("in").i());
      memory::desc md = is_const(t) ? plain(t) : md_of(t);
      if (md.get_dims().size() != dst_dims.size())
        throw Error("program: binary post-op operand rank differs from its node's output");
      memory::desc seen = lifted(md, lift);
      post.ops.append_binary(binary_alg(op.substr(7)), seen);
      post.args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1, version(t, md), seen});
    } else {
      float alpha = static_cast<float>(p.get_f("alpha", 0.0));
      float beta = static_cast<float>(p.get_f("beta", 0.0));
      algorithm alg = eltwise_alg(op, alpha, keep_nan);
      post.ops.append_eltwise(alg, alpha, beta);
    }
    post.info += "+" + op;
    ++idx;
  }
  return post;
}

// Destination of a node with a sum post-op: the residual's buffer when it dies here
// in the same layout, else a copy of it.
int Region::define_with_sum(int out, const memory::desc& dst_md, int residual) {
  int dead = dying(residual);
  // define() writes a region output straight into the caller's buffer (no alias): the
  // residual must then be copied there first, as below.
  bool direct_output = is_output_[out] && dst_md == plain(out) && output_count(out) == 1;
  if (concat_parent_[out] < 0 && !direct_output && dead >= 0 && phys_[dead].md == dst_md)
    return define(out, dst_md, dead);
  int p = define(out, dst_md);
  phys_[p].alias = -1;
  int src = version(residual, dst_md);
  auto pd = dnnl::reorder::primitive_desc(eng_, dst_md, eng_, dst_md, base_attr());
  add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src, dst_md}, {DNNL_ARG_TO, p, dst_md}},
           "copy residual t" + std::to_string(residual), &pd);
  return p;
}

// Rough work of a node (see kSmallStepMacs): multiply-adds, else largest operand's elements.
long long Region::node_work(const Json& node) const {
  const std::string& op = node.at("op").s();
  auto elems = [&](int t) {
    long long n = 1;
    for (auto d : dims_[t]) n *= d;
    return n;
  };
  int o = out(node);
  if (op == "conv" || op == "conv_nd" || op == "deconv" || op == "dense" || op == "qconv" ||
      op == "qdense") {
    int w = checked(node.at("weight").i());
    long long k = 1;
    for (size_t i = 1; i < dims_[w].size(); ++i) k *= dims_[w][i];
    return elems(o) * k;
  }
  if (op == "matmul" || op == "qmatmul") return elems(o) * dims_[in(node, 0)].back();
  long long most = elems(o);
  for (long long t : node.at("in").ints()) most = std::max(most, elems(checked(t)));
  return most;
}

bool Region::small_node(const Json& node) const {
  const std::string& op = node.at("op").s();
  bool macs = op == "conv" || op == "conv_nd" || op == "deconv" || op == "dense" || op == "matmul" ||
              op == "qconv" || op == "qdense" || op == "qmatmul";
  return node_work(node) < (macs ? kSmallStepMacs : kSmallStepElems);
}

// Run `build` (which adds steps) with oneDNN seeing one thread when `single`: the steps
// it adds are built for, and run on, one thread.
template <class F>
void Region::build_steps(bool single, F&& build) {
  size_t first_step = steps_.size();
  single = single && nthreads_ > 1;
  if (single) omp_set_num_threads(1);
  try {
    build();
  } catch (...) {
    if (single) omp_set_num_threads(nthreads_);
    throw;
  }
  if (!single) return;
  omp_set_num_threads(nthreads_);
  for (size_t i = first_step; i < steps_.size(); ++i) {
    steps_[i].nthr = 1;
    steps_[i].info += " threads=1";
  }
}

// A small node's primitives (and the reorders it needs) run on one thread.
void Region::lower(const Json& node) {
  build_steps(small_node(node), [&] { lower_node(node); });
}

void Region::lower_node(const Json& node) {
  const std::string& op = node.at("op").s();
  if (op == "conv") lower_conv(node);
  else if (op == "dense") lower_dense(node);
  else if (op == "conv_nd") lower_conv_nd(node);
  else if (op == "deconv") lower_deconv(node);
  else if (op == "pool") lower_pool(node);
  else if (op == "eltwise") lower_eltwise(node);
  else if (op == "binary") lower_binary(node);
  else if (op == "concat") lower_concat(node);
  else if (op == "softmax") lower_softmax(node);
  else if (op == "lrn") lower_lrn(node);
  else if (op == "shuffle") lower_shuffle(node);
  else if (op == "reshape") lower_reshape(node);
  else if (op == "transpose") lower_transpose(node);
  else if (op == "matmul") lower_matmul(node);
  else if (op == "layer_norm") lower_layer_norm(node);
  else if (op == "qreorder") lower_qreorder(node);
  else if (op == "qadd") lower_qadd(node);
  else if (op == "erf") lower_erf(node);
  else if (op == "qmatmul") lower_qmatmul(node);
  else if (op == "dynparams") lower_dynparams(node);
  else if (op == "dynquant") lower_dynquant(node);
  else if (op == "qconv" || op == "qdense") lower_qweighted(node);
  else throw Error("program: unknown node op '" + op + "'");
  for (auto [from, to] : pending_copies_) {
    auto pd = dnnl::reorder::primitive_desc(eng_, phys_[from].md, eng_, phys_[to].md, base_attr());
    add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, from, phys_[from].md}, {DNNL_ARG_TO, to, phys_[to].md}},
             "reorder into concat " + md_str(phys_[from].md), &pd);
  }
  pending_copies_.clear();
  ++node_index_;
}

void Region::finish_outputs() {
  for (size_t k = 0; k < outputs_.size(); ++k) {
    int t = outputs_[k];
    bool direct = false;
    for (int p : versions_[t])
      if (phys_[p].kind == Kind::Output && phys_[p].ext == static_cast<int>(k)) direct = true;
    if (direct) continue;
    memory::desc pmd = plain(t);
    int src = primary(t);
    int p = new_phys(pmd, Kind::Output, static_cast<int>(k));
    long long n = static_cast<long long>(pmd.get_size() / memory::data_type_size(pmd.get_data_type()));
    build_steps(n < kSmallStepElems, [&] {
      auto pd = dnnl::reorder::primitive_desc(eng_, phys_[src].md, eng_, pmd, base_attr());
      add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src, phys_[src].md}, {DNNL_ARG_TO, p, pmd}},
               "output " + std::to_string(k) + " " + md_str(phys_[src].md), &pd);
    });
  }
}

}  // namespace rk
