// memplan's own depthwise convolution, for the ones oneDNN 2.6 runs on its GEMM: a wide window
// (its AVX2 depthwise kernel takes at most 7 taps a row; a Conformer's convolution module has 31)
// or a dilated and strided one. A GEMM per group unfolds each channel's windows and multiplies
// them by one row of weights: 2.3 ms for the Conformer's 144 channels at 2x200, where this loop,
// one output row at a time as a sum of shifted input rows, takes 0.1.
//
// Plain tensors [N, C, H, W] (a 1-D convolution as one row) with output channel o reading input
// channel o / (M / C); the fused activation (ir/fused_activation.h) is applied to each row while
// it is in cache. The planes (image, output channel) are split across the run's threads.
#pragma once

#include <memory>
#include <vector>

#include "ir/fused_activation.h"
#include "runtime/kernels/common/dnnl_common.h"

namespace memplan::rt::dnnl_kernels {

struct DepthwiseConv {
  Dims x, y;  // [N, C, H, W], [N, M, H', W'], M a multiple of C
  Window window;  // 2-D: kernel, strides, dilations, pads
  std::vector<float> weights;  // [M, KH, KW]
  std::vector<float> bias;     // [M], or empty
  std::vector<EltwiseStep> steps;
};

std::unique_ptr<Kernel> make_depthwise_loop(DepthwiseConv conv, std::string where);

}  // namespace memplan::rt::dnnl_kernels
