// Patch-based execution (MCUNetV2's, along the rows): a chain of a CNN's first layers run tile by
// tile, each tile of the chain's output computed through every layer before the next, so that the
// chain's tensors exist only at tile height, in the kernel's scratchpad (the tile frame of
// plan/core/patch_schedule.h), and never whole in the arena. passes/patch_regions makes the
// chain's node (kPatchChainOp), holding the chain's own nodes (Node::fused_chain); this kernel
// runs them: each layer's convolution on the rows of a tile as a oneDNN primitive on views of the
// tile buffers (one per distinct band of a layer: the top and bottom tiles have padding rows), a
// MaxPool or a pointwise layer as memplan's loop over the same views.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/patch_region.h"
#include "plan/core/patch_schedule.h"
#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

inline constexpr const char* kPatchChainOp = "memplan.PatchChain";
inline constexpr const char* kTileRowsAttr = "tile_rows";
inline constexpr const char* kKeepRowsAttr = "keep_rows";  // 1: rows kept across tiles, not computed again

// Why `n` cannot be a layer of a patch chain ("a Resize", "a rank-3 input", ...), or none: a 2-D
// float32 Conv with constant weights (its fusions included, not a pre-activated one), a MaxPool
// without indices, or a pointwise layer (patch_pointwise.h), of static shapes, batch 1.
std::optional<std::string> patch_refusal(const Node& n);

// The tensor of the chain a layer reads (a Conv's or MaxPool's input 0; a pointwise layer's
// non-constant input); null for a node patch_refusal() refuses.
const Value* patch_input(const Node& n);

// A chain's layers as the scheduler's rows: tensor 0 is nodes[0]'s input 0, then each node's
// output in order. Every node must be one patch_refusal() accepts, reading tensors of the chain.
struct PatchChainLayers {
  plan::PatchChainShape shape;
  std::vector<const Value*> tensors;
};
PatchChainLayers describe_patch_chain(std::span<const Node* const> nodes, const std::string& where);

// What a kPatchChainOp node's region costs, for the report: `r` (its spec) with the counts and
// bytes filled in (ir/patch_region.h).
PatchRegion patch_region_cost(const Node& node, PatchRegion r, const std::string& where);

// The kernel of a kPatchChainOp node.
std::unique_ptr<Kernel> make_patch_chain(const Node& node, const KernelEnv& env);

}  // namespace memplan::rt::dnnl_kernels
