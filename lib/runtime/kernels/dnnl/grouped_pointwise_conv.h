// A grouped 1x1 convolution as one batched matmul over its groups.
//
// On channels-last activations, group g of a 1x1 convolution with stride 1 and no padding is a
// matrix product: the [pixels, C/g] columns of its input channels times its [C/g, M/g] weights,
// written into its [pixels, M/g] columns of the output. oneDNN 2.6 has a 1x1 kernel for that only
// where a channel block divides the groups (AVX-512's brgconv_1x1 takes channels-last too); on
// AVX2, ShuffleNet's 4 groups of 34 or 68 channels run its generic direct kernel at 30-47 GFLOPS,
// where its GEMM, as a matmul with strided views of the same bytes, runs at 58-93 (one core of
// the AMD EPYC the benchmarks run on).
#pragma once

#include <memory>

#include "runtime/kernels/common/dnnl_common.h"

namespace memplan::rt::dnnl_kernels {

struct GroupedPointwise {
  Dims x, y;  // the input [N, C, H, W] and output [N, M, H, W]
  int64_t group = 1;
  dnnl::memory::desc x_given, y_given;  // the activations' layouts as the layout passes left them
  bool fused_add = false;      // input 3 is added to the result (ir/fused_activation.h's Add)
};

// The kernel, reading and writing channels-last (an activation given in another layout is
// reordered through the scratchpad on each run); null where it does not apply: weights or bias
// computed at run time, or no GEMM in oneDNN for it.
std::unique_ptr<Kernel> make_grouped_pointwise_conv(const Node& node, const KernelEnv& env, const GroupedPointwise& g);

}  // namespace memplan::rt::dnnl_kernels
