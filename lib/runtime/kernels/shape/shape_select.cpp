// Compress and NonZero: outputs whose size the data decides. Each counts what it keeps first,
// sets the output's run-time shape (failing if the planned buffer is too small), then writes.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Compress ----

class CompressKernel final : public Kernel {
 public:
  // `axis`: the attribute, or none (the input is flattened).
  CompressKernel(std::string where, bool has_axis, int64_t axis, uint32_t elem)
      : where_(std::move(where)), has_axis_(has_axis), axis_(axis), elem_(elem) {}
  void run(const KernelArgs& a) override {
    const TensorView &x = a.inputs[0], &cond = a.inputs[1];
    if (cond.rank != 1) fail_at(where_, "condition must be 1-D");
    TensorView& out = a.outputs[0];
    int axis = 0;
    const AxisSplit s = split_optional_axis(x, has_axis_, axis_, where_, axis);
    // Entries past the axis are ignored, as numpy does for false ones; a true one is out of range.
    const uint64_t n = cond.element_count(), used = std::min<uint64_t>(n, static_cast<uint64_t>(s.extent));
    const uint8_t* c = cond.as<const uint8_t>();
    int64_t kept = 0;
    for (uint64_t i = 0; i < n; ++i)
      if (c[i]) {
        if (i >= used) index_out_of_range(where_, static_cast<int64_t>(i), axis, s.extent);
        ++kept;
      }
    std::array<int64_t, kMaxRank> dims = x.dims;
    if (has_axis_) {
      dims[axis] = kept;
      set_shape(out, x.rank, dims.data(), where_);
    } else {
      set_shape(out, 1, &kept, where_);
    }
    const uint64_t block = s.inner * elem_;
    std::byte* y = out.data;
    for (uint64_t o = 0; o < s.outer; ++o)
      for (uint64_t i = 0; i < used; ++i)
        if (c[i]) {
          std::memcpy(y, x.data + (o * static_cast<uint64_t>(s.extent) + i) * block, block);
          y += block;
        }
  }

 private:
  std::string where_;
  bool has_axis_;
  int64_t axis_;
  uint32_t elem_;
};

// ---- NonZero ----

// Non-zero test on the raw bits: `mask` drops the sign bit of floats, so -0.0 counts as zero
// and NaN as non-zero, as a comparison with 0 would.
template <typename U>
uint64_t count_nonzero(const TensorView& x, U mask) {
  const U* p = x.as<const U>();
  uint64_t n = 0;
  const uint64_t count = x.element_count();
  for (uint64_t i = 0; i < count; ++i) n += (p[i] & mask) != 0;
  return n;
}

template <typename U>
void write_nonzero(const TensorView& x, U mask, int64_t* out, uint64_t nnz) {
  const U* p = x.as<const U>();
  const uint64_t count = x.element_count();
  const int rank = x.rank;
  std::array<int64_t, kMaxRank> coord{};
  uint64_t j = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if ((p[i] & mask) != 0) {
      if (rank == 0) out[j] = 0;  // a scalar counts as one element of a 1-D tensor (as ONNX Runtime does)
      for (int d = 0; d < rank; ++d) out[static_cast<uint64_t>(d) * nnz + j] = coord[d];
      ++j;
    }
    next_index(coord, x.dims, rank);
  }
}

class NonZeroKernel final : public Kernel {
 public:
  NonZeroKernel(std::string where, uint64_t mask) : where_(std::move(where)), mask_(mask) {}
  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& out = a.outputs[0];
    const bool done = dispatch_size(dtype_size(x.dtype), [&](auto es) {
      using U = uint_of_size<decltype(es)::value>;
      const U mask = static_cast<U>(mask_);
      const uint64_t nnz = count_nonzero<U>(x, mask);
      const int64_t dims[2] = {std::max(x.rank, 1), static_cast<int64_t>(nnz)};
      set_shape(out, 2, dims, where_);
      write_nonzero<U>(x, mask, out.as<int64_t>(), nnz);
    });
    if (!done) fail_internal(where_ + ": unexpected element size");
  }

 private:
  std::string where_;
  uint64_t mask_;
};

}  // namespace

Factory make_compress(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  if (n.inputs[1]->type.dtype != DType::Bool) fail_at(where, "condition must be bool");
  return std::make_unique<CompressKernel>(where, n.attr("axis") != nullptr, n.attr_int("axis", 0),
                                          movable_size(n.inputs[0]->type.dtype, where));
}

Factory make_nonzero(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  const DType t = n.inputs[0]->type.dtype;
  const uint32_t size = movable_size(t, where);
  if (n.outputs[0]->type.dtype != DType::Int64) fail_at(where, "the output must be int64");
  uint64_t mask = size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * size)) - 1;
  if (t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16) mask >>= 1;  // no sign bit
  return std::make_unique<NonZeroKernel>(where, mask);
}

}  // namespace memplan::rt::shape
