// memplan's own pooling loop, for the pools ir/window_pool.h names: LpPool, MaxPool with its
// Indices output, and MaxPool and AveragePool with dilations. Plain tensors [N, C, spatial...],
// 1 to 3 spatial axes; one plane of one channel at a time, the planes' rows split over the
// run's threads, each output line of the last axis built from whole input lines (pool_lines).
//
// The window of output o along an axis reads input c = o * stride - pad_begin + k * dilation for
// k < kernel; the taps with c inside the input form one range of k, found once per output
// position and axis when the kernel is made. Padding never takes part. As ONNX Runtime computes
// them:
// - MaxPool: the largest tap, the first of equal ones for the index (storage_order 1 counts the
//   spatial axes column-major); a window wholly in the padding gives the type's lowest value and
//   index 0.
// - AveragePool: the sum over the taps divided by their count, or with count_include_pad by the
//   taps that fall inside the explicitly padded input (a ceil_mode window that runs past the end
//   padding counts only up to it); a window wholly in the padding gives 0.
// - LpPool: (sum of |x|^p) ^ (1 / p) over the taps.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/window_pool.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/line_ops.h"
#include "runtime/kernels/dnnl/factories.h"

namespace memplan::rt::dnnl_kernels {
namespace {

constexpr size_t kMaxSpatial = 3;

enum class PoolKind { Max, Average, Lp };

// Along one axis, for each output position: the first tap and one past the last whose input
// position lies inside the input, and the taps count_include_pad divides by.
struct AxisTaps {
  std::vector<int64_t> first, end, padded_count;
};

AxisTaps axis_taps(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                   int64_t pad_end) {
  AxisTaps t;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    // k * dilation >= -start, and start + k * dilation <= in - 1.
    const int64_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
    const int64_t end = start > in - 1 ? 0 : std::min(kernel, (in - 1 - start) / dilation + 1);
    t.first.push_back(std::min(first, kernel));
    t.end.push_back(std::max(end, std::min(first, kernel)));
    const int64_t padded_end = std::min(start + kernel * dilation, in + pad_end);
    t.padded_count.push_back(padded_end > start ? 1 + (padded_end - start - 1) / dilation : 0);
  }
  return t;
}

template <typename T>
class WindowPoolKernel final : public Kernel {
 public:
  WindowPoolKernel(PoolKind kind, const Dims& x, const Dims& y, const Window& w, const Dims& pads_end, bool include_pad,
                   int64_t p, bool with_indices, bool column_major)
      : kind_(kind), include_pad_(include_pad), p_(p), with_indices_(with_indices), column_major_(column_major) {
    planes_ = x[0] * x[1];
    // The spatial axes fill the last of the three slots (the first ones, of size 1, are padding),
    // so slot 2 is always the input's last axis: the one pool_lines runs along.
    const size_t spatial = x.size() - 2, skip = kMaxSpatial - spatial;
    for (size_t i = 0; i < kMaxSpatial; ++i) {
      const bool real = i >= skip;
      const size_t a = real ? i - skip : 0;  // the axis among the spatial ones
      in_[i] = real ? x[a + 2] : 1;
      out_[i] = real ? y[a + 2] : 1;
      stride_[i] = real ? w.dilations[a] : 1;  // the input step between taps
      taps_[i] = real ? axis_taps(in_[i], out_[i], w.kernel[a], w.strides[a], w.dilations[a], w.pads_begin[a], pads_end[a])
                      : axis_taps(1, 1, 1, 1, 1, 0, 0);
      start_[i].resize(static_cast<size_t>(out_[i]));
      for (int64_t o = 0; o < out_[i]; ++o) start_[i][static_cast<size_t>(o)] = real ? o * w.strides[a] - w.pads_begin[a] : 0;
    }
    in_plane_ = in_[0] * in_[1] * in_[2];
    out_plane_ = out_[0] * out_[1] * out_[2];
    const size_t last = spatial - 1;
    out_stride_ = w.strides[last];
    for (int64_t k = 0; k < w.kernel[last]; ++k) {
      const int64_t offset = k * w.dilations[last] - w.pads_begin[last];  // input = o * stride + offset
      // o * stride + offset >= 0 and <= in - 1.
      const int64_t from = offset >= 0 ? 0 : (-offset + out_stride_ - 1) / out_stride_;
      const int64_t to = in_[2] - 1 - offset < 0 ? 0 : std::min(out_[2], (in_[2] - 1 - offset) / out_stride_ + 1);
      if (from < to) line_taps_.push_back({offset, from, to});
    }
  }

  std::string implementation() const override { return "memplan:window_pool"; }

  void run(const KernelArgs& a) override {
    const T* x = a.inputs[0].as<const T>();
    T* y = a.outputs[0].as<T>();
    int64_t* idx = with_indices_ ? a.outputs[1].as<int64_t>() : nullptr;
    // Units of one output row-of-planes: (plane, o0).
    const auto units = static_cast<uint64_t>(planes_ * out_[0]);
    const uint64_t unit_bytes = static_cast<uint64_t>(in_plane_ / std::max<int64_t>(out_[0], 1) + 1) * sizeof(T);
    parallel_chunks(units, std::max<uint64_t>(1, kParallelChunkBytes / unit_bytes), [&](uint64_t begin, uint64_t end) {
      for (uint64_t u = begin; u < end; ++u) {
        const auto p = static_cast<int64_t>(u) / out_[0], o0 = static_cast<int64_t>(u) % out_[0];
        if (idx) max_with_indices(x + p * in_plane_, y + p * out_plane_, idx + p * out_plane_, p * in_plane_, o0);
        else pool_lines(x + p * in_plane_, y + p * out_plane_, o0);
      }
    });
  }

 private:
  // The outputs [o0, *, *] of one plane, a line of the last axis at a time: each tap of the
  // window's last axis adds one input line to the output line, over the outputs whose tap lies
  // inside the input (a contiguous run of them), so the inner loop is a plain (with stride 1,
  // vectorized) pass over memory.
  void pool_lines(const T* x, T* y, int64_t o0) const {
    const auto i0 = static_cast<size_t>(o0);
    const int64_t width = out_[2];
    for (int64_t o1 = 0; o1 < out_[1]; ++o1) {
      const auto i1 = static_cast<size_t>(o1);
      T* line = y + (o0 * out_[1] + o1) * width;
      std::fill(line, line + width, kind_ == PoolKind::Max ? std::numeric_limits<T>::lowest() : T{0});
      for (int64_t k0 = taps_[0].first[i0]; k0 < taps_[0].end[i0]; ++k0)
        for (int64_t k1 = taps_[1].first[i1]; k1 < taps_[1].end[i1]; ++k1) {
          const T* in = x + ((start_[0][i0] + k0 * stride_[0]) * in_[1] + start_[1][i1] + k1 * stride_[1]) * in_[2];
          for (const LineTap& t : line_taps_) add_line(line, in + t.offset, t.from, t.to);
        }
      finish_line(line, i0, i1);
    }
  }

  void add_line(T* line, const T* in, int64_t from, int64_t to) const {
    const int64_t s = out_stride_;
    if constexpr (std::is_same_v<T, float>) {
      if (s == 1 && (kind_ != PoolKind::Lp || p_ <= 2)) {
        const LineOp op = kind_ == PoolKind::Max       ? LineOp::Max
                          : kind_ == PoolKind::Average ? LineOp::Add
                          : p_ == 1                    ? LineOp::AddAbs
                                                       : LineOp::AddSquare;
        return fold_line(op, line + from, in + from, to - from);
      }
    }
    if (kind_ == PoolKind::Max) {
      if (s == 1)
        for (int64_t o = from; o < to; ++o) line[o] = in[o] > line[o] ? in[o] : line[o];
      else
        for (int64_t o = from; o < to; ++o) line[o] = in[o * s] > line[o] ? in[o * s] : line[o];
    } else if (kind_ == PoolKind::Average || p_ == 1) {
      const bool abs = kind_ == PoolKind::Lp;
      for (int64_t o = from; o < to; ++o) {
        const float v = static_cast<float>(in[o * s]);
        line[o] = static_cast<T>(static_cast<float>(line[o]) + (abs ? std::fabs(v) : v));
      }
    } else {
      for (int64_t o = from; o < to; ++o) {
        const float v = static_cast<float>(in[o * s]);
        line[o] = static_cast<T>(static_cast<float>(line[o]) + (p_ == 2 ? v * v : power(std::fabs(v))));
      }
    }
  }

  void finish_line(T* line, size_t i0, size_t i1) const {
    if (kind_ == PoolKind::Max) return;
    const int64_t width = out_[2];
    if (kind_ == PoolKind::Lp) {
      for (int64_t o = 0; o < width; ++o) {
        const float sum = static_cast<float>(line[o]);
        line[o] = static_cast<T>(p_ == 1 ? sum : p_ == 2 ? std::sqrt(sum) : std::pow(sum, 1.0f / static_cast<float>(p_)));
      }
      return;
    }
    const int64_t rows = (taps_[0].end[i0] - taps_[0].first[i0]) * (taps_[1].end[i1] - taps_[1].first[i1]);
    const int64_t padded_rows = taps_[0].padded_count[i0] * taps_[1].padded_count[i1];
    for (int64_t o = 0; o < width; ++o) {
      const auto i2 = static_cast<size_t>(o);
      const int64_t taps = rows * (taps_[2].end[i2] - taps_[2].first[i2]);
      const int64_t count = include_pad_ ? padded_rows * taps_[2].padded_count[i2] : taps;
      line[o] = taps > 0 && count > 0 ? static_cast<T>(static_cast<float>(line[o]) / static_cast<float>(count)) : T{0};
    }
  }

  // MaxPool with its Indices: the outputs [o0, *, *] of one plane, each window tap by tap.
  void max_with_indices(const T* x, T* y, int64_t* idx, int64_t plane_offset, int64_t o0) const {
    const auto i0 = static_cast<size_t>(o0);
    for (int64_t o1 = 0; o1 < out_[1]; ++o1)
      for (int64_t o2 = 0; o2 < out_[2]; ++o2) {
        const std::array<size_t, kMaxSpatial> o{i0, static_cast<size_t>(o1), static_cast<size_t>(o2)};
        const int64_t at = (o0 * out_[1] + o1) * out_[2] + o2;
        T best = std::numeric_limits<T>::lowest();
        int64_t best_at = -1;
        for (int64_t k0 = taps_[0].first[o[0]]; k0 < taps_[0].end[o[0]]; ++k0)
          for (int64_t k1 = taps_[1].first[o[1]]; k1 < taps_[1].end[o[1]]; ++k1)
            for (int64_t k2 = taps_[2].first[o[2]]; k2 < taps_[2].end[o[2]]; ++k2) {
              const int64_t c0 = start_[0][o[0]] + k0 * stride_[0], c1 = start_[1][o[1]] + k1 * stride_[1],
                            c2 = start_[2][o[2]] + k2 * stride_[2];
              const T v = x[(c0 * in_[1] + c1) * in_[2] + c2];
              if (best_at < 0 || v > best) {
                best = v;
                best_at = column_major_ ? c0 + in_[0] * (c1 + in_[1] * c2) : (c0 * in_[1] + c1) * in_[2] + c2;
              }
            }
        y[at] = best;
        idx[at] = best_at < 0 ? 0 : plane_offset + best_at;
      }
  }

  float power(float v) const { return static_cast<float>(std::pow(static_cast<double>(v), static_cast<double>(p_))); }

  // One tap of the last axis's window: it reads input (o * out_stride_ + offset) for the outputs
  // o in [from, to), the ones whose tap lies inside the input.
  struct LineTap {
    int64_t offset, from, to;
  };

  PoolKind kind_;
  bool include_pad_;
  int64_t p_;
  bool with_indices_, column_major_;
  int64_t planes_ = 0, in_plane_ = 0, out_plane_ = 0;
  std::array<int64_t, kMaxSpatial> in_{}, out_{}, stride_{};
  std::array<AxisTaps, kMaxSpatial> taps_;
  std::array<std::vector<int64_t>, kMaxSpatial> start_;
  int64_t out_stride_ = 1;  // the last axis's stride
  std::vector<LineTap> line_taps_;
};

}  // namespace

std::unique_ptr<Kernel> make_window_pool(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  if (!pools_on_window_loop(node)) fail_internal(at + ": not a pool for memplan's window loop");
  const bool lp = node.op_type == "LpPool", max = node.op_type == "MaxPool";
  const bool with_indices = max && output_at(node, 1) != nullptr;
  check_arity(node, env, 1, 1, with_indices ? 2 : 1);
  if (node.outputs.size() > (max ? 2u : 1u)) fail(at + ": has too many outputs");
  const Value *xv = input_at(node, 0), *yv = output_at(node, 0);
  for (const Value* v : {xv, yv})
    if (!v->type.is_static() || v->shape_varies) fail_unsupported(at + ": '" + v->name + "' needs a static shape");
  const DType type = xv->type.dtype;
  const bool bytes = type == DType::Uint8 || type == DType::Int8;
  if (type != DType::Float32 && !(max && !with_indices && bytes))
    fail_unsupported(at + ": " + dtype_name(type) + " is not supported" +
                     (max && !with_indices ? ", only float32, uint8 and int8" : ", only float32"));
  if (yv->type.dtype != type)
    fail(at + ": output '" + yv->name + "' is " + dtype_name(yv->type.dtype) + ", the input " + dtype_name(type));
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  const Dims x = dims_of(xv), y = dims_of(yv);
  if (x.size() < 3 || x.size() > 2 + kMaxSpatial)
    fail_unsupported(at + ": pooling a rank-" + std::to_string(x.size()) + " input is not supported (1-D, 2-D and 3-D only)");
  int64_t order = 0;
  if (with_indices) {
    const Value* iv = output_at(node, 1);
    if (iv->type.dtype != DType::Int64) fail(at + ": the Indices output must be int64");
    if (!iv->type.is_static() || dims_of(iv) != y) fail(at + ": the Indices output's shape differs from the output's");
    order = node.attr_int("storage_order", 0);
    if (order != 0 && order != 1) fail(at + ": storage_order must be 0 or 1");
  }
  const int64_t p = lp ? node.attr_int("p", 2) : 0;
  if (lp && (p < 1 || p > 64)) fail(at + ": p " + std::to_string(p) + " is not supported (1 to 64)");
  Window w = read_window(node, at, x.size() - 2, {});
  // Sizes come from the file: a window's extent (kernel - 1) * dilation must not overflow.
  for (size_t i = 0; i < w.kernel.size(); ++i)
    if (w.kernel[i] > (int64_t{1} << 31) || w.dilations[i] > (int64_t{1} << 31) || w.strides[i] > (int64_t{1} << 31) ||
        w.pads_begin[i] > (int64_t{1} << 31) || w.pads_end[i] > (int64_t{1} << 31))
      fail(at + ": kernel_shape, strides, dilations or pads above 2^31");
  resolve_forward_pads(w, Dims(x.begin() + 2, x.end()));
  // Validates the output size (floor, or up to the ceiling with ceil_mode); the loop takes each
  // window's taps from the output position, so the grown end pads it returns are not needed.
  pool_end_pads(w, x, y, node.attr_int("ceil_mode", 0) != 0, at);
  const PoolKind kind = lp ? PoolKind::Lp : max ? PoolKind::Max : PoolKind::Average;
  const bool include_pad = kind == PoolKind::Average && node.attr_int("count_include_pad", 0) != 0;
  if (type == DType::Uint8)
    return std::make_unique<WindowPoolKernel<uint8_t>>(kind, x, y, w, w.pads_end, include_pad, p, false, false);
  if (type == DType::Int8)
    return std::make_unique<WindowPoolKernel<int8_t>>(kind, x, y, w, w.pads_end, include_pad, p, false, false);
  return std::make_unique<WindowPoolKernel<float>>(kind, x, y, w, w.pads_end, include_pad, p, with_indices, order == 1);
}

}  // namespace memplan::rt::dnnl_kernels
