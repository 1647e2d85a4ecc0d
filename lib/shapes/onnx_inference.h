// Runs ONNX's own per-operator type and shape inference on one IR node.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

// True when ONNX 1.12 has a schema for the node's op at its opset.
bool has_onnx_schema(const Node& node);

// Infers the node's output types from its inputs (constant inputs are visible to the inference
// function, so Reshape sees a folded shape). Merges the result into each output's type: inferred
// dims win over unknown ones. Throws memplan::Error naming the node when ONNX rejects it.
void infer_with_onnx(Node& node, const std::string& file);

}  // namespace memplan
