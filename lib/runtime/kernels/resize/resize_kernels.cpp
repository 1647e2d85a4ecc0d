// Resize (opsets 10, 11, 13) and Upsample (7, 9) on float32: nearest, (n-)linear and cubic on any
// dims, every coordinate_transformation_mode, with scales, sizes and roi fixed at load or read at
// run time (the output shape is then set at run time, within the output's capacity). Plain loops:
// oneDNN's resampling does not cover ONNX's coordinate transformation modes.
//
// Each output element is a weighted sum over the product of per-dimension taps (1 for nearest, 2
// for linear, 4 for cubic), the separable form of ONNX's reference implementation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "ir/fused_dequantize.h"
#include "ir/tensor.h"
#include "ir/resize_sizes.h"
#include "runtime/kernels/common/elementwise_common.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/quantized/quantize_common.h"
#include "runtime/kernels/quantized/quantize_loops.h"
#include "runtime/kernels/resize/factories.h"
#include "util/checked.h"

namespace memplan::rt::elt {
namespace {

enum class Mode { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN, TfCropAndResize, HalfPixelSymmetric };
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct Params {
  Mode mode = Mode::Nearest;
  Coord coord = Coord::Asymmetric;
  Nearest nearest = Nearest::Simple;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;  // opset 18, linear and cubic: the filter widened by 1 / scale when shrinking
  std::vector<int64_t> output_shape;  // ir/resize_sizes.h: the shape, where the scales would floor it
  float extrapolation = 0.f;
};

// One dimension's geometry for the current run. `resized` is ONNX's reference "output width",
// in_len * scale, which differs from the integer output length when a scale is given.
struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1, resized = 1;
  double roi_start = 0, roi_end = 1;
  bool identity = false;  // output index o reads input o alone
};

// The input elements one output coordinate reads along one dimension, and their weights.
struct Taps {
  int n = 0;
  bool outside = false;  // tf_crop_and_resize: the coordinate is outside the input
  std::array<int64_t, 4> idx{};
  std::array<double, 4> w{};
};

// Two taps of a linear axis, packed.
struct Pair {
  int64_t i0, i1;
  double w0, w1;
};
static_assert(sizeof(Pair) <= sizeof(Taps) && std::is_trivially_copyable_v<Taps> && std::is_trivially_copyable_v<Pair>);

// ONNX's x_original for output index o.
double source_coord(Coord m, int64_t o, const Axis& a) {
  const double x = static_cast<double>(o);
  switch (m) {
    case Coord::HalfPixel: return (x + 0.5) / a.scale - 0.5;
    // Opset 19: half_pixel, shifted so that the integer output length's rounding is spread over
    // both ends (ONNX's reference: offset = in / 2 * (1 - out / (in * scale))).
    case Coord::HalfPixelSymmetric: {
      const double offset = static_cast<double>(a.in) / 2 * (1 - static_cast<double>(a.out) / a.resized);
      return offset + (x + 0.5) / a.scale - 0.5;
    }
    case Coord::PytorchHalfPixel: return a.resized > 1 ? (x + 0.5) / a.scale - 0.5 : -0.5;
    case Coord::AlignCorners:
      return a.resized == 1 ? 0.0 : x * static_cast<double>(a.in - 1) / (a.resized - 1);
    case Coord::Asymmetric: return x / a.scale;
    case Coord::TfHalfPixelForNN: return (x + 0.5) / a.scale;
    case Coord::TfCropAndResize: {
      const double len = static_cast<double>(a.in - 1);
      if (a.resized == 1) return (a.roi_end - a.roi_start) * len / 2 + a.roi_start * len;
      return x * (a.roi_end - a.roi_start) * len / (a.resized - 1) + a.roi_start * len;
    }
  }
  return x;
}

int64_t nearest_index(Nearest m, double x, double scale) {
  switch (m) {
    case Nearest::RoundPreferFloor:
      return x == std::floor(x) + 0.5 ? static_cast<int64_t>(std::floor(x)) : static_cast<int64_t>(std::round(x));
    case Nearest::RoundPreferCeil: return static_cast<int64_t>(std::round(x));  // clamped later, so -0.5 is fine
    case Nearest::Floor: return static_cast<int64_t>(std::floor(x));
    case Nearest::Ceil: return static_cast<int64_t>(std::ceil(x));
    case Nearest::Simple: return static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::floor(x));
  }
  return 0;
}

// Keys' cubic convolution weights of the four neighbours floor(x) - 1 .. floor(x) + 2 at
// fraction t = x - floor(x) (ONNX's cubic_coeffs).
void cubic_weights(double t, double A, std::array<double, 4>& w) {
  auto far = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 <= d <= 2
  auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };        // 0 <= d <= 1
  w = {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

Taps taps_for(const Params& p, const Axis& a, int64_t o) {
  Taps t;
  if (a.identity) {
    t.n = 1;
    t.idx[0] = o;
    t.w[0] = 1;
    return t;
  }
  const double x = source_coord(p.coord, o, a);
  if (p.coord == Coord::TfCropAndResize && (x < 0 || x > static_cast<double>(a.in - 1))) {
    t.outside = true;
    return t;
  }
  if (p.mode == Mode::Nearest) {
    t.n = 1;
    // x is within [-1, in] in every mode, so the cast is safe; the index is clamped like ONNX's.
    t.idx[0] = std::clamp<int64_t>(nearest_index(p.nearest, x, a.scale), 0, a.in - 1);
    t.w[0] = 1;
    return t;
  }
  const double base = std::floor(x);
  const double frac = x - base;
  const int64_t i0 = static_cast<int64_t>(base);
  if (p.mode == Mode::Linear) {
    t.n = 2;
    t.idx = {i0, i0 + 1, 0, 0};
    t.w = {1 - frac, frac, 0, 0};
  } else {
    t.n = 4;
    t.idx = {i0 - 1, i0, i0 + 1, i0 + 2};
    cubic_weights(frac, p.cubic_a, t.w);
  }
  if (p.exclude_outside) {
    double sum = 0;
    for (int k = 0; k < t.n; ++k) {
      if (t.idx[k] < 0 || t.idx[k] >= a.in) t.w[k] = 0;
      sum += t.w[k];
    }
    if (sum != 0)
      for (int k = 0; k < t.n; ++k) t.w[k] /= sum;
  }
  // Neighbours past the edge repeat the edge (ONNX pads the input with its edge values).
  for (int k = 0; k < t.n; ++k) t.idx[k] = std::clamp<int64_t>(t.idx[k], 0, a.in - 1);
  return t;
}

// Opset 18's antialiased linear and cubic resampling, as ONNX Runtime computes it (after Pillow):
// the filter (the triangle, support 2, or Keys' cubic, support 4) is stretched by 1 / scale when
// shrinking, so output o reads every input whose centre lies within `support` of o's source
// centre, weighted by the filter and normalized to sum 1. Without exclude_outside, the weights of
// taps past an edge move onto the edge's input. At most kMaxWideTaps taps an axis (shrinking by up
// to 63 times linear, 31 cubic).
constexpr int kMaxWideTaps = 128;

struct WideTaps {
  int64_t first = 0;
  int n = 0;
  std::array<float, kMaxWideTaps> w{};
};

float antialias_filter(const Params& p, float x) {
  x = std::fabs(x);
  if (p.mode == Mode::Linear) return x < 1.f ? 1.f - x : 0.f;
  const auto a = static_cast<float>(p.cubic_a);
  if (x < 1.f) return ((a + 2.f) * x - (a + 3.f)) * x * x + 1.f;
  if (x < 2.f) return (((x - 5.f) * x + 8.f) * x - 4.f) * a;
  return 0.f;
}

void wide_taps_for(const Params& p, const Axis& a, int64_t o, WideTaps& t, const std::string& where) {
  if (a.identity) {
    t.first = o;
    t.n = 1;
    t.w[0] = 1.f;
    return;
  }
  const float scale = 1.f / static_cast<float>(a.scale);  // input per output
  const float support = (p.mode == Mode::Linear ? 1.f : 2.f) * std::max(scale, 1.f);
  const float window = std::ceil(support) * 2 + 1;
  if (!(window <= static_cast<float>(kMaxWideTaps)))
    fail(where + ": an antialiased resize by " + std::to_string(a.scale) + " needs " + std::to_string(window) +
         " taps an output, more than " + std::to_string(kMaxWideTaps));
  const float inv_scale = scale >= 1.f ? 1.f / scale : 1.f;
  const float center = 0.5f + (scale == 1.f ? static_cast<float>(o) : static_cast<float>(source_coord(p.coord, o, a)));
  auto lo = static_cast<int64_t>(std::floor(center - support + 0.5f));
  const auto hi_real = static_cast<int64_t>(std::floor(center + support + 0.5f));
  const int64_t hi = lo + std::clamp<int64_t>(hi_real - lo, 0, static_cast<int64_t>(window));
  const int64_t lo_cut = std::clamp<int64_t>(lo, 0, a.in), hi_cut = std::clamp<int64_t>(hi, 0, a.in);
  const int64_t from = p.exclude_outside ? lo_cut : lo, n = (p.exclude_outside ? hi_cut : hi) - from;
  std::array<float, kMaxWideTaps> w{};
  float total = 0;
  for (int64_t x = 0; x < n; ++x) {
    w[static_cast<size_t>(x)] = antialias_filter(p, (static_cast<float>(x + from) - center + 0.5f) * inv_scale);
    total += w[static_cast<size_t>(x)];
  }
  if (!p.exclude_outside && lo_cut < hi_cut) {  // taps past the edges onto the edges
    const int64_t before = std::clamp<int64_t>(-from, 0, n - 1), after = std::clamp<int64_t>(n + from - a.in, 0, n - 1);
    for (int64_t x = 0; x < before; ++x) w[static_cast<size_t>(before)] += w[static_cast<size_t>(x)];
    for (int64_t x = n - after; x < n; ++x) w[static_cast<size_t>(n - after - 1)] += w[static_cast<size_t>(x)];
    for (int64_t x = 0; (before | after) > 0 && x < hi_cut - lo_cut; ++x) w[static_cast<size_t>(x)] = w[static_cast<size_t>(x + before)];
  }
  const float inv_total = total == 0.f ? 1.f : 1.f / total;
  t.first = lo_cut;
  t.n = static_cast<int>(hi_cut - lo_cut);
  for (int x = 0; x < t.n; ++x) t.w[static_cast<size_t>(x)] = w[static_cast<size_t>(x)] * inv_total;
}

// A float list (scales, roi) fixed at load or read from an input at run time.
struct Floats {
  int size = 0;
  std::array<double, 2 * kMaxRank> v{};
};

class FloatSource {
 public:
  static FloatSource from_input(const Node& n, size_t k, const std::string& where, const char* what) {
    FloatSource s;
    s.input_ = k;
    s.what_ = what;
    const Value* v = input_at(n, k);
    if (!v) return s;
    s.present_ = true;
    check_type(v->type.dtype, where, what);
    if (v->constant) {
      s.fixed_ = true;
      const Tensor& t = *v->constant;
      check_count(t.element_count(), where, what);
      s.value_.size = static_cast<int>(t.element_count());
      for (int i = 0; i < s.value_.size; ++i) s.value_.v[i] = t.float_at(static_cast<uint64_t>(i));
    }
    return s;
  }
  static FloatSource from_list(const std::vector<float>& values, const std::string& where, const char* what) {
    FloatSource s;
    s.present_ = s.fixed_ = true;
    check_count(values.size(), where, what);
    s.value_.size = static_cast<int>(values.size());
    for (size_t i = 0; i < values.size(); ++i) s.value_.v[i] = values[i];
    return s;
  }
  bool runtime() const { return present_ && !fixed_; }
  // The list (empty when absent or omitted); reads a run-time input into `scratch`.
  const Floats& get(const KernelArgs& args, Floats& scratch, const std::string& where) const {
    if (fixed_) return value_;
    scratch.size = 0;
    if (!present_ || input_ >= args.inputs.size() || !args.inputs[input_].data) return scratch;
    const TensorView& t = args.inputs[input_];
    check_type(t.dtype, where, what_);
    check_count(t.element_count(), where, what_);
    scratch.size = static_cast<int>(t.element_count());
    for (int i = 0; i < scratch.size; ++i)
      scratch.v[i] = t.dtype == DType::Float64 ? t.as<const double>()[i] : t.as<const float>()[i];
    return scratch;
  }

 private:
  static void check_type(DType t, const std::string& where, const char* what) {
    if (t != DType::Float32 && t != DType::Float64)
      fail_unsupported(where + ": " + what + " of type " + dtype_name(t) + " is not supported (float32, float64)");
  }
  static void check_count(uint64_t n, const std::string& where, const char* what) {
    if (n > 2 * kMaxRank) fail(where + ": " + what + " has " + std::to_string(n) + " values, too many for any rank");
  }
  bool present_ = false, fixed_ = false;
  size_t input_ = 0;
  const char* what_ = "";
  Floats value_;
};

// The odd and even columns of upsample_row_by_2, four products summed in a fixed order. Compiled
// for AVX2 too where the CPU has it (4 doubles a vector instead of SSE2's 2): the same IEEE
// operations in the same order (no FMA), so the same bits on every CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void doubled_columns(const float* r0, const float* r1, const std::array<double, 8>& w, int64_t n, float* dst) {
  const double odd00 = w[0], odd01 = w[1], odd10 = w[2], odd11 = w[3];
  const double even00 = w[4], even01 = w[5], even10 = w[6], even11 = w[7];
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const double a = r0[k], b = r0[k + 1], c = r1[k], d = r1[k + 1];
    double odd = 0, even = 0;
    odd += odd00 * a;
    odd += odd01 * b;
    odd += odd10 * c;
    odd += odd11 * d;
    even += even00 * a;
    even += even01 * b;
    even += even10 * c;
    even += even11 * d;
    dst[2 * k + 1] = static_cast<float>(odd);
    dst[2 * k + 2] = static_cast<float>(even);
  }
}

// An 8-bit Resize's bytes and the float values it resamples (ir/fused_dequantize.h's
// memplan_quantized): x dequantized with (in_scale, in_zero), y quantized with (out_scale, out_zero).
struct Requantize {
  bool on = false;
  bool in_signed = false;
  float in_scale = 1, out_scale = 1;
  int32_t in_zero = 0, out_zero = 0;
  quant::QRange out_range;
};

// Where the planes of the last two dims are resampled: their sizes and the columns' taps (in the
// scratchpad), once per run.
struct PlaneTaps {
  uint64_t planes = 1;
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  const Pair* pairs = nullptr;  // every column has two taps (linear): packed
  const Taps* cols = nullptr;   // else the full taps
  bool doubles = false;         // linear upsampling by exactly 2 (doubling())
};

constexpr uint64_t align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

class ResizeKernel final : public Kernel {
 public:
  // `last_dim_bound`: the output's last dimension when it is known at load (0: unknown), for the
  // scratchpad of the fast path's column taps. `plane_floats`: with `rq`, the elements of one input
  // plane (its static last two dims), dequantized into the scratchpad, one per thread of `threads`
  // (the run's at most: planes are resampled in parallel).
  ResizeKernel(std::string where, const Params& p, FloatSource scales, shape::IntsSource sizes, FloatSource roi,
               int64_t last_dim_bound, Requantize rq = {}, uint64_t plane_floats = 0, int threads = 1)
      : where_(std::move(where)), p_(p), scales_(std::move(scales)), sizes_(std::move(sizes)), roi_(std::move(roi)),
        columns_(last_dim_bound), rq_(rq), plane_floats_(plane_floats), threads_(std::max(threads, 1)) {}

  // The column taps; an 8-bit Resize adds, per thread, a dequantized input plane and one output
  // row of floats.
  uint64_t scratchpad_bytes() const override {
    const auto columns = static_cast<uint64_t>(columns_);
    const uint64_t table = checked_mul(columns, sizeof(Taps), "a Resize's column table");
    if (!rq_.on) return fixed_ ? 0 : table;
    return checked_add(align64(table),
                       checked_mul(static_cast<uint64_t>(threads_), thread_floats() * sizeof(float), "a Resize's scratchpad"),
                       "a Resize's scratchpad");
  }

  // Where scales, sizes and roi are constants and `in` is the input's shape every run: the
  // column taps, computed once here and kept with the kernel (read-only, like weights), so the
  // arena holds no table and no run computes one. A geometry this refuses is left to the runs.
  void fix_taps(const Shape& in) {
    // Sizes come from the file: a table for a million columns or more is left to the runs (in the
    // arena, which the plan sizes and the session allocates or refuses), never allocated here.
    constexpr int64_t kMostFixedColumns = int64_t{1} << 20;
    if (p_.antialias || rq_.on || columns_ <= 0 || columns_ >= kMostFixedColumns || scales_.runtime() ||
        sizes_.runtime() || roi_.runtime())
      return;
    try {
      std::array<Axis, kMaxRank> axes;
      const Shape out = geometry(KernelArgs{}, in, axes);
      table_.assign(static_cast<size_t>(columns_), Taps{});
      PlaneTaps t;
      if (out.count() == 0 || !plane_taps(in, out, axes, reinterpret_cast<std::byte*>(table_.data()), t)) {
        table_.clear();
        return;
      }
      fixed_ = FixedTaps{in, t};
    } catch (const Error&) {
      table_.clear();
    }
  }

  // A nearest-neighbour Resize of a 4-D tensor stored channels-last or channel-blocked
  // (assign_layouts gives it its neighbours' layout, so they need no reorder): N and C unchanged,
  // constant scales or sizes. Each output pixel copies one input pixel's vector of channels (all
  // C channels-last; a block's b of them blocked), by row and column maps made here.
  void fix_pixels(const Shape& in, int layout) {
    std::array<Axis, kMaxRank> axes;
    const Shape out = geometry(KernelArgs{}, in, axes);
    if (p_.mode != Mode::Nearest || p_.coord == Coord::TfCropAndResize || in.rank != 4 || !axes[0].identity ||
        !axes[1].identity || (layout > 0 && in.dims[1] % layout != 0))
      fail_internal(where_ + ": only a nearest Resize of H and W runs on channels-last or blocked tensors");
    pixels_ = Pixels{layout, in, out, {}, {}};
    for (int64_t o = 0; o < out.dims[2]; ++o) pixels_->rows.push_back(taps_for(p_, axes[2], o).idx[0]);
    for (int64_t o = 0; o < out.dims[3]; ++o) pixels_->cols.push_back(taps_for(p_, axes[3], o).idx[0]);
  }

  void run(const KernelArgs& args) override {
    const TensorView& x = args.inputs[0];
    TensorView& y = args.outputs[0];
    if (pixels_) return copy_pixels(x.as<const float>(), y.as<float>());
    std::array<Axis, kMaxRank> axes;
    Shape out = geometry(args, Shape::of(x), axes);
    shape::set_shape(y, out.rank, out.dims.data(), where_);
    if (out.count() == 0) return;
    if (Shape::of(x).count() == 0) fail(where_ + ": cannot resize an empty input to shape " + out.str());
    if (rq_.on) return resample_quantized(x, Shape::of(x), y, out, axes, args.scratchpad);
    if (p_.antialias) return resample_antialias(x.as<const float>(), Shape::of(x), y.as<float>(), out, axes);
    if (!resample_planes(x.as<const float>(), Shape::of(x), y.as<float>(), out, axes, args.scratchpad))
      resample(x.as<const float>(), Shape::of(x), y.as<float>(), out, axes);
  }

 private:
  struct Pixels {
    int layout;  // Value::kChannelsLast, or the channel block
    Shape in, out;
    std::vector<int64_t> rows, cols;  // the input row of each output row, column of each column
  };

  void copy_pixels(const float* src, float* dst) const {
    const Pixels& p = *pixels_;
    const int64_t c = p.in.dims[1], vec = p.layout > 0 ? p.layout : c;
    const int64_t planes = p.in.dims[0] * (c / vec);  // images (channels-last), or blocks of channels
    const int64_t ih = p.in.dims[2], iw = p.in.dims[3], oh = p.out.dims[2], ow = p.out.dims[3];
    const uint64_t rows = static_cast<uint64_t>(planes * oh), row_bytes = static_cast<uint64_t>(ow * vec) * sizeof(float);
    parallel_chunks(rows, kParallelChunkBytes / std::max<uint64_t>(row_bytes, 1) + 1, [&](uint64_t first, uint64_t last) {
      for (uint64_t r = first; r < last; ++r) {
        const int64_t plane = static_cast<int64_t>(r) / oh, y = static_cast<int64_t>(r) % oh;
        const float* in_row = src + (plane * ih + p.rows[static_cast<size_t>(y)]) * iw * vec;
        float* out_row = dst + static_cast<int64_t>(r) * ow * vec;
        for (int64_t x = 0; x < ow; ++x)
          std::memcpy(out_row + x * vec, in_row + p.cols[static_cast<size_t>(x)] * vec, static_cast<size_t>(vec) * sizeof(float));
      }
    });
  }

  // The output shape and each dimension's geometry from scales or sizes (and roi).
  Shape geometry(const KernelArgs& args, const Shape& in, std::array<Axis, kMaxRank>& axes) const {
    Floats scale_buf, roi_buf;
    shape::Ints size_buf;
    const Floats& scales = scales_.get(args, scale_buf, where_);
    const shape::Ints* sizes = scales.size > 0 ? nullptr : sizes_.get(args, size_buf, where_);
    if (scales.size == 0 && (!sizes || sizes->size == 0)) fail(where_ + ": neither scales nor sizes is given");
    const int given = scales.size > 0 ? scales.size : sizes->size;
    if (given != in.rank)
      fail(where_ + ": " + std::to_string(given) + (scales.size > 0 ? " scales" : " sizes") + " for an input of rank " +
           std::to_string(in.rank));
    const bool crop = p_.coord == Coord::TfCropAndResize;
    const Floats& roi = crop ? roi_.get(args, roi_buf, where_) : roi_buf;
    if (crop && roi.size != 2 * in.rank)
      fail(where_ + ": tf_crop_and_resize needs a roi of " + std::to_string(2 * in.rank) + " values, got " +
           std::to_string(roi.size));
    Shape out = in;
    for (int d = 0; d < in.rank; ++d) {
      Axis& a = axes[d];
      a.in = in.dims[d];
      if (crop) {
        a.roi_start = roi.v[d];
        a.roi_end = roi.v[d + in.rank];
        if (!std::isfinite(a.roi_start) || !std::isfinite(a.roi_end) || std::fabs(a.roi_end - a.roi_start) > 1e9)
          fail(where_ + ": roi [" + std::to_string(a.roi_start) + ", " + std::to_string(a.roi_end) + "] of dimension " +
               std::to_string(d) + " is not a finite range");
      }
      const double extent = crop ? a.roi_end - a.roi_start : 1.0;
      if (scales.size > 0) {
        a.scale = scales.v[d];
        if (!(a.scale > 0) || !std::isfinite(a.scale))
          fail(where_ + ": scales must be positive, got " + std::to_string(a.scale));
        a.resized = static_cast<double>(a.in) * extent * a.scale;
        if (!(a.resized < 4e18)) fail(where_ + ": scale " + std::to_string(a.scale) + " makes the output too large");
        a.out = static_cast<int64_t>(std::max(0.0, std::floor(a.resized)));
        if (!p_.output_shape.empty()) {  // a keep_aspect_ratio_policy's rounding
          if (p_.output_shape.size() != static_cast<size_t>(in.rank) || std::llabs(p_.output_shape[d] - a.out) > 1)
            fail(where_ + ": its output shape does not follow from its scales");
          a.out = p_.output_shape[d];
        }
      } else {
        a.out = (*sizes)[d];
        if (a.out < 0) fail(where_ + ": sizes must not be negative, got " + std::to_string(a.out));
        a.resized = static_cast<double>(a.out);
        a.scale = a.in ? static_cast<double>(a.out) / static_cast<double>(a.in) : 1.0;
      }
      out.dims[d] = a.out;
      // Unscaled dims map to themselves in every mode but tf_half_pixel_for_nn (o + 0.5) and
      // tf_crop_and_resize (the roi moves them).
      a.identity = a.in == a.out && a.scale == 1 && p_.coord != Coord::TfHalfPixelForNN && !crop;
    }
    return out;
  }

  // The walk over the output both resamplings take: each output element from its taps per
  // dimension (taps_at(d, o, taps) sets dimension d's for output index o); a digit of the output
  // index that steps takes its next taps, one that wraps starts them again.
  template <typename TapsT, typename TapsAt, typename Element>
  static void walk_output(const float* src, const Shape& in, float* dst, const Shape& out, const TapsAt& taps_at,
                          const Element& element_at) {
    const auto st = row_major_strides(in);
    const int r = in.rank;
    if (r == 0) {
      dst[0] = src[0];
      return;
    }
    std::array<int64_t, kMaxRank> idx{};
    std::array<TapsT, kMaxRank> taps;
    for (int d = 0; d < r; ++d) taps_at(d, 0, taps[d]);
    auto moved = [&](int d, int64_t) { taps_at(d, idx[d], taps[d]); };
    for (uint64_t i = 0;; ++i) {
      dst[i] = element_at(src, st, taps, r);
      if (!next_index(idx, out.dims, r, moved)) return;
    }
  }

  void resample(const float* src, const Shape& in, float* dst, const Shape& out,
                const std::array<Axis, kMaxRank>& axes) const {
    walk_output<Taps>(
        src, in, dst, out, [&](int d, int64_t o, Taps& t) { t = taps_for(p_, axes[d], o); },
        [&](const float* s, const auto& st, const std::array<Taps, kMaxRank>& taps, int r) { return element(s, st, taps, r); });
  }

  // With wide_taps_for's windows; the weights sum in float, as ONNX Runtime's do.
  void resample_antialias(const float* src, const Shape& in, float* dst, const Shape& out,
                          const std::array<Axis, kMaxRank>& axes) const {
    walk_output<WideTaps>(
        src, in, dst, out, [&](int d, int64_t o, WideTaps& t) { wide_taps_for(p_, axes[d], o, t, where_); },
        [](const float* s, const auto& st, const std::array<WideTaps, kMaxRank>& taps, int r) {
          std::array<int, kMaxRank> k{}, n{};
          for (int d = 0; d < r; ++d)
            if ((n[d] = taps[d].n) == 0) return 0.f;
          float sum = 0;
          do {
            float w = 1;
            int64_t off = 0;
            for (int d = 0; d < r; ++d) {
              w *= taps[d].w[static_cast<size_t>(k[d])];
              off += (taps[d].first + k[d]) * st[d];
            }
            sum += w * s[off];
          } while (next_index(k, n, r));
          return sum;
        });
  }

  // Linear upsampling by exactly 2 (the decoders of segmentation nets): output columns 2k + 1 and
  // 2k + 2 both read input columns k and k + 1, with one pair of weights for the odd columns and
  // one for the even, so the row needs no gather and vectorizes.
  static bool doubling(const Pair* pairs, int64_t iw, int64_t ow) {
    if (ow != 2 * iw || iw < 2) return false;
    for (int64_t c = 1; c + 1 < ow; ++c) {
      const Pair& t = pairs[c];
      const Pair& like = pairs[c % 2 ? 1 : 2];
      const int64_t k = (c - 1) / 2;
      if (t.i0 != k || t.i1 != k + 1 || t.w0 != like.w0 || t.w1 != like.w1) return false;
    }
    return true;
  }

  // One (bi)linear output element from rows r0 and r1: element()'s products and sums, unrolled.
  static float linear_pair(const float* r0, const float* r1, const Taps& ty, const Pair& t) {
    double sum = 0;
    sum += ty.w[0] * t.w0 * static_cast<double>(r0[t.i0]);
    sum += ty.w[0] * t.w1 * static_cast<double>(r0[t.i1]);
    sum += ty.w[1] * t.w0 * static_cast<double>(r1[t.i0]);
    sum += ty.w[1] * t.w1 * static_cast<double>(r1[t.i1]);
    return static_cast<float>(sum);
  }

  // One output row of doubling() columns: linear_pair's products and sums.
  static void upsample_row_by_2(const float* r0, const float* r1, const Taps& ty, const Pair* pairs, int64_t iw,
                                float* dst) {
    dst[0] = linear_pair(r0, r1, ty, pairs[0]);
    dst[2 * iw - 1] = linear_pair(r0, r1, ty, pairs[2 * iw - 1]);
    const std::array<double, 8> w{ty.w[0] * pairs[1].w0, ty.w[0] * pairs[1].w1, ty.w[1] * pairs[1].w0,
                                  ty.w[1] * pairs[1].w1, ty.w[0] * pairs[2].w0, ty.w[0] * pairs[2].w1,
                                  ty.w[1] * pairs[2].w0, ty.w[1] * pairs[2].w1};
    doubled_columns(r0, r1, w, iw - 1, dst);
  }

  // The common case (an image upsampled or downsampled in its last two dims, any mode but
  // tf_crop_and_resize) without the general walk's per-element tap computation: each output row's
  // taps once per row, each column's once per run (in the scratchpad). False when it does not apply.
  bool plane_taps(const Shape& in, const Shape& out, const std::array<Axis, kMaxRank>& axes, std::byte* scratchpad,
                  PlaneTaps& t) const {
    const int r = in.rank;
    if (r < 2 || p_.coord == Coord::TfCropAndResize || !scratchpad || out.dims[r - 1] > columns_) return false;
    t.planes = 1;
    for (int d = 0; d < r - 2; ++d) {
      if (!axes[d].identity) return false;
      t.planes *= static_cast<uint64_t>(in.dims[d]);
    }
    t.ih = in.dims[r - 2], t.iw = in.dims[r - 1], t.oh = out.dims[r - 2], t.ow = out.dims[r - 1];
    // The columns' taps: packed pairs (32 bytes against 72) when every column has two (linear),
    // else the full taps. The scratchpad is 64-byte aligned; both are trivially copyable.
    auto* pairs = reinterpret_cast<Pair*>(scratchpad);
    for (int64_t c = 0; c < t.ow && pairs; ++c) {
      const Taps x = taps_for(p_, axes[r - 1], c);
      if (x.n == 2) pairs[c] = Pair{x.idx[0], x.idx[1], x.w[0], x.w[1]};
      else pairs = nullptr;
    }
    t.pairs = pairs;
    if (!pairs) {
      auto* cols = reinterpret_cast<Taps*>(scratchpad);
      for (int64_t c = 0; c < t.ow; ++c) cols[c] = taps_for(p_, axes[r - 1], c);
      t.cols = cols;
    }
    t.doubles = pairs && doubling(pairs, t.iw, t.ow);
    return true;
  }

  // Output row `y` of one plane: the same products and sums in the same order as element(), so
  // the same bits.
  void plane_row(const PlaneTaps& t, const Axis& rows, const float* plane, int64_t y, float* dst) const {
    const Taps ty = taps_for(p_, rows, y);
    const int64_t iw = t.iw, ow = t.ow;
    if (ty.n == 2 && t.doubles) return upsample_row_by_2(plane + ty.idx[0] * iw, plane + ty.idx[1] * iw, ty, t.pairs, iw, dst);
    if (ty.n == 2 && t.pairs) {  // (bi)linear: the same sums unrolled, over compact column taps
      const float* r0 = plane + ty.idx[0] * iw;
      const float* r1 = plane + ty.idx[1] * iw;
      for (int64_t c = 0; c < ow; ++c) dst[c] = linear_pair(r0, r1, ty, t.pairs[c]);
      return;
    }
    for (int64_t c = 0; c < ow; ++c) {
      const Taps tx = t.pairs ? Taps{2, false, {t.pairs[c].i0, t.pairs[c].i1, 0, 0}, {t.pairs[c].w0, t.pairs[c].w1, 0, 0}}
                              : t.cols[c];
      double sum = 0;
      for (int a = 0; a < ty.n; ++a) {
        const float* row = plane + ty.idx[a] * iw;
        for (int b = 0; b < tx.n; ++b) sum += ty.w[a] * tx.w[b] * static_cast<double>(row[tx.idx[b]]);
      }
      dst[c] = static_cast<float>(sum);
    }
  }

  // Planes (of at least kParallelChunkBytes of output together) are resampled in parallel.
  uint64_t planes_per_chunk(const PlaneTaps& t, uint64_t element_bytes) const {
    return kParallelChunkBytes / std::max<uint64_t>(static_cast<uint64_t>(t.oh * t.ow) * element_bytes, 1) + 1;
  }

  bool resample_planes(const float* src, const Shape& in, float* dst, const Shape& out,
                       const std::array<Axis, kMaxRank>& axes, std::byte* scratchpad) const {
    PlaneTaps t;
    if (fixed_ && fixed_->in == in) t = fixed_->taps;
    else if (!plane_taps(in, out, axes, scratchpad, t)) return false;
    const auto in_plane = static_cast<uint64_t>(t.ih * t.iw), out_plane = static_cast<uint64_t>(t.oh * t.ow);
    parallel_chunks(t.planes, planes_per_chunk(t, sizeof(float)), [&](uint64_t begin, uint64_t end) {
      for (uint64_t p = begin; p < end; ++p)
        for (int64_t y = 0; y < t.oh; ++y)
          plane_row(t, axes[in.rank - 2], src + p * in_plane, y, dst + p * out_plane + static_cast<uint64_t>(y * t.ow));
    });
    return true;
  }

  // Floats of an 8-bit Resize's scratchpad per thread: a plane, then a row (64-byte aligned).
  uint64_t thread_floats() const {
    return (align64(plane_floats_ * sizeof(float)) + align64(static_cast<uint64_t>(columns_) * sizeof(float))) / sizeof(float);
  }

  // An 8-bit Resize: each plane dequantized into the scratchpad, each output row resampled as
  // plane_row does and quantized, by DequantizeLinear's and QuantizeLinear's own row loops.
  void resample_quantized(const TensorView& x, const Shape& in, TensorView& y, const Shape& out,
                          const std::array<Axis, kMaxRank>& axes, std::byte* scratchpad) const {
    PlaneTaps t;
    if (!plane_taps(in, out, axes, scratchpad, t) || static_cast<uint64_t>(t.ih * t.iw) > plane_floats_)
      fail(where_ + ": an 8-bit Resize resamples whole planes of its last two dims only, got " + in.str() + " to " +
           out.str());
    auto* floats = reinterpret_cast<float*>(scratchpad + align64(static_cast<uint64_t>(columns_) * sizeof(Taps)));
    const auto in_plane = static_cast<uint64_t>(t.ih * t.iw), out_plane = static_cast<uint64_t>(t.oh * t.ow);
    const auto* src = static_cast<const std::byte*>(x.data);
    auto* dst = static_cast<std::byte*>(y.data);
    parallel_chunks(t.planes, planes_per_chunk(t, 1), [&](uint64_t begin, uint64_t end) {
      float* plane = floats + static_cast<uint64_t>(omp_get_thread_num()) * thread_floats();
      float* row = plane + align64(plane_floats_ * sizeof(float)) / sizeof(float);
      for (uint64_t p = begin; p < end; ++p) {
        quant::dequantize_row(src + p * in_plane, rq_.in_signed, in_plane, rq_.in_zero, rq_.in_scale, plane);
        for (int64_t r = 0; r < t.oh; ++r) {
          plane_row(t, axes[in.rank - 2], plane, r, row);
          quant::quantize_row(row, static_cast<uint64_t>(t.ow), rq_.out_scale, rq_.out_zero, rq_.out_range.lo,
                              rq_.out_range.hi, dst + p * out_plane + static_cast<uint64_t>(r * t.ow));
        }
      }
    }, threads_);
  }

  // The weighted sum over every combination of the dims' taps.
  float element(const float* src, const std::array<int64_t, kMaxRank>& st, const std::array<Taps, kMaxRank>& taps,
                int r) const {
    for (int d = 0; d < r; ++d)
      if (taps[d].outside) return p_.extrapolation;
    std::array<int, kMaxRank> k{}, n{};
    for (int d = 0; d < r; ++d) n[d] = taps[d].n;
    double sum = 0;
    for (;;) {
      double w = 1;
      int64_t off = 0;
      for (int d = 0; d < r; ++d) {
        w *= taps[d].w[k[d]];
        off += taps[d].idx[k[d]] * st[d];
      }
      sum += w * static_cast<double>(src[off]);
      if (!next_index(k, n, r)) return static_cast<float>(sum);
    }
  }

  std::string where_;
  Params p_;
  FloatSource scales_;
  shape::IntsSource sizes_;
  FloatSource roi_;
  int64_t columns_;
  Requantize rq_;
  uint64_t plane_floats_;
  int threads_;  // the most threads a run resamples 8-bit planes on (one scratch plane each)
  // fix_taps(): the input shape they hold for, and the taps (pointing into table_).
  struct FixedTaps {
    Shape in;
    PlaneTaps taps;
  };
  std::vector<Taps> table_;
  std::optional<FixedTaps> fixed_;
  std::optional<Pixels> pixels_;  // fix_pixels(): the tensors are stored channels-last or blocked
};

Params read_params(const Node& n, const std::string& at, bool v11) {
  Params p;
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode == "nearest") p.mode = Mode::Nearest;
  else if (mode == "linear" || mode == "bilinear") p.mode = Mode::Linear;
  else if (mode == "cubic" && v11) p.mode = Mode::Cubic;
  else fail_unsupported(at + ": mode '" + mode + "' is not supported (nearest, linear" + (v11 ? ", cubic)" : ")"));
  // Opset 10 Resize and Upsample: asymmetric coordinates, floor (ceil when shrinking) for nearest.
  if (!v11) return p;
  const std::string c = n.attr_string("coordinate_transformation_mode", "half_pixel");
  if (c == "half_pixel") p.coord = Coord::HalfPixel;
  else if (c == "pytorch_half_pixel") p.coord = Coord::PytorchHalfPixel;
  else if (c == "align_corners") p.coord = Coord::AlignCorners;
  else if (c == "asymmetric") p.coord = Coord::Asymmetric;
  else if (c == "tf_half_pixel_for_nn") p.coord = Coord::TfHalfPixelForNN;
  else if (c == "tf_crop_and_resize") p.coord = Coord::TfCropAndResize;
  else if (c == "half_pixel_symmetric") p.coord = Coord::HalfPixelSymmetric;
  else fail_unsupported(at + ": coordinate_transformation_mode '" + c + "' is not supported");
  const std::string nm = n.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor") p.nearest = Nearest::RoundPreferFloor;
  else if (nm == "round_prefer_ceil") p.nearest = Nearest::RoundPreferCeil;
  else if (nm == "floor") p.nearest = Nearest::Floor;
  else if (nm == "ceil") p.nearest = Nearest::Ceil;
  else fail_unsupported(at + ": nearest_mode '" + nm + "' is not supported");
  p.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = n.attr_float("extrapolation_value", 0.f);
  // Opset 18's additions change the result: refuse them rather than ignore them (the opset
  // adapter spreads axes and keep_aspect_ratio_policy over the scales; antialias stays).
  p.antialias = n.attr_int("antialias", 0) != 0 && p.mode != Mode::Nearest;
  p.output_shape = n.attr_ints(kResizeOutputShapeAttr);
  if (p.antialias && p.coord == Coord::TfCropAndResize)
    fail_unsupported(at + ": antialias with tf_crop_and_resize is not supported");
  if (n.attr("axes")) fail_unsupported(at + ": the axes attribute is not supported");
  if (n.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    fail_unsupported(at + ": keep_aspect_ratio_policy '" + n.attr_string("keep_aspect_ratio_policy", "") +
                     "' is not supported (stretch)");
  return p;
}

// An 8-bit Resize's quantizations (ir/fused_dequantize.h's memplan_quantized), and the elements of
// one plane of its static input.
Requantize requantize_of(const Node& n, const std::string& at, uint64_t& plane_floats) {
  Requantize rq;
  rq.on = true;
  auto scalar = [&](size_t k, const char* what) {
    const Value* v = input_at(n, k);
    if (!v || !v->constant || v->constant->element_count() != 1)
      fail(at + ": " + what + " must be a one-value constant to resize 8-bit values");
    return v->constant->float_at(0);
  };
  const Value* x = n.inputs[0];
  quant::QRange in_range;
  if (!quant::quant_range(x->type.dtype, in_range) || x->type.dtype == DType::Int32 || !x->type.is_static() ||
      x->shape_varies || x->type.dims.size() < 2)
    fail(at + ": an 8-bit Resize needs a uint8 or int8 input of static shape, rank 2 or more");
  if (!quant::quant_range(n.outputs[0]->type.dtype, rq.out_range) || n.outputs[0]->type.dtype == DType::Int32)
    fail(at + ": an 8-bit Resize needs a uint8 or int8 output");
  rq.in_signed = x->type.dtype == DType::Int8;
  rq.in_scale = static_cast<float>(scalar(kResizeInScaleInput, "the input's scale"));
  rq.in_zero = static_cast<int32_t>(scalar(kResizeInZeroInput, "the input's zero point"));
  rq.out_scale = static_cast<float>(scalar(kResizeOutScaleInput, "the output's scale"));
  rq.out_zero = static_cast<int32_t>(scalar(kResizeOutZeroInput, "the output's zero point"));
  const auto& d = x->type.dims;
  plane_floats = checked_mul(static_cast<uint64_t>(d[d.size() - 2].value), static_cast<uint64_t>(d.back().value),
                             "a Resize plane");
  return rq;
}

}  // namespace

std::unique_ptr<Kernel> make_resize(const Node& n, const KernelEnv& env) {
  const bool upsample = n.op_type == "Upsample";
  const bool quantized = !upsample && n.attr_int(kQuantizedResizeAttr, 0) != 0;
  const std::string at = check_arity(n, env, 1, quantized ? kResizeOutZeroInput + 1 : upsample ? 2 : 4);
  const DType dt = n.inputs[0]->type.dtype;
  if (dt != DType::Float32 && !quantized)
    fail_unsupported(at + ": " + dtype_name(dt) + " input is not supported (float32 only)");
  uint64_t plane_floats = 0;
  const Requantize rq = quantized ? requantize_of(n, at, plane_floats) : Requantize{};
  const bool v11 = !upsample && n.opset >= 11;
  const Params p = read_params(n, at, v11);
  if (p.antialias && quantized) fail_unsupported(at + ": an antialiased resize of 8-bit values is not supported");

  // Inputs: Upsample-7 none (scales attribute); Upsample-9 and Resize-10 X, scales; Resize-11+
  // X, roi, scales, sizes.
  FloatSource scales, roi;
  shape::IntsSource sizes;
  if (upsample && n.opset < 9) {
    const Attribute* a = n.attr("scales");
    if (!a) fail(at + ": the scales attribute is missing");
    scales = FloatSource::from_list(a->floats, at, "scales");
  } else {
    scales = FloatSource::from_input(n, v11 ? 2 : 1, at, "scales");
    if (v11) {
      sizes = shape::IntsSource::from_input(n, 3, at, "sizes");
      roi = FloatSource::from_input(n, 1, at, "roi");
    }
  }
  const Value* y = n.outputs[0];
  // (An empty output has no columns to tabulate: its last dim may be anything a file says.)
  const bool has_columns = y->type.is_static() && !y->shape_varies && !y->type.dims.empty() &&
                           checked_element_count(y->type.static_dims(), at) > 0;
  const int64_t columns = has_columns ? y->type.dims.back().value : 0;
  auto k = std::make_unique<ResizeKernel>(at, p, std::move(scales), std::move(sizes), std::move(roi),
                                          std::max<int64_t>(columns, 0), rq, plane_floats, omp_get_max_threads());
  if (fixed_shape(n.inputs[0])) k->fix_taps(static_shape(n.inputs[0]));
  if (const int layout = y->channel_block) {
    if (n.inputs[0]->channel_block != layout || !fixed_shape(n.inputs[0]))
      fail_internal(at + ": the input and the output are stored in different layouts");
    k->fix_pixels(static_shape(n.inputs[0]), layout);
  }
  return k;
}

}  // namespace memplan::rt::elt
