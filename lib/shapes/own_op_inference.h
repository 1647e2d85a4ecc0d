// Shape inference for the ops newer than ONNX 1.12's schemas that memplan runs on its own kernels
// (onnx/opset_adapter.h lets them through at their own versions): Gelu, Mish, the Bitwise ops,
// GroupNormalization, RMSNormalization, RotaryEmbedding, Attention, Col2Im, AffineGrid,
// DeformConv, and OptionalHasElement/OptionalGetElement-18. ONNX's
// inference, had 1.12 known them, would give the same types.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

// True for a default-domain node of such an op.
bool is_own_op(const Node& node);

// Types the node's outputs: the input's type (elementwise ops, the normalizations) or the
// numpy broadcast of both inputs (BitwiseAnd, Or, Xor). Throws naming `file` and the node for
// shapes that do not broadcast or a missing input.
void infer_own_op(Node& node, const std::string& file);

}  // namespace memplan
