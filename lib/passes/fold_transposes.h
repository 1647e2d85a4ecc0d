// A Transpose whose only reader is a float32 MatMul, folded into that MatMul's view of its
// operand (ir/operand_permutation.h): the attention blocks torch exports transpose the heads of
// Q, K and V ([S, H, D] -> [H, S, D], K to [H, D, S]) only for the products that read them, each a
// copy of the tensor through memory and a tensor of its own in the arena. oneDNN's matmul reads
// strided operands; where it has no fast kernel for the strides, the kernel reorders the operand
// into its scratchpad as the Transpose did, still without the tensor.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Folds every such Transpose of static shapes in every graph; returns how many nodes were removed.
// Uses must be current (as infer_shapes leaves them) and are rebuilt afterwards.
int fold_transposes_into_matmuls(Model& model);

}  // namespace memplan
