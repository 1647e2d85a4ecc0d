// RoiAlign (opset 16), as ONNX Runtime computes it: each output bin averages (or takes the max of)
// sampling_ratio x sampling_ratio bilinear samples of X inside the region of interest. Batch
// indices are checked and the sample grid is bounded, so bad rois fail instead of reading out of
// range or looping for ever.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/detection/factories.h"

namespace memplan::rt::shape {
namespace {

// Samples per bin side above this are refused (a roi far larger than any image).
constexpr double kMaxGrid = 1 << 16;

// Bilinear weights and the four pixel offsets of one sample, ONNX Runtime's rules: samples more
// than one pixel outside contribute nothing, the rest are clamped into the image.
template <typename T>
struct Sample {
  T w[4]{};
  int64_t pos[4]{};
};

template <typename T>
Sample<T> bilinear(T y, T x, int64_t h, int64_t w) {
  Sample<T> s;
  if (y < -1 || y > T(h) || x < -1 || x > T(w)) return s;
  y = std::max<T>(y, 0);
  x = std::max<T>(x, 0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = T(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = T(x0);
  } else {
    x1 = x0 + 1;
  }
  const T ly = y - T(y0), lx = x - T(x0), hy = 1 - ly, hx = 1 - lx;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  s.pos[0] = y0 * w + x0, s.pos[1] = y0 * w + x1, s.pos[2] = y1 * w + x0, s.pos[3] = y1 * w + x1;
  return s;
}

template <typename T>
class RoiAlignKernel final : public Kernel {
 public:
  RoiAlignKernel(std::string where, bool max_mode, bool half_pixel, int64_t oh, int64_t ow, int64_t ratio, float scale)
      : where_(std::move(where)), max_(max_mode), half_pixel_(half_pixel), oh_(oh), ow_(ow), ratio_(ratio), scale_(scale) {}

  void run(const KernelArgs& a) override {
    const TensorView &x = a.inputs[0], &rois = a.inputs[1], &batch = a.inputs[2];
    if (x.rank != 4) fail_at(where_, "X must have the shape [N, C, H, W]");
    if (rois.rank != 2 || rois.dims[1] != 4) fail_at(where_, "rois must have the shape [num_rois, 4]");
    if (batch.rank != 1 || batch.dims[0] != rois.dims[0]) fail_at(where_, "batch_indices must have one entry per roi");
    const int64_t n = x.dims[0], ch = x.dims[1], h = x.dims[2], w = x.dims[3], num = rois.dims[0];
    if (h < 1 || w < 1) fail_at(where_, "X must have a height and width of 1 or more");
    const int64_t dims[4] = {num, ch, oh_, ow_};
    set_shape(a.outputs[0], 4, dims, where_);
    const T* r = rois.as<const T>();
    T* y = a.outputs[0].as<T>();
    const T offset = half_pixel_ ? T(0.5) : T(0);
    for (int64_t i = 0; i < num; ++i, r += 4) {
      const int64_t b = int_at(batch, static_cast<uint64_t>(i));
      if (b < 0 || b >= n) fail_at(where_, "batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(n) + ")");
      const T x0 = r[0] * T(scale_) - offset, y0 = r[1] * T(scale_) - offset;
      T rw = r[2] * T(scale_) - offset - x0, rh = r[3] * T(scale_) - offset - y0;
      if (!half_pixel_) {  // output_half_pixel (the old behaviour): rois at least 1x1
        rw = std::max<T>(rw, 1);
        rh = std::max<T>(rh, 1);
      }
      const T bin_h = rh / T(oh_), bin_w = rw / T(ow_);
      const double gh_d = ratio_ > 0 ? double(ratio_) : std::ceil(double(rh) / double(oh_));
      const double gw_d = ratio_ > 0 ? double(ratio_) : std::ceil(double(rw) / double(ow_));
      if (!(gh_d <= kMaxGrid && gw_d <= kMaxGrid && std::isfinite(double(x0)) && std::isfinite(double(y0))))
        fail_at(where_, "roi " + std::to_string(i) + " is not finite or far larger than the image");
      const int64_t gh = std::max<int64_t>(static_cast<int64_t>(gh_d), 0), gw = std::max<int64_t>(static_cast<int64_t>(gw_d), 0);
      const T count = T(std::max<int64_t>(gh * gw, 1));
      for (int64_t c = 0; c < ch; ++c) {
        const T* img = x.as<const T>() + (b * ch + c) * h * w;
        for (int64_t ph = 0; ph < oh_; ++ph)
          for (int64_t pw = 0; pw < ow_; ++pw) {
            T acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < gh; ++iy) {
              const T sy = y0 + T(ph) * bin_h + (T(iy) + T(0.5)) * bin_h / T(gh);
              for (int64_t ix = 0; ix < gw; ++ix) {
                const T sx = x0 + T(pw) * bin_w + (T(ix) + T(0.5)) * bin_w / T(gw);
                const Sample<T> s = bilinear(sy, sx, h, w);
                if (max_) {  // ONNX Runtime: the max of the weighted corner values
                  const T v = std::max({s.w[0] * img[s.pos[0]], s.w[1] * img[s.pos[1]], s.w[2] * img[s.pos[2]], s.w[3] * img[s.pos[3]]});
                  acc = first ? v : std::max(acc, v);
                  first = false;
                } else {
                  for (int k = 0; k < 4; ++k) acc += s.w[k] * img[s.pos[k]];
                }
              }
            }
            *y++ = max_ ? acc : acc / count;
          }
      }
    }
  }

 private:
  std::string where_;
  bool max_, half_pixel_;
  int64_t oh_, ow_, ratio_;
  float scale_;
};

}  // namespace

Factory make_roi_align(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 3);
  const DType t = n.inputs[0]->type.dtype;
  if (n.inputs[1]->type.dtype != t) fail_at(where, "rois and X differ in type");
  if (n.inputs[2]->type.dtype != DType::Int64) fail_at(where, "batch_indices must be int64");
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") fail_at(where, "mode '" + mode + "' is not avg or max");
  // Opset 16 added the attribute with half_pixel as its default; before, output_half_pixel was the rule.
  const std::string ctm = n.attr_string("coordinate_transformation_mode", n.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") fail_at(where, "coordinate_transformation_mode '" + ctm + "' is not supported");
  const int64_t oh = n.attr_int("output_height", 1), ow = n.attr_int("output_width", 1), ratio = n.attr_int("sampling_ratio", 0);
  if (oh < 1 || ow < 1 || ratio < 0) fail_at(where, "output_height and output_width must be positive, sampling_ratio not negative");
  const float scale = n.attr_float("spatial_scale", 1.0f);
  Factory k;
  dispatch(t, FloatTypes{}, [&](auto tag) {
    k = std::make_unique<RoiAlignKernel<decltype(tag)>>(where, mode == "max", ctm == "half_pixel", oh, ow, ratio, scale);
  });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported (float32 and float64 only)");
  return k;
}

}  // namespace memplan::rt::shape
