// ShuffleNet's channel shuffle as passes/channel_shuffle folds it, and as the Transpose kernel
// (runtime/kernels/shape/) runs it: one definition for the pass that writes it and the kernel that
// reads it.
//
// Reshape(x [N, C, H, W] -> [N, G, C/G, H, W])  (or [N, G, C/G, H*W])
//   -> Transpose(perm [0, 2, 1, 3, 4])            (or [0, 2, 1, 3])
//   -> Reshape(-> [N, C, H, W])
// becomes one Transpose from x to the last Reshape's output with
//   memplan_channel_shuffle   int G
//   y[n, j*G + g, h, w] = x[n, g*(C/G) + j, h, w]   for g < G, j < C/G
// Each output channel is one input channel moved whole, so the node runs in any layout its
// neighbours chose (plain, channel-blocked or channels-last), where the three nodes it replaces
// needed plain tensors and the convolutions around them reorders.
#pragma once

namespace memplan {

inline constexpr const char* kChannelShuffleAttr = "memplan_channel_shuffle";

}  // namespace memplan
