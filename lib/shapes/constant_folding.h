// Compile-time evaluation of the small operators that compute shapes (Shape -> Gather -> Concat
// -> Reshape chains), so that once input shapes are fixed those chains become constants.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace memplan {

// The node's outputs, when it can be evaluated now: all its inputs are constants (or, for Shape
// and Size, its input's shape is static), the op is one this evaluator knows, and the result is
// small (ConstantOfShape is kept as a one-element splat, so weights made by it cost nothing).
// std::nullopt otherwise. Throws memplan::Error for an invalid constant computation.
std::optional<std::vector<Tensor>> fold_node(const Node& node);

}  // namespace memplan
