// The kernel every oneDNN convolution runs in (dnnl_conv.cpp, grouped_pointwise_conv.cpp): the
// primitive, then what the kernel applies itself around it (a fused Add's addend copied into the
// output, a per-channel bias and the fused activation over the output).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/fused_activation.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/eltwise_step.h"

namespace memplan::rt::dnnl_kernels {

// The fused steps a kernel can apply itself after its primitive (Linear, Clip, Relu, HardSwish),
// else nullopt (no steps, or Sigmoid or Swish, which oneDNN's post-ops compute better).
std::optional<std::vector<EltwiseStep>> after_primitive(const Node& node);


// A convolution whose result is added to input 3 (a sum post-op) accumulates into dst, so dst
// must hold the addend before the primitive runs: a staged dst is preloaded with it by
// PrimitiveKernel, and `fused_add` copies it into an output written in place.
class ConvKernel final : public PrimitiveKernel {
 public:
  // `form`: how the convolution is computed, where not by a convolution primitive (the start of
  // implementation(), before oneDNN's name for the primitive).
  ConvKernel(const Node& node, const KernelEnv& env, bool fused_add, std::string form = {})
      : PrimitiveKernel(node, env), fused_add_(fused_add), form_(std::move(form)) {}

  // After the primitive, over the whole output as it wrote it (before a staged output's reorder):
  // add `bias` (one value per channel of a channels-last output of `channels` channels; empty:
  // none), then apply `steps`.
  void apply_after(std::vector<float> bias, int64_t channels, std::vector<EltwiseStep> steps);

  std::string implementation() const override;

  // Chosen for speed at a cost in memory (Winograd's algorithm: passes/winograd_convs.h).
  void give_way_for_memory() { gives_way_ = true; }
  bool gives_way_for_memory() const override { return gives_way_; }

 protected:
  void before_execute(const KernelArgs& args) override;
  void after_primitive(const KernelArgs& args, float* written, uint64_t bytes) override;

 private:
  bool fused_add_;
  bool gives_way_ = false;
  std::string form_;
  std::vector<float> bias_;  // apply_after()
  uint64_t channels_ = 0;
  std::vector<EltwiseStep> after_;
};

}  // namespace memplan::rt::dnnl_kernels
