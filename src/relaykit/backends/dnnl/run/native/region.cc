// relaykit oneDNN region runtime.
//
// One compiled library serves every region of every model: a region arrives
// as a small JSON program (written by relaykit/backends/dnnl/lower.py and
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
// C ABI (all functions catch every exception; on failure they return
// NULL / nonzero and rkdnnl_last_error() says why):
//   const char* rkdnnl_abi();                      "relaykit-dnnl-<ABI> onednn-<x.y.z>"
//   const char* rkdnnl_last_error();
//   void* rkdnnl_create(const char* program, void* const* consts, int nconsts, int nthreads);
//   void* rkdnnl_context_create(void* region);     a caller's own buffers, scratchpad, stream
//   void  rkdnnl_context_destroy(void* context);
//   int   rkdnnl_run(void* region, void* context, void* const* inputs, void* const* outputs);
//   int   rkdnnl_profile(void* region, void* context, void* const* in, void* const* out,
//                        double* step_ms);
//   int   rkdnnl_num_steps(void* region);
//   const char* rkdnnl_step_info(void* region, int step);
//   long long rkdnnl_arena_bytes(void* region);
//   void  rkdnnl_destroy(void* region);

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "winograd.h"

#define RKDNNL_ABI "4"

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

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- JSON ----

struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* find(const std::string& key) const {
    for (const auto& f : fields)
      if (f.first == key) return &f.second;
    return nullptr;
  }
  const Json& at(const std::string& key) const {
    const Json* v = find(key);
    if (!v) throw Error("program: missing field '" + key + "'");
    return *v;
  }
  long long i() const {
    if (kind != Num) throw Error("program: expected a number");
    return static_cast<long long>(num);
  }
  double f() const {
    if (kind != Num) throw Error("program: expected a number");
    return num;
  }
  const std::string& s() const {
    if (kind != Str) throw Error("program: expected a string");
    return str;
  }
  std::vector<long long> ints() const {
    if (kind != Arr) throw Error("program: expected an array");
    std::vector<long long> out;
    for (const auto& x : items) out.push_back(x.i());
    return out;
  }
  long long get_i(const std::string& key, long long dflt) const {
    const Json* v = find(key);
    return v ? v->i() : dflt;
  }
  double get_f(const std::string& key, double dflt) const {
    const Json* v = find(key);
    return v ? v->f() : dflt;
  }
};

class JsonParser {
 public:
  explicit JsonParser(const char* text) : p_(text) {}
  Json parse() {
    Json v = value(0);
    ws();
    if (*p_) fail("trailing characters");
    return v;
  }

 private:
  const char* p_;
  [[noreturn]] void fail(const char* what) { throw Error(std::string("program JSON: ") + what); }
  void ws() {
    while (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r') ++p_;
  }
  Json value(int depth) {
    if (depth > 64) fail("nested too deeply");
    ws();
    Json v;
    char c = *p_;
    if (c == '{') {
      v.kind = Json::Obj;
      ++p_;
      ws();
      if (*p_ == '}') { ++p_; return v; }
      while (true) {
        ws();
        if (*p_ != '"') fail("expected a key");
        std::string key = string();
        ws();
        if (*p_++ != ':') fail("expected ':'");
        v.fields.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (*p_ == ',') { ++p_; continue; }
        if (*p_ == '}') { ++p_; break; }
        fail("expected ',' or '}'");
      }
    } else if (c == '[') {
      v.kind = Json::Arr;
      ++p_;
      ws();
      if (*p_ == ']') { ++p_; return v; }
      while (true) {
        v.items.push_back(value(depth + 1));
        ws();
        if (*p_ == ',') { ++p_; continue; }
        if (*p_ == ']') { ++p_; break; }
        fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.kind = Json::Str;
      v.str = string();
    } else if (!strncmp(p_, "true", 4)) {
      v.kind = Json::Bool; v.num = 1; p_ += 4;
    } else if (!strncmp(p_, "false", 5)) {
      v.kind = Json::Bool; v.num = 0; p_ += 5;
    } else if (!strncmp(p_, "null", 4)) {
      p_ += 4;
    } else if (!strncmp(p_, "Infinity", 8) || !strncmp(p_, "-Infinity", 9) || !strncmp(p_, "NaN", 3)) {
      // Python's json writes non-finite floats (clip bounds) so.
      v.kind = Json::Num;
      bool neg = c == '-';
      v.num = c == 'N' ? std::nan("") : neg ? -HUGE_VAL : HUGE_VAL;
      p_ += c == 'N' ? 3 : neg ? 9 : 8;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      char* end = nullptr;
      v.kind = Json::Num;
      v.num = strtod(p_, &end);
      if (end == p_) fail("bad number");
      p_ = end;
    } else {
      fail("unexpected character");
    }
    return v;
  }
  std::string string() {
    ++p_;  // opening quote
    std::string out;
    while (*p_ && *p_ != '"') {
      if (*p_ == '\\') {
        ++p_;
        if (!*p_) break;
        char e = *p_;
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
        ++p_;
      } else {
        out.push_back(*p_++);
      }
    }
    if (*p_ != '"') fail("unterminated string");
    ++p_;
    return out;
  }
};

// ------------------------------------------------------------- helpers ----

// A buffer for weights or activations: 2 MiB-aligned and backed by huge pages when big
// (fewer TLB misses streaming VGG's 400 MB of dense weights), else page-aligned.
void* alloc_buffer(size_t bytes) {
  const size_t huge = size_t(2) << 20;
  size_t align = bytes >= huge ? huge : 4096;
  size_t size = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, size ? size : align);
  if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (align == huge) madvise(p, size, MADV_HUGEPAGE);
  return p;
}

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

algorithm eltwise_alg(const std::string& name);

// ReLU keeps NaN (as NumPy's maximum and relaykit's host do): oneDNN's relu kernels
// compute max(x, 0), which turns NaN into 0, while elu with alpha -0.0 is x for x > 0,
// (-0) * (exp(x) - 1) = +0 otherwise (-inf included), NaN for NaN. Leaky ReLU
// (alpha != 0) keeps NaN as is. `alpha` is updated with the algorithm.
// The elu costs an exp per element: fused into a convolution, inner product or matmul
// it made SqueezeNet's first convolution 55% slower (0.36 ms against 0.23 ms on one
// thread) and its 3x3 convolutions 13%, so there (`keep_nan` false) relu is oneDNN's
// max(x, 0), as onnxruntime's fused Conv+Relu (MLAS) computes it too.
algorithm eltwise_alg(const std::string& name, float& alpha, bool keep_nan = true) {
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

// The data of argument `arg` (DNNL_ARG_*) of a step, or null when it has none.
void* arg_data(const ExecArgs& args, int arg) {
  for (const auto& a : args)
    if (a.arg == arg) {
      void* p = nullptr;
      dnnl::error::wrap_c_api(dnnl_memory_get_data_handle(a.memory, &p), "no data handle");
      return p;
    }
  return nullptr;
}

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
  Region(const char* program, void* const* consts, int nconsts, int nthreads)
      : eng_(engine::kind::cpu, 0), strm_(eng_), nthreads_(nthreads) {
    if (nthreads_ > 0) omp_set_num_threads(nthreads_);
    Json prog = JsonParser(program).parse();
    load(prog, consts, nconsts);
    for (const auto& node : prog.at("nodes").items) lower(node);
    finish_outputs();
    plan();
  }

  ~Region() { std::free(weights_); }

  // A new execution context: its own arena, stream and memory objects.
  Context* new_context() const {
    auto ctx = std::make_unique<Context>(eng_);
    ctx->arena = alloc_buffer(static_cast<size_t>(arena_bytes_));
    char* base = static_cast<char*>(ctx->arena);
    memory scratch;
    if (scratch_bytes_ > 0)
      scratch = memory(memory::desc({static_cast<long long>(scratch_bytes_)}, dt::u8, tag::a), eng_,
                       base + scratch_offset_);
    ctx->argmaps.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i) {
      auto& argmap = ctx->argmaps[i];
      for (const auto& a : steps_[i].args) {
        const Phys& p = phys_[a.phys];
        bool ext = p.kind == Kind::Input || p.kind == Kind::Output;
        void* ptr = ext ? DNNL_MEMORY_NONE
                        : p.kind == Kind::Const ? p.ptr : static_cast<void*>(base + p.arena_offset);
        memory m(a.md, eng_, ptr);
        if (ext) ctx->ext.push_back({m, p.kind == Kind::Input, p.ext});
        argmap.emplace(a.arg, m);
      }
      if (scratch_bytes_ > 0) argmap.emplace(DNNL_ARG_SCRATCHPAD, scratch);
    }
    ctx->args.resize(steps_.size());
    for (size_t i = 0; i < steps_.size(); ++i)
      for (const auto& [arg, mem] : ctx->argmaps[i]) ctx->args[i].push_back({arg, mem.get()});
    return ctx.release();
  }

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

  // ---- building ----

  int new_phys(const memory::desc& md, Kind kind, int ext = -1, void* ptr = nullptr) {
    Phys p;
    p.md = md;
    p.kind = kind;
    p.ext = ext;
    p.ptr = ptr;
    phys_.push_back(p);
    return static_cast<int>(phys_.size()) - 1;
  }

  void load(const Json& prog, void* const* consts, int nconsts) {
    if (prog.at("format").s() != "relaykit.dnnl")
      throw Error("not a relaykit dnnl program");
    if (const Json* layout = prog.find("layout")) layout_ = layout->s();
    if (layout_ != "any" && layout_ != "nhwc" && layout_ != "blocked")
      throw Error("program: unknown layout '" + layout_ + "'");
    for (const auto& t : prog.at("tensors").items) dims_.push_back(to_dims(t.ints()));
    size_t n = dims_.size();
    versions_.assign(n, {});
    last_use_.assign(n, -1);
    group_.resize(n);
    for (size_t t = 0; t < n; ++t) group_[t] = static_cast<int>(t);
    is_output_.assign(n, false);
    auto inputs = prog.at("inputs").ints();
    for (size_t k = 0; k < inputs.size(); ++k) {
      int t = checked(inputs[k]);
      versions_[t].push_back(new_phys(plain_md(dims_[t]), Kind::Input, static_cast<int>(k)));
    }
    auto cids = prog.at("constants").ints();
    if (static_cast<int>(cids.size()) != nconsts)
      throw Error("program needs " + std::to_string(cids.size()) + " constants, got " +
                  std::to_string(nconsts));
    for (size_t k = 0; k < cids.size(); ++k) {
      int t = checked(cids[k]);
      versions_[t].push_back(new_phys(plain_md(dims_[t]), Kind::Const, -1, consts[k]));
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
  void plan_concats(const std::vector<Json>& nodes) {
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
      if (od.size() != 4 || od[0] != 1 || is_output_[o]) continue;
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

  bool in_concat_group(int t) const { return concat_parent_[t] >= 0 || concat_in_place_[t]; }

  // The physical view of `t` inside its concatenation's buffer (nChw16c).
  int view_of(int t) {
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

  int checked(long long t) const {
    if (t < 0 || t >= static_cast<long long>(dims_.size()))
      throw Error("program: tensor id " + std::to_string(t) + " out of range");
    return static_cast<int>(t);
  }

  std::vector<int> node_reads(const Json& node) const {
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

  int primary(int t) const {
    if (versions_[t].empty())
      throw Error("program: tensor " + std::to_string(t) + " is read before it is written");
    return versions_[t][0];
  }

  const memory::desc& md_of(int t) const { return phys_[primary(t)].md; }

  bool is_const(int t) const { return phys_[primary(t)].kind == Kind::Const; }

  int add_step(primitive prim, std::vector<Arg> args, std::string info,
               const dnnl::primitive_desc_base* pd = nullptr) {
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

  static std::string impl_name(const dnnl::primitive_desc_base& pd) {
    std::string name = pd.impl_info_str();
    return name.substr(0, name.find(':'));
  }

  // A convolution kernel worth keeping (not the reference or the im2col+gemm fallback).
  static bool fast(const dnnl::primitive_desc_base& pd) {
    std::string name = pd.impl_info_str();
    return name.rfind("ref", 0) != 0 && name.find("gemm") == std::string::npos;
  }

  // The layout activation tensor `t` should use, or format_tag::any when oneDNN chooses.
  memory::desc preferred_for(int t) const {
    if (concat_parent_[t] >= 0) return memory::desc(dims_[t], dt::f32, tag::aBcd16b);
    return preferred(dims_[t]);
  }

  memory::desc preferred(const dims& d) const {
    if (d.size() == 4 && layout_ == "nhwc") return memory::desc(d, dt::f32, tag::acdb);
    if (d.size() == 4 && layout_ == "blocked" && d[1] % 16 == 0)
      return memory::desc(d, dt::f32, tag::aBcd16b);
    return memory::desc(d, dt::f32, tag::any);
  }

  primitive_attr base_attr() const {
    primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }

  // Logical tensor `t` in layout `md`: an existing version, or a new one made by a
  // reorder (executed once, now, for constants; a step otherwise).
  int version(int t, const memory::desc& md) {
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
  int define(int t, const memory::desc& md, int inplace = -1) {
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
    if (is_output_[t] && md == plain_md(dims_[t]) && output_count(t) == 1) {
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

  int output_count(int t) const { return static_cast<int>(std::count(outputs_.begin(), outputs_.end(), t)); }
  int output_index(int t) const {
    return static_cast<int>(std::find(outputs_.begin(), outputs_.end(), t) - outputs_.begin());
  }

  // The primary physical tensor of `t` if `t` dies at the current node (so its buffer can be reused).
  int group_root(int t) const {
    while (group_[t] != t) t = group_[t];
    return t;
  }

  // `view` now shares the buffer of `t`: one group, dying with the last of its tensors.
  void join_group(int t, int view) {
    int a = group_root(t), b = group_root(view);
    if (a == b) return;
    group_[b] = a;
    last_use_[a] = std::max(last_use_[a], last_use_[b]);
    is_output_group_[a] = is_output_group_[a] || is_output_group_[b];
  }

  int dying(int t) const {
    int g = group_root(t);
    if (last_use_[g] != node_index_ || is_output_group_[g] || in_concat_group(t)) return -1;
    int p = primary(t);
    return phys_[p].kind == Kind::Internal ? p : -1;
  }

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

  // `md` seen with `lift` leading unit dimensions (same bytes).
  static memory::desc lifted(const memory::desc& md, int lift) {
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
  static memory::desc unlifted(const memory::desc& md, int lift) {
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
  Post post_ops_of(const Json& node, const dims& dst_dims, int lift = 0, bool keep_nan = true) {
    Post post;
    const Json* list = node.find("post");
    if (!list) return post;
    int idx = 0;
    for (const auto& p : list->items) {
      const std::string& op = p.at("op").s();
      if (op == "sum") {
        if (post.sum_tensor >= 0) throw Error("program: two sum post-ops");
        post.sum_tensor = checked(p.at("in").i());
        post.ops.append_sum(1.f);
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
        memory::desc md = is_const(t) ? plain_md(dims_[t]) : md_of(t);
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
  int define_with_sum(int out, const memory::desc& dst_md, int residual) {
    int dead = dying(residual);
    // define() writes a region output straight into the caller's buffer (no alias): the
    // residual must then be copied there first, as below.
    bool direct_output = is_output_[out] && dst_md == plain_md(dims_[out]) && output_count(out) == 1;
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
  long long node_work(const Json& node) const {
    const std::string& op = node.at("op").s();
    auto elems = [&](int t) {
      long long n = 1;
      for (auto d : dims_[t]) n *= d;
      return n;
    };
    int o = out(node);
    if (op == "conv" || op == "conv_nd" || op == "deconv" || op == "dense") {
      int w = checked(node.at("weight").i());
      long long k = 1;
      for (size_t i = 1; i < dims_[w].size(); ++i) k *= dims_[w][i];
      return elems(o) * k;
    }
    if (op == "matmul") return elems(o) * dims_[in(node, 0)].back();
    long long most = elems(o);
    for (long long t : node.at("in").ints()) most = std::max(most, elems(checked(t)));
    return most;
  }

  bool small_node(const Json& node) const {
    const std::string& op = node.at("op").s();
    bool macs = op == "conv" || op == "conv_nd" || op == "deconv" || op == "dense" || op == "matmul";
    return node_work(node) < (macs ? kSmallStepMacs : kSmallStepElems);
  }

  // Run `build` (which adds steps) with oneDNN seeing one thread when `single`: the steps
  // it adds are built for, and run on, one thread.
  template <class F>
  void build_steps(bool single, F&& build) {
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
  void lower(const Json& node) {
    build_steps(small_node(node), [&] { lower_node(node); });
  }

  void lower_node(const Json& node) {
    const std::string& op = node.at("op").s();
    if (op == "conv") lower_conv(node);
    else if (op == "dense") lower_dense(node);
    else if (op == "conv_nd")
      lower_conv_generic<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
          node, algorithm::convolution_direct, "conv_nd");
    else if (op == "deconv")
      lower_conv_generic<dnnl::deconvolution_forward::primitive_desc,
                         dnnl::deconvolution_forward>(node, algorithm::deconvolution_direct,
                                                      "deconv");
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
    else throw Error("program: unknown node op '" + op + "'");
    for (auto [from, to] : pending_copies_) {
      auto pd = dnnl::reorder::primitive_desc(eng_, phys_[from].md, eng_, phys_[to].md, base_attr());
      add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, from, phys_[from].md}, {DNNL_ARG_TO, to, phys_[to].md}},
               "reorder into concat " + md_str(phys_[from].md), &pd);
    }
    pending_copies_.clear();
    ++node_index_;
  }

  int in(const Json& node, size_t k) const {
    auto ins = node.at("in").ints();
    if (k >= ins.size()) throw Error("program: node has too few inputs");
    return checked(ins[k]);
  }
  int out(const Json& node) const { return checked(node.at("out").i()); }

  // The dims weight `w` is read with by a primitive of `groups` groups:
  // (groups, O / groups, I / groups, spatial...) when grouped, else its own.
  dims grouped_weight_dims(int w, long long groups) const {
    dims wd = dims_[w];
    if (groups > 1) {
      wd.insert(wd.begin(), groups);
      wd[1] /= groups;
    }
    return wd;
  }

  // A node's "dilation" as oneDNN counts it (0 for none; Relay counts 1).
  static dims dnnl_dilation(const Json& node) {
    dims dil = to_dims(node.at("dilation").ints());
    for (auto& d : dil) d -= 1;
    return dil;
  }

  // The arguments of a primitive with weights (convolution, deconvolution, inner product)
  // made as `pd`: source `src`, weight `w` read with dims `wd`, destination `o` (written
  // over the residual when the post-ops sum), the bias tensor `b` if b >= 0, then the
  // post-ops' own arguments. Versions are made in that order (each may add a reorder step).
  template <class PD>
  std::vector<Arg> weighted_args(const PD& pd, int src, int w, const dims& wd, int o,
                                 const Post& post, long long b = -1,
                                 const memory::desc& bias_md = memory::desc()) {
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

  void lower_conv(const Json& node) {
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
  void lower_conv_winograd(const Json& node) {
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

  // A 1x1 convolution with a fused depthwise one ("dw" post-op): blocked (nChw16c) layout,
  // the only one oneDNN's fused kernels take; the primitive is described with the 1x1's
  // output dims and writes the depthwise output (its dst_desc).
  template <class Make>
  void lower_conv_dw(const Json& node, int src, int w, const dims& wd, int o, long long b,
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

  // A weight constant seen with other dims (grouped conv, dense on a 4-D input).
  int weight_version(int w, const dims& wd, const memory::desc& want) {
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
  void lower_conv_generic(const Json& node, algorithm alg, const char* what) {
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

  void lower_dense(const Json& node) {
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
    dnnl::inner_product_forward::primitive_desc pd;
    try {
      pd = dnnl::inner_product_forward::primitive_desc(eng_, prop_kind::forward_inference,
                                                       md_of(src), any(wd), bias_md,
                                                       any(dims_[o]), attr);
    } catch (const dnnl::error&) {
      pd = dnnl::inner_product_forward::primitive_desc(eng_, prop_kind::forward_inference,
                                                       any(sd), any(wd), bias_md,
                                                       any(dims_[o]), attr);
    }
    std::vector<Arg> args = weighted_args(pd, src, w, wd, o, post, b, bias_md);
    add_step(dnnl::inner_product_forward(pd), args,
             "dense t" + std::to_string(o) + " " + md_str(pd.src_desc()) + " w=" +
                 md_str(pd.weights_desc()) + post.info,
             &pd);
  }

  // Tensor `t` (4-D, spatial dims 1) is laid out as the plain (N, C) matrix: plain
  // nchw / nhwc, or nChw{8,16}c with C a multiple of the block (no padding).
  bool flat_matrix(int t) const {
    const dims& d = dims_[t];
    if (d.size() != 4 || d[2] != 1 || d[3] != 1) return false;
    const memory::desc& have = md_of(t);
    if (have == plain_md(d) || have == memory::desc(d, dt::f32, tag::acdb)) return true;
    return (d[1] % 16 == 0 && have == memory::desc(d, dt::f32, tag::aBcd16b)) ||
           (d[1] % 8 == 0 && have == memory::desc(d, dt::f32, tag::aBcd8b));
  }

  // Source layout for layout-preserving primitives: the input's own layout,
  // except constants and inputs, which oneDNN reads in their plain layout anyway.
  memory::desc follow(int t) const { return md_of(t); }

  // A `d`-shaped layout in the same format as `md` (nchw, nhwc or nChw{8,16}c), or any.
  static memory::desc like(const memory::desc& md, const dims& d) {
    memory::desc anyd(d, dt::f32, tag::any);
    if (md.get_format_kind() != memory::format_kind::blocked || md.get_ndims() != 4 || d.size() != 4)
      return anyd;
    auto strides = md.get_strides();
    int nb = md.get_inner_nblks();
    if (nb == 0) {
      if (strides[1] == 1 && strides[3] >= strides[1]) return memory::desc(d, dt::f32, tag::acdb);
      if (strides[3] == 1 && strides[2] <= strides[1]) return memory::desc(d, dt::f32, tag::abcd);
      return anyd;
    }
    auto blks = md.get_inner_blks();
    auto idxs = md.get_inner_idxs();
    if (nb == 1 && idxs[0] == 1 && blks[0] == 16) return memory::desc(d, dt::f32, tag::aBcd16b);
    if (nb == 1 && idxs[0] == 1 && blks[0] == 8) return memory::desc(d, dt::f32, tag::aBcd8b);
    return anyd;
  }

  void lower_pool(const Json& node) {
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
    if (!done) pd = make(memory::desc(dims_[o], dt::f32, tag::any));
    int ps = version(src, pd.src_desc());
    int pdst = define(o, pd.dst_desc());
    add_step(dnnl::pooling_forward(pd),
             {{DNNL_ARG_SRC, ps, pd.src_desc()}, {DNNL_ARG_DST, pdst, pd.dst_desc()}},
             "pool_" + alg_name + " t" + std::to_string(o) + " " + md_str(pd.src_desc()) +
                 " -> " + md_str(pd.dst_desc()),
             &pd);
  }

  void lower_eltwise(const Json& node) {
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

  void lower_binary(const Json& node) {
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

  void lower_concat(const Json& node) {
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
      memory::desc want = memory::desc(dims_[o], dt::f32, tag::any);
      pd = dnnl::concat::primitive_desc(eng_, want, axis, mds, base_attr());
    } catch (const dnnl::error&) {
      for (auto& md : mds) md = plain_md(md.get_dims());
      pd = dnnl::concat::primitive_desc(eng_, plain_md(dims_[o]), axis, mds, base_attr());
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

  void lower_softmax(const Json& node) {
    int src = in(node, 0), o = out(node);
    int axis = static_cast<int>(node.at("axis").i());
    bool log = node.get_i("log", 0) != 0;
    memory::desc md = follow(src);
    dnnl::softmax_forward::primitive_desc pd;
    try {
      pd = dnnl::softmax_forward::primitive_desc(
          eng_, prop_kind::forward_inference, log ? algorithm::softmax_log : algorithm::softmax_accurate,
          md, md, axis, base_attr());
      if (impl_name(pd) == "ref" && !(md == plain_md(dims_[src]))) throw dnnl::error(dnnl_unimplemented, "ref");
    } catch (const dnnl::error&) {
      md = plain_md(dims_[src]);
      pd = dnnl::softmax_forward::primitive_desc(
          eng_, prop_kind::forward_inference, log ? algorithm::softmax_log : algorithm::softmax_accurate,
          md, md, axis, base_attr());
    }
    int ps = version(src, md);
    int pdst = define(o, md, dying(src));
    add_step(dnnl::softmax_forward(pd), {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, md}},
             std::string(log ? "log_softmax" : "softmax") + " t" + std::to_string(o) + " " + md_str(md), &pd);
  }

  void lower_lrn(const Json& node) {
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

  void lower_shuffle(const Json& node) {
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

  // Copy `src` (seen with layout `from`) into a new plain tensor `o`, seen by the
  // reorder with layout `to` (same bytes as the plain layout of `o`).
  void copy_step(int src_phys, const memory::desc& from, int o, const memory::desc& to,
                 const std::string& what) {
    int pdst = define(o, plain_md(dims_[o]));
    auto pd = dnnl::reorder::primitive_desc(eng_, from, eng_, to, base_attr());
    add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src_phys, from}, {DNNL_ARG_TO, pdst, to}},
             what + " t" + std::to_string(o), &pd);
  }

  // Strides of `nd` viewing a tensor of dims `od` and strides `os` without a copy, as
  // NumPy's reshape does; false when the reshape needs a copy.
  static bool reshape_strides(const dims& od, const dims& os, const dims& nd, dims& ns) {
    dims d, st;  // the old dims without the 1s
    for (size_t i = 0; i < od.size(); ++i)
      if (od[i] != 1) { d.push_back(od[i]); st.push_back(os[i]); }
    ns.assign(nd.size(), 0);
    size_t oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nd.size() && oi < d.size()) {
      long long np = nd[ni], op = d[oi];
      while (np != op) {
        if (np < op) {
          if (nj >= nd.size()) return false;
          np *= nd[nj++];
        } else {
          if (oj >= d.size()) return false;
          op *= d[oj++];
        }
      }
      for (size_t ok = oi; ok + 1 < oj; ++ok)
        if (st[ok] != d[ok + 1] * st[ok + 1]) return false;  // the block is not contiguous
      ns[nj - 1] = st[oj - 1];
      for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * nd[nk];
      ni = nj++;
      oi = oj++;
    }
    // Trailing (and any unset) 1-dims: a stride that keeps the layout dense-looking.
    for (size_t i = nd.size(); i-- > 0;)
      if (ns[i] == 0) ns[i] = i + 1 < nd.size() ? ns[i + 1] * nd[i + 1] : 1;
    return true;
  }

  static bool is_strided(const memory::desc& md) {
    return md.get_format_kind() == memory::format_kind::blocked && md.get_inner_nblks() == 0;
  }

  static dims plain_strides(const dims& d) {
    dims st(d.size());
    long long s = 1;
    for (size_t i = d.size(); i-- > 0;) { st[i] = s; s *= d[i]; }
    return st;
  }

  // Logical tensor `o` is `src` (physical tensor `ps`) seen through the layout `md`:
  // the same buffer, no step.
  void define_view(int o, int src, int ps, const memory::desc& md) {
    if (!versions_[o].empty()) throw Error("program: tensor " + std::to_string(o) + " written twice");
    Phys v = phys_[ps];
    v.md = md;
    v.first = v.last = -1;
    v.offset = 0;
    v.alias = v.kind == Kind::Internal ? ps : -1;
    phys_.push_back(v);
    versions_[o].push_back(static_cast<int>(phys_.size()) - 1);
    join_group(src, o);
  }

  // Reshapes and transposes are views of their input (its strides rearranged) when the
  // input's layout allows it, else of a plain copy of it; tensors of an in-place
  // concatenation keep the copying path.
  bool views_allowed(int src, int o) const { return !in_concat_group(src) && !in_concat_group(o); }

  void lower_reshape(const Json& node) {
    int src = in(node, 0), o = out(node);
    memory::desc pmd = plain_md(dims_[src]);
    if (!views_allowed(src, o)) {
      int ps = version(src, pmd);
      copy_step(ps, pmd, o, pmd, "reshape");
      return;
    }
    const memory::desc& have = md_of(src);
    dims ns;
    if (is_strided(have) && reshape_strides(dims_[src], have.get_strides(), dims_[o], ns)) {
      define_view(o, src, primary(src), memory::desc(dims_[o], dt::f32, ns));
      return;
    }
    define_view(o, src, version(src, pmd), plain_md(dims_[o]));
  }

  void lower_transpose(const Json& node) {
    int src = in(node, 0), o = out(node);
    auto perm = node.at("perm").ints();
    const dims& sd = dims_[src];
    if (perm.size() != sd.size()) throw Error("program: transpose permutation has the wrong rank");
    const memory::desc& have = md_of(src);
    bool strided = is_strided(have);
    int ps = strided ? primary(src) : version(src, plain_md(sd));
    dims st = strided ? have.get_strides() : plain_strides(sd);
    dims vd(sd.size()), vs(sd.size());
    for (size_t i = 0; i < perm.size(); ++i) {
      vd[i] = sd[checked_axis(perm[i], sd.size())];
      vs[i] = st[perm[i]];
    }
    memory::desc view(vd, dt::f32, vs);
    if (views_allowed(src, o)) {
      define_view(o, src, ps, view);
      return;
    }
    copy_step(ps, view, o, plain_md(vd), "transpose");
  }

  static size_t checked_axis(long long a, size_t ndims) {
    if (a < 0 || a >= static_cast<long long>(ndims)) throw Error("program: axis out of range");
    return static_cast<size_t>(a);
  }

  // `t` in a layout whose innermost dimension is contiguous (what normalisations and the
  // jit softmax want): its own when it is, else a plain copy.
  memory::desc last_dense(int t) {
    const memory::desc& md = md_of(t);
    if (is_strided(md)) {
      auto st = md.get_strides();
      if (!st.empty() && st.back() == 1) return md;
    }
    return plain_md(dims_[t]);
  }

  // Batched matrix product: in [..., M, K] and [..., K, N] (any strides: transposed
  // operands are views), optional bias [..., N] (broadcast), post-ops.
  // oneDNN 3.2's brgemm matmul takes a binary post-op broadcast over the batch only from
  // rank 4 on ([B, M, N] + [1, M, N] falls to the reference kernel, ~600x slower; as
  // [1, B, M, N] + [1, 1, M, N] it is a jit kernel), so the shapes are also tried with a
  // leading unit dimension ("lifted": same bytes, no copies).
  void lower_matmul(const Json& node) {
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

  // Layer normalisation over the innermost dimension, with optional scale and shift
  // ("weight" and "bias": constants of that dimension's size).
  void lower_layer_norm(const Json& node) {
    int src = in(node, 0), o = out(node);
    long long scale = node.get_i("weight", -1), shift = node.get_i("bias", -1);
    float eps = static_cast<float>(node.at("eps").f());
    memory::desc md = last_dense(src);
    auto flags = dnnl::normalization_flags::none;
    if (scale >= 0) flags |= dnnl::normalization_flags::use_scale;
    if (shift >= 0) flags |= dnnl::normalization_flags::use_shift;
    auto pd = dnnl::layer_normalization_forward::primitive_desc(
        eng_, prop_kind::forward_inference, md, md, eps, flags, base_attr());
    int ps = version(src, md);
    int pdst = define(o, md, dying(src));
    std::vector<Arg> args = {{DNNL_ARG_SRC, ps, md}, {DNNL_ARG_DST, pdst, md}};
    memory::desc cmd = plain_md({dims_[src].back()});
    for (auto [t, arg] : {std::pair<long long, int>{scale, DNNL_ARG_SCALE}, {shift, DNNL_ARG_SHIFT}}) {
      if (t < 0) continue;
      int c = checked(t);
      if (!is_const(c) || dims_[c] != cmd.get_dims())
        throw Error("program: layer_norm scale and shift must be constants of the last dim's size");
      args.push_back({arg, version(c, cmd), cmd});
    }
    add_step(dnnl::layer_normalization_forward(pd), args,
             "layer_norm t" + std::to_string(o) + " " + md_str(md), &pd);
  }

  void finish_outputs() {
    for (size_t k = 0; k < outputs_.size(); ++k) {
      int t = outputs_[k];
      bool direct = false;
      for (int p : versions_[t])
        if (phys_[p].kind == Kind::Output && phys_[p].ext == static_cast<int>(k)) direct = true;
      if (direct) continue;
      memory::desc pmd = plain_md(dims_[t]);
      int src = primary(t);
      int p = new_phys(pmd, Kind::Output, static_cast<int>(k));
      long long n = static_cast<long long>(pmd.get_size() / sizeof(float));
      build_steps(n < kSmallStepElems, [&] {
        auto pd = dnnl::reorder::primitive_desc(eng_, phys_[src].md, eng_, pmd, base_attr());
        add_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, src, phys_[src].md}, {DNNL_ARG_TO, p, pmd}},
                 "output " + std::to_string(k) + " " + md_str(phys_[src].md), &pd);
      });
    }
  }

  // ---- memory planning: internal tensors share buffers by liveness ----

  int root(int p) const {
    while (phys_[p].alias >= 0) p = phys_[p].alias;
    return p;
  }

  void plan() {
    size_t n = phys_.size();
    std::vector<int> first(n, -1), last(n, -1);
    std::vector<size_t> size(n, 0);
    for (size_t p = 0; p < n; ++p) {
      if (phys_[p].kind != Kind::Internal) continue;
      int r = root(static_cast<int>(p));
      size_t offset = 0;
      for (int q = static_cast<int>(p); phys_[q].alias >= 0; q = phys_[q].alias) offset += phys_[q].offset;
      size[r] = std::max(size[r], offset + phys_[p].md.get_size());
      int f = phys_[p].first, l = std::max(phys_[p].last, phys_[p].first);
      if (f >= 0) first[r] = first[r] < 0 ? f : std::min(first[r], f);
      last[r] = std::max(last[r], l);
    }
    // Walk the steps; a buffer is free again after the last step that uses its tensors.
    std::vector<std::vector<int>> starts(steps_.size()), ends(steps_.size());
    for (size_t r = 0; r < n; ++r)
      if (size[r] > 0 && first[r] >= 0) {
        starts[first[r]].push_back(static_cast<int>(r));
        ends[std::max(last[r], first[r])].push_back(static_cast<int>(r));
      }
    std::vector<size_t> buf_size;
    std::vector<int> free_bufs, buf_of(n, -1);
    for (size_t s = 0; s < steps_.size(); ++s) {
      for (int r : starts[s]) {
        // Best fit among free buffers, else grow the largest free one, else a new one.
        int best = -1;
        for (int b : free_bufs)
          if (buf_size[b] >= size[r] && (best < 0 || buf_size[b] < buf_size[best])) best = b;
        if (best < 0)
          for (int b : free_bufs)
            if (best < 0 || buf_size[b] > buf_size[best]) best = b;
        if (best < 0) {
          best = static_cast<int>(buf_size.size());
          buf_size.push_back(0);
        } else {
          free_bufs.erase(std::find(free_bufs.begin(), free_bufs.end(), best));
        }
        buf_size[best] = std::max(buf_size[best], size[r]);
        buf_of[r] = best;
      }
      for (int r : ends[s]) free_bufs.push_back(buf_of[r]);
    }
    // One arena (huge pages when big) holds the buffers, then the scratchpad.
    auto round = [](size_t b) { return (b + 4095) / 4096 * 4096; };
    std::vector<size_t> buf_offset(buf_size.size());
    size_t total = 0;
    for (size_t b = 0; b < buf_size.size(); ++b) {
      buf_offset[b] = total;
      total += round(buf_size[b]);
    }
    scratch_offset_ = total;
    total += round(scratch_bytes_);
    arena_bytes_ = static_cast<long long>(total);
    for (size_t p = 0; p < n; ++p)
      if (phys_[p].kind == Kind::Internal) {
        int b = buf_of[root(static_cast<int>(p))];
        size_t offset = 0;
        for (int q = static_cast<int>(p); phys_[q].alias >= 0; q = phys_[q].alias) offset += phys_[q].offset;
        if (b >= 0) phys_[p].arena_offset = buf_offset[b] + offset;
      }
    reorder_constants();
  }

  // Reorder every constant into the layout its primitive wants, all into one arena.
  void reorder_constants() {
    size_t total = 0;
    std::vector<size_t> offsets;
    for (const auto& c : const_reorders_) {
      offsets.push_back(total);
      total += (phys_[c.phys].md.get_size() + 63) / 64 * 64;
    }
    if (total == 0) return;
    weights_ = alloc_buffer(total);
    weight_bytes_ = static_cast<long long>(total);
    for (size_t i = 0; i < const_reorders_.size(); ++i) {
      const auto& c = const_reorders_[i];
      Phys& p = phys_[c.phys];
      p.ptr = static_cast<char*>(weights_) + offsets[i];
      memory from(c.from_md, eng_, c.from_ptr);
      memory to(p.md, eng_, p.ptr);
      dnnl::reorder(from, to).execute(strm_, from, to);
    }
    strm_.wait();
    const_reorders_.clear();
  }

};

thread_local std::string g_error;

template <typename F>
auto guard(F&& f, decltype(f()) on_error) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    g_error = std::string("oneDNN: ") + e.what() + " (status " + std::to_string(e.status) + ")";
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "unknown error";
  }
  return on_error;
}

}  // namespace rk

extern "C" {

const char* rkdnnl_abi() {
  static std::string abi = [] {
    const dnnl_version_t* v = dnnl_version();
    return std::string("relaykit-dnnl-" RKDNNL_ABI " onednn-") + std::to_string(v->major) + "." +
           std::to_string(v->minor) + "." + std::to_string(v->patch);
  }();
  return abi.c_str();
}

const char* rkdnnl_last_error() { return rk::g_error.c_str(); }

void* rkdnnl_create(const char* program, void* const* consts, int nconsts, int nthreads) {
  return rk::guard([&]() -> void* { return new rk::Region(program, consts, nconsts, nthreads); },
                   nullptr);
}

void* rkdnnl_context_create(void* region) {
  return rk::guard([&]() -> void* { return static_cast<rk::Region*>(region)->new_context(); },
                   nullptr);
}

void rkdnnl_context_destroy(void* context) { delete static_cast<rk::Context*>(context); }

int rkdnnl_run(void* region, void* context, void* const* inputs, void* const* outputs) {
  return rk::guard([&] {
    static_cast<rk::Region*>(region)->run(*static_cast<rk::Context*>(context), inputs, outputs,
                                          nullptr);
    return 0;
  }, 1);
}

int rkdnnl_profile(void* region, void* context, void* const* inputs, void* const* outputs,
                   double* step_ms) {
  return rk::guard([&] {
    static_cast<rk::Region*>(region)->run(*static_cast<rk::Context*>(context), inputs, outputs,
                                          step_ms);
    return 0;
  }, 1);
}

int rkdnnl_num_steps(void* region) { return static_cast<rk::Region*>(region)->num_steps(); }

const char* rkdnnl_step_info(void* region, int step) {
  return rk::guard([&] { return static_cast<rk::Region*>(region)->step_info(step).c_str(); },
                   static_cast<const char*>(nullptr));
}

long long rkdnnl_arena_bytes(void* region) {
  return static_cast<rk::Region*>(region)->arena_bytes();
}

void rkdnnl_destroy(void* region) { delete static_cast<rk::Region*>(region); }

}  // extern "C"
