// Cast and CastLike; ConstantOfShape and Range, whose output shapes come from input values.
#include <cmath>
#include <limits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// ---- Cast ----

template <typename T>
struct Storage {
  using type = T;
};
template <>
struct Storage<BoolTag> {
  using type = uint8_t;
};
template <typename T>
using storage_t = typename Storage<T>::type;

template <typename To, typename From>
storage_t<To> convert(storage_t<From> x) {
  if constexpr (std::is_same_v<To, BoolTag>) {
    return x != 0;  // NaN is true
  } else if constexpr (std::is_same_v<From, BoolTag>) {
    return static_cast<To>(x != 0 ? 1 : 0);
  } else if constexpr (is_float_like_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(static_cast<double>(x));  // defined for NaN and out-of-range values
  } else if constexpr (is_float16_v<From>) {
    return static_cast<To>(static_cast<float>(x));  // exact; To rounds it (to nearest even) if narrower
  } else {
    return static_cast<To>(x);
  }
}

using CastTypes = Types<float, double, Float16, BFloat16, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t, BoolTag>;

// float32 to and from float16 a whole array at a time (F16C), the same values as convert().
struct HalvesFromFloats {
  Float16 operator()(float x) const { return convert<Float16, float>(x); }
  void all(const float* x, Float16* y, uint64_t n) const { halves_from_floats(x, reinterpret_cast<uint16_t*>(y), n); }
};
struct FloatsFromHalves {
  float operator()(Float16 x) const { return convert<float, Float16>(x); }
  void all(const Float16* x, float* y, uint64_t n) const { floats_from_halves(reinterpret_cast<const uint16_t*>(x), y, n); }
};

template <typename From>
Factory cast_from(DType to, const std::string& where, const Node& n) {
  Factory k;
  dispatch(to, CastTypes{}, [&](auto tag) {
    using To = decltype(tag);
    if constexpr (std::is_same_v<From, float> && std::is_same_v<To, Float16>)
      k = make_unary<float, Float16>(where, n, HalvesFromFloats{});
    else if constexpr (std::is_same_v<From, Float16> && std::is_same_v<To, float>)
      k = make_unary<Float16, float>(where, n, FloatsFromHalves{});
    else
      k = make_unary<storage_t<From>, storage_t<To>>(where, n, [](storage_t<From> x) { return convert<To, From>(x); });
  });
  return k;
}

// ---- ConstantOfShape ----

class ConstantOfShapeKernel final : public Kernel {
 public:
  ConstantOfShapeKernel(std::string where, IntsSource shape, bool dynamic, std::array<std::byte, 8> value, uint32_t elem)
      : where_(std::move(where)), shape_(shape), dynamic_(dynamic), value_(value), elem_(elem) {
    zero_ = true;
    for (uint32_t i = 0; i < elem_; ++i) zero_ = zero_ && value_[i] == std::byte{0};
  }
  void run(const KernelArgs& a) override {
    TensorView& out = a.outputs[0];
    if (dynamic_) {
      Ints scratch;
      const Ints* s = shape_.get(a, scratch, where_);
      if (!s) fail_at(where_, "the shape is missing");
      for (int i = 0; i < s->size; ++i)
        if ((*s)[i] < 0) fail_at(where_, "shape entry " + std::to_string((*s)[i]) + " is negative");
      set_shape(out, s->size, s->v.data(), where_);
    }
    const uint64_t n = out.element_count();
    if (zero_) {
      if (n) std::memset(out.data, 0, n * elem_);
      return;
    }
    for (uint64_t i = 0; i < n; ++i) std::memcpy(out.data + i * elem_, value_.data(), elem_);
  }

 private:
  std::string where_;
  IntsSource shape_;
  bool dynamic_;
  std::array<std::byte, 8> value_;
  uint32_t elem_;
  bool zero_ = true;
};

// ---- Range ----

template <typename T>
T scalar(const TensorView& t, const std::string& where) {
  if (t.element_count() != 1) fail_at(where, "start, limit and delta must be scalars");
  return *t.as<const T>();
}

template <typename T>
class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(std::string where) : where_(std::move(where)) {}
  void run(const KernelArgs& a) override {
    const T start = scalar<T>(a.inputs[0], where_), limit = scalar<T>(a.inputs[1], where_), delta = scalar<T>(a.inputs[2], where_);
    if (delta == 0) fail_at(where_, "delta is 0");
    TensorView& out = a.outputs[0];
    int64_t count = 0;
    if constexpr (std::is_floating_point_v<T>) {
      const double c = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      if (!(c < 0x1p62)) fail_at(where_, "the range is too large");
      count = c > 0 ? static_cast<int64_t>(c) : 0;
      set_shape(out, 1, &count, where_);
      T* y = out.as<T>();
      for (int64_t i = 0; i < count; ++i) y[i] = start + static_cast<T>(i) * delta;
    } else {
      int64_t diff;
      if (__builtin_sub_overflow(static_cast<int64_t>(limit), static_cast<int64_t>(start), &diff)) fail_at(where_, "the range is too large");
      if (diff != 0 && (diff > 0) == (delta > 0)) {
        const uint64_t ud = diff > 0 ? static_cast<uint64_t>(diff) : 0 - static_cast<uint64_t>(diff);
        const uint64_t ut = delta > 0 ? static_cast<uint64_t>(delta) : 0 - static_cast<uint64_t>(static_cast<int64_t>(delta));
        count = static_cast<int64_t>(ud / ut + (ud % ut != 0));
      }
      set_shape(out, 1, &count, where_);
      T* y = out.as<T>();
      for (int64_t i = 0; i < count; ++i) y[i] = static_cast<T>(static_cast<int64_t>(start) + i * static_cast<int64_t>(delta));
    }
  }

 private:
  std::string where_;
};

}  // namespace

Factory make_cast(const Node& n, const KernelEnv& env) {
  const bool like = n.op_type == "CastLike";
  std::string where = check_arity(n, env, like ? 2 : 1, like ? 2 : 1);
  const DType from = n.inputs[0]->type.dtype;
  const DType to = like ? n.inputs[1]->type.dtype : static_cast<DType>(n.attr_int("to", 0));
  if (!like && !n.attr("to")) fail_at(where, "the 'to' attribute is missing");
  if (n.outputs[0]->type.dtype != to)
    fail_at(where, "output type " + dtype_name(n.outputs[0]->type.dtype) + " differs from the target type " + dtype_name(to));
  Factory k;
  dispatch(from, CastTypes{}, [&](auto tag) { k = cast_from<decltype(tag)>(to, where, n); });
  if (!k) unsupported_at(where, "cast from " + dtype_name(from) + " to " + dtype_name(to) + " is not supported");
  return k;
}

Factory make_constant_of_shape(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  DType dtype = DType::Float32;
  std::array<std::byte, 8> value{};
  if (const Attribute* a = n.attr("value"); a && a->tensor) {
    const Tensor& t = *a->tensor;
    dtype = t.dtype;
    if (t.element_count() != 1) fail_at(where, "value must hold exactly one element");
    if (dtype == DType::String || dtype_size(dtype) == 0 || dtype_size(dtype) > 8 || t.bytes.size() < dtype_size(dtype))
      unsupported_at(where, "value of type " + dtype_name(dtype) + " is not supported");
    std::memcpy(value.data(), t.bytes.data(), dtype_size(dtype));
  }
  if (n.outputs[0]->type.dtype != dtype)
    fail_at(where, "output type " + dtype_name(n.outputs[0]->type.dtype) + " differs from the value's " + dtype_name(dtype));
  IntsSource shape = IntsSource::from_input(n, 0, where, "shape");
  return std::make_unique<ConstantOfShapeKernel>(where, shape, any_dynamic(n) || shape.runtime(), value, dtype_size(dtype));
}

Factory make_range(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  const DType t = n.inputs[0]->type.dtype;
  for (const Value* v : n.inputs)
    if (v->type.dtype != t) fail_at(where, "start, limit and delta differ in type");
  if (n.outputs[0]->type.dtype != t) fail_at(where, "output type differs from the inputs'");
  Factory k;
  dispatch(t, Types<float, double, int64_t, int32_t, int16_t>{}, [&](auto tag) { k = std::make_unique<RangeKernel<decltype(tag)>>(where); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

}  // namespace memplan::rt::shape
