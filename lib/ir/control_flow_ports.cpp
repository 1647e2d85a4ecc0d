#include "ir/control_flow_ports.h"

#include <algorithm>

namespace memplan {

ControlFlowPorts::ControlFlowPorts(const Node& n) {
  const size_t inputs = n.inputs.size();
  if (n.op_type == "Loop") {
    op_ = Op::Loop;
    first_input_ = 2;
    carried_ = inputs > 2 ? inputs - 2 : 0;
  } else if (n.op_type == "Scan") {
    op_ = Op::Scan;
    first_input_ = n.opset < 9 ? 1 : 0;  // Scan 8 takes sequence_lens first
    const int64_t scans = n.attr_int("num_scan_inputs", 0);
    const size_t available = inputs > first_input_ ? inputs - first_input_ : 0;
    // Saturating: shape inference refuses a num_scan_inputs the node does not have.
    scan_inputs_ = scans < 0 ? 0 : std::min(static_cast<size_t>(scans), available);
    carried_ = available - scan_inputs_;
  }
}

size_t ControlFlowPorts::body_inputs() const { return op_ == Op::If ? 0 : slot_base() + carried_ + scan_inputs_; }

size_t ControlFlowPorts::min_body_outputs() const {
  if (op_ == Op::Loop) return 1 + carried_;
  return carried_;  // If: none are fixed here (the node's outputs are)
}

Port ControlFlowPorts::body_input(size_t k) const {
  Port p;
  if (op_ == Op::Loop && k == 0) return {Port::Kind::Counter, 0, 0, -1};
  if (op_ == Op::Loop && k == 1) return {Port::Kind::Condition, 0, 1, 1};
  const size_t j = k - slot_base();
  if (j < carried_) return {Port::Kind::Carried, j, slot_of_carried(j), static_cast<int32_t>(first_input_ + j)};
  p.kind = Port::Kind::Scan;
  p.index = j - carried_;
  p.node_port = static_cast<int32_t>(first_input_ + j);
  return p;
}

Port ControlFlowPorts::body_output(size_t k) const {
  if (op_ == Op::If) return {Port::Kind::Branch, k, -1, static_cast<int32_t>(k)};
  if (op_ == Op::Loop && k == 0) return {Port::Kind::Condition, 0, 1, -1};
  const size_t j = k - (op_ == Op::Loop ? 1 : 0);
  if (j < carried_) return {Port::Kind::Carried, j, slot_of_carried(j), static_cast<int32_t>(j)};
  return {Port::Kind::Scan, j - carried_, -1, static_cast<int32_t>(j)};
}

int64_t ControlFlowPorts::body_output_of_slot(int32_t slot) const {
  if (op_ == Op::Loop) return slot == 0 ? -1 : slot - 1;
  return slot;
}

}  // namespace memplan
