// Pools memplan runs on its own window loop (runtime/kernels/dnnl/window_pool.cpp) rather than on
// oneDNN: LpPool (oneDNN has no such algorithm), MaxPool with its Indices output (oneDNN's
// inference pooling gives none), and MaxPool and AveragePool with dilations (oneDNN 2.6 has only
// its reference kernel for those, `ref:any`, about 20 times slower than the loop). The loop reads
// and writes plain tensors: the layout passes leave these nodes' inputs and outputs plain.
#pragma once

#include <algorithm>

#include "ir/graph.h"

namespace memplan {

inline bool pools_on_window_loop(const Node& n) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "LpPool") return true;
  if (n.op_type != "MaxPool" && n.op_type != "AveragePool") return false;
  if (n.op_type == "MaxPool" && n.outputs.size() > 1 && n.outputs[1]) return true;
  const std::vector<int64_t> d = n.attr_ints("dilations");
  return std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; });
}

}  // namespace memplan
