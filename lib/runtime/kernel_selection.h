// Kernel selection, before planning: one kernel per node (oneDNN primitives created, weights
// reordered), so the planner plans each kernel's real scratchpad.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace memplan {

struct KernelSelection {
  std::unordered_map<const Node*, std::unique_ptr<rt::Kernel>> kernels;
  // One entry per node memplan cannot run: "Op (opset N) at node 'x': reason".
  std::vector<std::string> unsupported;
  // Constants no one reads at run time (their kernels keep reordered copies): their bytes are
  // freed, and the session gives them no view.
  std::unordered_set<const Value*> released;
  uint64_t scratchpad_bytes(const Node& n) const;
  // All unsupported ops in one line, grouped by op type with counts.
  std::string unsupported_summary() const;
};

// Makes a kernel for every node of every graph but If, Loop and Scan (the executor runs those)
// and the nodes that touch a dynamic tensor (the session makes theirs once their shapes are known;
// here only their op's factory must exist).
KernelSelection select_kernels(const Model& model, rt::DnnlContext& dnnl);

}  // namespace memplan
