// MaxUnpool: a zero output with each X value written at its MaxPool index, a flat position in
// the shape the pooling window inverts to ((in - 1) * stride - pads + kernel per spatial axis).
// A larger output_shape pads that result at the end of each axis, as ONNX's reference does.
// Every index is checked.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

struct UnpoolWindow {
  int spatial = 0;
  std::array<int64_t, kMaxRank> kernel{}, stride{}, pads{};  // pads: begin + end per axis
};

class MaxUnpoolKernel final : public Kernel {
 public:
  MaxUnpoolKernel(std::string where, const Node& n, UnpoolWindow w, IntsSource shape, uint32_t elem)
      : where_(std::move(where)), w_(w), shape_(shape), elem_(elem), dynamic_(any_dynamic(n) || shape_.runtime()) {}

  void run(const KernelArgs& a) override {
    const TensorView &x = a.inputs[0], &idx = a.inputs[1];
    if (x.rank != w_.spatial + 2) fail_at(where_, "X must have rank " + std::to_string(w_.spatial + 2) + " to match kernel_shape");
    if (idx.rank != x.rank || !std::equal(x.dims.begin(), x.dims.begin() + x.rank, idx.dims.begin()))
      fail_at(where_, "I must have the shape of X");
    std::array<int64_t, kMaxRank> inferred = x.dims;
    for (int i = 0; i < w_.spatial; ++i) {
      int64_t& d = inferred[i + 2];
      if (x.dims[i + 2] < 1 || __builtin_mul_overflow(x.dims[i + 2] - 1, w_.stride[i], &d) ||
          __builtin_add_overflow(d, w_.kernel[i] - w_.pads[i], &d))
        fail_at(where_, "X must have spatial dimensions of 1 or more, and the unpooled size must fit 64 bits");
      if (d < 0) fail_at(where_, "the pads exceed the unpooled size");
    }
    std::array<int64_t, kMaxRank> dims = inferred;
    Ints scratch;
    if (const Ints* s = shape_.get(a, scratch, where_)) {
      if (s->size != x.rank) fail_at(where_, "output_shape must have " + std::to_string(x.rank) + " entries");
      for (int d = 0; d < x.rank; ++d) {
        dims[d] = (*s)[d];
        if (dims[d] < inferred[d]) fail_at(where_, "output_shape is smaller than the unpooled shape on axis " + std::to_string(d));
      }
    }
    TensorView& out = a.outputs[0];
    if (!dynamic_ && !std::equal(dims.begin(), dims.begin() + x.rank, out.dims.begin()))
      fail_at(where_, "the computed output shape does not match the compile-time one");
    set_shape(out, x.rank, dims.data(), where_);
    std::memset(out.data, 0, out.byte_size());
    const uint64_t total = product(inferred.data(), 0, x.rank), count = x.element_count();
    for (uint64_t i = 0; i < count; ++i) {
      const int64_t at = int_at(idx, i);
      if (at < 0 || static_cast<uint64_t>(at) >= total)
        fail_at(where_, "index " + std::to_string(at) + " is out of range for an unpooled tensor of " + std::to_string(total) + " elements");
      // Coordinates in the unpooled shape, offset in the (maybe larger) output.
      uint64_t rest = static_cast<uint64_t>(at), off = 0, step = 1;
      for (int d = x.rank - 1; d >= 0; --d) {
        off += rest % static_cast<uint64_t>(inferred[d]) * step;
        rest /= static_cast<uint64_t>(inferred[d]);
        step *= static_cast<uint64_t>(dims[d]);
      }
      std::memcpy(out.data + off * elem_, x.data + i * elem_, elem_);
    }
  }

 private:
  std::string where_;
  UnpoolWindow w_;
  IntsSource shape_;
  uint32_t elem_;
  bool dynamic_;
};

}  // namespace

Factory make_max_unpool(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 3);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  if (n.inputs[1]->type.dtype != DType::Int64) fail_at(where, "I must be int64");
  const std::vector<int64_t> kernel = n.attr_ints("kernel_shape"), strides = n.attr_ints("strides"), pads = n.attr_ints("pads");
  if (kernel.empty() || kernel.size() > static_cast<size_t>(kMaxRank - 2)) fail_at(where, "kernel_shape is missing or too long");
  UnpoolWindow w;
  w.spatial = static_cast<int>(kernel.size());
  if ((!strides.empty() && strides.size() != kernel.size()) || (!pads.empty() && pads.size() != 2 * kernel.size()))
    fail_at(where, "strides and pads must match kernel_shape");
  for (size_t i = 0; i < kernel.size(); ++i) {
    w.kernel[i] = kernel[i];
    w.stride[i] = strides.empty() ? 1 : strides[i];
    w.pads[i] = pads.empty() ? 0 : pads[i] + pads[i + kernel.size()];
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.pads[i] < 0 || w.kernel[i] > (int64_t{1} << 30) || w.stride[i] > (int64_t{1} << 30) ||
        w.pads[i] > (int64_t{1} << 30))
      fail_at(where, "kernel_shape, strides and pads must be positive (pads not negative) and below 2^30");
  }
  return std::make_unique<MaxUnpoolKernel>(where, n, w, IntsSource::from_input(n, 2, where, "output_shape"), elem);
}

}  // namespace memplan::rt::shape
