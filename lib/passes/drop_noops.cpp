#include "passes/drop_noops.h"

#include <algorithm>
#include <unordered_set>

namespace memplan {

namespace {

// A Pad whose pads are all zero (constant), in any mode: its output is its input.
bool zero_pad(const Node& n) {
  if (n.op_type != "Pad" || !n.domain.empty() || n.inputs.empty() || !n.inputs[0] || n.outputs.size() != 1 ||
      !n.outputs[0])
    return false;
  if (n.opset < 11) {
    const std::vector<int64_t> pads = n.attr_ints("pads");
    return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  }
  const Value* pads = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
  if (!pads || !pads->constant) return false;
  for (uint64_t i = 0; i < pads->constant->element_count(); ++i)
    if (pads->constant->int_at(i) != 0) return false;
  return true;
}

}  // namespace

int drop_noops(Model& model) {
  int removed = 0;
  for_each_graph(*model.main, [&](Graph& g) {
    std::unordered_set<const Node*> dead;
    for (auto& n : g.nodes) {
      if (!zero_pad(*n)) continue;
      Value* in = n->inputs[0];
      Value* out = n->outputs[0];
      // A graph output keeps its own name (and buffer); so does a value a subgraph captures by name.
      if (out->is_graph_output || in->type.dtype != out->type.dtype) continue;
      replace_uses(g, out, in);
      dead.insert(n.get());
      n->outputs[0] = nullptr;
      g.release_value(out);
    }
    removed += static_cast<int>(dead.size());
    std::erase_if(g.nodes, [&](const std::unique_ptr<Node>& n) { return dead.count(n.get()) > 0; });
  });
  if (removed) rebuild_uses(*model.main);
  return removed;
}

}  // namespace memplan
