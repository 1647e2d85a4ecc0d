// Conv fusions, before kernel selection: BatchNormalization folded into the Conv weights, then a
// following Relu or Clip taken into the Conv as a oneDNN post-op. Each removes an intermediate
// tensor (less memory) and a pass over it (less time).
#pragma once

#include "ir/graph.h"

namespace memplan {

// Applies the fusions in every graph; returns how many nodes were removed. Uses must be current
// (as infer_shapes leaves them) and are rebuilt afterwards.
int fuse_conv(Model& model);

}  // namespace memplan
