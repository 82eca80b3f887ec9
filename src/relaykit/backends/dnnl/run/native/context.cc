// A caller's context of a region (see region.h): its arena, stream and memory objects,
// made once so that a run (Region::run) only sets the input and output pointers.

#include "region.h"

#include <memory>

namespace rk {

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

// A new execution context: its own arena, stream and memory objects.
Context* Region::new_context() const {
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

}  // namespace rk
