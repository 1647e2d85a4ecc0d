// ReverseSequence: for each batch entry b, the first sequence_lens[b] steps along the time axis
// are reversed and the rest copied. Time and batch are axes 0 and 1 (either way round); each step
// moves one contiguous block of the remaining axes.
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

class ReverseSequenceKernel final : public Kernel {
 public:
  ReverseSequenceKernel(std::string where, const Node& n, int time_axis, uint32_t elem)
      : where_(std::move(where)), time_axis_(time_axis), elem_(elem), dynamic_(any_dynamic(n)) {}
  void run(const KernelArgs& a) override {
    const TensorView &x = a.inputs[0], &lens = a.inputs[1];
    if (x.rank < 2) fail_at(where_, "the input must have rank 2 or more");
    const int64_t steps = x.dims[time_axis_], batch = x.dims[1 - time_axis_];
    if (lens.rank != 1 || lens.dims[0] != batch)
      fail_at(where_, "sequence_lens must have one entry per batch entry (" + std::to_string(batch) + ")");
    if (dynamic_) set_shape_like(a.outputs[0], x, where_);
    const uint64_t block = product(x.dims.data(), 2, x.rank) * elem_;
    // Byte offset of (time t, batch b).
    auto at = [&](int64_t t, int64_t b) {
      return static_cast<uint64_t>(time_axis_ == 0 ? t * batch + b : b * steps + t) * block;
    };
    std::byte* out = a.outputs[0].data;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = int_at(lens, static_cast<uint64_t>(b));
      if (len < 0 || len > steps)
        fail_at(where_, "sequence length " + std::to_string(len) + " is out of range [0, " + std::to_string(steps) + "]");
      for (int64_t t = 0; t < steps; ++t) std::memcpy(out + at(t, b), x.data + at(t < len ? len - 1 - t : t, b), block);
    }
  }

 private:
  std::string where_;
  int time_axis_;
  uint32_t elem_;
  bool dynamic_;
};

}  // namespace

Factory make_reverse_sequence(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  if (n.inputs[1]->type.dtype != DType::Int64) fail_at(where, "sequence_lens must be int64");
  const int64_t time = n.attr_int("time_axis", 0), batch = n.attr_int("batch_axis", 1);
  if ((time != 0 && time != 1) || (batch != 0 && batch != 1) || time == batch)
    fail_at(where, "time_axis and batch_axis must be 0 and 1 in either order");
  return std::make_unique<ReverseSequenceKernel>(where, n, static_cast<int>(time), elem);
}

}  // namespace memplan::rt::shape
