#include "plan/lifetimes.h"

#include <algorithm>
#include <unordered_map>

#include "memplan/error.h"

namespace memplan::plan {

bool is_bound_output(const Graph& g, const Value* v) {
  if (!g.owner) return false;
  if (v->graph != &g || !v->producer || v->constant || v->dynamic) return false;
  // A value returned twice is bound once; the second place gets a copy.
  const auto at = std::find(g.outputs.begin(), g.outputs.end(), v);
  if (std::count(at, g.outputs.end(), v) != 1) return false;
  // An If output whose size only the run decides has no memory before the branch finishes.
  const size_t k = static_cast<size_t>(at - g.outputs.begin());
  const Node& n = *g.owner;
  return !(n.op_type == "If" && k < n.outputs.size() && n.outputs[k] && n.outputs[k]->dynamic);
}

std::vector<LocalBuffer> tensor_buffers(const Graph& g) {
  std::unordered_map<const Node*, int32_t> step;
  for (size_t i = 0; i < g.nodes.size(); ++i) step[g.nodes[i].get()] = static_cast<int32_t>(i);
  const int32_t last_step = std::max<int32_t>(static_cast<int32_t>(g.nodes.size()) - 1, 0);
  const bool is_main = g.owner == nullptr;

  std::vector<LocalBuffer> out;
  for (const auto& v : g.values) {
    if (v->constant || v->dynamic) continue;  // weights; the session's own memory
    if (!is_main && (v->is_graph_input || !v->producer)) continue;  // bound to parent memory
    if (!is_main && v->is_graph_output && is_bound_output(g, v.get())) continue;
    LocalBuffer b;
    b.value = v.get();
    b.node = v->producer;
    b.size = v->capacity_bytes;
    b.first = v->producer ? step.at(v->producer) : 0;
    b.last = b.first;
    for (const Node* c : v->consumers) b.last = std::max(b.last, step.at(c));
    if (is_main && v->is_graph_output) b.last = last_step;
    if (b.last < b.first) b.last = b.first;
    out.push_back(b);
  }
  return out;
}

std::vector<CarriedValue> carried_values(const Node& n) {
  std::vector<CarriedValue> out;
  const Graph* body = n.subgraph("body");
  if (!body) return out;
  auto cap = [](const Value* v) {
    if (v->capacity_bytes > 0 || v->shape_varies) return v->capacity_bytes;
    return v->constant ? v->constant->byte_size() : v->capacity_bytes;
  };
  if (n.op_type == "Loop") {
    out.push_back({body->inputs[0], nullptr, 8, true});                    // iteration counter
    out.push_back({body->inputs[1], body->outputs[0], 1, false});          // condition
    for (size_t k = 2; k < body->inputs.size(); ++k)
      out.push_back({body->inputs[k], body->outputs[k - 1], cap(body->inputs[k]), false});
  } else if (n.op_type == "Scan") {
    const size_t states = scan_state_count(n);
    for (size_t k = 0; k < states; ++k) out.push_back({body->inputs[k], body->outputs[k], cap(body->inputs[k]), false});
  }
  return out;
}

}  // namespace memplan::plan
