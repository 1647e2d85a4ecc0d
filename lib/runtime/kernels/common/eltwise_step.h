// One fused elementwise step (ir/fused_activation.h's EltwiseStep) over a run of floats, in
// place: what memplan's own loops apply after a convolution, a product or a tiled deconvolution,
// and what a small tensor's activation runs as instead of a oneDNN primitive.
#pragma once

#include <cstdint>

#include "ir/fused_activation.h"

namespace memplan::rt {

// One fused step over n floats in place, vectorized for the CPU at hand (every kind: memplan's
// own convolution loops apply Sigmoid and Swish too). NaN stays NaN.
void apply_step(const EltwiseStep& s, float* y, uint64_t n);

}  // namespace memplan::rt
