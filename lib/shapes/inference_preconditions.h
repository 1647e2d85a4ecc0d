// What ONNX 1.12's inference functions index without checking: ranks, axes and the lengths of
// attribute lists. A node from an untrusted file is checked here before libonnx sees it, so a
// malformed model gets one line naming the node instead of a crash inside libonnx.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

// Throws memplan::Error (invalid input) naming `file`, the graph and the node.
void check_inference_preconditions(const Node& node, const std::string& file);

}  // namespace memplan
