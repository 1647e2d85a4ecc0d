#include "runtime/kernels/dnnl/conv_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/simd_clones.h"

namespace memplan::rt::dnnl_kernels {

namespace {

// y[i] += bias[(first + i) % channels] for i in [0, n): a run of a channels-last tensor starting
// at element `first`.
MEMPLAN_SIMD_CLONES void add_channel_bias(float* y, uint64_t first, uint64_t n, const float* bias, uint64_t channels) {
  for (uint64_t i = 0; i < n;) {
    const uint64_t c = (first + i) % channels, run = std::min(channels - c, n - i);
    float* row = y + i;
    const float* b = bias + c;
#pragma omp simd
    for (uint64_t k = 0; k < run; ++k) row[k] += b[k];
    i += run;
  }
}

}  // namespace

std::optional<std::vector<EltwiseStep>> after_primitive(const Node& node) {
  std::optional<std::vector<EltwiseStep>> steps = fused_steps(node);
  if (!steps || steps->empty()) return std::nullopt;
  for (const EltwiseStep& s : *steps)
    if (s.kind == EltwiseStep::Kind::Logistic || s.kind == EltwiseStep::Kind::Swish ||
        s.kind == EltwiseStep::Kind::GeluErf || s.kind == EltwiseStep::Kind::GeluTanh)
      return std::nullopt;
  return steps;
}

void ConvKernel::apply_after(std::vector<float> bias, int64_t channels, std::vector<EltwiseStep> steps) {
  bias_ = std::move(bias);
  channels_ = static_cast<uint64_t>(std::max<int64_t>(channels, 1));
  after_ = std::move(steps);
  if (!bias_.empty() && bias_.size() != channels_) fail_internal(where() + ": the bias does not have the output's channels");
}

std::string ConvKernel::implementation() const {
  return form_ + PrimitiveKernel::implementation() +
         (bias_.empty() && after_.empty() ? ""
          : after_.empty()                ? ", then memplan's bias loop"
                                          : ", then memplan's activation loop");
}

void ConvKernel::before_execute(const KernelArgs& args) {
  if (!fused_add_) return;
  if (args.inputs.size() < 4) fail_internal(where() + ": the fused Add input was not passed");
  const TensorView& addend = args.inputs[3];
  const TensorView& y = args.outputs[0];
  if (addend.byte_size() != y.byte_size()) fail(where() + ": the run-time shape of the fused Add input differs from the output's");
  if (addend.data != y.data) std::memmove(y.data, addend.data, y.byte_size());
}

void ConvKernel::after_primitive(const KernelArgs&, float* y, uint64_t bytes) {
  if (after_.empty() && bias_.empty()) return;
  // The bias and every step over one chunk while it is in cache, then the next chunk.
  parallel_chunks(bytes / sizeof(float), 1 << 16, [&](uint64_t begin, uint64_t end) {
    if (!bias_.empty()) add_channel_bias(y + begin, begin, end - begin, bias_.data(), channels_);
    for (const EltwiseStep& s : after_) apply_step(s, y + begin, end - begin);
  });
}

}  // namespace memplan::rt::dnnl_kernels
