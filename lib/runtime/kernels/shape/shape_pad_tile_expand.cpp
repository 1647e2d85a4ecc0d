// Pad (constant, reflect, edge), Tile and Expand.
#include <algorithm>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Pad ----

enum class PadMode { Constant, Reflect, Edge, Wrap };  // wrap: opset 19

struct PadPlan {
  int rank = 0;
  std::array<int64_t, kMaxRank> in_dims{}, out_dims{}, begin{}, in_strides{};
};

PadPlan pad_plan(const TensorView& in, const Ints* pads, PadMode mode, const std::string& where) {
  if (!pads) fail_at(where, "pads are missing");
  const int rank = in.rank;
  if (pads->size != 2 * rank)
    fail_at(where, "pads has " + std::to_string(pads->size) + " entries for an input of rank " + std::to_string(rank));
  PadPlan p;
  p.rank = rank;
  p.in_dims = in.dims;
  p.in_strides = strides_of(rank, in.dims.data());
  for (int d = 0; d < rank; ++d) {
    p.begin[d] = (*pads)[d];
    const int64_t out = in.dims[d] + (*pads)[d] + (*pads)[d + rank];
    if (out < 0) fail_at(where, "pads make dimension " + std::to_string(d) + " negative");
    if (mode != PadMode::Constant && in.dims[d] == 0 && out > 0)
      fail_at(where, "cannot pad an empty dimension in " +
                         std::string(mode == PadMode::Edge ? "edge" : mode == PadMode::Wrap ? "wrap" : "reflect") + " mode");
    p.out_dims[d] = out;
  }
  return p;
}

// The input coordinate output coordinate c reads along a dimension of n elements padded by b
// in front; -1 for the constant.
inline int64_t pad_source(int64_t c, int64_t b, int64_t n, PadMode mode) {
  int64_t x = c - b;
  if (x >= 0 && x < n) return x;
  if (mode == PadMode::Constant) return -1;
  if (mode == PadMode::Wrap) return (x % n + n) % n;  // ... 2 3 [0 1 2 3] 0 1 ...
  if (mode == PadMode::Edge || n == 1) return x < 0 ? 0 : n - 1;
  const int64_t period = 2 * (n - 1);  // reflect: ... 2 1 [0 1 2 3] 2 1 0 1 ...
  x %= period;
  if (x < 0) x += period;
  return x < n ? x : period - x;
}

template <size_t ES>
void pad_run(const PadPlan& p, PadMode mode, const std::byte* in, std::byte* out, const std::byte* value) {
  const int r = p.rank;
  if (r == 0) {
    std::memcpy(out, in, ES);
    return;
  }
  if (product(p.out_dims.data(), 0, r) == 0) return;
  const int64_t width = p.out_dims[r - 1], n = p.in_dims[r - 1], b = p.begin[r - 1];
  const int64_t lo = std::clamp<int64_t>(b, 0, width), hi = std::max(lo, std::clamp<int64_t>(b + n, 0, width));
  std::array<int64_t, kMaxRank> coord{};
  for (;;) {
    int64_t src = 0;
    bool fill_row = false;
    for (int d = 0; d < r - 1 && !fill_row; ++d) {
      const int64_t s = pad_source(coord[d], p.begin[d], p.in_dims[d], mode);
      fill_row = s < 0;
      src += s * p.in_strides[d];
    }
    if (fill_row) {
      for (int64_t c = 0; c < width; ++c) std::memcpy(out + c * ES, value, ES);
    } else {
      const std::byte* row = in + src * static_cast<int64_t>(ES);
      auto edge = [&](int64_t c) {
        const int64_t s = pad_source(c, b, n, mode);
        std::memcpy(out + c * ES, s < 0 ? value : row + s * static_cast<int64_t>(ES), ES);
      };
      for (int64_t c = 0; c < lo; ++c) edge(c);
      if (hi > lo) std::memcpy(out + lo * ES, row + (lo - b) * static_cast<int64_t>(ES), static_cast<size_t>(hi - lo) * ES);
      for (int64_t c = hi; c < width; ++c) edge(c);
    }
    out += width * ES;
    if (!next_index(coord, p.out_dims, r - 1)) return;
  }
}

// Writes v converted to dtype t into `out` (the Pad value attribute of opsets 1-10).
void store_as(DType t, double v, std::byte* out) {
  auto put = [out](auto x) { std::memcpy(out, &x, sizeof(x)); };
  // Integers: truncate, saturating to int64 (NaN -> 0), then wrap to the narrower type.
  const int64_t i = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : static_cast<int64_t>(v);
  switch (t) {
    case DType::Float32: put(static_cast<float>(v)); break;
    case DType::Float64: put(v); break;
    case DType::Int64: put(i); break;
    case DType::Int32: put(static_cast<int32_t>(i)); break;
    case DType::Int16: put(static_cast<int16_t>(i)); break;
    case DType::Int8: put(static_cast<int8_t>(i)); break;
    case DType::Uint8: put(static_cast<uint8_t>(i)); break;
    case DType::Uint16: put(static_cast<uint16_t>(i)); break;
    case DType::Uint32: put(static_cast<uint32_t>(i)); break;
    case DType::Uint64: put(static_cast<uint64_t>(i)); break;
    case DType::Bool: put(static_cast<uint8_t>(v != 0)); break;
    default: break;
  }
}

// A 4-D tensor's pads as its stored layout sees them (assign_layouts decides the layout, only for
// static shapes and constant pads): channels-last is a plain [N, H, W, C] tensor, its pads moved
// the same way; channel-blocked by b is a plain [N, C/b, H, W, b] one, padded by whole blocks of
// channels only (assign_layouts checks that b divides them).
PadPlan stored_pad_plan(const Value* x, const Ints& pads, int layout, PadMode mode, const std::string& where) {
  TensorView v = static_view(x, where);
  if (layout == 0) return pad_plan(v, &pads, mode, where);
  if (v.rank != 4 || pads.size != 8) fail_internal(where + ": a padded " + std::to_string(v.rank) + "-D tensor stored channels-last or blocked");
  Ints stored;
  if (layout == Value::kChannelsLast) {
    static constexpr int kFrom[] = {0, 2, 3, 1};  // NHWC axis -> its NCHW axis
    TensorView nhwc = v;
    stored.size = 8;
    for (int d = 0; d < 4; ++d) {
      nhwc.dims[d] = v.dims[kFrom[d]];
      stored.v[d] = pads[kFrom[d]];
      stored.v[d + 4] = pads[kFrom[d] + 4];
    }
    return pad_plan(nhwc, &stored, mode, where);
  }
  const int64_t b = layout;
  if (mode != PadMode::Constant || pads[1] % b != 0 || pads[5] % b != 0 || v.dims[1] % b != 0)
    fail_internal(where + ": channel pads that blocks of " + std::to_string(b) + " do not divide");
  for (int d : {0, 2, 3})
    if (pads[d] != 0 || pads[d + 4] != 0) fail_internal(where + ": a blocked tensor padded outside its channels");
  TensorView blocked = v;
  blocked.rank = 5;
  blocked.dims = {v.dims[0], v.dims[1] / b, v.dims[2], v.dims[3], b};
  stored.size = 10;
  stored.v[1] = pads[1] / b;
  stored.v[6] = pads[5] / b;
  return pad_plan(blocked, &stored, mode, where);
}

class PadKernel final : public Kernel {
 public:
  PadKernel(std::string where, const Node& n, PadMode mode, IntsSource pads, int value_input, std::array<std::byte, 8> value, uint32_t elem)
      : where_(std::move(where)), mode_(mode), pads_(pads), value_input_(value_input), value_(value), elem_(elem) {
    dynamic_ = any_dynamic(n) || pads_.runtime();
    const int layout = n.outputs[0]->channel_block;
    if (layout != n.inputs[0]->channel_block) fail_internal(where_ + ": the input and the output are stored in different layouts");
    if (layout != 0 && (dynamic_ || !pads_.fixed())) fail_internal(where_ + ": a tensor padded in its stored layout needs fixed pads");
    if (!dynamic_) plan_ = layout ? stored_pad_plan(n.inputs[0], *pads_.fixed(), layout, mode_, where_)
                                  : pad_plan(static_view(n.inputs[0], where_), pads_.fixed(), mode_, where_);
  }
  void run(const KernelArgs& a) override {
    const PadPlan* p = &plan_;
    PadPlan local;
    if (dynamic_) {
      Ints scratch;
      local = pad_plan(a.inputs[0], pads_.get(a, scratch, where_), mode_, where_);
      set_shape(a.outputs[0], local.rank, local.out_dims.data(), where_);
      p = &local;
    }
    std::array<std::byte, 8> value = value_;
    if (value_input_ >= 0 && static_cast<size_t>(value_input_) < a.inputs.size()) {
      const TensorView& v = a.inputs[value_input_];
      if (v.data && v.element_count() > 0) std::memcpy(value.data(), v.data, elem_);
    }
    dispatch_size(elem_, [&](auto es) { pad_run<decltype(es)::value>(*p, mode_, a.inputs[0].data, a.outputs[0].data, value.data()); });
  }

 private:
  std::string where_;
  PadMode mode_;
  IntsSource pads_;
  int value_input_;
  std::array<std::byte, 8> value_;
  uint32_t elem_;
  bool dynamic_ = false;
  PadPlan plan_;
};

// ---- Tile ----

void tile_plan(const TensorView& in, const Ints* reps, CopyPlan& plan, std::array<int64_t, kMaxRank>& out_dims, const std::string& where) {
  if (!reps) fail_at(where, "repeats are missing");
  const int rank = in.rank;
  if (reps->size != rank)
    fail_at(where, "repeats has " + std::to_string(reps->size) + " entries for an input of rank " + std::to_string(rank));
  const auto strides = strides_of(rank, in.dims.data());
  plan = CopyPlan{};
  plan.rank = 2 * rank;  // each dim d as [repeat, d]: the repeat walks with stride 0
  for (int d = 0; d < rank; ++d) {
    if ((*reps)[d] < 0) fail_at(where, "repeat " + std::to_string((*reps)[d]) + " is negative");
    plan.dims[2 * d] = (*reps)[d];
    plan.strides[2 * d] = 0;
    plan.dims[2 * d + 1] = in.dims[d];
    plan.strides[2 * d + 1] = strides[d];
    out_dims[d] = in.dims[d] * (*reps)[d];
  }
  plan.finish();
}

// ---- Expand ----

void expand_plan(const TensorView& in, const Ints* shape, CopyPlan& plan, int& out_rank, std::array<int64_t, kMaxRank>& out_dims,
                 const std::string& where) {
  if (!shape) fail_at(where, "the shape is missing");
  check_rank(shape->size, where);
  TensorView target;
  target.rank = shape->size;
  for (int i = 0; i < shape->size; ++i) {
    if ((*shape)[i] < 0) fail_at(where, "shape entry " + std::to_string((*shape)[i]) + " is negative");
    target.dims[i] = (*shape)[i];
  }
  const TensorView* both[] = {&in, &target};
  const Broadcast b = make_broadcast(both, 2, where);
  out_rank = b.out_rank;
  out_dims = b.out_dims;
  const auto strides = strides_of(in.rank, in.dims.data());
  plan = CopyPlan{};
  plan.rank = out_rank;
  for (int i = 0; i < out_rank; ++i) {
    const int j = i - (out_rank - in.rank);
    plan.dims[i] = out_dims[i];
    plan.strides[i] = j < 0 || in.dims[j] == 1 ? 0 : strides[j];
  }
  plan.finish();
}

enum class CopyOp { Tile, Expand };

class TileExpandKernel final : public Kernel {
 public:
  TileExpandKernel(std::string where, const Node& n, CopyOp op, IntsSource list, uint32_t elem)
      : where_(std::move(where)), op_(op), list_(list), elem_(elem) {
    dynamic_ = any_dynamic(n) || list_.runtime();
    if (!dynamic_) {
      int rank;
      std::array<int64_t, kMaxRank> dims;
      make_plan(static_view(n.inputs[0], where_), list_.fixed(), plan_, rank, dims);
      const TensorView out = static_view(n.outputs[0], where_);
      if (out.rank != rank || !std::equal(dims.begin(), dims.begin() + rank, out.dims.begin()))
        fail_at(where_, "the output shape " + n.outputs[0]->type.shape_string() + " does not match the computed shape");
    }
  }
  void run(const KernelArgs& a) override {
    const CopyPlan* p = &plan_;
    CopyPlan local;
    if (dynamic_) {
      Ints scratch;
      int rank;
      std::array<int64_t, kMaxRank> dims;
      make_plan(a.inputs[0], list_.get(a, scratch, where_), local, rank, dims);
      set_shape(a.outputs[0], rank, dims.data(), where_);
      p = &local;
    }
    strided_copy(a.outputs[0].data, a.inputs[0].data, elem_, *p);
  }

 private:
  void make_plan(const TensorView& in, const Ints* list, CopyPlan& plan, int& rank, std::array<int64_t, kMaxRank>& dims) const {
    if (op_ == CopyOp::Tile) {
      tile_plan(in, list, plan, dims, where_);
      rank = in.rank;
    } else {
      expand_plan(in, list, plan, rank, dims, where_);
    }
  }

  std::string where_;
  CopyOp op_;
  IntsSource list_;
  uint32_t elem_;
  bool dynamic_ = false;
  CopyPlan plan_;
};

}  // namespace

Factory make_pad(const Node& n, const KernelEnv& env) {
  const bool inputs = n.opset >= 11;
  std::string where = check_arity(n, env, inputs ? 2 : 1, inputs ? 3 : 1);
  const DType dtype = n.inputs[0]->type.dtype;
  const uint32_t elem = movable_size(dtype, where);
  const std::string mode_name = n.attr_string("mode", "constant");
  PadMode mode = PadMode::Constant;
  if (mode_name == "constant") mode = PadMode::Constant;
  else if (mode_name == "reflect") mode = PadMode::Reflect;
  else if (mode_name == "edge") mode = PadMode::Edge;
  else if (mode_name == "wrap") mode = PadMode::Wrap;
  else unsupported_at(where, "mode '" + mode_name + "' is not supported");
  std::array<std::byte, 8> value{};
  int value_input = -1;
  IntsSource pads;
  if (inputs) {
    pads = IntsSource::from_input(n, 1, where, "pads");
    if (const Value* v = input_at(n, 2)) {
      if (v->type.dtype != dtype) fail_at(where, "constant_value type " + dtype_name(v->type.dtype) + " differs from the data's");
      if (v->constant && v->constant->element_count() > 0) std::memcpy(value.data(), v->constant->bytes.data(), elem);
      else if (!v->constant) value_input = 2;
    }
  } else {
    pads = IntsSource::from_attr(n, n.opset < 2 ? "paddings" : "pads", where);
    if (!pads.present()) fail_at(where, "the pads attribute is missing");
    store_as(dtype, n.attr_float("value", 0.0f), value.data());
  }
  return std::make_unique<PadKernel>(where, n, mode, pads, value_input, value, elem);
}

Factory make_tile(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  if (n.opset < 6) unsupported_at(where, "opset " + std::to_string(n.opset) + " is not supported");
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  return std::make_unique<TileExpandKernel>(where, n, CopyOp::Tile, IntsSource::from_input(n, 1, where, "repeats"), elem);
}

Factory make_expand(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  const uint32_t elem = movable_size(n.inputs[0]->type.dtype, where);
  return std::make_unique<TileExpandKernel>(where, n, CopyOp::Expand, IntsSource::from_input(n, 1, where, "shape"), elem);
}

}  // namespace memplan::rt::shape
