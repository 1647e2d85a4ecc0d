#include "passes/int8_layouts.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "ir/fused_dequantize.h"
#include "ir/window_pool.h"

namespace memplan {

namespace {

bool is_4d_8bit(const Value* v) {
  return v && (v->type.dtype == DType::Uint8 || v->type.dtype == DType::Int8) && v->type.is_static() &&
         v->type.dims.size() == 4 && !v->shape_varies && !v->dynamic && !v->is_constant();
}

// The 8-bit inputs of a node that maps bytes to bytes whatever their layout, as long as they and
// its output share one: Concat (all its inputs, of whole channel blocks), a requantizing
// QuantizeLinear (element by element: its input 0), an 8-bit Add (element by element: inputs 0
// and 1) and MaxPool (oneDNN pools 8-bit channels-last only). Empty for any other node.
std::vector<Value*> layout_free_inputs(const Node& n, int layout) {
  if (!n.domain.empty() || n.outputs.size() != 1 || !is_4d_8bit(n.outputs[0]) || n.inputs.empty()) return {};
  const bool concat = n.op_type == "Concat" && std::all_of(n.inputs.begin(), n.inputs.end(), is_4d_8bit);
  const bool requantize = n.op_type == "QuantizeLinear" && n.attr_int(kRequantizeAttr, 0) != 0;
  const bool pool = n.op_type == "MaxPool" && layout == Value::kChannelsLast && n.inputs.size() == 1 &&
                    !pools_on_window_loop(n);
  if (concat) return n.inputs;
  if ((requantize || pool) && is_4d_8bit(n.inputs[0])) return {n.inputs[0]};
  const bool add = n.op_type == "Add" && n.attr_int(kQuantizedAddAttr, 0) != 0 && n.inputs.size() > 1;
  if (add && is_4d_8bit(n.inputs[0]) && is_4d_8bit(n.inputs[1])) return {n.inputs[0], n.inputs[1]};
  return {};
}

}  // namespace

int assign_int8_layouts(Model& model, int layout, const std::function<bool(const Node&)>& runs_on_onednn) {
  if (layout != Value::kChannelsLast && layout != 8 && layout != 16) return 0;
  Graph& g = *model.main;
  std::map<const Node*, bool> on_onednn;  // asked once per node
  auto conv = [&](const Node* n) {
    if (n->op_type != "QLinearConv" || !n->domain.empty() || n->graph != &g) return false;
    auto [it, fresh] = on_onednn.try_emplace(n, false);
    if (fresh) it->second = runs_on_onednn(*n);
    return it->second;
  };
  auto through = [&](const Node* n) {
    return n->graph == &g ? layout_free_inputs(*n, layout) : std::vector<Value*>{};
  };
  // A node that reads `y` in any layout: a QLinearConv as its source only (the scales and zero
  // points are other inputs), or a layout-free node as one of its data inputs.
  auto reads = [&](const Node* c, const Value* y) {
    const std::vector<Value*> free = through(c);
    if (!free.empty()) return std::count(c->inputs.begin(), c->inputs.end(), y) == std::count(free.begin(), free.end(), y);
    if (!conv(c) || c->inputs[0] != y) return false;
    return std::count(c->inputs.begin(), c->inputs.end(), y) == 1;
  };

  std::set<Value*> chosen;
  for (auto& n : g.nodes) {
    Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!is_4d_8bit(y) || y->is_graph_output || y->consumers.empty() || y->channel_block != 0) continue;
    if (layout > 0 && y->type.dims[1].value % layout != 0) continue;
    if (!conv(n.get()) && through(n.get()).empty()) continue;
    if (std::all_of(y->consumers.begin(), y->consumers.end(), [&](const Node* c) { return reads(c, y); }))
      chosen.insert(y);
  }
  // A pass-through node's inputs and output take the layout together or not at all.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& n : g.nodes) {
      std::vector<Value*> members = through(n.get());
      if (members.empty()) continue;
      members.push_back(n->outputs[0]);
      const bool all = std::all_of(members.begin(), members.end(), [&](Value* v) { return chosen.count(v) > 0; });
      if (all) continue;
      for (Value* v : members) changed |= chosen.erase(v) > 0;
    }
  }
  for (Value* y : chosen) y->channel_block = layout;
  return static_cast<int>(chosen.size());
}

}  // namespace memplan
