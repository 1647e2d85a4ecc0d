// Compile-time evaluation of a node whose inputs are all constants, by the very kernel memplan
// would run it with. Constant folding then covers every op memplan can run (as ONNX Runtime's
// constant folding uses its CPU kernels), not only the shape ops lib/shapes folds by hand, and a
// folded value is bit for bit what the run would have computed.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace memplan {

// Results larger than this stay run-time computations: folding must not grow the weights.
constexpr uint64_t kMaxKernelFoldedElements = 1 << 16;

// The node's outputs, when every input is a constant (or omitted), every output has a static
// type or a known capacity, each is at most kMaxKernelFoldedElements elements, and memplan has a
// kernel for it. std::nullopt otherwise, and also when the kernel refuses the node or the data
// (then the node stays, and a run that reaches it reports the error in its own words). Random
// ops are never folded.
std::optional<std::vector<Tensor>> evaluate_with_kernel(const Node& node, const std::string& file);

}  // namespace memplan
