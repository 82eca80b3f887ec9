// The C ABI of relaykit's oneDNN region runtime (relaykit/backends/dnnl/run/native.py
// binds it with ctypes).
//
// All functions catch every exception; on failure they return NULL / nonzero and
// rkdnnl_last_error() says why:
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

#include "region.h"

#include <exception>
#include <string>

#define RKDNNL_ABI "4"

namespace rk {

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
