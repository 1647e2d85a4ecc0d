// Transpose and Slice: strided copies whose strides are fixed at load for static shapes.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/channel_shuffle.h"
#include "ir/layout_transpose.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Transpose ----

void transpose_plan(const TensorView& in, const Ints& perm, CopyPlan& plan, int& out_rank, std::array<int64_t, kMaxRank>& out_dims,
                    const std::string& where) {
  const int rank = in.rank;
  if (perm.size != 0 && perm.size != rank)
    fail_at(where, "perm has " + std::to_string(perm.size) + " entries for an input of rank " + std::to_string(rank));
  const auto strides = strides_of(rank, in.dims.data());
  std::array<bool, kMaxRank> seen{};
  plan = CopyPlan{};
  plan.rank = rank;
  for (int d = 0; d < rank; ++d) {
    const int64_t p = perm.size ? perm[d] : rank - 1 - d;
    if (p < 0 || p >= rank || seen[p]) fail_at(where, "perm is not a permutation of the input's axes");
    seen[p] = true;
    plan.dims[d] = out_dims[d] = in.dims[p];
    plan.strides[d] = strides[p];
  }
  out_rank = rank;
  plan.finish();
}

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(std::string where, const Node& n, Ints perm, uint32_t elem)
      : where_(std::move(where)), perm_(perm), elem_(elem), dynamic_(any_dynamic(n)), view_(transpose_keeps_bytes(n)) {
    if (!view_ && (n.inputs[0]->channel_block != 0 || n.outputs[0]->channel_block != 0))
      fail_internal(where_ + ": a Transpose between these layouts is not a view, and its copy reads plain tensors only");
    if (view_) {
      bytes_ = static_view(n.inputs[0], where_).byte_size();
    } else if (!dynamic_) {
      int rank;
      std::array<int64_t, kMaxRank> dims;
      transpose_plan(static_view(n.inputs[0], where_), perm_, plan_, rank, dims, where_);
    }
  }
  // Between NCHW and NHWC with the NCHW side channels-last: the input's bytes, copied only where the
  // plan gave the output buffer of its own.
  int view_of() const override { return view_ ? 0 : -1; }
  std::string implementation() const override { return view_ ? "memplan view (channels-last)" : "memplan"; }

  void run(const KernelArgs& a) override {
    if (view_) {
      if (a.outputs[0].data != a.inputs[0].data && bytes_) std::memmove(a.outputs[0].data, a.inputs[0].data, bytes_);
      return;
    }
    const CopyPlan* p = &plan_;
    CopyPlan local;
    if (dynamic_) {
      int rank;
      std::array<int64_t, kMaxRank> dims;
      transpose_plan(a.inputs[0], perm_, local, rank, dims, where_);
      set_shape(a.outputs[0], rank, dims.data(), where_);
      p = &local;
    }
    strided_copy(a.outputs[0].data, a.inputs[0].data, elem_, *p);
  }

 private:
  std::string where_;
  Ints perm_;
  uint32_t elem_;
  bool dynamic_;
  bool view_;  // transpose_keeps_bytes: static shapes (layouts are assigned to those only)
  uint64_t bytes_ = 0;
  CopyPlan plan_;
};

// ---- Slice ----

struct SliceLists {
  const Ints* starts = nullptr;
  const Ints* ends = nullptr;
  const Ints* axes = nullptr;   // null: 0, 1, ...
  const Ints* steps = nullptr;  // null: all 1
};

void slice_plan(const TensorView& in, const SliceLists& l, CopyPlan& plan, const std::string& where) {
  const int rank = in.rank;
  if (!l.starts || !l.ends) fail_at(where, "starts and ends are required");
  const int n = l.starts->size;
  if (l.ends->size != n || (l.axes && l.axes->size != n) || (l.steps && l.steps->size != n))
    fail_at(where, "starts, ends, axes and steps differ in length");
  const auto strides = strides_of(rank, in.dims.data());
  std::array<int64_t, kMaxRank> begin{}, step{};
  std::array<bool, kMaxRank> seen{};
  plan = CopyPlan{};
  plan.rank = rank;
  for (int d = 0; d < rank; ++d) {
    plan.dims[d] = in.dims[d];
    step[d] = 1;
  }
  for (int i = 0; i < n; ++i) {
    const int ax = normalize_axis(l.axes ? (*l.axes)[i] : i, rank, where);
    if (seen[ax]) fail_at(where, "axis " + std::to_string(ax) + " is repeated");
    seen[ax] = true;
    const int64_t dim = in.dims[ax], st = l.steps ? (*l.steps)[i] : 1;
    if (st == 0) fail_at(where, "a step is 0");
    int64_t b = (*l.starts)[i], e = (*l.ends)[i];
    if (b < 0) b += dim;  // INT64_MIN + dim cannot overflow
    if (e < 0) e += dim;
    uint64_t count;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? static_cast<uint64_t>(e - b - 1) / static_cast<uint64_t>(st) + 1 : 0;
    } else if (dim == 0) {
      count = 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? static_cast<uint64_t>(b - e - 1) / (0 - static_cast<uint64_t>(st)) + 1 : 0;
    }
    begin[ax] = count ? b : 0;
    step[ax] = count > 1 ? st : 1;  // a single element needs no step (and huge steps cannot overflow)
    plan.dims[ax] = static_cast<int64_t>(count);
  }
  for (int d = 0; d < rank; ++d) {
    plan.base += begin[d] * strides[d];
    plan.strides[d] = step[d] * strides[d];
  }
}

class SliceKernel final : public Kernel {
 public:
  SliceKernel(std::string where, const Node& n, IntsSource starts, IntsSource ends, IntsSource axes, IntsSource steps, uint32_t elem)
      : where_(std::move(where)), starts_(starts), ends_(ends), axes_(axes), steps_(steps), elem_(elem) {
    dynamic_ = any_dynamic(n) || starts_.runtime() || ends_.runtime() || axes_.runtime() || steps_.runtime();
    if (!dynamic_) {
      slice_plan(static_view(n.inputs[0], where_), {starts_.fixed(), ends_.fixed(), axes_.fixed(), steps_.fixed()}, plan_, where_);
      const TensorView out = static_view(n.outputs[0], where_);
      if (out.rank != plan_.rank || !std::equal(out.dims.begin(), out.dims.begin() + out.rank, plan_.dims.begin()))
        fail_at(where_, "the output shape " + n.outputs[0]->type.shape_string() + " does not match the computed shape");
      plan_.finish();
    }
  }
  void run(const KernelArgs& a) override {
    const CopyPlan* p = &plan_;
    CopyPlan local;
    if (dynamic_) {
      Ints s0, s1, s2, s3;
      SliceLists l{starts_.get(a, s0, where_), ends_.get(a, s1, where_), axes_.get(a, s2, where_), steps_.get(a, s3, where_)};
      slice_plan(a.inputs[0], l, local, where_);
      set_shape(a.outputs[0], local.rank, local.dims.data(), where_);
      local.finish();
      p = &local;
    }
    strided_copy(a.outputs[0].data, a.inputs[0].data, elem_, *p);
  }

 private:
  std::string where_;
  IntsSource starts_, ends_, axes_, steps_;
  uint32_t elem_;
  bool dynamic_ = false;
  CopyPlan plan_;
};

}  // namespace

Factory make_transpose(const Node& n, const KernelEnv& env) {
  if (n.attr(kChannelShuffleAttr)) return make_channel_shuffle(n, env);
  std::string where = check_arity(n, env, 1, 1);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  return std::make_unique<TransposeKernel>(where, n, ints_of_list(n.attr_ints("perm"), where, "perm"), elem);
}

Factory make_slice(const Node& n, const KernelEnv& env) {
  const bool attrs = n.opset < 10;
  std::string where = check_arity(n, env, attrs ? 1 : 3, attrs ? 1 : 5);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  if (attrs && (!n.attr("starts") || !n.attr("ends"))) fail_at(where, "the starts and ends attributes are required");
  if (attrs)
    return std::make_unique<SliceKernel>(where, n, IntsSource::from_attr(n, "starts", where), IntsSource::from_attr(n, "ends", where),
                                         IntsSource::from_attr(n, "axes", where), IntsSource{}, elem);
  return std::make_unique<SliceKernel>(where, n, IntsSource::from_input(n, 1, where, "starts"), IntsSource::from_input(n, 2, where, "ends"),
                                       IntsSource::from_input(n, 3, where, "axes"), IntsSource::from_input(n, 4, where, "steps"), elem);
}

}  // namespace memplan::rt::shape
