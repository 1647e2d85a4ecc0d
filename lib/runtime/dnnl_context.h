// The oneDNN engine and stream every kernel of a compiled model shares (CPU, in-order).
#pragma once

#include <dnnl.hpp>

#include "runtime/kernel.h"

namespace memplan::rt {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};  // for load-time work; each session has its own
  int threads = 1;  // OpenMP threads the kernels made with this context were made for (run_threads.h)
};

}  // namespace memplan::rt
