// The ops on ONNX's sequences and optionals, which the session runs itself on its containers
// (runtime/container_exec.cpp) instead of through a kernel: their values live outside the arena.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

#include "ir/graph.h"

namespace memplan {

inline constexpr std::array<std::string_view, 11> kContainerOps = {
    "SequenceEmpty", "SequenceConstruct", "SequenceInsert",  "SequenceAt",         "SequenceErase",     "SequenceLength",
    "ConcatFromSequence", "SplitToSequence", "Optional", "OptionalHasElement", "OptionalGetElement"};

// A container op, or an Identity of a container.
inline bool is_container_op(const Node& n) {
  if (!n.domain.empty()) return false;
  if (std::find(kContainerOps.begin(), kContainerOps.end(), n.op_type) != kContainerOps.end()) return true;
  return n.op_type == "Identity" && !n.inputs.empty() && n.inputs[0] && n.inputs[0]->type.is_container();
}

// A node other than a container op or If/Loop that reads or writes a container: nothing runs it.
inline bool misuses_container(const Node& n) {
  if (is_container_op(n) || n.op_type == "If" || n.op_type == "Loop") return false;
  auto container = [](const Value* v) { return v && v->type.is_container(); };
  return std::any_of(n.inputs.begin(), n.inputs.end(), container) ||
         std::any_of(n.outputs.begin(), n.outputs.end(), container);
}

}  // namespace memplan
