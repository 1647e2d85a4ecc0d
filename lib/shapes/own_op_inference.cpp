#include "shapes/own_op_inference.h"

#include <algorithm>
#include <map>

#include "memplan/error.h"

namespace memplan {
namespace {

bool is_broadcasting(const std::string& op) { return op == "BitwiseAnd" || op == "BitwiseOr" || op == "BitwiseXor"; }

// numpy's broadcast of two shapes, dims aligned from the right; an unknown dim stays unknown
// unless the other is known and not 1.
TensorType broadcast(const TensorType& a, const TensorType& b, const std::string& where) {
  TensorType out;
  out.dtype = a.dtype;
  if (!a.has_rank || !b.has_rank) return out;
  out.has_rank = true;
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  out.dims.resize(rank);
  for (size_t k = 0; k < rank; ++k) {
    const Dim* x = k < rank - a.dims.size() ? nullptr : &a.dims[k - (rank - a.dims.size())];
    const Dim* y = k < rank - b.dims.size() ? nullptr : &b.dims[k - (rank - b.dims.size())];
    if (!x || (x->known() && x->value == 1)) out.dims[k] = y ? *y : Dim{1, {}};
    else if (!y || (y->known() && y->value == 1) || !y->known()) out.dims[k] = *x;
    else if (!x->known() || x->value == y->value) out.dims[k] = *y;
    else fail(where + ": shapes " + a.shape_string() + " and " + b.shape_string() + " do not broadcast");
  }
  return out;
}

}  // namespace

bool is_own_op(const Node& node) {
  // The opset each op first appeared in: an older model naming it means something else.
  static const std::map<std::string, int64_t> since = {{"Gelu", 20},       {"Mish", 18},       {"BitwiseAnd", 18},
                                                       {"BitwiseOr", 18},  {"BitwiseXor", 18}, {"BitwiseNot", 18},
                                                       {"GroupNormalization", 18}};
  auto it = since.find(node.op_type);
  return node.domain.empty() && it != since.end() && node.opset >= it->second;
}

void infer_own_op(Node& node, const std::string& file) {
  const std::string where = file + ": " + node.graph->path() + ": " + node.describe();
  const size_t want = is_broadcasting(node.op_type) ? 2 : node.op_type == "GroupNormalization" ? 3 : 1;
  if (node.inputs.size() != want || node.outputs.size() != 1 || !node.outputs[0])
    fail(where + ": takes " + std::to_string(want) + " inputs and gives one output");
  for (const Value* in : node.inputs)
    if (!in) fail(where + ": every input is required");
  Value& out = *node.outputs[0];
  const TensorType inferred =
      is_broadcasting(node.op_type) ? broadcast(node.inputs[0]->type, node.inputs[1]->type, where) : node.inputs[0]->type;
  out.type.dtype = inferred.dtype;
  if (inferred.has_rank && (!out.type.has_rank || out.type.dims.size() != inferred.dims.size())) {
    out.type.has_rank = true;
    out.type.dims = inferred.dims;
  } else if (inferred.has_rank) {
    for (size_t d = 0; d < inferred.dims.size(); ++d)
      if (inferred.dims[d].known() || !out.type.dims[d].known()) out.type.dims[d] = inferred.dims[d];
  }
}

}  // namespace memplan
