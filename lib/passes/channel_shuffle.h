// ShuffleNet's channel shuffle, which exporters write as Reshape -> Transpose -> Reshape, folded
// into one Transpose node that moves whole channels (ir/channel_shuffle.h), so that the layout
// pass can keep the tensors around it channel-blocked or channels-last.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Folds every such pattern of static shapes in every graph; returns how many nodes were removed.
// Uses must be current (as infer_shapes leaves them) and are rebuilt afterwards.
int fold_channel_shuffles(Model& model);

}  // namespace memplan
