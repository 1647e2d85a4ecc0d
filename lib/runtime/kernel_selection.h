// Kernel selection, before planning: one kernel per node (oneDNN primitives created, weights
// reordered), so the planner plans each kernel's real scratchpad.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "plan/storage_groups.h"
#include "runtime/kernel.h"

namespace memplan {

struct KernelSelection {
  std::unordered_map<const Node*, std::unique_ptr<rt::Kernel>> kernels;
  // One entry per node memplan cannot run: "Op (opset N) at node 'x': reason".
  std::vector<std::string> unsupported;
  // Constants no one reads at run time (their kernels keep reordered copies): select_kernels frees
  // their bytes (the value keeps a shape-only tensor), and the session gives them no view.
  std::unordered_set<const Value*> released;
  // Constants only a leaner variant reads (memplan's integer convolution loops, beside oneDNN's
  // kernel and its reordered copy): kept until settle_variants() knows which variant runs.
  std::unordered_set<Value*> held_for_variants;
  uint64_t scratchpad_bytes(const Node& n) const;
  // What n's kernel allows its output 0 to share (views, in place); nothing without a kernel.
  plan::NodeAliasing aliasing(const Node& n) const;
  // All unsupported ops in one line, grouped by op type with counts.
  std::string unsupported_summary() const;
};

// Once every node's variant is chosen (pipeline/lean_kernels): each kernel's chain of leaner
// variants is freed, and so are the constants held for them that the chosen kernels do not read.
void settle_variants(KernelSelection& sel);

// Makes a kernel for every node of every graph but If, Loop and Scan (the executor runs those)
// and the nodes that touch a dynamic tensor (the session makes theirs once their shapes are known;
// here only their op's factory must exist). Frees the bytes of the constants it lists as released,
// as soon as the last of their readers has its kernel, so the weights and the kernels' reordered
// copies are never all in memory at once.
KernelSelection select_kernels(Model& model, rt::DnnlContext& dnnl);

}  // namespace memplan
