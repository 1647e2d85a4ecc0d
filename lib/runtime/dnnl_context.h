// The oneDNN engine and stream every kernel of a compiled model shares (CPU, in-order).
#pragma once

#include <dnnl.hpp>

#include "runtime/kernel.h"

namespace memplan::rt {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

}  // namespace memplan::rt
