#include "passes/int8_layouts.h"

#include <map>

namespace memplan {

namespace {

bool is_4d_8bit(const Value* v) {
  return v && (v->type.dtype == DType::Uint8 || v->type.dtype == DType::Int8) && v->type.is_static() &&
         v->type.dims.size() == 4 && !v->shape_varies && !v->dynamic && !v->is_constant();
}

}  // namespace

int assign_int8_layouts(Model& model, int layout, const std::function<bool(const Node&)>& runs_on_onednn) {
  if (layout != Value::kChannelsLast && layout != 8 && layout != 16) return 0;
  Graph& g = *model.main;
  std::map<const Node*, bool> on_onednn;  // asked once per node
  auto fast = [&](const Node* n) {
    if (n->op_type != "QLinearConv" || !n->domain.empty() || n->graph != &g) return false;
    auto [it, fresh] = on_onednn.try_emplace(n, false);
    if (fresh) it->second = runs_on_onednn(*n);
    return it->second;
  };
  int set = 0;
  for (auto& n : g.nodes) {
    Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!is_4d_8bit(y) || y->is_graph_output || y->consumers.empty() || y->channel_block != 0) continue;
    if (layout > 0 && y->type.dims[1].value % layout != 0) continue;
    bool ok = fast(n.get());
    for (const Node* c : y->consumers) {
      // Read as the source only: the scales and zero points are other inputs.
      for (size_t i = 1; ok && i < c->inputs.size(); ++i) ok = c->inputs[i] != y;
      ok = ok && c->inputs[0] == y && fast(c);
    }
    if (!ok) continue;
    y->channel_block = layout;
    ++set;
  }
  return set;
}

}  // namespace memplan
