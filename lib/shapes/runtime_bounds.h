// Sound upper bounds for values whose shape only the data decides, so that models need no
// --bound for them. A bound is a capacity in bytes: the kernel sets the run-time shape and fails
// cleanly if the data ever needs more. Values the user bounds with --bound are left alone.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace memplan {

using UserBounds = std::map<std::string, std::vector<int64_t>>;

// After ONNX inference of `n`: bounds its outputs when they never exceed a size its static inputs
// give (Slice, Compress, NonZero, Unique, Reduce* and Squeeze/Unsqueeze with run-time axes,
// NonMaxSuppression), or, for an elementwise op, its one bounded input (the others being single
// elements), or, for an op that rearranges its input (Transpose, Reshape, ...), that input's bound.
void bound_by_inputs(Node& n, const UserBounds& user);

// After every node of `g` is inferred: an input of an elementwise op (unary, or broadcasting
// like Add and Where) never holds more than its output, so a dynamic input is bounded by a static
// output, and so on backwards along chains of such ops (Range -> Mul -> Cos -> ... -> output).
void bound_by_consumers(Graph& g, const UserBounds& user);

}  // namespace memplan
