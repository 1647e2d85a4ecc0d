// Winograd's convolutions (passes/winograd_convs.h chooses them): what the pipeline asks the
// convolution kernels about a node before choosing.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

// oneDNN's Winograd kernel for a Conv node on this machine.
struct WinogradKernel {
  int tile = 0;                   // output rows and columns of a tile: 2 (F(2,3)) or 4 (F(4,3))
  uint64_t added_bytes = 0;       // its transformed weights' bytes over the node's own
  uint64_t scratchpad_bytes = 0;  // for the threads the context's kernels are made for
};

// The node's Winograd kernel of `tile` (0: oneDNN's first choice), none where oneDNN has none for
// it here: a 2-D 3x3 convolution of stride 1, one group, constant weights, its activations
// channel-blocked as the layouts were assigned, and a fused activation oneDNN's Winograd kernels
// apply (Relu, a fused Add). Made in dnnl_conv.cpp.
std::optional<WinogradKernel> probe_winograd(const Node& node, const KernelEnv& env, int tile);

}  // namespace memplan::rt::dnnl_kernels
