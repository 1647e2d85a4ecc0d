// The activation a fusion pass (passes/fuse_conv) folds into a Conv or a BatchNormalization, as
// the node records it for the oneDNN kernels (runtime/kernels/dnnl/) that apply it as an eltwise
// post-op: one definition of the attributes and their encoding for the pass that writes them and
// the kernels that read them.
//
//   memplan_fused_activation  int, a FusedActivation; absent means None.
//   memplan_fused_clip        floats {min, max}, with Clip only; -inf / +inf (or +-FLT_MAX) for a
//                             bound the Clip did not have.
//   memplan_fused_eltwise     floats {kind, alpha, beta} per step, with Chain only: elementwise
//                             steps applied in order (EltwiseStep), the forms converters write out
//                             (LeakyRelu then Max with a constant, a scalar Mul after a Clip, ...).
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
enum class FusedActivation : int64_t { None = 0, Relu = 1, Clip = 2, Swish = 3, HardSwish = 4, Chain = 5 };

inline constexpr const char* kFusedActivationAttr = "memplan_fused_activation";

// A MatMul of at most this many rows (A's elements over its last dim) by a large constant B reads
// B where the model keeps it (runtime/kernels/linalg/weights_gemv.h), with a bias but no fused
// activation: passes/fuse_conv fuses none into such a MatMul.
inline constexpr int64_t kWeightsInPlaceRows = 4;
inline constexpr const char* kFusedClipAttr = "memplan_fused_clip";
inline constexpr const char* kFusedEltwiseAttr = "memplan_fused_eltwise";

// One step of a Chain, as oneDNN's eltwise post-ops define them (do not renumber).
struct EltwiseStep {
  enum class Kind : int64_t {
    Linear = 1,     // alpha * x + beta
    Clip = 2,       // min(max(x, alpha), beta); -inf / +inf for a bound that is not there
    Relu = 3,       // x < 0 ? alpha * x : x (LeakyRelu; alpha 0 is Relu)
    HardSwish = 4,  // x * min(max(x + 3, 0), 6) / 6
    Logistic = 5,   // 1 / (1 + exp(-x))
    Swish = 6,      // x * logistic(alpha * x)
    GeluErf = 7,    // x * Phi(x), Phi the normal distribution's CDF: 0.5 * x * (1 + erf(x / sqrt(2)))
    GeluTanh = 8,   // Phi as tanh approximates it: 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  };
  Kind kind = Kind::Linear;
  float alpha = 0.f, beta = 0.f;
  bool operator==(const EltwiseStep&) const = default;
};

// The node's activation as a list of steps (None: empty; nullopt for an invalid attribute).
std::optional<std::vector<EltwiseStep>> fused_steps(const Node& node);

// The steps that `n`, a reader of `y`, computes from y alone: a scalar Add, Sub, Mul, Div, Max or
// Min, Relu, LeakyRelu, Clip, HardSigmoid, HardSwish or Sigmoid, and with `gelu` Gelu. Empty for
// any other node (and for c / y, or a division by 0). Div by c becomes a product by 1 / c, as
// oneDNN has no division post-op (within an ulp of the quotient). What passes/fuse_conv folds into
// a convolution, and what a patch chain's pointwise layer runs.
std::vector<EltwiseStep> eltwise_steps(const Node& n, const Value* y, bool gelu);
// Appends `step` to `steps`, merged into the last step where both are Linear, both Clip, or both
// Relu with a slope >= 0 (one step computing both), and refused (false, `steps` unchanged) where
// a step of its kind remains: oneDNN 2.6's jit post-op injector keeps one set of parameters per
// eltwise algorithm, so a chain with two Linear steps would apply the first one's alpha and
// beta twice (tried: Conv -> Mul(0.75) -> Mul(2) came out as 0.75 * 0.75).
bool add_fused_step(std::vector<EltwiseStep>& steps, const EltwiseStep& step);

// Records `steps` as the node's activation (Chain), replacing any it had.
void set_fused_steps(Node& node, const std::vector<EltwiseStep>& steps);

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
