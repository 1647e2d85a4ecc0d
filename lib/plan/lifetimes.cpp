#include "plan/lifetimes.h"

#include <algorithm>
#include <unordered_map>

#include "ir/control_flow_ports.h"
#include "memplan/error.h"

namespace memplan::plan {

bool is_bound_output(const Graph& g, const Value* v) {
  if (!g.owner) return false;
  if (v->graph != &g || !v->producer || v->constant || v->dynamic) return false;
  // A value returned twice is bound once; the second place gets a copy.
  const auto at = std::find(g.outputs.begin(), g.outputs.end(), v);
  if (std::count(at, g.outputs.end(), v) != 1) return false;
  const Node& n = *g.owner;
  const Port p = ControlFlowPorts(n).body_output(static_cast<size_t>(at - g.outputs.begin()));
  if (p.slot >= 0) return true;  // a loop slot
  // The node output it is written into: none when the node omits it (nothing reads it), and none
  // yet for an If output whose size only the run decides (it exists once the branch finishes).
  const Value* parent = p.node_port >= 0 && static_cast<size_t>(p.node_port) < n.outputs.size()
                            ? n.outputs[static_cast<size_t>(p.node_port)]
                            : nullptr;
  return parent && !(n.op_type == "If" && parent->dynamic);
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
  if (!body || (n.op_type != "Loop" && n.op_type != "Scan")) return out;
  auto cap = [](const Value* v) {
    if (v->capacity_bytes > 0 || v->shape_varies) return v->capacity_bytes;
    return v->constant ? v->constant->byte_size() : v->capacity_bytes;
  };
  const ControlFlowPorts ports(n);
  for (int32_t slot = 0; slot < static_cast<int32_t>(ports.slots()); ++slot) {
    const Value* in = body->inputs[ports.body_input_of_slot(slot)];
    const int64_t o = ports.body_output_of_slot(slot);
    const Value* written = o < 0 ? nullptr : body->outputs[static_cast<size_t>(o)];
    switch (ports.body_input(ports.body_input_of_slot(slot)).kind) {
      case Port::Kind::Counter: out.push_back({in, nullptr, 8, SlotHome::OneSlot}); break;
      case Port::Kind::Condition: out.push_back({in, written, 1}); break;
      default:
        if (in->dynamic) out.push_back({in, written, 0, SlotHome::Dynamic});
        else out.push_back({in, written, cap(in)});
        break;
    }
  }
  return out;
}

}  // namespace memplan::plan
