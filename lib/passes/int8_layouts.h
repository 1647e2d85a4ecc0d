// Layouts of the 8-bit activations that flow from one QLinearConv straight into others (the QDQ
// layout's expand -> depthwise -> project chains, once passes/fuse_quantized made them
// QLinearConvs), after assign_layouts and before kernel selection. oneDNN's int8 convolutions read
// and write only channels-last (NHWC); its float32 ones, which run them without VNNI, prefer
// channel-blocked. A plain tensor between two such convolutions costs a reorder out of the first
// and one into the second: in mobilenet_v2_qdq those reorders took twice the convolutions' time.
#pragma once

#include <functional>

#include "ir/graph.h"

namespace memplan {

// Sets Value::channel_block to `layout` (Value::kChannelsLast, or a block of 8 or 16 that divides
// the channels) on every main-graph 4-D uint8/int8 value that a QLinearConv writes and only
// QLinearConvs read, as their source, where `runs_on_onednn` says each of those nodes gets
// oneDNN's kernel (memplan's own loops read plain tensors only). Between them a value may pass
// through 8-bit Concats, requantizing QuantizeLinears and, channels-last, MaxPools (the QDQ fire
// modules and pools passes/fuse_quantized turned to bytes), whose data inputs and output then all
// take the layout, or all stay plain. Graph outputs stay plain. Returns how many values it set.
int assign_int8_layouts(Model& model, int layout, const std::function<bool(const Node&)>& runs_on_onednn);

}  // namespace memplan
