// The oneDNN engine and stream every kernel of a compiled model shares (CPU, in-order).
#pragma once

#include <dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include <deque>
#include <memory>
#include <string>

#include "runtime/kernel.h"

namespace memplan {
struct Tensor;
}

namespace memplan::rt {

// A constant reordered for a kernel: `tensor`'s bytes, read as `user`, in layout `want`. (A weak
// reference: the model may release the tensor meanwhile, and no other may then take its address.)
struct ReorderedConstant {
  std::weak_ptr<const Tensor> tensor;
  dnnl::memory::desc user, want;
  dnnl::memory memory;
};

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};  // for load-time work; each session has its own
  int threads = 1;  // OpenMP threads the kernels made with this context were made for (run_threads.h)
  // While select_kernels makes the kernels (`share_constants`): each constant reordered, so that
  // kernels that want the same bytes in the same layout share one copy (dnnl_common's
  // constant_memory). torch shares a weight between layers through Identities: the BERT-like
  // encoder's six layers each reordered their own copy of its 6.5 MB of shared weights, 39 MB.
  // Emptied when the kernels are made: the kernels hold what they use, and kernels made later
  // (at run time, for dynamic shapes) make their own. A deque: each entry holds two oneDNN
  // descriptions (1.4 KB), and a vector's doubling kept up to twice the entries' bytes (270 KB for
  // the Paddle classifier's 76 kernels, the tenth of its process's memory above the runtime's own)
  // with a copy of all of them while it grew; clear() hands a deque's blocks back.
  bool share_constants = false;
  std::deque<ReorderedConstant> reordered_constants;
};

// True when oneDNN runs at least `isa` on this CPU, as DNNL_MAX_CPU_ISA may limit it (the CPU's own
// flags would overstate it).
inline bool dnnl_runs_isa(dnnl_cpu_isa_t isa) {
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (effective & static_cast<unsigned>(isa)) == static_cast<unsigned>(isa);
}

// The instruction set oneDNN runs at here, by oneDNN's name for it ("avx512_core_vnni"), as
// DNNL_MAX_CPU_ISA may limit it.
inline std::string dnnl_isa_name() {
  const std::string name = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
  return name.rfind("cpu_isa_", 0) == 0 ? name.substr(8) : name;
}

// Drops the primitives oneDNN's primitive cache holds that no kernel holds: the one-off reorders
// of weights made at load, the kernels timed and not chosen. Their memory (jit code, descriptions)
// would otherwise stay for the process's life. The kernels keep theirs, and the cache fills again
// as sessions make theirs (a primitive made twice with the same description is still shared).
// Other threads compiling meanwhile lose only cache hits.
inline void release_cached_primitives() {
  int capacity = 0;
  if (dnnl_get_primitive_cache_capacity(&capacity) != dnnl_success || capacity <= 0) return;
  dnnl_set_primitive_cache_capacity(0);
  dnnl_set_primitive_cache_capacity(capacity);
}

// The channel block of oneDNN's blocked kernels for that ISA: 16 (AVX-512), 8 (AVX2), else 0.
inline int dnnl_channel_block() {
  if (dnnl_runs_isa(dnnl_cpu_isa_avx512_core)) return 16;
  if (dnnl_runs_isa(dnnl_cpu_isa_avx2)) return 8;
  return 0;
}

}  // namespace memplan::rt
