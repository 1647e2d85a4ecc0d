#include "shapes/runtime_bounds.h"

#include <algorithm>
#include <optional>
#include <set>

namespace memplan {
namespace {

bool is_static_data(const Value* v) { return v && v->type.is_static() && !v->shape_varies; }

// Sizes here never fail: a count that overflows gives no bound (nullopt), and size_values later
// reports the tensor with the file and the option that would fix it.
using Count = std::optional<uint64_t>;

Count times(Count a, Count b) {
  uint64_t r;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

// Elements of a static shape, or with every 0 counted as 1 (`padded`): that bounds the elements
// of any shape broadcasting to it, and each extent of the shape itself (Unique's inverse indices).
Count count_of(const Value* v, bool padded = false) {
  Count n = 1;
  for (const Dim& d : v->type.dims) n = times(n, static_cast<uint64_t>(padded ? std::max<int64_t>(d.value, 1) : d.value));
  return n;
}

// Gives a dynamic output a capacity of `elements` elements; keeps the shape (rank) ONNX inferred.
void set_bound(Value* out, Count elements, const UserBounds& user) {
  if (!out || out->constant || out->capacity_known || out->type.is_static() || user.count(out->name)) return;
  if (dtype_size(out->type.dtype) == 0) return;  // unknown or string: size_values reports it
  const Count bytes = times(elements, dtype_size(out->type.dtype));
  if (!bytes) return;
  out->capacity_bytes = *bytes;
  out->capacity_known = true;
  out->shape_varies = true;
}

const Value* input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : nullptr; }

bool runtime_input(const Node& n, size_t i) {
  const Value* v = input(n, i);
  return v && !v->constant;
}

// Ops whose every input broadcasts to (or equals) the shape of their single output.
const std::set<std::string>& elementwise_ops() {
  static const std::set<std::string> ops = {
      // unary
      "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cast", "Ceil", "Celu", "Cos", "Cosh", "Elu", "Erf", "Exp",
      "Floor", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Log", "Mish", "Neg", "Not",
      "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh",
      "ThresholdedRelu",
      // broadcasting
      "Add", "And", "BitShift", "Clip", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mean",
      "Min", "Mod", "Mul", "Or", "Pow", "PRelu", "Sub", "Sum", "Where", "Xor"};
  return ops;
}

// An elementwise op whose inputs are all single elements but one bounded input: the output has
// that input's shape (padded with leading 1s), so no more elements than its capacity allows.
void bound_elementwise(Node& n, const UserBounds& user) {
  const Value* varying = nullptr;
  for (const Value* in : n.inputs) {
    if (!in) continue;
    if (is_static_data(in) && count_of(in) == Count{1}) continue;
    if (varying || !in->shape_varies || !in->capacity_known || dtype_size(in->type.dtype) == 0) return;
    varying = in;
  }
  if (varying) set_bound(n.outputs[0], varying->capacity_bytes / dtype_size(varying->type.dtype), user);
}

// Ops whose output holds exactly the elements of their first input, rearranged.
const std::set<std::string>& rearranging_ops() {
  static const std::set<std::string> ops = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                            "DepthToSpace", "SpaceToDepth"};
  return ops;
}

}  // namespace

void bound_by_inputs(Node& n, const UserBounds& user) {
  if (!n.domain.empty() || n.outputs.empty() || !n.outputs[0]) return;
  const std::string& op = n.op_type;
  if (n.outputs.size() == 1 && elementwise_ops().count(op)) return bound_elementwise(n, user);
  const Value* data = input(n, 0);
  if (data && data->shape_varies && data->capacity_known && rearranging_ops().count(op) &&
      dtype_size(data->type.dtype) > 0)
    return set_bound(n.outputs[0], data->capacity_bytes / dtype_size(data->type.dtype), user);
  if (!is_static_data(data)) return;
  if (op == "Slice") {
    // The output keeps the data's rank and type; only the dims vary.
    Value* out = n.outputs[0];
    if (out->type.is_static() || user.count(out->name)) return;
    out->type.dtype = data->type.dtype;
    out->type.has_rank = true;
    out->type.dims.assign(data->type.dims.size(), Dim{});
    set_bound(out, count_of(data), user);
  } else if (op == "Compress") {
    set_bound(n.outputs[0], count_of(data), user);
  } else if (op == "NonZero") {  // [rank, non-zeros]; a scalar counts as rank 1
    set_bound(n.outputs[0], times(std::max<uint64_t>(data->type.dims.size(), 1), count_of(data)), user);
  } else if (op == "Unique") {  // unique values, and index lists of at most one entry per position
    for (Value* out : n.outputs) set_bound(out, count_of(data, true), user);
  } else if (op.rfind("Reduce", 0) == 0 && runtime_input(n, 1)) {  // reduced axes become 1 (or go)
    set_bound(n.outputs[0], count_of(data, true), user);
  } else if ((op == "Squeeze" || op == "Unsqueeze") && runtime_input(n, 1)) {
    set_bound(n.outputs[0], count_of(data), user);
  } else if (op == "NonMaxSuppression") {  // [selected, 3], at most every box of every class
    const Value* scores = input(n, 1);
    if (!is_static_data(scores) || data->type.dims.size() != 3 || scores->type.dims.size() != 3) return;
    const auto dim = [](const Value* v, int i) { return static_cast<uint64_t>(v->type.dims[static_cast<size_t>(i)].value); };
    set_bound(n.outputs[0], times(times(times(dim(data, 0), dim(data, 1)), dim(scores, 1)), 3), user);
  }
}

void bound_by_consumers(Graph& g, const UserBounds& user) {
  // Largest padded element count of each value, from the consumers seen so far. Nodes are in
  // execution order, so walking backwards sees every consumer in g before the producer.
  std::map<const Value*, uint64_t> limit;
  auto padded_limit = [&](const Value* v) -> Count {
    if (is_static_data(v)) return count_of(v, true);
    auto it = limit.find(v);
    return it == limit.end() ? std::nullopt : Count{it->second};
  };
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    Node& n = **it;
    if (!n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] || !elementwise_ops().count(n.op_type)) continue;
    const Count m = padded_limit(n.outputs[0]);
    if (!m) continue;
    for (Value* in : n.inputs) {
      if (!in || in->constant || in->capacity_known || in->type.is_static() || in->is_graph_input || user.count(in->name)) continue;
      auto [pos, inserted] = limit.emplace(in, *m);
      if (!inserted) pos->second = std::min(pos->second, *m);
    }
  }
  for (const auto& [v, m] : limit) set_bound(const_cast<Value*>(v), m, user);
}

}  // namespace memplan
