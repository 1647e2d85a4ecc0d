// Gather, GatherElements and Split. Indices are checked before every read: an index out of
// range fails naming the node and the index, and nothing is read out of bounds.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Gather ----

struct GatherPlan {
  int axis = 0;
  AxisSplit split;
  uint64_t n_idx = 0;
  int out_rank = 0;
  std::array<int64_t, kMaxRank> out_dims{};
};

GatherPlan gather_plan(const TensorView& data, const TensorView& idx, int64_t axis_attr, const std::string& where) {
  if (data.rank == 0) fail_at(where, "data must have rank 1 or more");
  GatherPlan p;
  p.axis = normalize_axis(axis_attr, data.rank, where);
  p.split = split_at(data, p.axis);
  p.n_idx = idx.element_count();
  p.out_rank = data.rank - 1 + idx.rank;
  check_rank(p.out_rank, where);
  int r = 0;
  for (int d = 0; d < p.axis; ++d) p.out_dims[r++] = data.dims[d];
  for (int d = 0; d < idx.rank; ++d) p.out_dims[r++] = idx.dims[d];
  for (int d = p.axis + 1; d < data.rank; ++d) p.out_dims[r++] = data.dims[d];
  return p;
}

class GatherKernel final : public Kernel {
 public:
  GatherKernel(std::string where, const Node& n, uint32_t elem)
      : where_(std::move(where)), axis_(n.attr_int("axis", 0)), elem_(elem), dynamic_(any_dynamic(n)) {
    if (!dynamic_) plan_ = gather_plan(static_view(n.inputs[0], where_), static_view(n.inputs[1], where_), axis_, where_);
  }
  void run(const KernelArgs& a) override {
    const TensorView &data = a.inputs[0], &idx = a.inputs[1];
    const GatherPlan* p = &plan_;
    GatherPlan local;
    if (dynamic_) {
      local = gather_plan(data, idx, axis_, where_);
      set_shape(a.outputs[0], local.out_rank, local.out_dims.data(), where_);
      p = &local;
    }
    const int64_t extent = p->split.extent;
    const uint64_t block = p->split.inner * elem_;
    std::byte* out = a.outputs[0].data;
    for (uint64_t o = 0; o < p->split.outer; ++o) {
      const std::byte* src = data.data + o * static_cast<uint64_t>(extent) * block;
      for (uint64_t k = 0; k < p->n_idx; ++k, out += block) {
        const int64_t i = wrap_index(int_at(idx, k), extent, p->axis, where_);
        std::memcpy(out, src + static_cast<uint64_t>(i) * block, block);
      }
    }
  }

 private:
  std::string where_;
  int64_t axis_;
  uint32_t elem_;
  bool dynamic_;
  GatherPlan plan_;
};

// ---- GatherElements ----

struct GatherElementsPlan {
  int axis = 0;
  int rank = 0;
  std::array<int64_t, kMaxRank> idx_dims{};
  std::array<int64_t, kMaxRank> data_strides{};
  uint64_t count = 0;
};

GatherElementsPlan gather_elements_plan(const TensorView& data, const TensorView& idx, int64_t axis_attr, const std::string& where) {
  if (data.rank == 0 || data.rank != idx.rank) fail_at(where, "data and indices must have the same rank, 1 or more");
  GatherElementsPlan p;
  p.axis = normalize_axis(axis_attr, data.rank, where);
  p.rank = data.rank;
  for (int d = 0; d < p.rank; ++d)
    if (d != p.axis && idx.dims[d] > data.dims[d])
      fail_at(where, "indices dimension " + std::to_string(d) + " (" + std::to_string(idx.dims[d]) + ") exceeds the data's (" +
                         std::to_string(data.dims[d]) + ")");
  p.idx_dims = idx.dims;
  p.data_strides = strides_of(data.rank, data.dims.data());
  p.count = idx.element_count();
  return p;
}

template <size_t ES>
void gather_elements(const GatherElementsPlan& p, const TensorView& data, const TensorView& idx, std::byte* out, const std::string& where) {
  if (p.count == 0) return;
  const int64_t extent = data.dims[p.axis], axis_stride = p.data_strides[p.axis];
  std::array<int64_t, kMaxRank> coord{};
  int64_t base = 0;  // data offset of coord with the axis coordinate at 0
  for (uint64_t k = 0;; ++k) {
    const int64_t i = wrap_index(int_at(idx, k), extent, p.axis, where);
    std::memcpy(out + k * ES, data.data + static_cast<uint64_t>(base + i * axis_stride) * ES, ES);
    auto moved = [&](int d, int64_t by) { base += (d == p.axis ? 0 : p.data_strides[d]) * by; };
    if (!next_index(coord, p.idx_dims, p.rank, moved)) return;
  }
}

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(std::string where, const Node& n, uint32_t elem)
      : where_(std::move(where)), axis_(n.attr_int("axis", 0)), elem_(elem), dynamic_(any_dynamic(n)) {
    if (!dynamic_) plan_ = gather_elements_plan(static_view(n.inputs[0], where_), static_view(n.inputs[1], where_), axis_, where_);
  }
  void run(const KernelArgs& a) override {
    const TensorView &data = a.inputs[0], &idx = a.inputs[1];
    const GatherElementsPlan* p = &plan_;
    GatherElementsPlan local;
    if (dynamic_) {
      local = gather_elements_plan(data, idx, axis_, where_);
      set_shape_like(a.outputs[0], idx, where_);
      p = &local;
    }
    dispatch_size(elem_, [&](auto es) { gather_elements<decltype(es)::value>(*p, data, idx, a.outputs[0].data, where_); });
  }

 private:
  std::string where_;
  int64_t axis_;
  uint32_t elem_;
  bool dynamic_;
  GatherElementsPlan plan_;
};

// ---- Split ----

class SplitKernel final : public Kernel {
 public:
  // `sizes`: fixed split sizes (empty: equal parts, or the run-time input `runtime_input`).
  SplitKernel(std::string where, const Node& n, std::vector<int64_t> sizes, bool runtime_input, uint32_t elem)
      : where_(std::move(where)), axis_(n.attr_int("axis", 0)), elem_(elem), n_out_(n.outputs.size()),
        runtime_input_(runtime_input), sizes_(std::move(sizes)) {
    dynamic_ = any_dynamic(n) || runtime_input_;
    if (!sizes_.empty() && sizes_.size() != n_out_)
      fail_at(where_, "split has " + std::to_string(sizes_.size()) + " entries for " + std::to_string(n_out_) + " outputs");
    if (!dynamic_) {
      const TensorView in = static_view(n.inputs[0], where_);
      check_sizes(in, nullptr);
      const int axis = normalize_axis(axis_, in.rank, where_);
      for (size_t k = 0; k < n_out_; ++k)
        if (n.outputs[k]->type.dims[axis].value != size_of(k, in.dims[axis], nullptr))
          fail_at(where_, "output " + std::to_string(k) + " shape " + n.outputs[k]->type.shape_string() + " does not match the split");
    }
  }

  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    const TensorView* sizes = runtime_input_ && a.inputs.size() > 1 && a.inputs[1].data ? &a.inputs[1] : nullptr;
    if (dynamic_) check_sizes(in, sizes);
    const int axis = normalize_axis(axis_, in.rank, where_);
    const AxisSplit s = split_at(in, axis);
    const uint64_t row = s.inner * elem_;
    int64_t offset = 0;
    for (size_t k = 0; k < n_out_ && k < a.outputs.size(); ++k) {
      const int64_t size = size_of(k, s.extent, sizes);
      TensorView& out = a.outputs[k];
      if (out.data) {
        if (dynamic_) {
          std::array<int64_t, kMaxRank> dims = in.dims;
          dims[axis] = size;
          set_shape(out, in.rank, dims.data(), where_);
        }
        const uint64_t chunk = static_cast<uint64_t>(size) * row;
        for (uint64_t o = 0; o < s.outer; ++o)
          std::memcpy(out.data + o * chunk, in.data + (o * static_cast<uint64_t>(s.extent) + static_cast<uint64_t>(offset)) * row, chunk);
      }
      offset += size;
    }
  }

 private:
  int64_t size_of(size_t k, int64_t extent, const TensorView* sizes) const {
    if (sizes) return int_at(*sizes, k);
    if (!sizes_.empty()) return sizes_[k];
    return extent / static_cast<int64_t>(n_out_);
  }
  // Sizes must be non-negative and add up to the axis (equal parts: divide it).
  void check_sizes(const TensorView& in, const TensorView* sizes) const {
    const int axis = normalize_axis(axis_, in.rank, where_);
    const int64_t extent = in.dims[axis];
    if (sizes && (sizes->rank != 1 || sizes->element_count() != n_out_))
      fail_at(where_, "split has " + std::to_string(sizes->element_count()) + " entries for " + std::to_string(n_out_) + " outputs");
    if (!sizes && sizes_.empty()) {
      if (extent % static_cast<int64_t>(n_out_) != 0)
        fail_at(where_, "axis of size " + std::to_string(extent) + " cannot be split into " + std::to_string(n_out_) + " equal parts");
      return;
    }
    int64_t sum = 0;
    for (size_t k = 0; k < n_out_; ++k) {
      const int64_t s = size_of(k, extent, sizes);
      if (s < 0 || s > extent) fail_at(where_, "split size " + std::to_string(s) + " is out of range");
      sum += s;
    }
    if (sum != extent) fail_at(where_, "split sizes add up to " + std::to_string(sum) + ", not the axis size " + std::to_string(extent));
  }

  std::string where_;
  int64_t axis_;
  uint32_t elem_;
  size_t n_out_;
  bool runtime_input_;
  std::vector<int64_t> sizes_;
  bool dynamic_ = false;
};

}  // namespace

Factory make_gather(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  check_indices_type(n.inputs[1], where);
  return std::make_unique<GatherKernel>(where, n, movable_size(n.inputs[0]->type.dtype, where));
}

Factory make_gather_elements(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  check_indices_type(n.inputs[1], where);
  return std::make_unique<GatherElementsKernel>(where, n, movable_size(n.inputs[0]->type.dtype, where));
}

Factory make_split(const Node& n, const KernelEnv& env) {
  // Opset 1 took the sizes as an optional input or an attribute; 2-12 as an attribute; 13+ as an input.
  const bool input = n.opset >= 13 || (n.opset < 2 && n.inputs.size() > 1);
  std::string where = check_arity(n, env, 1, input ? 2 : 1);
  if (n.opset >= 18) unsupported_at(where, "opset " + std::to_string(n.opset) + " is not supported");
  for (size_t k = 0; k < n.outputs.size(); ++k) required_output(n, k, where);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  std::vector<int64_t> sizes = input ? std::vector<int64_t>{} : n.attr_ints("split");
  const Value* v = input ? input_at(n, 1) : nullptr;
  if (v && v->type.dtype != DType::Int64 && v->type.dtype != DType::Int32) fail_at(where, "split must be int64 or int32");
  if (v && v->constant) sizes = v->constant->to_ints();
  return std::make_unique<SplitKernel>(where, n, sizes, v && !v->constant, elem);
}

}  // namespace memplan::rt::shape
