// QuantizeLinear, DequantizeLinear (opsets 10 and 13: per tensor, or per channel along `axis`)
// and DynamicQuantizeLinear, on uint8 / int8. Plain loops; scales and zero points are read at run
// time, constant or not.
#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>

#include "ir/fused_dequantize.h"
#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/quantized/factories.h"
#include "runtime/kernels/quantized/quantize_common.h"
#include "runtime/kernels/quantized/quantize_loops.h"

namespace memplan::rt::quant {

using shape::fail_at;
using shape::unsupported_at;

bool quant_range(DType t, QRange& r) {
  switch (t) {
    case DType::Uint8: r = {0, 255}; return true;
    case DType::Int8: r = {-128, 127}; return true;
    case DType::Int32: r = {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}; return true;
    default: return false;
  }
}

Param param(const KernelArgs& a, size_t k, uint64_t channels, DType dtype, const std::string& where, const char* what) {
  Param p;
  if (k >= a.inputs.size() || !a.inputs[k].data) return p;
  p.v = &a.inputs[k];
  p.count = p.v->element_count();
  if (dtype != DType::Undefined && p.v->dtype != dtype)
    fail_at(where, std::string(what) + " is " + dtype_name(p.v->dtype) + ", expected " + dtype_name(dtype));
  if (p.v->rank > 1 || (p.count != 1 && (channels == 0 || p.count != channels)))
    fail_at(where, std::string(what) + " has " + std::to_string(p.count) + " values in " + std::to_string(p.v->rank) +
                       " dims; expected 1" + (channels ? " or " + std::to_string(channels) + " in one dim" : std::string()));
  return p;
}

DType quant_type(const Value* v, const std::string& where, const char* what) {
  const DType t = v ? v->type.dtype : DType::Uint8;
  if (t != DType::Uint8 && t != DType::Int8)
    unsupported_at(where, std::string(what) + " of type " + dtype_name(t) + " is not supported (uint8, int8)");
  return t;
}

namespace {

class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(const Node& n, std::string where, bool dequantize, DType q)
      : where_(std::move(where)), dequantize_(dequantize), q_(q), opset13_(n.opset >= 13),
        axis_attr_(n.attr_int("axis", 1)) {
    quant_range(q, range_);
  }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    shape::set_shape_like(y, x, where_);
    // The axis matters only for a per-channel scale (opset 13; more than one value).
    const bool per_channel = opset13_ && a.inputs.size() > 1 && a.inputs[1].element_count() != 1;
    const int axis = per_channel ? shape::normalize_axis(axis_attr_, x.rank, where_) : -1;
    const shape::AxisSplit s = axis >= 0 ? shape::split_at(x, axis) : shape::AxisSplit{1, 1, x.element_count()};
    const uint64_t channels = axis >= 0 ? static_cast<uint64_t>(s.extent) : 0;
    const Param scale = param(a, 1, channels, DType::Float32, where_, "the scale");
    if (!scale.v) fail_at(where_, "the scale is missing");
    const Param zero = param(a, 2, channels, dequantize_ ? x.dtype : q_, where_, "the zero point");
    if (zero.v && zero.count != scale.count) fail_at(where_, "the scale and the zero point differ in size");
    if (dequantize_ && x.dtype == DType::Int32 && zero.v)
      for (uint64_t c = 0; c < zero.count; ++c)
        if (zero.zero(c) != 0) fail_at(where_, "an int32 input needs a zero point of 0");
    uint64_t i = 0;
    for (uint64_t o = 0; o < s.outer; ++o)
      for (int64_t c = 0; c < std::max<int64_t>(s.extent, 0); ++c) {
        const float sc = scale.scale(static_cast<uint64_t>(c));
        const int32_t zp = zero.zero(static_cast<uint64_t>(c));
        // 8-bit rows (every row of a per-tensor Q/DQ) go through the vectorized loops.
        const bool eight_bit = (dequantize_ ? x.dtype : q_) == DType::Uint8 || (dequantize_ ? x.dtype : q_) == DType::Int8;
        if (eight_bit && (dequantize_ || x.dtype == DType::Float32)) {
          const auto* bytes = static_cast<const std::byte*>(x.data) + i;
          const float* floats = dequantize_ ? nullptr : x.as<const float>() + i;
          auto* out = dequantize_ ? nullptr : static_cast<std::byte*>(y.data) + i;
          float* out_floats = dequantize_ ? y.as<float>() + i : nullptr;
          const bool is_signed = x.dtype == DType::Int8;
          parallel_chunks(s.inner, kParallelChunkBytes, [&](uint64_t b, uint64_t e) {
            if (dequantize_) dequantize_row(bytes + b, is_signed, e - b, zp, sc, out_floats + b);
            else quantize_row(floats + b, e - b, sc, zp, range_.lo, range_.hi, out + b);
          });
          i += s.inner;
          continue;
        }
        for (uint64_t k = 0; k < s.inner; ++k, ++i) {
          if (dequantize_) {
            y.as<float>()[i] = static_cast<float>(static_cast<int64_t>(qint_at(x, i)) - zp) * sc;
          } else {
            const float v = x.dtype == DType::Int32 ? static_cast<float>(x.as<const int32_t>()[i]) : x.as<const float>()[i];
            qstore(y, i, saturate_round(v / sc, zp, range_));
          }
        }
      }
  }

 private:
  std::string where_;
  bool dequantize_;
  DType q_;
  bool opset13_;
  int64_t axis_attr_;
  QRange range_;
};

// QuantizeLinear(DequantizeLinear(x)) per tensor (ir/fused_dequantize.h's memplan_requantize):
// the unfused kernels' two vectorized row loops over a stretch of x at a time, through a float32
// row on the stack instead of a tensor in the arena, so the same bytes.
class RequantizeKernel final : public Kernel {
 public:
  RequantizeKernel(const Node& n, const std::string& at)
      : where_(at), is_signed_(n.inputs[0]->type.dtype == DType::Int8) {
    auto scalar = [&](size_t k, const char* what) {
      const Value* v = input_at(n, k);
      if (!v || !v->constant || v->constant->element_count() != 1)
        fail_at(at, std::string(what) + " must be a one-value constant to requantize");
      return v->constant->float_at(0);
    };
    y_scale_ = static_cast<float>(scalar(1, "the scale"));
    y_zero_ = static_cast<int32_t>(scalar(2, "the zero point"));
    x_scale_ = static_cast<float>(scalar(kRequantizeScaleInput, "the input's scale"));
    x_zero_ = static_cast<int32_t>(scalar(kRequantizeZeroInput, "the input's zero point"));
    quant_range(quant_type(n.outputs[0], at, "the output"), range_);
  }

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    shape::set_shape_like(a.outputs[0], x, where_);
    const std::byte* in = x.data;
    std::byte* out = a.outputs[0].data;
    parallel_chunks(x.element_count(), kParallelChunkBytes, [&](uint64_t begin, uint64_t end) {
      float row[1024];
      for (uint64_t i = begin; i < end; i += std::size(row)) {
        const uint64_t k = std::min<uint64_t>(std::size(row), end - i);
        dequantize_row(in + i, is_signed_, k, x_zero_, x_scale_, row);
        quantize_row(row, k, y_scale_, y_zero_, range_.lo, range_.hi, out + i);
      }
    });
  }

 private:
  std::string where_;
  bool is_signed_;
  float x_scale_ = 1, y_scale_ = 1;
  int32_t x_zero_ = 0, y_zero_ = 0;
  QRange range_;
};

// DequantizeLinear(a) + DequantizeLinear(b) -> QuantizeLinear per tensor (ir/fused_dequantize.h's
// memplan_quantized Add): the unfused kernels' row loops and a float32 add, over a stretch of the
// tensors at a time, through float32 rows on the stack, so the same bytes.
class QuantizedAddKernel final : public Kernel {
 public:
  QuantizedAddKernel(const Node& n, const std::string& at) : where_(at) {
    auto scalar = [&](size_t k) {
      const Value* v = input_at(n, k);
      if (!v || !v->constant || v->constant->element_count() != 1)
        fail_at(at, "the scales and zero points must be one-value constants to add 8-bit values");
      return v->constant->float_at(0);
    };
    for (int k = 0; k < 2; ++k) {
      signed_[k] = quant_type(n.inputs[static_cast<size_t>(k)], at, "an input") == DType::Int8;
      scale_[k] = static_cast<float>(scalar(kAddScaleInput + 2 * static_cast<size_t>(k)));
      zero_[k] = static_cast<int32_t>(scalar(kAddScaleInput + 2 * static_cast<size_t>(k) + 1));
    }
    y_scale_ = static_cast<float>(scalar(kAddScaleInput + 4));
    y_zero_ = static_cast<int32_t>(scalar(kAddScaleInput + 5));
    quant_range(quant_type(n.outputs[0], at, "the output"), range_);
  }

  // Each stretch of both inputs is read into rows before its output is written: either input's
  // bytes may hold the output.
  bool may_overwrite_input(size_t input) const override { return input < 2; }

  void run(const KernelArgs& args) override {
    const TensorView& a = args.inputs[0];
    const TensorView& b = args.inputs[1];
    if (a.element_count() != b.element_count()) fail_at(where_, "the two inputs differ in size");
    shape::set_shape_like(args.outputs[0], a, where_);
    std::byte* out = args.outputs[0].data;
    parallel_chunks(a.element_count(), kParallelChunkBytes, [&](uint64_t begin, uint64_t end) {
      float x[512], z[512];
      for (uint64_t i = begin; i < end; i += std::size(x)) {
        const uint64_t k = std::min<uint64_t>(std::size(x), end - i);
        dequantize_row(a.data + i, signed_[0], k, zero_[0], scale_[0], x);
        dequantize_row(b.data + i, signed_[1], k, zero_[1], scale_[1], z);
#pragma omp simd
        for (uint64_t j = 0; j < k; ++j) x[j] += z[j];
        quantize_row(x, k, y_scale_, y_zero_, range_.lo, range_.hi, out + i);
      }
    });
  }

 private:
  std::string where_;
  bool signed_[2] = {false, false};
  float scale_[2] = {1, 1}, y_scale_ = 1;
  int32_t zero_[2] = {0, 0}, y_zero_ = 0;
  QRange range_;
};

}  // namespace

std::unique_ptr<Kernel> make_quantized_add(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, kAddScaleInput + 6, kAddScaleInput + 6);
  return std::make_unique<QuantizedAddKernel>(n, at);
}

std::unique_ptr<Kernel> make_quantize(const Node& n, const KernelEnv& env) {
  if (n.attr_int(kRequantizeAttr, 0) != 0) {
    const std::string at = check_arity(n, env, kRequantizeZeroInput + 1, kRequantizeZeroInput + 1);
    quant_type(n.inputs[0], at, "the input");
    return std::make_unique<RequantizeKernel>(n, at);
  }
  const std::string at = check_arity(n, env, 2, 3);
  const DType x = n.inputs[0]->type.dtype;
  if (x != DType::Float32 && x != DType::Int32)
    unsupported_at(at, "input of type " + dtype_name(x) + " is not supported (float32, int32)");
  const DType q = quant_type(input_at(n, 2), at, "the zero point");
  if (n.outputs[0]->type.dtype != q) fail_at(at, "the output type differs from the zero point's");
  return std::make_unique<QuantizeKernel>(n, at, false, q);
}

std::unique_ptr<Kernel> make_dequantize(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, 2, 3);
  const DType x = n.inputs[0]->type.dtype;
  QRange r;
  if (!quant_range(x, r)) unsupported_at(at, "input of type " + dtype_name(x) + " is not supported (uint8, int8, int32)");
  if (n.outputs[0]->type.dtype != DType::Float32) unsupported_at(at, "only a float32 output is supported");
  return std::make_unique<QuantizeKernel>(n, at, true, x);
}

namespace {

// y = saturate(round(x / scale) + zp) with scale and zp chosen so that [min(x, 0), max(x, 0)]
// spans uint8.
class DynamicQuantizeKernel final : public Kernel {
 public:
  explicit DynamicQuantizeKernel(std::string where) : where_(std::move(where)) {}
  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    shape::set_shape_like(a.outputs[0], x, where_);
    const float* in = x.as<const float>();
    const uint64_t n = x.element_count();
    // The range of x in chunks on the run's threads: min and max of the chunks' are x's, exactly.
    constexpr int kParts = 64;
    std::array<float, kParts> los{}, his{};
    std::array<uint8_t, kParts> finite{};
    finite.fill(1);
    parallel_chunks(n, kParallelChunkBytes / sizeof(float), [&](uint64_t begin, uint64_t end) {
      const auto t = static_cast<size_t>(omp_get_thread_num());
      if (!min_max(in + begin, end - begin, los[t], his[t])) finite[t] = 0;  // a thread may take two chunks
    }, kParts);
    float lo = 0, hi = 0;
    for (int t = 0; t < kParts; ++t) {
      if (!finite[static_cast<size_t>(t)]) fail_at(where_, "the input holds NaN");
      lo = std::min(lo, los[static_cast<size_t>(t)]);
      hi = std::max(hi, his[static_cast<size_t>(t)]);
    }
    const QRange r{0, 255};
    const float scale = (hi - lo) / 255.f;
    // All zeros: any scale works; 0 would divide by zero, so every output is the zero point 0.
    const int32_t zp = scale > 0 ? saturate_round((0.f - lo) / scale, 0, r) : 0;
    uint8_t* y = a.outputs[0].as<uint8_t>();
    if (scale > 0 && std::isfinite(scale)) {
      parallel_chunks(n, kParallelChunkBytes / sizeof(float), [&](uint64_t begin, uint64_t end) {
        quantize_row(in + begin, end - begin, scale, zp, 0, 255, y + begin);
      });
    } else {  // all zeros, or an infinity in x (x / inf may be NaN: saturate_round's rule)
      for (uint64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(scale > 0 ? saturate_round(in[i] / scale, zp, r) : 0);
    }
    if (a.outputs.size() > 1 && a.outputs[1].data) a.outputs[1].as<float>()[0] = scale;
    if (a.outputs.size() > 2 && a.outputs[2].data) a.outputs[2].as<uint8_t>()[0] = static_cast<uint8_t>(zp);
  }

 private:
  std::string where_;
};

}  // namespace

std::unique_ptr<Kernel> make_dynamic_quantize(const Node& n, const KernelEnv& env) {
  const std::string at = check_arity(n, env, 1, 1);
  if (n.inputs[0]->type.dtype != DType::Float32)
    unsupported_at(at, "input of type " + dtype_name(n.inputs[0]->type.dtype) + " is not supported (float32)");
  return std::make_unique<DynamicQuantizeKernel>(at);
}

}  // namespace memplan::rt::quant
