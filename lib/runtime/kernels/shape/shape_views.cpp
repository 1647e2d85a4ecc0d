// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (inference): the bytes do not change,
// only the shape. Copies here; nothing at all when the planner made the output alias the input.
// Also Shape and Size, which read only the input's shape.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "ir/float16.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

enum class ViewOp { Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout };

struct ViewParams {
  ViewOp op = ViewOp::Identity;
  bool allowzero = false;  // Reshape
  int64_t axis = 1;        // Flatten
};

// The output shape of a view op from the input shape and its integer list (shape or axes).
void view_shape(const ViewParams& p, const TensorView& in, const Ints* list, int& rank, std::array<int64_t, kMaxRank>& dims,
                const std::string& where) {
  switch (p.op) {
    case ViewOp::Identity:
    case ViewOp::Dropout:
      rank = in.rank;
      dims = in.dims;
      return;
    case ViewOp::Flatten: {
      const int64_t axis = p.axis < 0 ? p.axis + in.rank : p.axis;
      if (axis < 0 || axis > in.rank) fail_at(where, "axis " + std::to_string(p.axis) + " is out of range for rank " + std::to_string(in.rank));
      rank = 2;
      dims[0] = static_cast<int64_t>(product(in.dims.data(), 0, static_cast<int>(axis)));
      dims[1] = static_cast<int64_t>(product(in.dims.data(), static_cast<int>(axis), in.rank));
      return;
    }
    case ViewOp::Reshape: {
      if (!list) fail_at(where, "the shape input is missing");
      check_rank(list->size, where);
      rank = list->size;
      int infer_at = -1;
      uint64_t known = 1;
      for (int i = 0; i < rank; ++i) {
        int64_t d = (*list)[i];
        if (d == 0 && !p.allowzero) {
          if (i >= in.rank) fail_at(where, "shape entry " + std::to_string(i) + " is 0 but the input has rank " + std::to_string(in.rank));
          d = in.dims[i];
        }
        if (d == -1) {
          if (infer_at >= 0) fail_at(where, "the shape has more than one -1");
          infer_at = i;
        } else if (d < 0) {
          fail_at(where, "invalid shape entry " + std::to_string(d));
        } else if (__builtin_mul_overflow(known, static_cast<uint64_t>(d), &known)) {
          fail_at(where, "the shape's size overflows 64 bits");
        }
        dims[i] = d;
      }
      const uint64_t count = in.element_count();
      if (infer_at >= 0) {
        if (known == 0 || count % known != 0)
          fail_at(where, "cannot infer the -1 entry: " + std::to_string(count) + " elements do not divide by " + std::to_string(known));
        dims[infer_at] = static_cast<int64_t>(count / known);
        known = count;
      }
      if (known != count)
        fail_at(where, "cannot reshape " + std::to_string(count) + " elements into " + std::to_string(known));
      return;
    }
    case ViewOp::Squeeze: {
      std::array<bool, kMaxRank> drop{};
      if (!list || list->size == 0) {
        for (int i = 0; i < in.rank; ++i) drop[i] = in.dims[i] == 1;
      } else {
        for (int k = 0; k < list->size; ++k) {
          const int a = normalize_axis((*list)[k], in.rank, where);
          if (in.dims[a] != 1)
            fail_at(where, "cannot squeeze axis " + std::to_string((*list)[k]) + " of size " + std::to_string(in.dims[a]));
          drop[a] = true;
        }
      }
      rank = 0;
      for (int i = 0; i < in.rank; ++i)
        if (!drop[i]) dims[rank++] = in.dims[i];
      return;
    }
    case ViewOp::Unsqueeze: {
      if (!list) fail_at(where, "axes are missing");
      rank = in.rank + list->size;
      check_rank(rank, where);
      std::array<bool, kMaxRank> added{};
      for (int k = 0; k < list->size; ++k) {
        const int a = normalize_axis((*list)[k], rank, where);
        if (added[a]) fail_at(where, "axis " + std::to_string((*list)[k]) + " is repeated");
        added[a] = true;
      }
      for (int i = 0, j = 0; i < rank; ++i) dims[i] = added[i] ? 1 : in.dims[j++];
      return;
    }
  }
}

// Dropout in training mode drops nothing at ratio 0: the identity, its mask all true (torch
// exports `F.dropout(p=0.0)` so, training=True by default). Any other ratio would need random
// masks: refused, as the ratio the ONNX default gives (0.5) when none is given.
void check_training_ratio(std::optional<double> ratio, const std::string& where) {
  if (ratio && *ratio == 0) return;
  char given[32] = "0.5 (the default)";
  if (ratio) std::snprintf(given, sizeof given, "%g", *ratio);
  unsupported_at(where, std::string("training mode with ratio ") + given +
                            " is not supported (inference only; ratio 0 runs as the identity)");
}

double ratio_of(const TensorView& t, const std::string& where) {
  if (t.element_count() != 1) fail_at(where, "the ratio must be a scalar");
  switch (t.dtype) {
    case DType::Float32: return *t.as<const float>();
    case DType::Float64: return *t.as<const double>();
    case DType::Float16: return half_to_float(*t.as<const uint16_t>());
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

class ViewKernel final : public Kernel {
 public:
  ViewKernel(std::string where, ViewParams p, IntsSource list, bool dynamic, int training_input, DType mask_dtype)
      : where_(std::move(where)), p_(p), list_(list), dynamic_(dynamic), training_input_(training_input), mask_dtype_(mask_dtype) {}

  int view_of() const override { return 0; }

  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    TensorView& out = a.outputs[0];
    if (training_input_ >= 0 && static_cast<size_t>(training_input_) < a.inputs.size()) {
      const TensorView& t = a.inputs[training_input_];
      if (t.data && t.element_count() > 0 && *t.as<const uint8_t>() != 0) {
        const TensorView* ratio = a.inputs.size() > 1 && a.inputs[1].data ? &a.inputs[1] : nullptr;
        check_training_ratio(ratio ? std::optional<double>(ratio_of(*ratio, where_)) : std::nullopt, where_);
      }
    }
    if (dynamic_) {
      Ints scratch;
      int rank = 0;
      std::array<int64_t, kMaxRank> dims{};
      view_shape(p_, in, list_.get(a, scratch, where_), rank, dims, where_);
      set_shape(out, rank, dims.data(), where_);
    }
    const uint64_t bytes = in.byte_size();
    if (out.data != in.data) {
      check_fits(bytes, out, where_);
      if (bytes) std::memmove(out.data, in.data, bytes);
    }
    if (mask_dtype_ != DType::Undefined && a.outputs.size() > 1 && a.outputs[1].data) fill_mask(a.outputs[1], in);
  }

 private:
  void fill_mask(TensorView& mask, const TensorView& in) const {
    if (dynamic_) set_shape_like(mask, in, where_);
    const uint64_t n = in.element_count();
    if (mask_dtype_ == DType::Float32) std::fill_n(mask.as<float>(), n, 1.0f);
    else if (mask_dtype_ == DType::Float64) std::fill_n(mask.as<double>(), n, 1.0);
    else std::memset(mask.data, 1, n);
  }

  std::string where_;
  ViewParams p_;
  IntsSource list_;
  bool dynamic_;
  int training_input_;
  DType mask_dtype_;
};

}  // namespace

Factory make_view(const Node& n, const KernelEnv& env) {
  ViewParams p;
  const std::string& op = n.op_type;
  IntsSource list;
  int training_input = -1;
  DType mask_dtype = DType::Undefined;
  size_t max_inputs = 1;
  std::string where = rt::where(n, env);
  if (op == "Reshape") {
    p.op = ViewOp::Reshape;
    p.allowzero = n.attr_int("allowzero", 0) != 0;
    max_inputs = 2;
    list = n.opset < 5 ? IntsSource::from_attr(n, "shape", where) : IntsSource::from_input(n, 1, where, "shape");
    if (!list.present()) fail_at(where, "the shape is missing");
  } else if (op == "Flatten") {
    p.op = ViewOp::Flatten;
    p.axis = n.attr_int("axis", 1);
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    p.op = op == "Squeeze" ? ViewOp::Squeeze : ViewOp::Unsqueeze;
    max_inputs = n.opset >= 13 ? 2 : 1;
    list = n.opset >= 13 ? IntsSource::from_input(n, 1, where, "axes") : IntsSource::from_attr(n, "axes", where);
    if (p.op == ViewOp::Unsqueeze && !list.present()) fail_at(where, "axes are missing");
  } else if (op == "Identity") {
    p.op = ViewOp::Identity;
  } else if (op == "Dropout") {
    p.op = ViewOp::Dropout;
    max_inputs = 3;
    if (const Value* mask = output_at(n, 1)) {
      mask_dtype = mask->type.dtype;
      if (mask_dtype != DType::Bool && mask_dtype != DType::Uint8 && mask_dtype != DType::Float32 && mask_dtype != DType::Float64)
        unsupported_at(where, "mask of type " + dtype_name(mask_dtype) + " is not supported");
    }
    if (const Value* t = input_at(n, 2)) {
      if (t->constant) {
        const Value* r = input_at(n, 1);
        if (t->constant->element_count() > 0 && t->constant->int_at(0) != 0 && !(r && !r->constant))
          check_training_ratio(r ? std::optional<double>(r->constant->float_at(0)) : std::nullopt, where);
        if (r && !r->constant) training_input = 2;  // the ratio is read on each run
      } else {
        training_input = 2;
      }
    }
  } else {
    return nullptr;
  }
  where = check_arity(n, env, 1, max_inputs);
  const Value* in = n.inputs[0];
  const Value* out = n.outputs[0];
  if (out->type.dtype != in->type.dtype)
    fail_at(where, "output type " + dtype_name(out->type.dtype) + " differs from input type " + dtype_name(in->type.dtype));
  movable_size(in->type.dtype, where);
  const bool dynamic = any_dynamic(n) || list.runtime();
  if (!dynamic) {  // validate once at load
    int rank = 0;
    std::array<int64_t, kMaxRank> dims{};
    view_shape(p, static_view(in, where), list.fixed(), rank, dims, where);
    const TensorView o = static_view(out, where);
    if (rank != o.rank || !std::equal(dims.begin(), dims.begin() + rank, o.dims.begin()))
      fail_at(where, "the output shape " + out->type.shape_string() + " does not match the computed shape");
  }
  return std::make_unique<ViewKernel>(where, p, list, dynamic, training_input, mask_dtype);
}

namespace {

class ShapeKernel final : public Kernel {
 public:
  ShapeKernel(std::string where, int64_t start, int64_t end) : where_(std::move(where)), start_(start), end_(end) {}
  void run(const KernelArgs& a) override {
    const TensorView& in = a.inputs[0];
    TensorView& out = a.outputs[0];
    const int64_t rank = in.rank;
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    const int64_t b = clamp(start_), e = std::max(b, clamp(end_));
    const int64_t len = e - b;
    set_shape(out, 1, &len, where_);
    for (int64_t i = 0; i < len; ++i) out.as<int64_t>()[i] = in.dims[b + i];
  }

 private:
  std::string where_;
  int64_t start_, end_;
};

class SizeKernel final : public Kernel {
 public:
  explicit SizeKernel(std::string where) : where_(std::move(where)) {}
  void run(const KernelArgs& a) override {
    TensorView& out = a.outputs[0];
    set_shape(out, 0, nullptr, where_);
    *out.as<int64_t>() = static_cast<int64_t>(a.inputs[0].element_count());
  }

 private:
  std::string where_;
};

void check_int64_output(const Node& n, const std::string& where) {
  if (n.outputs[0]->type.dtype != DType::Int64) fail_at(where, "output must be int64");
}

}  // namespace

Factory make_shape_of(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  check_int64_output(n, where);
  return std::make_unique<ShapeKernel>(where, n.attr_int("start", 0), n.attr_int("end", INT64_MAX));
}

Factory make_size(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  check_int64_output(n, where);
  return std::make_unique<SizeKernel>(where);
}

}  // namespace memplan::rt::shape
