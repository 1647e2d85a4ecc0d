// GridSample (opset 16, 4-D): Y[n, c, h, w] samples X[n, c] at the normalized location
// Grid[n, h, w] = (x, y) in [-1, 1], nearest / bilinear / bicubic, with zeros, border or
// reflection padding. Follows ONNX Runtime's CPU kernel; every pixel read is bounds-checked, and
// NaN or huge coordinates cannot reach an integer conversion.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/resize/factories.h"

namespace memplan::rt::shape {
namespace {

enum class Interp { Nearest, Bilinear, Bicubic };
enum class Padding { Zeros, Border, Reflection };

// Far outside any image, yet exactly convertible to int64.
constexpr double kFar = 0x1p40;

template <typename T>
T reflect(T x, T lo, T hi) {
  const T range = hi - lo;
  if (!(range > 0)) return lo;
  if (x < lo || x > hi) {
    const T d = x < lo ? lo - x : x - hi;
    const T n = std::floor(d / range), r = d - n * range;
    const bool even = std::fmod(n, T(2)) == 0;
    x = (x < lo) == even ? lo + r : hi - r;
  }
  return x;
}

// Keys cubic convolution weights (alpha -0.75) for a fractional offset t.
template <typename T>
void cubic_coeffs(T t, T c[4]) {
  constexpr T a = T(-0.75);
  t = std::abs(t);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

template <typename T>
class GridSampleKernel final : public Kernel {
 public:
  GridSampleKernel(std::string where, Interp mode, Padding pad, bool align) : where_(std::move(where)), mode_(mode), pad_(pad), align_(align) {}

  void run(const KernelArgs& a) override {
    const TensorView &x = a.inputs[0], &grid = a.inputs[1];
    if (x.rank != 4 || grid.rank != 4 || grid.dims[3] != 2 || grid.dims[0] != x.dims[0])
      fail_at(where_, "X must be [N, C, H, W] and grid [N, H_out, W_out, 2] (only 4-D inputs are supported)");
    const int64_t n = x.dims[0], ch = x.dims[1], h = x.dims[2], w = x.dims[3], ho = grid.dims[1], wo = grid.dims[2];
    if (h < 1 || w < 1) fail_at(where_, "X must have a height and width of 1 or more");
    const int64_t dims[4] = {n, ch, ho, wo};
    set_shape(a.outputs[0], 4, dims, where_);
    const T lo_x = align_ ? T(0) : T(-0.5), hi_x = align_ ? T(w - 1) : T(w) - T(0.5);
    const T lo_y = align_ ? T(0) : T(-0.5), hi_y = align_ ? T(h - 1) : T(h) - T(0.5);
    const T* g = grid.as<const T>();
    T* y = a.outputs[0].as<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t c = 0; c < ch; ++c) {
        const T* img = x.as<const T>() + (b * ch + c) * h * w;
        for (int64_t i = 0; i < ho * wo; ++i) {
          const T* p = g + (b * ho * wo + i) * 2;
          T sx = denormalize(p[0], w), sy = denormalize(p[1], h);
          T& out = y[(b * ch + c) * ho * wo + i];
          if (std::isnan(sx) || std::isnan(sy)) {
            out = std::numeric_limits<T>::quiet_NaN();
            continue;
          }
          sx = std::clamp<T>(sx, T(-kFar), T(kFar));
          sy = std::clamp<T>(sy, T(-kFar), T(kFar));
          if (mode_ == Interp::Nearest) {
            sx = std::nearbyint(sx);
            sy = std::nearbyint(sy);
          }
          // Bicubic clamps (or reflects) each of its 16 taps instead, in pixel() (ONNX Runtime and
          // PyTorch do; ONNX's reference clamps the point first, and differs near the border).
          if (mode_ != Interp::Bicubic && (sx < lo_x || sx > hi_x || sy < lo_y || sy > hi_y)) {
            if (pad_ == Padding::Border) {
              sx = std::clamp<T>(sx, 0, T(w - 1));
              sy = std::clamp<T>(sy, 0, T(h - 1));
            } else if (pad_ == Padding::Reflection) {
              sx = reflect(sx, lo_x, hi_x);
              sy = reflect(sy, lo_y, hi_y);
            }
          }
          out = sample(img, h, w, sx, sy, lo_x, hi_x, lo_y, hi_y);
        }
      }
  }

 private:
  // [-1, 1] to pixel coordinates: pixel centers (align_corners) or pixel edges.
  T denormalize(T v, int64_t len) const {
    return align_ ? (v + 1) / 2 * T(len - 1) : ((v + 1) * T(len) - 1) / 2;
  }

  T pixel(const T* img, int64_t h, int64_t w, int64_t r, int64_t c, T lo_x, T hi_x, T lo_y, T hi_y) const {
    if (pad_ == Padding::Zeros) return r >= 0 && r < h && c >= 0 && c < w ? img[r * w + c] : T(0);
    if (pad_ == Padding::Reflection) {
      c = static_cast<int64_t>(reflect(static_cast<T>(c), lo_x, hi_x));
      r = static_cast<int64_t>(reflect(static_cast<T>(r), lo_y, hi_y));
    }
    c = std::clamp<int64_t>(c, 0, w - 1);  // border; also keeps reflection's rounding inside
    r = std::clamp<int64_t>(r, 0, h - 1);
    return img[r * w + c];
  }

  T sample(const T* img, int64_t h, int64_t w, T sx, T sy, T lo_x, T hi_x, T lo_y, T hi_y) const {
    auto px = [&](int64_t r, int64_t c) { return pixel(img, h, w, r, c, lo_x, hi_x, lo_y, hi_y); };
    if (mode_ == Interp::Nearest) return px(static_cast<int64_t>(sy), static_cast<int64_t>(sx));
    const int64_t x1 = static_cast<int64_t>(std::floor(sx)), y1 = static_cast<int64_t>(std::floor(sy));
    const T fx = sx - T(x1), fy = sy - T(y1);
    if (mode_ == Interp::Bilinear) {
      return (1 - fy) * ((1 - fx) * px(y1, x1) + fx * px(y1, x1 + 1)) + fy * ((1 - fx) * px(y1 + 1, x1) + fx * px(y1 + 1, x1 + 1));
    }
    T cx[4], cy[4];
    cubic_coeffs(fx, cx);
    cubic_coeffs(fy, cy);
    T acc = 0;
    for (int r = 0; r < 4; ++r) {
      T row = 0;
      for (int c = 0; c < 4; ++c) row += cx[c] * px(y1 - 1 + r, x1 - 1 + c);
      acc += cy[r] * row;
    }
    return acc;
  }

  std::string where_;
  Interp mode_;
  Padding pad_;
  bool align_;
};

}  // namespace

Factory make_grid_sample(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 2);
  const DType t = n.inputs[0]->type.dtype;
  if (n.inputs[1]->type.dtype != t) unsupported_at(where, "X and grid of different types are not supported");
  const std::string m = n.attr_string("mode", "bilinear"), p = n.attr_string("padding_mode", "zeros");
  Interp mode;
  if (m == "nearest") mode = Interp::Nearest;
  else if (m == "bilinear") mode = Interp::Bilinear;
  else if (m == "bicubic") mode = Interp::Bicubic;
  else unsupported_at(where, "mode '" + m + "' is not supported");
  Padding pad;
  if (p == "zeros") pad = Padding::Zeros;
  else if (p == "border") pad = Padding::Border;
  else if (p == "reflection") pad = Padding::Reflection;
  else unsupported_at(where, "padding_mode '" + p + "' is not supported");
  const bool align = n.attr_int("align_corners", 0) != 0;
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) { k = std::make_unique<GridSampleKernel<decltype(tag)>>(where, mode, pad, align); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  return k;
}

}  // namespace memplan::rt::shape
