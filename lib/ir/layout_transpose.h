// The Transposes between NCHW and NHWC that channels-last storage turns into views: one
// definition for the layout pass that chooses it (passes/assign_layouts) and the Transpose kernel
// that then copies nothing (runtime/kernels/shape/).
//
// A [N, C, H, W] tensor stored channels-last (Value::kChannelsLast) holds the bytes of the plain
// [N, H, W, C] tensor. So
//   Transpose(perm [0, 2, 3, 1]) of a channels-last x    is a plain [N, H, W, C] y with x's bytes,
//   Transpose(perm [0, 3, 1, 2]) of a plain [N, H, W, C] x is y with x's bytes, stored channels-last.
// Exporters write both around the channels-last parts of a network: ConvNeXt's and Swin's blocks
// (a depthwise Conv, then LayerNorm and Linear layers over the channels), tf2onnx's NHWC graph
// inputs and outputs, MediaPipe's heads. Each was a strided copy through memory, and the Conv
// beside it reordered its own side between plain and oneDNN's layout as well.
#pragma once

#include <vector>

#include "ir/channel_shuffle.h"
#include "ir/graph.h"

namespace memplan {

enum class LayoutTranspose {
  None,    // any other node
  ToNhwc,  // perm [0, 2, 3, 1]: a view where its input is stored channels-last
  ToNchw,  // perm [0, 3, 1, 2]: a view where its output is stored channels-last
};

// Which of the two a node is, by its op, perm and rank alone (layouts aside).
inline LayoutTranspose layout_transpose(const Node& n) {
  if (n.op_type != "Transpose" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 || !n.inputs[0] ||
      !n.outputs[0] || n.inputs[0]->type.dims.size() != 4 || n.attr(kChannelShuffleAttr))
    return LayoutTranspose::None;
  const std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) return LayoutTranspose::ToNhwc;
  if (perm == std::vector<int64_t>{0, 3, 1, 2}) return LayoutTranspose::ToNchw;
  return LayoutTranspose::None;
}

// Whether the node's output is its input's bytes unchanged, with the layouts assigned.
inline bool transpose_keeps_bytes(const Node& n) {
  switch (layout_transpose(n)) {
    case LayoutTranspose::ToNhwc:
      return n.inputs[0]->channel_block == Value::kChannelsLast && n.outputs[0]->channel_block == 0;
    case LayoutTranspose::ToNchw:
      return n.inputs[0]->channel_block == 0 && n.outputs[0]->channel_block == Value::kChannelsLast;
    case LayoutTranspose::None: return false;
  }
  return false;
}

}  // namespace memplan
