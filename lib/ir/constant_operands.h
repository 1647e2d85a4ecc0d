// What the fusion passes and the kernels of fused steps read off constant operands: a float32
// scalar, a Clip's bounds.
#pragma once

#include <optional>
#include <utility>

#include "ir/graph.h"

namespace memplan {

inline bool is_const_f32(const Value* v) { return v && v->constant && v->constant->dtype == DType::Float32; }

// The value of a float32 constant with one element (of any rank), else nullopt.
std::optional<float> scalar_f32(const Value* v);

// A Clip's {min, max}: attributes before opset 11, constant scalar inputs after (-inf / +inf
// where absent); nullopt when a bound is not a constant scalar, or min exceeds max.
std::optional<std::pair<float, float>> clip_bounds(const Node& clip);

// The input of a two-input node that is not `v` (null when both are, or `v` is neither).
const Value* other_input(const Node& n, const Value* v);

}  // namespace memplan
