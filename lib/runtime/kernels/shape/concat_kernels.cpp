// Concat of any fixed-size dtype: one memcpy per input per outer index, shapes read at run time.
// Tensors stored channels-last (passes/int8_layouts: all of a Concat's or none) concatenate in
// their stored order, NHWC, the logical axis mapped to its place there.
#include <cstring>

#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::elt {
namespace {

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const Node& n, const KernelEnv& env)
      : where_(where(n, env)), axis_(n.attr_int("axis", n.opset < 4 ? 1 : 0)),
        esize_(dtype_size(n.outputs[0]->type.dtype)), channels_last_(n.outputs[0]->channel_block == Value::kChannelsLast),
        end_to_end_(!channels_last_ && outer_dims_are_one(n)) {}

  bool concatenates_end_to_end() const override { return end_to_end_; }

  void run(const KernelArgs& args) override {
    const TensorView& first = args.inputs[0];
    const int rank = first.rank;
    if (rank == 0) fail(where_ + ": cannot concatenate scalars");
    if (axis_ < -rank || axis_ >= rank)
      fail(where_ + ": axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(rank));
    const int axis = static_cast<int>(axis_ < 0 ? axis_ + rank : axis_);
    Shape out = Shape::of(first);
    out.dims[axis] = 0;
    for (const TensorView& in : args.inputs) {
      bool same = in.rank == rank;
      for (int d = 0; same && d < rank; ++d) same = d == axis || in.dims[d] == first.dims[d];
      if (!same)
        fail(where_ + ": input shapes " + Shape::of(first).str() + " and " + Shape::of(in).str() +
             " differ outside axis " + std::to_string(axis));
      out.dims[axis] += in.dims[axis];
    }
    TensorView& y = args.outputs[0];
    set_output_shape(y, out, where_);
    int axis_stored = axis;
    if (channels_last_) {  // outer and inner from the dims in stored order
      if (rank != 4) fail_internal(where_ + ": a channels-last tensor of rank " + std::to_string(rank));
      static constexpr int kStoredAt[] = {0, 3, 1, 2};  // NCHW axis -> its place in NHWC
      axis_stored = kStoredAt[axis];
      const int64_t c = out.dims[1];
      out.dims[1] = out.dims[2], out.dims[2] = out.dims[3], out.dims[3] = c;
    }
    uint64_t outer = 1, inner = esize_;
    for (int d = 0; d < axis_stored; ++d) outer *= static_cast<uint64_t>(out.dims[d]);
    for (int d = axis_stored + 1; d < rank; ++d) inner *= static_cast<uint64_t>(out.dims[d]);
    uint64_t row = 0;  // the output's bytes per outer index
    for (const TensorView& in : args.inputs) row += static_cast<uint64_t>(in.dims[axis]) * inner;
    parallel_chunks(outer, kParallelChunkBytes / std::max<uint64_t>(row, 1) + 1, [&](uint64_t begin, uint64_t end) {
      std::byte* dst = y.data + begin * row;
      for (uint64_t o = begin; o < end; ++o)
        for (const TensorView& in : args.inputs) {
          const uint64_t bytes = static_cast<uint64_t>(in.dims[axis]) * inner;  // (axis: the same extent)
          if (bytes == 0) continue;
          if (dst != in.data + o * bytes) copy_run(dst, in.data + o * bytes, bytes);  // else written in place
          dst += bytes;
        }
    });
  }

 private:
  // Static shapes whose dims before the axis are all 1: each input is one contiguous stretch of
  // the output (also channel-blocked, whose channel counts assign_layouts keeps whole blocks).
  static bool outer_dims_are_one(const Node& n) {
    const Value* y = n.outputs[0];
    if (!y || y->shape_varies || !y->type.has_rank || y->type.dims.empty()) return false;
    const auto rank = static_cast<int64_t>(y->type.dims.size());
    int64_t axis = n.attr_int("axis", n.opset < 4 ? 1 : 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return false;
    for (int64_t d = 0; d < axis; ++d)
      if (y->type.dims[static_cast<size_t>(d)].value != 1) return false;
    for (const Value* x : n.inputs)
      if (!x || x->shape_varies || x->is_constant()) return false;
    return true;
  }

  std::string where_;
  int64_t axis_;
  uint64_t esize_;
  bool channels_last_;
  bool end_to_end_;
};

}  // namespace

std::unique_ptr<Kernel> make_concat(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, 1, SIZE_MAX);
  const DType dt = n.outputs[0]->type.dtype;
  if (dtype_size(dt) == 0) fail_unsupported(at + ": " + dtype_name(dt) + " tensors are not supported");
  const bool channels_last = n.outputs[0]->channel_block == Value::kChannelsLast;
  for (const Value* v : n.inputs) {
    if (!v) fail(at + ": an input is missing");
    if (v->type.dtype != dt)
      fail(at + ": input '" + v->name + "' is " + dtype_name(v->type.dtype) + ", the output " + dtype_name(dt));
    // (A constant of one value repeated has the same bytes in every layout.)
    const bool uniform = v->constant && (v->constant->splat || v->constant->element_count() == 1);
    if ((v->channel_block == Value::kChannelsLast) != channels_last && !uniform)
      fail_internal(at + ": input '" + v->name + "' and the output are stored in different layouts");
  }
  if (n.opset >= 4 && !n.attr("axis")) fail(at + ": the axis attribute is required");
  return std::make_unique<ConcatKernel>(n, env);
}

}  // namespace memplan::rt::elt
