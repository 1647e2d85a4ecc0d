// Shape rules for If, Loop and Scan, where ONNX 1.12's own inference falls short (it leaves Loop
// outputs unshaped and cannot merge If branches of different shapes).
#pragma once

#include <functional>
#include <string>

#include "ir/graph.h"

namespace memplan {

// Types the subgraph inputs from the node's inputs, infers the subgraphs with `infer_subgraph`,
// then types the node's outputs. Outputs whose size differs between runs (If branches of
// different shapes, scan outputs of loops that may exit early) get a capacity bound and
// `shape_varies`.
void infer_control_flow(Node& node, const std::string& file, const std::function<void(Graph&)>& infer_subgraph);

}  // namespace memplan
