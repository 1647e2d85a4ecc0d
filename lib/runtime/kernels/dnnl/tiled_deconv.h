// memplan's own ConvTranspose for the upsampling kind, whose kernel equals its stride (no pads,
// no dilation, no output_padding): each input pixel paints a k x k tile of the output that no
// other pixel touches, tile[m, a, b] = bias[m] + sum_c x[c] * W[c, m, a, b]. U-Net's, DBNet's
// (PaddleOCR's text detectors) and FPN decoders' 2x2 / stride 2 upsamplings are this. oneDNN 2.6
// deconvolves plain activations on its GEMM, whose kernels it generates on first use and keeps
// (about 3 MB of code in the process, for a 9 KB layer: PaddleOCR v4's detector); blocked ones
// are no faster for one output channel (the 24 -> 1 layer: 0.14 -> 1.5 ms). This loop reads the
// weights where the model keeps them.
//
// Plain tensors [N, C, H, W] -> [N, M, H*kh, W*kw] (a 1-D one as one row), in groups; the fused
// activation (ir/fused_activation.h) is applied to each output row while it is in cache. The
// input rows are split across the run's threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/fused_activation.h"
#include "runtime/kernel.h"

namespace memplan::rt::dnnl_kernels {

// Inputs: 0 the activation, 1 the weights [C, M/group, kh, kw], 2 the bias [M] when `bias`.
struct TiledDeconv {
  int64_t n = 1, c = 1, h = 1, w = 1;  // the input
  int64_t m = 1, group = 1;            // output channels, groups
  int64_t kh = 1, kw = 1;              // kernel = stride
  bool bias = false;
  std::vector<EltwiseStep> steps;
};

// The largest kernel side the loop takes (its sums for one chunk of a row live on the stack).
inline constexpr int64_t kTiledDeconvMaxKernel = 8;

std::unique_ptr<Kernel> make_tiled_deconv(const TiledDeconv& shape, std::string where);

}  // namespace memplan::rt::dnnl_kernels
