#include "plan/loop_state.h"

#include <algorithm>
#include <string>

#include "ir/control_flow_ports.h"

namespace memplan::plan {
namespace {

// Why body node `w` may not write carried value `c` over what it reads ("" when it may).
std::string refusal(const Graph& body, const CarriedValue& c, const Node* w, const AliasRules& rules) {
  const Value* in = c.body_input;
  const Value* out = c.body_output;
  if (!w || out->graph != &body) return "the body does not compute it";
  if (!is_bound_output(body, out)) return "the body output is copied into the slot, not written there";
  if (in->is_graph_output) return "the body also returns '" + in->name + "' itself";
  if (out->capacity_bytes > c.size) return "'" + out->name + "' may be larger than '" + in->name + "'";
  if (!rules(*w).may_write_over(*w, in)) return "the kernel of '" + w->name + "' (" + w->op_type + ") cannot write its output over '" + in->name + "'";
  if (std::count(w->inputs.begin(), w->inputs.end(), in) != 1 ||
      std::count(w->implicit_inputs.begin(), w->implicit_inputs.end(), in) != 0)
    return "'" + w->name + "' reads '" + in->name + "' more than once";
  const auto at = [&](const Node* x) {
    for (size_t t = 0; t < body.nodes.size(); ++t)
      if (body.nodes[t].get() == x) return t;
    return body.nodes.size();
  };
  const size_t writes = at(w);
  for (const Node* r : in->consumers)
    if (r != w && at(r) >= writes) return "its bytes are read after '" + w->name + "', by '" + r->name + "'";
  return "";
}

}  // namespace

void place_loop_state(const Node& n, const AliasRules& rules, std::vector<CarriedValue>& carried,
                      std::vector<RefusedAlias>& refused) {
  const Graph* body = n.subgraph("body");
  if (!body || !rules) return;
  const ControlFlowPorts ports(n);
  for (size_t slot = 0; slot < carried.size(); ++slot) {
    CarriedValue& c = carried[slot];
    const Port p = ports.body_input(ports.body_input_of_slot(static_cast<int32_t>(slot)));
    if (p.kind != Port::Kind::Carried || !c.body_input || !c.body_output || c.home != SlotHome::TwoSlots) continue;
    const Node* w = c.body_output->producer;
    const std::string why = refusal(*body, c, w, rules);
    if (!why.empty()) {
      refused.push_back({c.body_output->name, c.body_input->name, w ? w->name : n.name, "loop state in place: " + why});
      continue;
    }
    c.home = SlotHome::OneSlot;
    c.writer = w;
    // A Scan's final state is copied per batch item (opset 8): only a Loop's output is the slot.
    const Value* y = ports.is_loop() && p.index < n.outputs.size() ? n.outputs[p.index] : nullptr;
    if (y && !y->dynamic && !y->constant && y->capacity_bytes >= c.size) c.home = SlotHome::NodeOutput;
  }
}

}  // namespace memplan::plan
