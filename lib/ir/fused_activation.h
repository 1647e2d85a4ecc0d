// The activation a fusion pass (passes/fuse_conv) folds into a Conv or a BatchNormalization, as
// the node records it for the oneDNN kernels (runtime/kernels/dnnl/) that apply it as an eltwise
// post-op: one definition of the attributes and their encoding for the pass that writes them and
// the kernels that read them.
//
//   memplan_fused_activation  int, a FusedActivation; absent means None.
//   memplan_fused_clip        floats {min, max}, with Clip only; -inf / +inf (or +-FLT_MAX) for a
//                             bound the Clip did not have.
//
// And the activation a 1x1 Conv applies to its input before it convolves (a BatchNormalization,
// with its Relu, folded into the Conv it feeds: DenseNet's pre-activations), so the normalized
// tensor is never stored whole:
//   memplan_pre_scale, memplan_pre_shift  floats, one per input channel: x * scale + shift
//   memplan_pre_relu                      int, 1: then max(0, .)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace memplan {

// The attribute's values, as nodes (and so plan files) carry them: do not renumber.
enum class FusedActivation : int64_t { None = 0, Relu = 1, Clip = 2, Swish = 3, HardSwish = 4 };

inline constexpr const char* kFusedActivationAttr = "memplan_fused_activation";
inline constexpr const char* kFusedClipAttr = "memplan_fused_clip";

// True when the node has an activation fused in already (any value, even an invalid one).
bool has_fused_activation(const Node& node);

// Records `act` on the node; Clip also records its bounds.
void set_fused_activation(Node& node, FusedActivation act, float clip_min = 0.f, float clip_max = 0.f);

// The node's activation: None when the attribute is absent, nullopt when it holds a number that
// is no FusedActivation (the raw number is node.attr_int(kFusedActivationAttr, 0)).
std::optional<FusedActivation> fused_activation(const Node& node);

inline constexpr const char* kPreScaleAttr = "memplan_pre_scale";
inline constexpr const char* kPreShiftAttr = "memplan_pre_shift";
inline constexpr const char* kPreReluAttr = "memplan_pre_relu";

struct PreActivation {
  std::vector<float> scale, shift;
  bool relu = false;
};

void set_pre_activation(Node& node, const PreActivation& pre);
// The node's pre-activation; nullopt when it has none.
std::optional<PreActivation> pre_activation(const Node& node);

}  // namespace memplan
