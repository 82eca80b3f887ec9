// relaykit oneDNN region runtime: the shared declarations.
//
// One compiled library serves every region of every model: a region arrives
// as a small JSON program (written by relaykit/backends/dnnl/compile/lower.py and
// fuse.py) plus pointers to its constants. rkdnnl_create builds the oneDNN
// primitives once: convolution and inner-product layouts are chosen by oneDNN
// (format_tag::any) or by the program's "layout" (nhwc / nChw16c), other
// primitives keep their input's layout, so reorders happen only where a
// consumer needs another layout and at the region boundary; weights are
// reordered once; channel concatenations run in place in nChw16c (each input
// written into its slice of the output); residual adds accumulate into the
// residual's buffer (sum post-op). It then plans the intermediate buffers by
// liveness. A region is immutable once built: each caller runs it in a context of its
// own (rkdnnl_context_create: the intermediate buffers and the scratchpad, a stream),
// so any number of contexts run one region in parallel threads; rkdnnl_run executes
// the whole region in one native call.
//
// The sources, one concern each (all share this header):
//   json.h, json.cc   reading the program (JSON)
//   region.cc         building a region: tensors, their layouts (versions), post-ops,
//                     steps, and the dispatch of each node to its lowering
//   conv.cc           convolutions: direct, Winograd (winograd.h), 1x1 + depthwise,
//                     N-d and transposed
//   matmul.cc         inner product (dense) and batched matmul
//   int8.cc           quantized primitives: int8 convolution / matmul, quantizing reorders
//   dynamic.cc        dynamic quantization: scale and zero point computed at run time
//   eltwise.cc        eltwise and binary (and their algorithm tables), pooling,
//                     concatenation, shuffle: primitives that keep their input's layout
//   norm.cc           softmax, LRN, layer normalisation
//   views.cc          reshapes and transposes: views of their input, or copies
//   plan.cc           memory: intermediate buffers planned by liveness, the weights
//   context.cc        a caller's context: arena, stream, memory objects (the step
//                     loop, Region::run, is in this header)
//   capi.cc           the C ABI
// relaykit/backends/dnnl/run/native.py compiles them as one translation unit.

#ifndef RKDNNL_REGION_H_
#define RKDNNL_REGION_H_

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "json.h"

namespace rk {

using dnnl::algorithm;
using dnnl::engine;
using dnnl::memory;
using dnnl::post_ops;
using dnnl::primitive;
using dnnl::primitive_attr;
using dnnl::prop_kind;
using dnnl::stream;
using dims = memory::dims;
using tag = memory::format_tag;
using dt = memory::data_type;

// ------------------------------------------------------------- helpers ----

// region.cc: layouts.
tag plain_tag(size_t ndims);
memory::desc plain_md(const dims& d);
dims to_dims(const std::vector<long long>& v);
dt dtype_of(const std::string& name);  // program dtype name -> oneDNN's
std::string md_str(const memory::desc& md);

// eltwise.cc: oneDNN's algorithm for a program's eltwise or binary name (see there for
// how relu keeps NaN).
algorithm eltwise_alg(const std::string& name);
algorithm eltwise_alg(const std::string& name, float& alpha, bool keep_nan = true);
algorithm binary_alg(const std::string& name);

// plan.cc: a buffer for weights or activations (huge pages when big), freed with std::free.
void* alloc_buffer(size_t bytes);

// -------------------------------------------------------------- region ----

// Physical tensor: one logical tensor in one memory layout.
enum class Kind { Internal, Input, Output, Const };

struct Phys {
  memory::desc md;
  Kind kind = Kind::Internal;
  int ext = -1;            // input/output index
  int alias = -1;          // shares the buffer of this physical tensor (in-place)
  size_t offset = 0;       // byte offset within the buffer of `alias` (concat in place)
  void* ptr = nullptr;     // constants: data
  size_t arena_offset = 0;  // internal: byte offset in a context's arena (set by the planner)
  int first = -1, last = -1;  // steps that write first / read last
};

struct Arg {
  int arg;          // DNNL_ARG_*
  int phys;         // physical tensor
  memory::desc md;  // layout seen by the primitive (defaults to the tensor's own)
};

using ExecArgs = std::vector<dnnl_exec_arg_t>;

// context.cc: the data of argument `arg` (DNNL_ARG_*) of a step, or null when it has none.
void* arg_data(const ExecArgs& args, int arg);

struct Step {
  primitive prim;
  std::function<void(const ExecArgs&)> kernel;  // relaykit's own code instead of `prim`
  std::vector<Arg> args;
  std::string info;
  int nthr = 0;  // OpenMP threads it was built for and runs with (0: the region's count)
};

// A step doing less than this runs on one thread (it is built for one, so oneDNN sizes
// its work split for one): multiply-adds of a convolution, inner product or matmul, else
// the elements of its largest operand. A parallel step costs ~2.5 us more at 2 threads
// than at one (fork and join of the OpenMP team, measured with a chain of 50 small
// eltwise steps) -- about what a core does with 250,000 multiply-adds or 16,000 elements
// in that time -- and, on a busy machine, waits for a descheduled worker at its join.
constexpr long long kSmallStepMacs = 256 * 1024;
constexpr long long kSmallStepElems = 16 * 1024;

struct ExtBinding {
  memory mem;
  bool is_input;
  int index;
};

// What one caller needs to run a region: its own intermediate buffers and scratchpad
// (the arena), stream and memory objects. The primitives and the reordered weights are
// shared by every context of a region; contexts used from different threads at once
// never touch each other's memory.
struct Context {
  stream strm;
  void* arena = nullptr;
  std::vector<std::unordered_map<int, memory>> argmaps;  // one per step (owns the memories)
  std::vector<ExecArgs> args;                            // the same, as the C API takes them
  std::vector<ExtBinding> ext;
  explicit Context(const engine& eng) : strm(eng) {}
  ~Context() { std::free(arena); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

class Region {
 public:
  // Builds every primitive of `program` (region.cc).
  Region(const char* program, void* const* consts, int nconsts, int nthreads);
  ~Region() { std::free(weights_); }

  // context.cc: a new execution context: its own arena, stream and memory objects.
  Context* new_context() const;

  // One run of the region in `ctx` (with `step_ms`, each step's time). Defined here, so
  // that rkdnnl_run (capi.cc) compiles into one function with it.
  void run(Context& ctx, void* const* inputs, void* const* outputs, double* step_ms) const {
    int threads = nthreads_;
    if (threads > 0) omp_set_num_threads(threads);
    for (auto& b : ctx.ext)
      b.mem.set_data_handle(b.is_input ? inputs[b.index] : outputs[b.index]);
    // The C API with argument arrays prepared once: no map building per call.
    dnnl_stream_t strm = ctx.strm.get();
    for (size_t i = 0; i < steps_.size(); ++i) {
      const auto& a = ctx.args[i];
      int want = steps_[i].nthr > 0 ? steps_[i].nthr : nthreads_;
      if (want > 0 && want != threads) omp_set_num_threads(threads = want);
      auto t0 = std::chrono::steady_clock::now();
      if (steps_[i].kernel)
        steps_[i].kernel(a);
      else
        dnnl::error::wrap_c_api(
            dnnl_primitive_execute(steps_[i].prim.get(), strm, static_cast<int>(a.size()), a.data()),
            "could not execute a primitive");
      if (step_ms) {
        ctx.strm.wait();
        auto t1 = std::chrono::steady_clock::now();
        *step_ms++ = std::chrono::duration<double, std::milli>(t1 - t0).count();
      }
    }
    ctx.strm.wait();
    if (nthreads_ > 0 && threads != nthreads_) omp_set_num_threads(nthreads_);
  }

  int num_steps() const { return static_cast<int>(steps_.size()); }
  const std::string& step_info(int i) const { return steps_.at(i).info; }
  long long arena_bytes() const { return arena_bytes_; }

 private:
  engine eng_;
  stream strm_;
  int nthreads_;
  std::vector<dims> dims_;                 // logical tensor -> dims
  std::vector<dt> dtypes_;                 // logical tensor -> data type (f32 unless int8 regions)
  std::vector<std::vector<char>> owned_;   // data of owned_const constants
  std::vector<std::vector<int>> versions_;  // logical tensor -> physical tensors (first = primary)
  std::vector<int> last_use_;              // logical tensor -> index of the last node reading it
  // Views (reshapes, transposes) share their source's buffer: tensors sharing one are a
  // group, whose buffer dies when the last of them does (and never if one is an output).
  std::vector<int> group_;                 // logical tensor -> parent in its group (union-find)
  std::vector<int> outputs_;               // region outputs (logical)
  std::vector<bool> is_output_;
  std::vector<bool> is_output_group_;      // by group root: some tensor of the group is an output
  std::vector<Phys> phys_;
  std::vector<Step> steps_;
  // Weights in the layouts the primitives want: reordered once, into one arena.
  struct ConstReorder {
    memory::desc from_md;
    void* from_ptr;
    int phys;
  };
  std::vector<ConstReorder> const_reorders_;
  void* weights_ = nullptr;  // arena of the reordered constants
  long long weight_bytes_ = 0;
  size_t scratch_bytes_ = 0;
  size_t scratch_offset_ = 0;  // of the scratchpad within a context's arena
  long long arena_bytes_ = 0;  // size of a context's arena (intermediate buffers + scratchpad)
  int node_index_ = 0;
  std::string layout_ = "any";  // "any" (oneDNN chooses), "nhwc" or "blocked"
  // Concatenation in place: an input of such a concat lives inside the concat's buffer.
  std::vector<int> concat_parent_;      // logical tensor -> concat output holding it, or -1
  std::vector<size_t> concat_offset_;   // its byte offset there
  std::vector<int> group_phys_;         // logical tensor -> its in-place view, or -1
  std::vector<bool> concat_in_place_;   // concat output computed in place (no primitive)
  std::vector<std::pair<int, int>> pending_copies_;  // (written, view) to copy after a node

  // A node's post-ops (post_ops_of).
  struct Post {
    post_ops ops;
    std::vector<Arg> args;
    int sum_tensor = -1;
    std::string info;
    // A fused depthwise convolution ("dw" post-op, a 1x1 convolution's only): its weight
    // and bias tensors (-1: none).
    int dw_weight = -1;
    int dw_bias = -1;
  };

  // ---- region.cc: building ----

  int new_phys(const memory::desc& md, Kind kind, int ext = -1, void* ptr = nullptr);
  void load(const Json& prog, void* const* consts, int nconsts);
  void plan_concats(const std::vector<Json>& nodes);
  bool in_concat_group(int t) const { return concat_parent_[t] >= 0 || concat_in_place_[t]; }
  int view_of(int t);
  int checked(long long t) const {
    if (t < 0 || t >= static_cast<long long>(dims_.size()))
      throw Error("program: tensor id " + std::to_string(t) + " out of range");
    return static_cast<int>(t);
  }
  std::vector<int> node_reads(const Json& node) const;
  int primary(int t) const {
    if (versions_[t].empty())
      throw Error("program: tensor " + std::to_string(t) + " is read before it is written");
    return versions_[t][0];
  }
  const memory::desc& md_of(int t) const { return phys_[primary(t)].md; }
  // The plain (row-major) layout of logical tensor `t`, in its data type.
  memory::desc plain(int t) const { return memory::desc(dims_[t], dtypes_[t], plain_tag(dims_[t].size())); }
  // A small constant the region owns (scales, zero points of int8 primitives).
  int owned_const(const memory::desc& md, const void* data);
  bool is_const(int t) const { return phys_[primary(t)].kind == Kind::Const; }
  int add_step(primitive prim, std::vector<Arg> args, std::string info,
               const dnnl::primitive_desc_base* pd = nullptr);
  static std::string impl_name(const dnnl::primitive_desc_base& pd) {
    std::string name = pd.impl_info_str();
    return name.substr(0, name.find(':'));
  }
  // A convolution kernel worth keeping (not the reference or the im2col+gemm fallback).
  static bool fast(const dnnl::primitive_desc_base& pd) {
    std::string name = pd.impl_info_str();
    return name.rfind("ref", 0) != 0 && name.find("gemm") == std::string::npos;
  }
  memory::desc preferred_for(int t) const;
  memory::desc preferred(const dims& d) const;
  primitive_attr base_attr() const {
    primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }
  int version(int t, const memory::desc& md);
  int define(int t, const memory::desc& md, int inplace = -1);
  int output_count(int t) const { return static_cast<int>(std::count(outputs_.begin(), outputs_.end(), t)); }
  int output_index(int t) const {
    return static_cast<int>(std::find(outputs_.begin(), outputs_.end(), t) - outputs_.begin());
  }
  // The root of `t`'s group of views (see group_).
  int group_root(int t) const {
    while (group_[t] != t) t = group_[t];
    return t;
  }
  void join_group(int t, int view);
  int dying(int t) const;
  static memory::desc lifted(const memory::desc& md, int lift);
  static memory::desc unlifted(const memory::desc& md, int lift);
  Post post_ops_of(const Json& node, const dims& dst_dims, int lift = 0, bool keep_nan = true);
  int define_with_sum(int out, const memory::desc& dst_md, int residual);
  long long node_work(const Json& node) const;
  bool small_node(const Json& node) const;
  template <class F>
  void build_steps(bool single, F&& build);
  void lower(const Json& node);
  void lower_node(const Json& node);
  int in(const Json& node, size_t k) const {
    auto ins = node.at("in").ints();
    if (k >= ins.size()) throw Error("program: node has too few inputs");
    return checked(ins[k]);
  }
  int out(const Json& node) const { return checked(node.at("out").i()); }
  void finish_outputs();

  // ---- conv.cc: convolutions ----

  dims grouped_weight_dims(int w, long long groups) const;
  static dims dnnl_dilation(const Json& node);
  template <class PD>
  std::vector<Arg> weighted_args(const PD& pd, int src, int w, const dims& wd, int o,
                                 const Post& post, long long b = -1,
                                 const memory::desc& bias_md = memory::desc());
  void lower_conv(const Json& node);
  void lower_conv_winograd(const Json& node);
  template <class Make>
  void lower_conv_dw(const Json& node, int src, int w, const dims& wd, int o, long long b,
                     const memory::desc& bias_md, const Post& post, Make&& make);
  int weight_version(int w, const dims& wd, const memory::desc& want);
  template <class PD, class Prim>
  void lower_conv_generic(const Json& node, algorithm alg, const char* what);
  void lower_conv_nd(const Json& node);
  void lower_deconv(const Json& node);

  // ---- matmul.cc: inner product and matmul ----

  void lower_dense(const Json& node);
  bool flat_matrix(int t) const;
  void lower_matmul(const Json& node);

  // ---- int8.cc: quantized primitives ----

  void lower_qreorder(const Json& node);
  bool quantize_to_nhwc(const Json& node, const memory::desc& have, const memory::desc& dst, int ps,
                        int p, const std::vector<float>& sscale);
  void lower_qweighted(const Json& node);
  void lower_qadd(const Json& node);
  void lower_qmatmul(const Json& node);
  primitive_attr quant_attr(const Json& node, int wmask, Post& post, std::vector<Arg>& extra);
  void dst_scale_and_zero_points(const Json& node, primitive_attr& attr, std::vector<Arg>& extra);

  // ---- dynamic.cc: quantization parameters computed at run time ----

  void lower_dynparams(const Json& node);
  void lower_dynquant(const Json& node);
  void runtime_qparams(int t, primitive_attr& attr, std::vector<Arg>& extra);

  // ---- eltwise.cc: primitives that keep their input's layout ----

  memory::desc follow(int t) const;
  static memory::desc like(const memory::desc& md, const dims& d);
  void lower_pool(const Json& node);
  void lower_eltwise(const Json& node);
  void lower_binary(const Json& node);
  void lower_concat(const Json& node);
  void lower_shuffle(const Json& node);
  void lower_erf(const Json& node);

  // ---- norm.cc: normalisations ----

  void lower_softmax(const Json& node);
  void lower_lrn(const Json& node);
  memory::desc last_dense(int t);
  void lower_layer_norm(const Json& node);

  // ---- views.cc: reshapes and transposes ----

  void copy_step(int src_phys, const memory::desc& from, int o, const memory::desc& to,
                 const std::string& what);
  static bool reshape_strides(const dims& od, const dims& os, const dims& nd, dims& ns);
  static bool is_strided(const memory::desc& md) {
    return md.get_format_kind() == memory::format_kind::blocked && md.get_inner_nblks() == 0;
  }
  static dims plain_strides(const dims& d);
  void define_view(int o, int src, int ps, const memory::desc& md);
  // Reshapes and transposes are views of their input (its strides rearranged) when the
  // input's layout allows it, else of a plain copy of it; tensors of an in-place
  // concatenation keep the copying path.
  bool views_allowed(int src, int o) const { return !in_concat_group(src) && !in_concat_group(o); }
  void lower_reshape(const Json& node);
  void lower_transpose(const Json& node);
  static size_t checked_axis(long long a, size_t ndims);

  // ---- plan.cc: memory planning ----

  // The physical tensor whose buffer `p` lives in.
  int root(int p) const {
    while (phys_[p].alias >= 0) p = phys_[p].alias;
    return p;
  }
  void plan();
  void reorder_constants();
};

// The arguments of a primitive with weights (convolution, deconvolution, inner product)
// made as `pd`: source `src`, weight `w` read with dims `wd`, destination `o` (written
// over the residual when the post-ops sum), the bias tensor `b` if b >= 0, then the
// post-ops' own arguments. Versions are made in that order (each may add a reorder step).
template <class PD>
std::vector<Arg> Region::weighted_args(const PD& pd, int src, int w, const dims& wd, int o,
                                       const Post& post, long long b,
                                       const memory::desc& bias_md) {
  int ps = version(src, pd.src_desc());
  int pw = weight_version(w, wd, pd.weights_desc());
  int pdst = post.sum_tensor >= 0 ? define_with_sum(o, pd.dst_desc(), post.sum_tensor)
                                  : define(o, pd.dst_desc());
  std::vector<Arg> args = {{DNNL_ARG_SRC, ps, pd.src_desc()},
                           {DNNL_ARG_WEIGHTS, pw, pd.weights_desc()},
                           {DNNL_ARG_DST, pdst, pd.dst_desc()}};
  if (b >= 0) args.push_back({DNNL_ARG_BIAS, version(checked(b), bias_md), bias_md});
  args.insert(args.end(), post.args.begin(), post.args.end());
  return args;
}

}  // namespace rk

#endif  // RKDNNL_REGION_H_
